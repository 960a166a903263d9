"""One-step gradient quality of each credit: how well the policy gradient that a step's trees give
under each credit points where the true gradient of success points.

    nice -n 10 python3 examples/llm/gradient_study.py --out examples/llm/results/credit   # the committed study

Per seed (tuning seeds 200 and up; the committed run uses 0–59): the seed's pre-trained policy
(the run's pre-training, `train.seed_setup`). Per batch of 8 prompts (the pool's 4 batches, in
the run's order) and repeat:

- the **reference gradient**: 256 independent chains per prompt, each trained on with GRPO's
  per-rollout advantage (its reward minus the mean of the prompt's 256), every prompt weighing the
  same — an estimate of the gradient of the prompts' mean success with little noise left;
- per sampler (independent chains, and TRACE under the library's default rule through the
  service), the step's forest grown exactly as in training (`train.make_sampler`, 1024 generated
  tokens), and for each credit of `train.ADVANTAGES` the gradient of the step's loss
  (`train.node_weights` on the forest's carriers, as `train.policy_update` takes it);
- the cosine between each such gradient and the reference.

Every credit of one sampler is computed on the same forests, so credits are compared paired,
forest for forest; seeds are the unit of the intervals (the mean cosine over a seed's forests,
then mean and 95% t-interval over seeds, and paired differences between credits). Writes
`gradient.json` (every cosine) and `gradient.md`.

`--training DIR...` instead tabulates a short training check: `run.py` folders of one sampler
under several credits on the same seeds (`--set advantage=...`), paired by seed against the
first, into `OUT/training.md` (results/credit/README.md has the commands).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import sys
import time
import warnings
from dataclasses import asdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
warnings.filterwarnings("ignore")

import torch  # noqa: E402
import transformers  # noqa: E402

from allocator_client import AllocatorClient  # noqa: E402
from forest import Forest, Grower, stream_uniforms  # noqa: E402
from model import weighted_log_prob  # noqa: E402
from stats import mean_interval, paired  # noqa: E402
from train import ADVANTAGES, TRACE_RULES, Config, eval_table, make_sampler, node_weights, seed_setup  # noqa: E402

SAMPLERS = ("independent", "trace")
REFERENCE_CHAINS = 256


def flat_gradient(model, forest: Forest, weights: dict[int, float], prompts: int) -> torch.Tensor:
    """∇θ of Σ_n w(n) log π(turn_n | prefix) / prompts (the update's ascent direction), flattened."""
    model.zero_grad()
    if weights:
        seqs, w = forest.carriers(weights)
        (weighted_log_prob(model, seqs, w) / prompts).backward()
    return torch.cat([(p.grad if p.grad is not None else torch.zeros_like(p)).flatten().double()
                      for p in model.parameters()])


def cosine(a: torch.Tensor, b: torch.Tensor) -> float:
    """cos(a, b); 0 when either is 0 (a step that learns nothing points nowhere)."""
    na, nb = float(a.norm()), float(b.norm())
    return float(a @ b) / (na * nb) if na > 0 and nb > 0 else 0.0


def reference_gradient(model, batch, generator: torch.Generator) -> tuple[torch.Tensor, float]:
    """GRPO on `REFERENCE_CHAINS` chains per prompt: the gradient and the batch's success rate."""
    forest = Forest(batch)
    Grower(forest, model, stream_uniforms(generator), budget=10 ** 9, embed=False).run(
        [r for r in forest.roots for _ in range(REFERENCE_CHAINS)])
    wins = sum(forest.nodes[r].reward_sum for r in forest.roots) / (len(batch) * REFERENCE_CHAINS)
    return flat_gradient(model, forest, forest.grpo_advantages(), len(batch)), wins


def study_seed(args: tuple[int, int, int, list[str], list[str]]) -> dict:
    """Every cosine of one seed: {sampler: {credit: [cosine per forest]}} and the forests' shapes."""
    seed, batches, repeats, samplers, credits = args
    torch.set_num_threads(1)
    transformers.logging.set_verbosity_error()
    t0 = time.perf_counter()
    cfg = Config(seed=seed)
    prompts, model, _ = seed_setup(cfg, eval_table(cfg))
    model.eval()
    cosines = {s: {c: [] for c in credits} for s in samplers}
    shape = {s: {"root_share": [], "finished": []} for s in samplers}
    success = []
    clients = {s: AllocatorClient(TRACE_RULES[s]) for s in samplers if s in TRACE_RULES}
    try:
        for b in range(batches):
            batch = [prompts[(b * cfg.prompts_per_step + i) % len(prompts)] for i in range(cfg.prompts_per_step)]
            for rep in range(repeats):
                salt = (seed * 101 + b) * 31 + rep
                ref, wins = reference_gradient(model, batch, torch.Generator().manual_seed(salt * 2 + 1))
                success.append(wins)
                for s in samplers:
                    forest = Forest(batch)
                    grower = Grower(forest, model, stream_uniforms(torch.Generator().manual_seed(salt * 2)), cfg.tokens_per_step)
                    make_sampler(s, Config(seed=salt), clients.get(s)).grow(grower, model)
                    rollouts = [n for n in forest.nodes if n.terminal]
                    starts_at_root = sum(1 for n in forest.nodes if n.parent in forest.roots)
                    shape[s]["finished"].append(len(rollouts))
                    shape[s]["root_share"].append(starts_at_root / max(1, grower.started))
                    for c in credits:
                        cosines[s][c].append(cosine(flat_gradient(model, forest, node_weights(forest, c), len(batch)), ref))
    finally:
        for client in clients.values():
            client.close()
    print("seed %d: %.0f s" % (seed, time.perf_counter() - t0), file=sys.stderr, flush=True)
    return {"seed": seed, "cosines": cosines, "shape": shape, "reference_success": success,
            "wall_s": time.perf_counter() - t0}


def summarize(per_seed: list[dict], samplers: list[str], credits: list[str]) -> dict:
    mean = lambda xs: sum(xs) / len(xs)  # noqa: E731
    out = {"cosine": {}, "vs_treerl": {}, "vs_grpo": {}, "shape": {}}
    for s in samplers:
        by_credit = {c: [mean(r["cosines"][s][c]) for r in per_seed] for c in credits}
        out["cosine"][s] = {c: mean_interval(v) for c, v in by_credit.items()}
        out["vs_treerl"][s] = {c: paired(by_credit[c], by_credit["treerl"]) for c in credits if c != "treerl"}
        if "grpo" in credits:
            out["vs_grpo"][s] = {c: paired(by_credit[c], by_credit["grpo"]) for c in credits if c != "grpo"}
        out["shape"][s] = {k: mean_interval([mean(r["shape"][s][k]) for r in per_seed]) for k in ("finished", "root_share")}
    return out


def markdown(result: dict) -> str:
    s, credits = result["summary"], result["credits"]
    fmt = lambda v: "%+.3f [%+.3f, %+.3f]" % (v["mean"], *v["ci95"])  # noqa: E731
    lines = ["# One-step gradient quality per credit (examples/llm)", "",
             "`%s` (%.0f s wall, load average %s → %s). Seeds %d–%d (tuning seeds), %d batches × %d repeats per seed; "
             "reference: %d chains per prompt, GRPO per-rollout advantages. Cosine between each credit's gradient "
             "of one step's forest (1024 generated tokens) and the reference gradient; mean and 95%% t-interval over "
             "seeds of each seed's mean over its forests. Δ: paired by seed (same forests) against `treerl`, "
             "the committed run's credit, and against `grpo`." % (result["command"], result["wall_s"], *result["loadavg"], result["seeds"][0],
                                              result["seeds"][-1], result["batches"], result["repeats"], REFERENCE_CHAINS), "",
             "| sampler | credit | cosine to the reference | Δ vs treerl | Δ vs grpo |", "| --- | --- | --- | --- | --- |"]
    for sampler, by_credit in s["cosine"].items():
        for c in credits:
            deltas = [fmt(s[k][sampler][c]) if c in s[k].get(sampler, {}) else "—" for k in ("vs_treerl", "vs_grpo")]
            lines.append("| %s | %s | %s | %s | %s |" % (sampler, c, fmt(by_credit[c]), *deltas))
    lines += ["", "Forests: finished rollouts per step, and new first turns per rollout started (the share started at "
              "the prompt, less the rollouts the budget cut inside their first turn).", "",
              "| sampler | finished rollouts | first turns / rollouts started |", "| --- | --- | --- |"]
    for sampler, v in s["shape"].items():
        lines.append("| %s | %.1f | %.3f |" % (sampler, v["finished"]["mean"], v["root_share"]["mean"]))
    lines += ["", "Reference batches' success rate: %.3f (the pre-trained policies)." % result["reference_success"]]
    return "\n".join(lines) + "\n"


def training_report(dirs: list[Path]) -> str:
    """The training check: run.py's results.json of one sampler under several credits (same
    seeds), paired by seed against the first credit given."""
    runs = {}
    for d in dirs:
        r = json.loads((d / "results.json").read_text())
        runs[r["config"]["advantage"]] = (r["command"], sorted(r["runs"], key=lambda x: x["seed"]), r["machine"])
    base = next(iter(runs))
    seeds = [x["seed"] for x in runs[base][1]]
    fmt = lambda v: "%+.1f [%+.1f, %+.1f]" % (100 * v["mean"], 100 * v["ci95"][0], 100 * v["ci95"][1])  # noqa: E731
    lines = ["# Training check per credit (examples/llm, pilot)", "",
             "Seeds %d–%d (tuning seeds), sampler `%s`, 50 steps of 1024 generated tokens; final and mean success, "
             "points, mean [95%% t-interval over seeds]; Δ paired by seed against `%s`." % (
                 seeds[0], seeds[-1], runs[base][1][0]["sampler"], base), "",
             "| credit | final success | Δ final | mean success | Δ mean | mixed-outcome groups | wall s per run |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for credit, (_, rs, _) in runs.items():
        if [x["seed"] for x in rs] != seeds:
            raise SystemExit("%s: seeds differ from %s's" % (credit, base))
        final, mean = [x["final_success"] for x in rs], [x["mean_success"] for x in rs]
        mixed = sum(st["mixed_groups"] for x in rs for st in x["steps"]) / max(1, sum(st["scored_groups"] for x in rs for st in x["steps"]))
        d_final = "—" if credit == base else fmt(paired(final, [x["final_success"] for x in runs[base][1]]))
        d_mean = "—" if credit == base else fmt(paired(mean, [x["mean_success"] for x in runs[base][1]]))
        lines.append("| %s | %s | %s | %s | %s | %.1f%% | %.0f |" % (
            credit, fmt(mean_interval(final)).replace("+", ""), d_final, fmt(mean_interval(mean)).replace("+", ""), d_mean,
            100 * mixed, sum(x["wall_s"] for x in rs) / len(rs)))
    lines += ["", "Commands (load average at start → end):", ""]
    lines += ["- `%s` (%.1f → %.1f)" % (cmd, m["loadavg_start"][0], m["loadavg_end"][0]) for cmd, _, m in runs.values()]
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--first-seed", type=int, default=200)
    ap.add_argument("--seeds", type=int, default=12)
    ap.add_argument("--batches", type=int, default=4, help="batches of 8 prompts per seed (the pool has 4)")
    ap.add_argument("--repeats", type=int, default=4, help="forests per batch and sampler, each with its own reference")
    ap.add_argument("--samplers", default=",".join(SAMPLERS))
    ap.add_argument("--credits", default=",".join(ADVANTAGES))
    ap.add_argument("--processes", type=int, default=2)
    ap.add_argument("--out", required=True)
    ap.add_argument("--report-only", action="store_true", help="rewrite gradient.md from OUT/gradient.json")
    ap.add_argument("--training", nargs="+", metavar="DIR",
                    help="instead: write OUT/training.md from run.py folders of one sampler under several credits")
    args = ap.parse_args()
    if args.training:
        text = training_report([Path(d) for d in args.training])
        Path(args.out).mkdir(parents=True, exist_ok=True)
        (Path(args.out) / "training.md").write_text(text)
        print(text)
        return 0
    if args.report_only:
        result = json.loads((Path(args.out) / "gradient.json").read_text())
        result["summary"] = summarize(result["per_seed"], result["samplers"], result["credits"])
        (Path(args.out) / "gradient.json").write_text(json.dumps(result, separators=(",", ":")) + "\n")
        (Path(args.out) / "gradient.md").write_text(markdown(result))
        return 0
    if args.first_seed < 60:
        raise SystemExit("--first-seed: seeds 0–59 are the committed run's; study on tuning seeds (60 and up)")
    samplers, credits = args.samplers.split(","), args.credits.split(",")
    if "treerl" not in credits or any(c not in ADVANTAGES for c in credits):
        raise SystemExit("--credits: a list of %s that includes treerl" % ", ".join(ADVANTAGES))
    t0, load0 = time.time(), os.getloadavg()
    seeds = list(range(args.first_seed, args.first_seed + args.seeds))
    jobs = [(s, args.batches, args.repeats, samplers, credits) for s in seeds]
    if args.processes > 1:
        with mp.get_context("spawn").Pool(args.processes) as pool:
            per_seed = pool.map(study_seed, jobs, chunksize=1)
    else:
        per_seed = [study_seed(j) for j in jobs]
    result = {"command": "python3 examples/llm/gradient_study.py " + " ".join(sys.argv[1:]), "seeds": seeds,
              "batches": args.batches, "repeats": args.repeats, "samplers": samplers, "credits": credits,
              "config": asdict(Config()), "wall_s": time.time() - t0,
              "loadavg": ["%.1f" % load0[0], "%.1f" % os.getloadavg()[0]],
              "reference_success": sum(sum(r["reference_success"]) / len(r["reference_success"]) for r in per_seed) / len(per_seed),
              "per_seed": per_seed, "summary": summarize(per_seed, samplers, credits)}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "gradient.json").write_text(json.dumps(result, separators=(",", ":")) + "\n")
    (out / "gradient.md").write_text(markdown(result))
    print(markdown(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
