"""What a seeded random projection of the hidden states (trace_alloc.projection) does to TRACE:
the cosine error between siblings as a function of k, how often the plan changes, and the bytes.

    python3 examples/llm/projection_study.py --out examples/llm/results/projection   # the committed run

It trains the example's TRACE sampler (train.py's loop) on a few seeds and records every forest
the sampler sends. Then, for each forest and each k (and several projection seeds), it projects
the embeddings, plans with the settings the sampler used, and compares with the plan from the
full hidden states: the share of forests (those with at least one fork) whose plan changed at all, the share of branches that
moved to another node, and the largest change of a priority weight. Cosine errors are measured
over every sibling pair of those forests, and on synthetic pairs in 64 and 4096 dimensions at
fixed cosines (the error depends on k and the pair's geometry, not on the original dimension).
Bytes are those of the add-columns payload and of the JSON embeddings of add-nodes.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import pickle
import sys
import time
import warnings
from dataclasses import asdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parents[1] / "python"))
warnings.filterwarnings("ignore")

import numpy as np  # noqa: E402
import torch  # noqa: E402
import transformers  # noqa: E402

import trace_alloc  # noqa: E402
from trace_alloc._columns import arrow_stream, check_forest, have_pyarrow, npz_bytes  # noqa: E402
from trace_alloc.projection import RandomProjection  # noqa: E402

from allocator_client import AllocatorClient, service_command  # noqa: E402
from forest import Forest, Grower  # noqa: E402
from samplers import TraceSampler  # noqa: E402
from train import Config, policy_update, seed_setup  # noqa: E402


class RecordingClient(AllocatorClient):
    """The sampler's client, keeping a copy of every forest it sends."""

    def __init__(self):
        super().__init__()
        self.forests = []

    def sync_forest(self, ids, tree_offset, parent, reward, visits, uncertainty, terminal, embedding):
        self.forests.append({"ids": list(ids), "tree_offset": tree_offset.copy(), "parent": parent.copy(),
                             "reward": reward.copy(), "visits": visits.copy(), "uncertainty": uncertainty.copy(),
                             "terminal": terminal.copy(), "embedding": embedding.copy()})
        super().sync_forest(ids, tree_offset, parent, reward, visits, uncertainty, terminal, embedding)


def record_forests(seed: int, steps: int, hidden: int) -> tuple[list[dict], int]:
    """The forests TRACE's sampler sent while training `steps` steps on `seed`."""
    cfg = Config(seed=seed, steps=steps, hidden=hidden)
    prompts, model, _ = seed_setup(cfg)
    opt = torch.optim.Adam(model.parameters(), lr=cfg.learning_rate)
    gen = torch.Generator().manual_seed(seed * 1009 + 7)
    client = RecordingClient()
    try:
        sampler = TraceSampler(client, cfg.trace_rollouts_per_tree)
        for step in range(steps):
            batch = [prompts[(step * cfg.prompts_per_step + i) % len(prompts)] for i in range(cfg.prompts_per_step)]
            forest = Forest(batch)
            sampler.grow(Grower(forest, model, gen, cfg.tokens_per_step), model)
            policy_update(model, opt, forest, len(batch))
    finally:
        client.close()
    return client.forests, cfg.trace_rollouts_per_tree * cfg.prompts_per_step


def sibling_pairs(f: dict) -> tuple[np.ndarray, np.ndarray]:
    """Row indices (i, j) of every pair of siblings in the forest."""
    rows_i, rows_j = [], []
    off = f["tree_offset"]
    for t in range(len(off) - 1):
        lo, hi = int(off[t]), int(off[t + 1])
        children: dict[int, list[int]] = {}
        for r in range(lo + 1, hi):
            children.setdefault(int(f["parent"][r]), []).append(r)
        for group in children.values():
            for a in range(len(group)):
                for b in range(a + 1, len(group)):
                    rows_i.append(group[a])
                    rows_j.append(group[b])
    return np.array(rows_i, dtype=np.int64), np.array(rows_j, dtype=np.int64)


def cosines(e: np.ndarray, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    e = e.astype(np.float64)
    num = np.sum(e[i] * e[j], axis=1)
    den = np.linalg.norm(e[i], axis=1) * np.linalg.norm(e[j], axis=1)
    return np.clip(num / den, -1, 1)


def plan_of(ta, f: dict, embedding: np.ndarray, total: int) -> dict:
    """The plan of this forest alone (the service's trees are replaced by it)."""
    live = [t.id for t in ta.values()]
    if live:
        ta.remove_trees(live)
    ta.add_forest(f["tree_offset"], f["parent"], f["reward"], f["visits"], f["uncertainty"], f["terminal"],
                  embedding, tree_id=f["ids"])
    return ta.plan_json(total_budget=total, min_per_tree=1, scores=True)


def branches(plan: dict) -> dict:
    return {(t["id"], a["node"]): a["branches"] for t in plan["trees"] for a in t["allocations"]}


def weights(plan: dict) -> dict:
    return {(t["id"], s["node"]): s["weight"] for t in plan["trees"] for s in t["scores"]}


def compare(full: dict, projected: dict, total: int) -> dict:
    a, b = branches(full), branches(projected)
    moved = sum(abs(a.get(k, 0) - b.get(k, 0)) for k in set(a) | set(b)) / 2
    wa, wb = weights(full), weights(projected)
    pruned_a = {(t["id"], n) for t in full["trees"] for n in t["pruned"]}
    pruned_b = {(t["id"], n) for t in projected["trees"] for n in t["pruned"]}
    return {"changed": a != b, "moved_share": moved / total, "max_weight_change": max((abs(wa[k] - wb[k]) for k in wa), default=0.0),
            "pruned_changed": pruned_a != pruned_b}


def synthetic(ks: list[int], dims=(64, 4096), cos_levels=(0.9, 0.99, 0.999), pairs: int = 400, seeds: int = 3) -> list[dict]:
    """Mean |Δcos| of pairs at a fixed cosine, by original dimension and k."""
    out = []
    for d in dims:
        for c in cos_levels:
            rng = np.random.default_rng(int(d * 1000 + c * 1000))
            u = rng.normal(size=(pairs, d))
            w = rng.normal(size=(pairs, d))
            w -= np.sum(w * u, 1, keepdims=True) / np.sum(u * u, 1, keepdims=True) * u  # orthogonal to u
            w *= (np.linalg.norm(u, axis=1) / np.linalg.norm(w, axis=1))[:, None]
            v = c * u + math.sqrt(1 - c * c) * w  # cos(u, v) = c exactly
            ii = np.arange(pairs)
            for k in ks:
                errs = []
                for s in range(seeds):
                    p = RandomProjection(d, k, seed=s)
                    errs.append(np.abs(cosines(np.concatenate([p(u), p(v)]), ii, ii + pairs) - c))
                errs = np.concatenate(errs)
                out.append({"dim": d, "cos": c, "k": k, "mean_abs_error": float(errs.mean()),
                            "p99_abs_error": float(np.quantile(errs, 0.99))})
    return out


def json_bytes_per_node(embedding: np.ndarray) -> float:
    """Bytes of the embeddings as add-nodes sends them (JSON numbers from float32), per node."""
    return float(np.mean([len(json.dumps([float(x) for x in row])) for row in embedding[:200]]))


def summary(r: dict) -> str:
    """The results as markdown tables."""
    c = r["config"]
    embedding = c["hidden"] * 4
    other = (r["last_forest_bytes"]["full"]["npz"] - r["nodes_in_last_forest"] * embedding) / r["nodes_in_last_forest"]
    lines = [
        "# Random projection of the hidden states: what it does to TRACE (dim %d)" % c["hidden"], "",
        "`python3 examples/llm/projection_study.py --hidden %d --seeds %d --steps %d --projection-seeds %d --ks %s --out examples/llm/results/projection/dim%d`: "
        "%d forests recorded from the TRACE sampler (%d with a fork; %.0f nodes on average), %d sibling pairs "
        "(cosine p10 %.3f, median %.4f, p90 %.4f), %d projection seeds per k, plans with totalBudget %d, "
        "minPerTree 1; %.0f s, load average %.1f at the end." % (
            c["hidden"], c["seeds"], c["steps"], c["projection_seeds"], ",".join(str(k["k"]) for k in r["per_k"]), c["hidden"],
            r["forests"], r["forests_with_a_fork"], r["nodes_per_forest"], r["sibling_pairs"], r["sibling_cosine"]["p10"],
            r["sibling_cosine"]["p50"], r["sibling_cosine"]["p90"], c["projection_seeds"], c["total_budget"], r["seconds"],
            r["loadavg"][0]), "",
        "| k | plans changed | branches moved | pruned set changed | median max abs(Δw) | mean abs(Δcos) | p99 abs(Δcos) "
        "| distance rel. error p50 | p99 | embedding bytes / node: float32 | JSON |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
        "| %d (none) | — | — | — | — | — | — | — | — | %d | %.0f |" % (c["hidden"], embedding, r["full_json_bytes_per_node"]),
    ]
    for k in r["per_k"]:
        lines.append("| %d | %.0f%% | %.1f%% | %.0f%% | %.3f | %.4f | %.3f | %.3f | %.2f | %d | %.0f |" % (
            k["k"], 100 * k["plan_changed_share"], 100 * k["branches_moved_share"], 100 * k["pruned_changed_share"],
            k["max_weight_change_median"], k["cos_abs_error"]["mean"], k["cos_abs_error"]["p99"],
            k["distance_rel_error"]["p50"], k["distance_rel_error"]["p99"], 4 * k["k"], k["json_bytes_per_node"]))
    lines += ["", "Plans changed: share of forests with a fork whose allocation moved at least one branch; branches "
              "moved: share of the round's budget that starts at another node; distance: d = (1 − cos)/2 between "
              "siblings, relative error over pairs with d > 1e-6. The rest of a node in the binary batch: %.0f bytes." % other,
              "", "Synthetic pairs at a fixed cosine (400 pairs × 3 projection seeds): mean and p99 of abs(Δcos).", "",
              "| original dim | cosine | " + " | ".join("k = %d" % k["k"] for k in r["per_k"]) + " |",
              "|---|---|" + "---|" * len(r["per_k"])]
    for d in sorted({x["dim"] for x in r["synthetic"]}):
        for cos in sorted({x["cos"] for x in r["synthetic"]}):
            cells = [x for x in r["synthetic"] if x["dim"] == d and x["cos"] == cos]
            lines.append("| %d | %g | %s |" % (d, cos, " | ".join("%.4f / %.3f" % (x["mean_abs_error"], x["p99_abs_error"])
                                                                    for x in sorted(cells, key=lambda x: x["k"]))))
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--hidden", type=int, default=64, help="the policy's hidden size (the embedding dimension)")
    ap.add_argument("--ks", default="2,4,8,16,32")
    ap.add_argument("--projection-seeds", type=int, default=5)
    ap.add_argument("--out", required=True)
    ap.add_argument("--cache", help="a file keeping the recorded forests between runs (reused when it exists)")
    ap.add_argument("--report-only", action="store_true", help="rewrite summary.md from results.json")
    args = ap.parse_args()
    if args.report_only:
        (Path(args.out) / "summary.md").write_text(summary(json.loads((Path(args.out) / "results.json").read_text())))
        return
    torch.set_num_threads(1)
    transformers.logging.set_verbosity_error()
    ks = [int(k) for k in args.ks.split(",")]
    t0 = time.perf_counter()
    forests, total = [], 0
    cache = Path(args.cache) if args.cache else None
    if cache is not None and cache.exists():
        with open(cache, "rb") as fh:
            forests, total = pickle.load(fh)
    else:
        for seed in range(args.seeds):
            fs, total = record_forests(seed, args.steps, args.hidden)
            forests += fs
        if cache is not None:
            with open(cache, "wb") as fh:
                pickle.dump((forests, total), fh)
    print("recorded %d forests in %.0f s" % (len(forests), time.perf_counter() - t0), file=sys.stderr, flush=True)

    pair_rows = [sibling_pairs(f) for f in forests]
    per_k = []
    with trace_alloc.Service(service_command()) as ta:
        full_plans = [plan_of(ta, f, f["embedding"], total) for f in forests]
    for k in ks:
        with trace_alloc.Service(service_command()) as ta:  # a service's dimension is fixed by its first tree
            cmp, cos_err, d_rel = [], [], []
            for s in range(args.projection_seeds):
                p = RandomProjection(args.hidden, k, seed=s)
                for f, full, (i, j) in zip(forests, full_plans, pair_rows):
                    if not i.size:
                        continue  # no fork yet (a first round): embeddings cannot change its plan
                    exact = p(f["embedding"].astype(np.float64))
                    e = exact.astype(np.float32)  # what a trainer sends
                    cmp.append(compare(full, plan_of(ta, f, e, total), total))
                    if i.size:
                        # The projection's own error, in float64 (float32 rounding of near-duplicates aside).
                        before, after = cosines(f["embedding"], i, j), cosines(exact, i, j)
                        cos_err.append(np.abs(after - before))
                        d0 = (1 - before) / 2
                        keep = d0 > 1e-6
                        d_rel.append(np.abs(((1 - after) / 2)[keep] - d0[keep]) / d0[keep])
            cos_err, d_rel = np.concatenate(cos_err), np.concatenate(d_rel)
            e = RandomProjection(args.hidden, k, seed=0)(forests[-1]["embedding"]).astype(np.float32)
            per_k.append({
                "k": k, "plans": len(cmp),
                "plan_changed_share": float(np.mean([c["changed"] for c in cmp])),
                "branches_moved_share": float(np.mean([c["moved_share"] for c in cmp])),
                "pruned_changed_share": float(np.mean([c["pruned_changed"] for c in cmp])),
                "max_weight_change_median": float(np.median([c["max_weight_change"] for c in cmp])),
                "cos_abs_error": {"mean": float(cos_err.mean()), "p50": float(np.median(cos_err)),
                                  "p99": float(np.quantile(cos_err, 0.99)), "max": float(cos_err.max())},
                "distance_rel_error": {"mean": float(d_rel.mean()), "p50": float(np.median(d_rel)),
                                       "p99": float(np.quantile(d_rel, 0.99))},
                "json_bytes_per_node": json_bytes_per_node(e),
            })
            print("k=%d done" % k, file=sys.stderr, flush=True)
    last = forests[-1]
    forest_bytes = {}
    for name, emb in [("full", last["embedding"])] + [("k=%d" % k, RandomProjection(args.hidden, k)(last["embedding"]).astype(np.float32)) for k in ks]:
        checked = check_forest(last["tree_offset"], last["parent"], last["reward"], last["visits"], last["uncertainty"],
                               last["terminal"], emb, last["ids"])
        forest_bytes[name] = {"npz": len(npz_bytes(checked)), **({"arrow": len(arrow_stream(checked))} if have_pyarrow() else {})}
    all_pairs = np.concatenate([cosines(f["embedding"], i, j) for f, (i, j) in zip(forests, pair_rows) if i.size])
    result = {
        "config": {**asdict(Config(hidden=args.hidden)), "seeds": args.seeds, "steps": args.steps,
                   "projection_seeds": args.projection_seeds, "total_budget": total},
        "forests": len(forests), "forests_with_a_fork": sum(1 for i, _ in pair_rows if i.size),
        "nodes_per_forest": float(np.mean([f["parent"].shape[0] for f in forests])),
        "sibling_pairs": int(all_pairs.size),
        "sibling_cosine": {"p10": float(np.quantile(all_pairs, 0.1)), "p50": float(np.median(all_pairs)),
                           "p90": float(np.quantile(all_pairs, 0.9))},
        "full_json_bytes_per_node": json_bytes_per_node(last["embedding"]),
        "per_k": per_k, "synthetic": synthetic(ks), "last_forest_bytes": forest_bytes,
        "nodes_in_last_forest": int(last["parent"].shape[0]), "seconds": time.perf_counter() - t0,
        "loadavg": os.getloadavg(), "torch": torch.__version__,
    }
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(result, indent=1))
    (out / "summary.md").write_text(summary(result))
    print(json.dumps({k: result[k] for k in ("forests", "sibling_pairs", "sibling_cosine", "seconds")}))


if __name__ == "__main__":
    main()
