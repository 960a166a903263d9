"""Where a training step's time goes, per sampler: `run.py` with timers around the allocator's
parts and the decoder, in one process (timings on a quiet machine only).

    python3 examples/llm/results/v5-default-timing/breakdown.py --task calculator --seeds 3 [run.py's other arguments]

It runs `run.py --processes 1 --samplers independent,trace --out <temp>` plus the arguments given,
and prints, per sampler, the mean milliseconds per training step of:
- allocator: `pack` (the forest as columns, Python), `sync` (sending them: the service's live
  forest replaced), `plan` (the service's plan and its reply);
- generation: `prefill` (each batch's decoder filled with its rows' prefixes, every row padded to
  the batch's longest prefix) and `decode` (the token-by-token calls after it), and the rest of
  the grower's own work (sampling, turns, embeddings);
- update: the policy-gradient step;
and the prefix tokens prefilled per step, as fed and as padded.
"""

from __future__ import annotations

import collections
import runpy
import sys
import tempfile
import time
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(EXAMPLE))
import allocator_client  # noqa: E402
import decode  # noqa: E402
import samplers  # noqa: E402

TIME: collections.Counter = collections.Counter()
NOW = ["-"]  # the sampler whose step is running


def timed(owner, name: str, key: str) -> None:
    inner = getattr(owner, name)

    def wrapper(*args, **kwargs):
        t0 = time.perf_counter()
        try:
            return inner(*args, **kwargs)
        finally:
            TIME[NOW[0], key] += time.perf_counter() - t0
    setattr(owner, name, wrapper)


def main() -> None:
    timed(samplers, "pack", "pack")  # TraceSampler.grow looks `pack` up in its module at call time
    timed(allocator_client.AllocatorClient, "sync_forest", "sync")
    timed(allocator_client.AllocatorClient, "plan", "plan")
    prefill = decode.Decoder.__init__

    def init(self, model, prefixes, *args, **kwargs):
        t0 = time.perf_counter()
        prefill(self, model, prefixes, *args, **kwargs)
        TIME[NOW[0], "prefill"] += time.perf_counter() - t0
        TIME[NOW[0], "prefill_fed"] += sum(len(p) for p in prefixes)
        TIME[NOW[0], "prefill_padded"] += max(len(p) for p in prefixes) * len(prefixes)
    decode.Decoder.__init__ = init
    timed(decode.Decoder, "_feed", "feeds")  # prefill's own feed included; subtracted below
    steps = collections.Counter()
    for cls, name in ((samplers.IndependentSampler, "independent"), (samplers.TraceSampler, "trace")):
        grow = cls.grow

        def wrapped(self, grower, model, grow=grow, name=name):
            NOW[0] = name
            t0 = time.perf_counter()
            try:
                grow(self, grower, model)
            finally:
                TIME[name, "grow"] += time.perf_counter() - t0
                TIME[name, "generate"] += grower.generate_s
                steps[name] += 1
                NOW[0] = "-"
        cls.grow = wrapped
    import train  # noqa: E402
    update = train.policy_update
    NOW_UPDATE = ["-"]  # the sampler being trained (policy updates run outside `grow`)

    def timed_update(model, *args, **kwargs):
        t0 = time.perf_counter()
        try:
            return update(model, *args, **kwargs)
        finally:
            TIME[NOW_UPDATE[0], "update"] += time.perf_counter() - t0
    train.policy_update = timed_update
    make = train.make_sampler

    def make_sampler(name, *args, **kwargs):
        NOW_UPDATE[0] = name
        return make(name, *args, **kwargs)
    train.make_sampler = make_sampler
    with tempfile.TemporaryDirectory() as out:
        sys.argv = ["run.py", "--processes", "1", "--samplers", "independent,trace", "--out", out] + sys.argv[1:]
        try:
            runpy.run_path(str(EXAMPLE / "run.py"), run_name="__main__")
        except SystemExit as done:  # run.py ends with sys.exit(main())
            if done.code:
                raise
    print()
    print("| sampler | steps | step ms | allocator: pack | sync | plan | generation: prefill | decode | rest | update | prefix tokens fed / padded |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for name in ("independent", "trace"):
        n = steps[name]
        ms = lambda key: 1e3 * TIME[name, key] / n  # noqa: E731
        decode_ms = ms("feeds") - ms("prefill")  # the prefill's feed is inside both timers
        rest = ms("generate") - ms("prefill") - decode_ms
        print("| %s | %d | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.0f / %.0f |" % (
            name, n, ms("grow") + ms("update"), ms("pack"), ms("sync"), ms("plan"), ms("prefill"), decode_ms, rest,
            ms("update"), TIME[name, "prefill_fed"] / n, TIME[name, "prefill_padded"] / n))


if __name__ == "__main__":
    main()
