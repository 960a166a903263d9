"""Rule exploration on tuning seeds: examples/llm's training loop with TRACE candidates allocated
in process by `proto_alloc` (no service), against independent chains, paired by seed.

    python3 examples/llm/tune.py --first-seed 200 --seeds 12 --variants v3,gate-pair --out /tmp/tune
    python3 examples/llm/tune.py --check --variants gate-pair,v3,trie-v4,v3-next,v3-next-k16 --first-seed 200 --seeds 1 --steps 3   # prototype = the service

Variants are named in VARIANTS (knobs over proto_alloc.V3). `--signals` records fork_signals.py's
per-step measures (what a fork costs and gives against a fresh chain) in runs.json. `--credit treerl-leaf` trains on
TreeRL's per-leaf credit (a node shared by L finished leaves weighs √L·(GA + LA)).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict
from pathlib import Path

import torch
import transformers

import train as T
from forest import Grower
from allocator_view import PrefixTrie
from proto_alloc import V3, plan as proto_plan
from samplers import interleave
from stats import mean_interval  # type: ignore
from tasks import get_task


def mean_ci(xs):
    r = mean_interval(xs)
    return r["mean"], r["ci95"][0], r["ci95"][1]

VARIANTS = {
    "v3": {},
    "gate-pair": {"gate": "pair"},
    "gate-group": {"gate": "group"},
    "gate-never": {"gate": "never"},
    "gate-tree": {"gate": "tree"},
    "mix": {"gate": "pair", "pass": "mix"},
    "mix-b2": {"gate": "pair", "pass": "mix", "beta": 2.0},
    "mix-k8": {"gate": "pair", "pass": "mix", "kappa": 8.0},
    "mix-k2": {"gate": "pair", "pass": "mix", "kappa": 2.0},
    "mix-e50": {"gate": "pair", "pass": "mix", "eta": 0.5},
    "mix-sig": {"gate": "pair", "pass": "mix", "signal": "mixroot"},
    "pair-k8": {"gate": "pair", "kappa": 8.0},
    "pair-k2": {"gate": "pair", "kappa": 2.0},
    # Where in a region a fork starts (v4 = gate-pair spreads it equally over the region's chain).
    "pair-late": {"gate": "pair", "region": "late"},
    "pair-deep": {"gate": "pair", "region": "deep"},
    "pair-late-k16": {"gate": "pair", "region": "late", "kappa": 16.0},
    "pair-k16": {"gate": "pair", "kappa": 16.0},
    "pair-deep-k16": {"gate": "pair", "region": "deep", "kappa": 16.0},
    # More forking on the same evidence: v4 with a larger --contest-gain.
    "pair-k64": {"gate": "pair", "kappa": 64.0},
    # t5: a base fork share beside the fresh one (candidate v5)
    "base1": {"gate": "pair", "base": 1.0},
    "base3": {"gate": "pair", "base": 3.0},
    "base1-nu": {"gate": "pair", "base": 1.0, "base_by": "nu-entropy"},
    "base1-all": {"gate": "pair", "base": 1.0, "base_where": "all"},
    "base3-all": {"gate": "pair", "base": 3.0, "base_where": "all"},
    "base1-eq": {"gate": "pair", "base": 1.0, "base_by": "equal"},
    # t7: claims as shares of tokens, so a cheap fork gets more branches (candidate v5)
    "cost": {"gate": "pair", "cost": "tokens"},
    "cost-base1": {"gate": "pair", "cost": "tokens", "base": 1.0},
    "cost-base1-all": {"gate": "pair", "cost": "tokens", "base": 1.0, "base_where": "all"},
    # t8: as many forks as entropy forking makes (about 90% of finished rollouts), beside v4's contest
    "base9-all": {"gate": "pair", "base": 9.0, "base_where": "all"},
    # its ablation: the same base share without the sibling contrast (no contest emission)
    "base9-all-k0": {"gate": "pair", "base": 9.0, "base_where": "all", "kappa": 0.0},
    # t10: the base share on the 2 unforked nodes of highest next-turn entropy, as entropy forking picks
    "base9-all-top2": {"gate": "pair", "base": 9.0, "base_where": "all", "base_top": 2},
    # t11: the uncertainty the input format defines (after the step: the next turn's entropy)
    # instead of the turn's own entropy, under v3 and v4's knobs
    "v3-next": {"unc": "next"},
    "gate-pair-next": {"gate": "pair", "unc": "next"},
    # t13: plan on the trie of distinct prefixes (identical turns from one state share a node)
    "trie-v4": {"gate": "pair", "trie": True},
    "trie-v3": {"trie": True},
    "trie-v4-k16": {"gate": "pair", "trie": True, "kappa": 16.0},
    "trie-v3-k16": {"trie": True, "kappa": 16.0},
    "base9-all-top2-k0": {"gate": "pair", "base": 9.0, "base_where": "all", "base_top": 2, "kappa": 0.0},
    # t16: v3 with the next turns' entropy and a larger contest gain: more of the budget follows
    # the uncertainty gaps that v3 counts between failed siblings
    "v3-next-k8": {"unc": "next", "kappa": 8.0},
    "v3-next-k16": {"unc": "next", "kappa": 16.0},
    # t17: the gate closes only once both siblings have been tried twice (a single failure is
    # not a dead branch); in the simulations level with v3 on plain trees and near v4 on tries
    "visits2-next": {"gate": "visits", "gate_m": 2, "unc": "next"},
    "visits2": {"gate": "visits", "gate_m": 2},
    # t18: v5 (visits2-next) with a larger contest gain: κ scales every contested fork's claim
    # against the root's fresh share of 1, so it sets how many forks the same evidence buys
    # (v3 with the next turns' entropy went from behind chains to level as κ rose 4 → 8 → 16, t16)
    "visits2-next-k16": {"gate": "visits", "gate_m": 2, "unc": "next", "kappa": 16.0},
    "visits2-next-k64": {"gate": "visits", "gate_m": 2, "unc": "next", "kappa": 64.0},
    # t24: v5 whose pass down a kept child is spread over that child's region by each open node's
    # next-turn entropy (where the policy hesitated) instead of equally
    "visits2-next-hes": {"gate": "visits", "gate_m": 2, "unc": "next", "region": "hesitation"},
    # t19: v5 with base9-all's fork share, in every tree (the ablation) or only in trees whose base
    # forks cost at most a third of a chain on average (the cost gate)
    "v5-base9-all": {"gate": "visits", "gate_m": 2, "unc": "next", "base": 9.0, "base_where": "all"},
    "v5-base9-cheap": {"gate": "visits", "gate_m": 2, "unc": "next", "base": 9.0, "base_where": "cheap"},
    # t20: entropy forking's placement (the base on the 2 unforked nodes of highest next-turn
    # entropy) on v5, only in trees where that entropy stands out (1.5 times the mean of the nodes
    # the base could use) and the forks are cheap; the ablations drop one gate each
    "v5-top2-cheap-peak": {"gate": "visits", "gate_m": 2, "unc": "next", "base": 9.0, "base_top": 2,
                           "base_where": "cheap-peak"},
    "v5-top2-peak": {"gate": "visits", "gate_m": 2, "unc": "next", "base": 9.0, "base_top": 2, "base_where": "peak"},
    "v5-top2-cheap": {"gate": "visits", "gate_m": 2, "unc": "next", "base": 9.0, "base_top": 2, "base_where": "cheap"},
    # t21: the same two gates with the cost counted in turns, which the forest carries (its
    # depths), instead of generated tokens, which it does not: the form a library rule could take
    "v5-top2-cheap-peak-turns": {"gate": "visits", "gate_m": 2, "unc": "next", "base": 9.0, "base_top": 2,
                                 "base_where": "cheap-peak", "base_cost_unit": "turns"},
    # t25: v5 with a bound on what its own forks cost: a claim on a node from which a rollout costs
    # more than half a chain (t23's bound) moves to the root, counted in generated tokens (which
    # the forest does not carry) or in turns (its depths: the ablation, which closes about as many
    # claims on both tasks instead of the calculator's dear ones)
    "v5-fork-cost-half": {"gate": "visits", "gate_m": 2, "unc": "next", "fork_cost_max": 0.5},
    "v5-fork-cost-half-turns": {"gate": "visits", "gate_m": 2, "unc": "next", "fork_cost_max": 0.5,
                                "fork_cost_unit": "turns"},
    "v5-fork-cost-off": {"gate": "visits", "gate_m": 2, "unc": "next", "fork_cost_max": 5.0},
}

STATS: dict[str, dict] = {}


class ProtoSampler:
    def __init__(self, name: str, knobs: dict, per_tree: int = 2, check=None):
        self.name, self.knobs, self.per_tree, self.check = name, knobs, per_tree, check
        self.plans = self.root = self.placed = 0
        self.mismatches = 0
        self.alloc_s = 0.0
        self.diag: dict = {"cost_hist": {"tokens": [0.0] * 10, "turns": [0.0] * 10}}

    def grow(self, g: Grower, model) -> None:
        f = g.forest
        while g.remaining() > 0:
            t0 = time.perf_counter()
            p = proto_plan(f, self.per_tree * len(f.roots), self.knobs, diag=self.diag)
            self.alloc_s += time.perf_counter() - t0
            if self.check is not None:
                theirs = self.check(f, self.knobs)
                if theirs != p:
                    self.mismatches += 1
            self.plans += 1
            per_tree = []
            for t, allocs in enumerate(p):
                starts = []
                for v, b in allocs:
                    starts += [v] * b
                    self.placed += b
                    if v == f.roots[t]:
                        self.root += b
                per_tree.append(starts)
            if g.run(interleave(per_tree)) == 0:
                break
        d = self.diag
        STATS[self.name] = {"plans": self.plans, "root_share": self.root / max(1, self.placed),
                            "mismatches": self.mismatches, "alloc_s": self.alloc_s,
                            # per (plan, live tree): a reached contested fork; the budget's mass off the
                            # root before rounding, and its whole branches off the root after
                            "contested_share": d.get("contested", 0) / max(1, d.get("trees", 0)),
                            "fork_mass_share": d.get("fork_mass", 0.0) / max(1, d.get("budget", 0)),
                            "fork_unit_share": d.get("fork_units", 0) / max(1, d.get("budget", 0)),
                            "base_tree_share": d.get("base_trees", 0) / max(1, d.get("trees", 0)),
                            # t23: the claims on non-root nodes by the relative cost of a rollout
                            # started there, in tenths of a chain's (the last bin: 0.9 and over),
                            # counted in generated tokens and in turns
                            "claim_by_cost": d.get("cost_hist")}


def leaf_advantages(forest) -> dict[int, float]:
    """TreeRL per leaf: every finished leaf is a sample; node n's turn in each of its L leaves
    carries (GA + LA)/√L, so in a token-summed loss the node weighs √L·(GA + LA)."""
    return {v: a * forest.nodes[v].visits for v, a in forest.advantages().items()}


def policy_update(model, opt, forest, prompts, advantage="treerl"):
    if advantage != "treerl-leaf":
        return ORIGINAL_UPDATE(model, opt, forest, prompts, advantage)
    adv = leaf_advantages(forest)
    if not adv:
        return 0.0, 0
    seqs, weights = forest.carriers(adv)
    model.train()
    loss = -T.weighted_log_prob(model, seqs, weights) / prompts
    opt.zero_grad()
    loss.backward()
    opt.step()
    model.eval()
    return float(loss.detach()), len(adv)


ORIGINAL_UPDATE = T.policy_update


def service_checker():
    """The service's plan of the same forest, as (node, branches) per tree, under the rule and input
    a variant's knobs stand for: v4 for gate "pair", v5 for gate "visits" with gate_m 2, v3 for the
    default gate (other gates and knobs have no service counterpart); of the forest's prefix trie with `trie`, with the next turns'
    entropy as the uncertainty with unc="next", with the plan's `contestGain` set to `kappa`. So
    "gate-pair", "v3", "trie-v4", "v3-next", "gate-pair-next", "visits2", "visits2-next", the κ
    variants of v3 and v4 ("pair-k16", "v3-next-k16", ...) must match the service exactly."""
    from allocator_client import AllocatorClient
    from samplers import pack
    clients: dict = {}

    def check(f, knobs):
        other = sorted(set(knobs) - {"gate", "gate_m", "trie", "unc", "kappa"})
        gate = (knobs.get("gate", "always"), knobs.get("gate_m", 1) if knobs.get("gate") == "visits" else None)
        rules = {("always", None): "v3", ("pair", None): "v4", ("visits", 2): "v5"}
        if other or gate not in rules:
            raise SystemExit("--check: the service has no counterpart of knobs %s (only gate pair, always or visits with gate_m 2, "
                             "trie, unc and kappa)" % ", ".join(other or ["gate=%s gate_m=%s" % gate]))
        rule = rules[gate]
        if rule not in clients:  # one service per rule, started on first use
            clients[rule] = AllocatorClient(rule)
        client = clients[rule]
        f = PrefixTrie(f) if knobs.get("trie") else f
        a = pack(f, f.nodes[f.nodes[f.roots[0]].children[0]].embedding.shape[0] if f.nodes[f.roots[0]].children else 64, "c",
                 uncertainty=knobs.get("unc", "turn"))
        client.sync_forest(a["ids"], a["tree_offset"], a["parent"], a["reward"], a["visits"], a["uncertainty"],
                           a["terminal"], a["embedding"])
        plan = client.plan(total_budget=2 * len(f.roots), min_per_tree=1, contest_gain=knobs.get("kappa", V3["kappa"]))
        out = []
        for tree in plan["trees"]:
            t = int(tree["id"][1:])
            out.append([(f.tree_nodes[t][x["node"]], x["branches"]) for x in tree["allocations"]])
        return out
    return check


def run_seed(args) -> list[dict]:
    cfg_dict, names, check, signals = args
    torch.set_num_threads(1)
    if signals:
        import fork_signals
        fork_signals.install()
    transformers.logging.set_verbosity_error()
    cfg = T.Config(**cfg_dict)
    table = T.eval_table(cfg)
    prompts, model, info = T.seed_setup(cfg, table)
    first = T.evaluate(model, prompts, cfg.eval_samples, table, get_task(cfg.task))
    checker = service_checker() if check else None
    out = []
    for name in names:
        if name in VARIANTS:
            T.make_sampler = (lambda n, c, client, _k=VARIANTS[name], _n=name: ProtoSampler(_n, _k, c.trace_rollouts_per_tree, checker))
        else:
            T.make_sampler = ORIGINAL_MAKE
        t0 = time.perf_counter()
        r = T.train(cfg, name, prompts, model, table, first)
        r["wall_s"] = time.perf_counter() - t0
        r.update(STATS.pop(name, {}))
        r["mixed"] = sum(s["mixed_groups"] for s in r["steps"]) / max(1, sum(s["scored_groups"] for s in r["steps"]))
        r["start_success"] = first["success"]
        st = r["steps"]
        cr, ct = sum(x["chain_rollouts"] for x in st), sum(x["chain_tokens"] for x in st)
        fr, ft = sum(x["fork_rollouts"] for x in st), sum(x["fork_tokens"] for x in st)
        # finished rollouts per step that started below the root, and a fork's generated tokens
        # over a chain's (cut rollouts are in neither)
        r["forks_per_step"], r["chains_per_step"] = fr / len(st), cr / len(st)
        r["fork_cost"] = (ft / fr) / (ct / cr) if fr and cr and ct else None
        if signals:
            r["fork_signals"] = [x["fork_signals"] for x in st]
        del r["steps"]
        print("seed %d %-12s final %.3f mixed %.3f root %.2f (%.0f s)%s" % (
            cfg.seed, name, r["final_success"], r["mixed"], r.get("root_share", 1.0), r["wall_s"],
            " mismatches %d/%d" % (r["mismatches"], r["plans"]) if check and name in VARIANTS else ""),
            file=sys.stderr, flush=True)
        out.append(r)
    return out


ORIGINAL_MAKE = T.make_sampler


def report(runs: list[dict], names: list[str]) -> str:
    by = {}
    for r in runs:
        by.setdefault(r["sampler"], {})[r["seed"]] = r
    base = by.get("independent", {})
    lines = ["| row | seeds | final % | Δ vs chains | mean % | mixed % | root share | contested trees % | fork mass % | forks / chains per step | fork cost | wall s |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for n in names:
        rs = by.get(n, {})
        seeds = sorted(rs)
        fin = [rs[s]["final_success"] * 100 for s in seeds]
        m, lo, hi = mean_ci(fin)
        d = [rs[s]["final_success"] * 100 - base[s]["final_success"] * 100 for s in seeds if s in base]
        dd = mean_ci(d) if len(d) >= 2 and n != "independent" else None
        diag = lambda key: ("%.1f" % (sum(rs[s][key] for s in seeds) / len(seeds) * 100)
                            if seeds and all(key in rs[s] for s in seeds) else "—")
        fc = [rs[s]["fork_cost"] for s in seeds if rs[s].get("fork_cost") is not None]
        avg = lambda key: sum(rs[s][key] for s in seeds) / len(seeds)
        fpc = ("%.1f / %.1f" % (avg("forks_per_step"), avg("chains_per_step"))
               if seeds and all("forks_per_step" in rs[s] for s in seeds) else "—")
        lines.append("| %s | %d | %.1f | %s | %.1f | %.1f | %.2f | %s | %s | %s | %s | %.0f |" % (
            n, len(seeds), m, "%+.1f [%+.1f, %+.1f]" % dd if dd else "—",
            sum(rs[s]["mean_success"] for s in seeds) / len(seeds) * 100,
            sum(rs[s]["mixed"] for s in seeds) / len(seeds) * 100,
            sum(rs[s].get("root_share", 1.0) for s in seeds) / len(seeds),
            diag("contested_share"), diag("fork_mass_share"), fpc,
            "%.2f" % (sum(fc) / len(fc)) if fc else "—",
            sum(rs[s]["wall_s"] for s in seeds) / len(seeds)))
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--first-seed", type=int, default=200)
    ap.add_argument("--seeds", type=int, default=12)
    ap.add_argument("--variants", default="v3")
    ap.add_argument("--baselines", default="independent")
    ap.add_argument("--credit", default="treerl-leaf")
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--signals", action="store_true", help="record fork_signals.py's per-step signals in runs.json")
    ap.add_argument("--out", default=None)
    ap.add_argument("--set", action="append", default=[])
    ap.add_argument("--task", default="calculator", help="a task of tasks.py, with its own settings (as run.py applies them)")
    ap.add_argument("--config", action="append", default=[],
                    help="KEY=VALUE: a train.Config field for every row, as run.py's --set (e.g. prefix_cache=true)")
    args = ap.parse_args()
    for item in args.set:
        k, v = item.split("=", 1)
        VARIANTS.update({k: json.loads(v)})
    names = [n for n in args.baselines.split(",") + args.variants.split(",") if n]
    task = get_task(args.task)
    settings = {}
    for item in args.config:
        k, v = item.split("=", 1)
        if k in ("seed", "task", "steps", "advantage"):
            raise SystemExit("--config: tune.py sets %r itself (--first-seed, --task, --steps, --credit)" % k)
        try:
            settings[k] = T.config_value(k, v)
        except LookupError as err:
            raise SystemExit("--config: %s" % err) from None
    cfg = asdict(T.Config(**{**task.settings.get("cpu", {}), "task": task.name, "steps": args.steps, "advantage": args.credit,
                             **settings}))
    jobs = [({**cfg, "seed": s}, names, args.check, args.signals) for s in range(args.first_seed, args.first_seed + args.seeds)]
    runs: list[dict] = []
    out = Path(args.out) if args.out else None
    if out:
        out.mkdir(parents=True, exist_ok=True)
    with ProcessPoolExecutor(args.workers) as pool:
        for rs in pool.map(run_seed, jobs):
            runs += rs
            if out:
                (out / "runs.json").write_text(json.dumps({"variants": {n: VARIANTS.get(n) for n in names}, "runs": runs,
                                                           "argv": sys.argv}, indent=1))
                (out / "summary.md").write_text(report(runs, names) + "\n")
    print(report(runs, names))
    return 0


if __name__ == "__main__":
    sys.exit(main())
