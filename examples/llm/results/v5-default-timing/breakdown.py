"""Where a training step's time goes, per sampler row: `run.py` with timers around the
allocator's parts and the decoder, in one process (timings on a quiet machine only).

    python3 examples/llm/results/v5-default-timing/breakdown.py --task calculator --seeds 3 [run.py's other arguments]

It runs `run.py --processes 1 --samplers independent,trace --out <temp>` plus the arguments given
(a `--samplers` among them replaces the rows), and prints, per row, the mean milliseconds per
training step of:
- allocator: `pack` (the forest as columns, Python), `sync` (sending them: the service's live
  forest replaced), `plan` (the service's plan and its reply);
- generation: `prefill` (each batch's decoder filled with its rows' prefixes, every row padded to
  the batch's longest prefix) and `decode` (the token-by-token calls after it), and the rest of
  the grower's own work (sampling, turns, embeddings);
- update: the policy-gradient step;
and, per step, the prefix tokens prefilled (as fed, less any copied from a prefix cache, and as
padded), the generation batches (one decoder each), the decoder's token-by-token calls after
each prefill, and the tokens the update forwards, unpadded, as one row per carrying leaf (what a
trainer that forwards each completion does) and each token once (a tree-packed update). Batches
and calls are what the step's generation costs where a call costs the same whatever its rows (a
large model's memory-bound decoding); tokens are what its update costs where the arithmetic is
proportional to them.

With `--replay`, the `trace` row's rounds (the library's default rule) are then sent again to a fresh service (the same forests
and plan settings, in order), three times: back to back, with nothing between them (what a
round's sync and plan cost when neither process waited on the other's work); and with the
loop's mean generation time between rounds before each, the trainer either multiplying
matrices with torch (on its one thread, as in the loop) or asleep. Beside what they cost in the
training loop, this says how much of the loop's cost a wait of that length alone reproduces.
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
NOW = ["-"]  # the sampler row whose rollouts are being grown
TRAINING = ["-"]  # the sampler row being trained (its policy updates run outside `grow`)


def timed(owner, name: str, key: str) -> None:
    """Times every call of `owner.name` under `key` and counts them under `key + "_calls"`."""
    inner = getattr(owner, name)

    def wrapper(*args, **kwargs):
        t0 = time.perf_counter()
        try:
            return inner(*args, **kwargs)
        finally:
            TIME[NOW[0], key] += time.perf_counter() - t0
            TIME[NOW[0], key + "_calls"] += 1
    setattr(owner, name, wrapper)


ROUNDS: list = []  # with --replay: each trace round's sync arguments and plan settings
# The client's own methods, untimed: the replay must neither be recorded again nor timed twice.
SYNC, PLAN = allocator_client.AllocatorClient.sync_forest, allocator_client.AllocatorClient.plan
UNWRAPPED: dict = {}


def capture() -> None:
    """Records every sync and plan from here on (`replay` puts the client's own methods back)."""
    sync, plan = allocator_client.AllocatorClient.sync_forest, allocator_client.AllocatorClient.plan
    UNWRAPPED.update(sync_forest=SYNC, plan=PLAN)

    def capture_sync(self, *args):
        if NOW[0] == "trace":  # the library's default rule's row only
            ROUNDS.append([[a.copy() if hasattr(a, "copy") else list(a) for a in args], None])
        return sync(self, *args)

    def capture_plan(self, **kwargs):
        if NOW[0] == "trace":
            ROUNDS[-1][1] = kwargs
        return plan(self, **kwargs)
    allocator_client.AllocatorClient.sync_forest = capture_sync
    allocator_client.AllocatorClient.plan = capture_plan


def replay(gap_s: float = 0.0, busy: bool = False) -> tuple[float, float]:
    """Mean ms of a sync and of a plan over the captured rounds, sent to a fresh service. Before
    each round the trainer waits `gap_s`: asleep, or with `busy` multiplying matrices with torch
    (as it generates between rounds in the loop); 0: back to back."""
    import torch

    for name, method in UNWRAPPED.items():
        setattr(allocator_client.AllocatorClient, name, method)
    client = allocator_client.AllocatorClient()
    work = torch.randn(64, 64)  # small, so a wait overshoots its gap by microseconds
    sync_s = plan_s = 0.0
    try:
        for args, kwargs in ROUNDS:
            if gap_s and busy:
                until = time.perf_counter() + gap_s
                while time.perf_counter() < until:
                    work @ work
            elif gap_s:
                time.sleep(gap_s)
            t0 = time.perf_counter()
            client.sync_forest(*args)
            t1 = time.perf_counter()
            client.plan(**kwargs)
            sync_s, plan_s = sync_s + t1 - t0, plan_s + time.perf_counter() - t1
    finally:
        client.close()
    return 1e3 * sync_s / len(ROUNDS), 1e3 * plan_s / len(ROUNDS)


def main() -> None:
    replaying = "--replay" in sys.argv
    timed(samplers, "pack", "pack")  # TraceSampler.grow looks `pack` up in its module at call time
    timed(allocator_client.AllocatorClient, "sync_forest", "sync")
    timed(allocator_client.AllocatorClient, "plan", "plan")
    if replaying:
        sys.argv.remove("--replay")
        capture()  # around the timers, so they time the calls and not the copies
    prefill = decode.Decoder.__init__

    def init(self, model, prefixes, max_sequence=decode.MAX_SEQUENCE, cached=None):
        t0 = time.perf_counter()
        prefill(self, model, prefixes, max_sequence, cached)
        TIME[NOW[0], "prefill"] += time.perf_counter() - t0
        TIME[NOW[0], "prefill_calls"] += 1  # one decoder, so one generation batch
        # What the prefill computes: each prefix less the tokens whose keys and values were copied.
        fed = [len(p) - (kv[0].shape[2] if kv is not None else 0) for p, kv in zip(prefixes, cached or [None] * len(prefixes))]
        TIME[NOW[0], "prefill_fed"] += sum(fed)
        TIME[NOW[0], "prefill_padded"] += max(fed) * len(fed)
    decode.Decoder.__init__ = init
    timed(decode.Decoder, "_feed", "feeds")  # prefill's own feed included; subtracted below
    steps = collections.Counter()  # training steps per sampler row, in the order the rows first ran
    import train  # noqa: E402
    update = train.policy_update

    def timed_update(model, opt, forest, prompts, advantage="treerl-leaf", rows="leaves"):
        # Tokens the update forwards: one row per carrying leaf (what a trainer that forwards each
        # completion does), and each token once (a tree-packed update); counted outside the timer.
        weights = train.node_weights(forest, advantage)
        if weights:
            TIME[TRAINING[0], "update_leaf_tokens"] += sum(len(s) for s in forest.carriers(weights)[0])
            TIME[TRAINING[0], "update_tree_tokens"] += sum(forest.packed_lengths(weights))
        t0 = time.perf_counter()
        try:
            return update(model, opt, forest, prompts, advantage, rows)
        finally:
            TIME[TRAINING[0], "update"] += time.perf_counter() - t0
    train.policy_update = timed_update
    make = train.make_sampler

    def make_sampler(name, *args, **kwargs):
        """The row's sampler, its `grow` timed under the row's name (chains at 1.5x tokens are
        their own row, though the same class as chains)."""
        TRAINING[0] = name
        sampler = make(name, *args, **kwargs)
        grow = sampler.grow

        def timed_grow(grower, model):
            NOW[0] = name
            t0 = time.perf_counter()
            try:
                grow(grower, model)
            finally:
                TIME[name, "grow"] += time.perf_counter() - t0
                TIME[name, "generate"] += grower.generate_s
                steps[name] += 1
                NOW[0] = "-"
        sampler.grow = timed_grow
        return sampler
    train.make_sampler = make_sampler
    with tempfile.TemporaryDirectory() as out:
        sys.argv = ["run.py", "--processes", "1", "--samplers", "independent,trace", "--out", out] + sys.argv[1:]
        try:
            runpy.run_path(str(EXAMPLE / "run.py"), run_name="__main__")
        except SystemExit as done:  # run.py ends with sys.exit(main())
            if done.code:
                raise
    print()
    print("| sampler | steps | step ms | allocator: pack | sync | plan | generation: prefill | decode | rest | update "
          "| prefix tokens fed / padded | generation batches | decode calls | update tokens: as leaves / distinct |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name in steps:
        n = steps[name]
        ms = lambda key: 1e3 * TIME[name, key] / n  # noqa: E731
        decode_ms = ms("feeds") - ms("prefill")  # the prefill's feed is inside both timers
        rest = ms("generate") - ms("prefill") - decode_ms
        per_step = lambda key: TIME[name, key] / n  # noqa: E731
        print("| %s | %d | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.0f / %.0f | %.1f | %.1f | %.0f / %.0f |" % (
            name, n, ms("grow") + ms("update"), ms("pack"), ms("sync"), ms("plan"), ms("prefill"), decode_ms, rest,
            ms("update"), per_step("prefill_fed"), per_step("prefill_padded"), per_step("prefill_calls"),
            per_step("feeds_calls") - per_step("prefill_calls"), per_step("update_leaf_tokens"),
            per_step("update_tree_tokens")))
    if replaying:
        ROUNDS[:] = [r for r in ROUNDS if r[1] is not None]  # the last sync, outside the steps, has no plan
        rounds = len(ROUNDS)
        loop = lambda key: 1e3 * TIME["trace", key] / rounds  # noqa: E731
        # The loop's mean time between one round's plan and the next round's sync: the generation.
        gap_ms = loop("grow") - loop("pack") - loop("sync") - loop("plan")
        print()
        print("Trace rounds: %d (%.1f a step), %.1f ms apart (the generation between them). Mean ms a round:"
              % (rounds, rounds / steps["trace"], gap_ms))
        print()
        print("| | sync | plan |")
        print("|---|---|---|")
        print("| in the training loop | %.2f | %.2f |" % (loop("sync"), loop("plan")))
        for label, gap, busy in (("replayed back to back", 0.0, False),
                                 ("replayed, the trainer busy with torch between rounds", gap_ms / 1e3, True),
                                 ("replayed, the trainer asleep between rounds", gap_ms / 1e3, False)):
            print("| %s | %.2f | %.2f |" % ((label,) + replay(gap, busy)))


if __name__ == "__main__":
    main()
