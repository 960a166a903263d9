"""What the shared-prefix settings cost or save on the very same forests, without training noise.

    python3 examples/llm/results/shared-prefixes/same_forests.py --task recipe [--seed 0] [--repeats 3]

One seed's pre-trained policy, never updated (the update runs with learning rate 0, so every
repeat grows the same forests from the same random numbers): each sampler grows 8 steps without
and with `prefix_cache`, and updates with `update_rows` "leaves" and "auto", alternated, `--repeats`
times. Prints each sampler's generation, update and allocator seconds per step (the fastest
repeat: timings on a quiet machine only) under both settings, and the step's ratio to chains'.
"""

from __future__ import annotations

import argparse
import copy
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import time  # noqa: E402

import torch  # noqa: E402
import transformers  # noqa: E402

from allocator_client import AllocatorClient  # noqa: E402
from forest import Forest, Grower, stream_uniforms  # noqa: E402
from tasks import get_task  # noqa: E402
from train import TRACE_RULES, Config, eval_table, make_sampler, policy_update, seed_setup  # noqa: E402

STEPS = 8


def one_pass(cfg: Config, base, prompts, name: str, shared: bool) -> tuple[float, float, float, float]:
    """Seconds per step: generation (the grower's), the allocator's, the whole step, the update."""
    task = get_task(cfg.task)
    client = AllocatorClient(TRACE_RULES[name]) if name in TRACE_RULES else None
    try:
        sampler = make_sampler(name, cfg, client)
        uniforms = stream_uniforms(torch.Generator().manual_seed(cfg.seed * 1009 + 7))
        model = copy.deepcopy(base)
        opt = torch.optim.SGD(model.parameters(), lr=0.0)
        generate = update = step_s = 0.0
        for step in range(STEPS):
            batch = [prompts[(step * cfg.prompts_per_step + i) % len(prompts)] for i in range(cfg.prompts_per_step)]
            forest = Forest(batch, task)
            grower = Grower(forest, model, uniforms, cfg.tokens_per_step, prefix_cache=shared)
            t0 = time.perf_counter()
            sampler.grow(grower, model)
            t1 = time.perf_counter()
            policy_update(model, opt, forest, len(batch), cfg.advantage, "auto" if shared else "leaves")
            t2 = time.perf_counter()
            generate += grower.generate_s
            update += t2 - t1
            step_s += t2 - t0
        return generate / STEPS, getattr(sampler, "allocator_s", 0.0) / STEPS, step_s / STEPS, update / STEPS
    finally:
        if client is not None:
            client.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--task", default="recipe")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--samplers", default="independent,trace,entropy")
    args = ap.parse_args()
    torch.set_num_threads(1)
    transformers.logging.set_verbosity_error()
    task = get_task(args.task)
    cfg = Config(**{**task.settings.get("cpu", {}), "task": task.name, "seed": args.seed})
    prompts, base, _ = seed_setup(cfg, eval_table(cfg))
    names = args.samplers.split(",")
    best: dict[tuple[str, bool], tuple[float, float, float, float]] = {}
    for _ in range(args.repeats):
        for name in names:
            for shared in (False, True):
                t = one_pass(cfg, base, prompts, name, shared)
                old = best.get((name, shared))
                best[name, shared] = t if old is None else tuple(min(a, b) for a, b in zip(old, t))
    print("`%s` (%s task, seed %d, %d steps, fastest of %d; seconds per step)\n" % (
        " ".join(["python3", "examples/llm/results/shared-prefixes/same_forests.py"] + sys.argv[1:]), task.name, args.seed, STEPS, args.repeats))
    print("| sampler | setting | generation | allocator | update | step | × chains' step, same setting |")
    print("|---|---|---|---|---|---|---|")
    for name in names:
        for shared in (False, True):
            g, a, step, u = best[name, shared]
            chains = best["independent", shared][2] if "independent" in names else float("nan")
            print("| %s | %s | %.3f | %.3f | %.3f | %.3f | %.2f |" % (
                name, "shared" if shared else "plain", g, a, u, step, step / chains))


if __name__ == "__main__":
    main()
