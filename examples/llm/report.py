"""From the runs of every seed to the summary: intervals over seeds, paired differences, the
compute-equivalence of independent chains with more tokens, and a verdict worded from the
intervals alone (separable means the paired 95% interval excludes 0)."""

from __future__ import annotations

import math

from stats import half_width, mean_interval, paired

BASELINE = "independent"
# Settings added to `train.Config` after runs were committed, at the value those runs had: a
# results.json whose config lacks one was made with that value (uncertainty's default has since
# moved to "next", with rule v5).
LATER_SETTINGS = {"advantage": "treerl", "forest_view": "plain", "uncertainty": "turn", "contest_gain": "", "tree_floor": "", "fork_keep": "", "prefix_cache": False, "update_rows": "leaves"}


def as_run(config: dict) -> dict:
    """A results.json config with every setting added since it was written at the value its runs had."""
    return {**LATER_SETTINGS, **config}

DEFAULT_TRACE = "trace"
# Independent chains with more tokens per step, by token multiplier.
CHAINS_BY_TOKENS = {1.0: "independent", 1.5: "independent-1.5x", 2.0: "independent-2x"}
LABELS = {
    "independent": "independent chains (GRPO)",
    "uniform": "uniform expansion (Tree-GRPO)",
    "entropy": "entropy forking (TreeRL/ARPO)",
    "trace": "TRACE, library default rule",
    "trace-v5": "TRACE, rule v5",
    "trace-v4": "TRACE, rule v4",
    "trace-v3": "TRACE, rule v3",
    "trace-v2": "TRACE, rule v2",
    "trace-learned": "TRACE, default rule, learned α, τ",
    "independent-1.5x": "independent chains, 1.5× tokens",
    "independent-2x": "independent chains, 2× tokens",
}


def _by_sampler(runs: list[dict], samplers: list[str]) -> dict[str, list[dict]]:
    """Each sampler's runs in seed order (a sampler may run on fewer seeds: `run.py --full-seeds`)."""
    by = {s: sorted((r for r in runs if r["sampler"] == s), key=lambda r: r["seed"]) for s in samplers}
    return {s: rs for s, rs in by.items() if rs}


def _paired_runs(a: list[dict], b: list[dict]) -> tuple[list[dict], list[dict]]:
    """The two samplers' runs on the seeds both ran, in seed order."""
    common = {r["seed"] for r in a} & {r["seed"] for r in b}
    return [r for r in a if r["seed"] in common], [r for r in b if r["seed"] in common]


def _steps_mean(r: dict, key: str) -> float:
    return sum(x[key] for x in r["steps"]) / len(r["steps"])


def _mixed_ratio(r: dict) -> float:
    scored = sum(x["scored_groups"] for x in r["steps"])
    return sum(x["mixed_groups"] for x in r["steps"]) / scored if scored else 0.0


# The turns the "lost at" shares are counted by, by task: 1, 2, ..., the last one "or later".
LOST_TURNS = {"calculator": 4, "recipe": 6}


def _task(r: dict) -> str:
    return r["config"].get("task", "calculator")


def _lost_keys(task: str) -> list[str]:
    last = LOST_TURNS.get(task, 4)
    return [str(t) for t in range(1, last)] + ["%d+" % last]


def _lost_shares(r: dict) -> dict[str, float]:
    """Of the failed rollouts of a run, the share lost at turn 1, 2, ... and the task's last
    counted turn or later."""
    keys = _lost_keys(_task(r))
    last = len(keys)
    counts = {k: 0 for k in keys}
    for x in r["steps"]:
        for turn, c in x["lost_at_turn"].items():
            counts[turn if int(turn) < last else keys[-1]] += c
    total = sum(counts.values())
    return {k: v / total if total else 0.0 for k, v in counts.items()}


def _fork_costs(rs: list[dict]) -> dict:
    """What a fork costs against a fresh chain, in generated tokens, over runs that recorded it
    (results from before these counts have none): per finished rollout started at the prompt
    and per finished fork, their ratio; and, over the failed rollouts, the share of their tokens
    generated from the turn each was lost at on — what a fork at the last node where the episode
    was still winnable regenerates."""
    out = {}
    have = [r for r in rs if "chain_tokens" in r["steps"][0]]
    if not have:
        return out
    def per(r, tokens, count):
        n = sum(x[count] for x in r["steps"])
        return sum(x[tokens] for x in r["steps"]) / n if n else None
    chain = [per(r, "chain_tokens", "chain_rollouts") for r in have]
    fork = [per(r, "fork_tokens", "fork_rollouts") for r in have]
    if all(c is not None for c in chain):
        out["chain_tokens"] = mean_interval(chain)
    ratios = [f / c for f, c in zip(fork, chain) if f is not None and c]
    if ratios:
        out["fork_tokens"] = mean_interval([f for f in fork if f is not None])
        out["fork_to_chain"] = mean_interval(ratios)
        out["forks_per_step"] = mean_interval([sum(x["fork_rollouts"] for x in r["steps"]) / len(r["steps"]) for r in have])
    decided = [sum(x["tokens_from_lost_turn"] for x in r["steps"]) / sum(x["failed_tokens"] for x in r["steps"])
               for r in have if sum(x["failed_tokens"] for x in r["steps"])]
    if decided:
        out["failed_from_lost_turn"] = mean_interval(decided)
    return out


def _mean_dicts(ds: list[dict[str, float]]) -> dict[str, float]:
    keys = sorted({k for d in ds for k in d})
    return {k: sum(d.get(k, 0.0) for d in ds) / len(ds) for k in keys}


def sampler_summary(rs: list[dict]) -> dict:
    points = len(rs[0]["curve"])
    out = {
        "final_success": mean_interval([r["final_success"] for r in rs]),
        "mean_success": mean_interval([r["mean_success"] for r in rs]),
        "curve": [{"tokens": rs[0]["curve"][i][0], **mean_interval([r["curve"][i][1] for r in rs])} for i in range(points)],
        "tokens_per_step": rs[0]["tokens_per_step"],
        "step_s": mean_interval([r["step_s"] for r in rs]),
        "generate_s": mean_interval([r["generate_s"] for r in rs]),
        "update_s": mean_interval([r["update_s"] for r in rs]),
        "rollouts_per_step": mean_interval([_steps_mean(r, "rollouts") for r in rs]),
        "successes_per_step": mean_interval([_steps_mean(r, "successes") for r in rs]),
        "batches_per_step": mean_interval([_steps_mean(r, "batches") for r in rs]),
        "mixed_group_ratio": mean_interval([_mixed_ratio(r) for r in rs]),
        "lost_at_turn": _mean_dicts([_lost_shares(r) for r in rs]),
        **_fork_costs(rs),
        "start_by_difficulty": _mean_dicts([r["start_by_difficulty"] for r in rs]),
        "final_by_difficulty": _mean_dicts([r["final_by_difficulty"] for r in rs]),
    }
    if "wall_s" in rs[0]:
        out["wall_s"] = mean_interval([r["wall_s"] for r in rs])
        out["cpu_s"] = mean_interval([r["cpu_s"] for r in rs])
    if "allocator_share" in rs[0]:
        out["allocator_share"] = mean_interval([r["allocator_share"] for r in rs])
        out["allocator_ms_per_step"] = mean_interval([1e3 * r["allocator_s"] for r in rs])
        out["plans_per_step"] = mean_interval([r["plans"] / len(r["steps"]) for r in rs])
        out["root_share"] = mean_interval([r["root_branches"] / r["planned_branches"] for r in rs])
        out["rule"] = sorted({str(r["rule"]) for r in rs})
    if "alpha" in rs[0]["steps"][-1]:
        alphas = [r["steps"][-1]["alpha"] for r in rs]
        taus = [r["steps"][-1]["tau"] for r in rs]
        out["learned"] = {"alpha_geomean": math.exp(sum(map(math.log, alphas)) / len(alphas)),
                          "alpha_range": [min(alphas), max(alphas)],
                          "tau_geomean": math.exp(sum(map(math.log, taus)) / len(taus)), "tau_range": [min(taus), max(taus)]}
    return out


def comparisons(samplers: list[str]) -> list[tuple[str, str]]:
    """The paired differences reported: every sampler against independent chains at equal tokens;
    the TRACE rows against the other tree samplers and each other; TRACE against chains with more
    tokens; chains with more tokens against chains."""
    have = set(samplers)
    pairs = [(s, BASELINE) for s in samplers if s != BASELINE and s in have and BASELINE in have]
    for t in (s for s in samplers if s.startswith("trace")):
        pairs += [(t, b) for b in ("uniform", "entropy") if b in have]
    pairs += [(a, b) for a, b in (("trace-v5", "trace"), ("trace-v5", "trace-v3"), ("trace", "trace-v4"), ("trace-v5", "trace-v4"), ("trace-v4", "trace-v3"), ("trace", "trace-v3"), ("trace", "trace-v2"), ("trace-learned", "trace")) if a in have and b in have]
    pairs += [(DEFAULT_TRACE, c) for c in ("independent-1.5x", "independent-2x") if DEFAULT_TRACE in have and c in have]
    return list(dict.fromkeys(pairs))


def compute_equivalence(by: dict[str, list[dict]]) -> dict | None:
    """Where TRACE's mean final success falls on the chains' final success against their token
    multiplier (1, 1.5, 2; linear in between), on the seeds all four rows ran: the tokens chains
    need to match it, as a multiple of TRACE's; None without the three chain rows and TRACE."""
    rows = [DEFAULT_TRACE] + list(CHAINS_BY_TOKENS.values())
    if any(s not in by for s in rows):
        return None
    common = set.intersection(*({r["seed"] for r in by[s]} for s in rows))
    mean = {s: sum(r["final_success"] for r in by[s] if r["seed"] in common) / len(common) for s in rows}
    chains = [(m, mean[s]) for m, s in sorted(CHAINS_BY_TOKENS.items())]
    target = mean[DEFAULT_TRACE]
    out = {"seeds": len(common), "chains": {str(m): v for m, v in chains}, "trace": target}
    if target <= chains[0][1]:
        out.update(multiplier=None, reading="at or below chains at 1× tokens: no saving")
        return out
    for (m0, v0), (m1, v1) in zip(chains, chains[1:]):
        if v0 < target <= v1:
            m = m0 + (m1 - m0) * (target - v0) / (v1 - v0)
            out.update(multiplier=m, reading="chains need about %.2f× TRACE's tokens (means, linear between measured rows)" % m)
            return out
    if target <= max(v for _, v in chains):
        # The chains' final success is not monotone in tokens here: say so instead of interpolating.
        out.update(multiplier=None, reading="chains' final success is not monotone in tokens here; no single multiplier")
        return out
    out.update(multiplier=None, reading="above chains at 2× tokens: a saving beyond 2×, not resolved by these rows")
    return out


def summarize(runs: list[dict], samplers: list[str]) -> dict:
    by = _by_sampler(runs, samplers)
    out = {s: sampler_summary(rs) for s, rs in by.items()}
    diffs = {}
    for a, b in comparisons(list(by)):
        ra, rb = _paired_runs(by[a], by[b])
        for metric in ("final_success", "mean_success"):
            diffs["%s - %s, %s" % (a, b, metric)] = paired([r[metric] for r in ra], [r[metric] for r in rb])
    return {"samplers": out, "paired_differences": diffs, "compute_equivalence": compute_equivalence(by)}


def _pts(v: dict, sign: bool = True) -> str:
    f = "%+.1f" if sign else "%.1f"
    return (f + " [" + f + ", " + f + "]") % (100 * v["mean"], 100 * v["ci95"][0], 100 * v["ci95"][1])


def _separable(v: dict) -> bool:
    return v["ci95"][0] > 0 or v["ci95"][1] < 0


def verdict(summary: dict, resolution: float = 0.03) -> list[str]:
    """Sentences that say only what the paired intervals allow."""
    s, d = summary["samplers"], summary["paired_differences"]
    if max(v["final_success"]["n"] for v in s.values()) < 2:
        return ["One seed: no interval, so no verdict."]
    lines = []
    key = "%s - %s, final_success" % (DEFAULT_TRACE, BASELINE)
    if key in d:
        v = d[key]
        h = half_width(v)
        rule = "/".join(s[DEFAULT_TRACE].get("rule", ["?"]))
        if _separable(v):
            word = "higher" if v["mean"] > 0 else "lower"
            lines.append("Final success of TRACE (rule %s) is separably %s than independent chains at equal tokens: %s points."
                         % (rule, word, _pts(v)))
        else:
            lines.append("Final success of TRACE (rule %s) and independent chains at equal tokens cannot be told apart: %s points "
                         "(95%%: TRACE is at most %.1f points worse and at most %.1f points better)."
                         % (rule, _pts(v), -100 * v["ci95"][0], 100 * v["ci95"][1]))
        lines.append("Resolution: the interval's half-width is %.1f points (%s the %.0f-point goal) over %d seeds."
                     % (100 * h, "within" if h <= resolution else "NOT within", 100 * resolution, v["n"]))
    for a, b in [(a, b) for a, b in comparisons(list(s)) if (a, b) != (DEFAULT_TRACE, BASELINE)]:
        v = d["%s - %s, final_success" % (a, b)]
        lines.append("%s − %s: %s, %s points (%d seeds)." % (a, b, "separable" if _separable(v) else "not separable", _pts(v), v["n"]))
    ce = summary.get("compute_equivalence")
    if ce:
        lines.append("Compute-equivalence: %s." % ce["reading"])
    return lines


def markdown(result: dict) -> str:
    """summary.md: success in %, differences in points, 95% t-intervals over seeds."""
    m, c, a = result["machine"], result["config"], result.get("allocator") or {}
    summ = result["summary"]
    s, d = summ["samplers"], summ["paired_differences"]
    n = len({r["seed"] for r in result["runs"]})
    asked = result.get("seeds_asked", n)
    seeds = "%d seeds" % n if n == asked else "%d of the %d seeds asked (the others did not start before the time limit)" % (n, asked)
    if not result.get("finished", True):
        seeds += ", written while the run was going on (it did not finish)"
    task = result.get("task", c.get("task", "calculator"))
    lines = ["# GPT-2 policy on the %s task: results" % task, "",
             "`%s` — %s, %d steps × %d generated tokens (compute-equivalence rows: 1.5× and 2×), %d prompts per step "
             "from a pool of %d; a %d-layer, %d-wide GPT-2 on %s; default trace-alloc rule in this run: %s; %s." % (
                 result["command"], seeds, c["steps"], c["tokens_per_step"], c["prompts_per_step"], c["prompt_pool"],
                 c["layers"], c["hidden"], c["device"], a.get("default_rule"), a.get("transport"))
             + (" TRACE rows' contest gain κ = %s (the rule's default otherwise)." % c["contest_gain"] if c.get("contest_gain") else "")
             + (" TRACE rows' tree floor q0 = %s (the rule's default otherwise)." % c["tree_floor"] if c.get("tree_floor") else "")
             + (" TRACE rows' fork keep η = %s (the rule's default otherwise)." % c["fork_keep"] if c.get("fork_keep") else ""), "",
             "## Verdict", ""] + ["- " + x for x in verdict(summ)] + ["",
             "## Success", "",
             "Final success: the policy after the last step, %d sampled episodes per prompt of the pool (temperature 1, "
             "the same random numbers for every sampler of a seed). Mean success: the mean of the learning curve's points "
             "after step 0. Δ: paired by seed against independent chains at equal tokens, in points." % c["eval_samples"], "",
             "| sampler | seeds | tokens / step | final success % | Δ final | mean success % | Δ mean | mixed-outcome groups % | "
             "rollouts / step | successful rollouts / step | generation batches / step | step s | allocator share % |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, v in s.items():
        df = d.get("%s - %s, final_success" % (name, BASELINE))
        dm = d.get("%s - %s, mean_success" % (name, BASELINE))
        lines.append("| %s | %d | %d | %s | %s | %s | %s | %s | %.1f | %.1f | %.1f | %.2f | %s |" % (
            name, v["final_success"]["n"], v["tokens_per_step"], _pts(v["final_success"], False), _pts(df) if df else "—",
            _pts(v["mean_success"], False), _pts(dm) if dm else "—", _pts(v["mixed_group_ratio"], False),
            v["rollouts_per_step"]["mean"], v["successes_per_step"]["mean"], v["batches_per_step"]["mean"],
            v["step_s"]["mean"], _pts(v["allocator_share"], False) if "allocator_share" in v else "—"))
    lines += ["", "## Paired differences (row − column, points, 95% t-interval over seeds; * separable)", "",
              "| difference | seeds | final success | mean success |", "|---|---|---|---|"]
    for a2, b2 in comparisons(list(s)):
        f, mm = d["%s - %s, final_success" % (a2, b2)], d["%s - %s, mean_success" % (a2, b2)]
        lines.append("| %s − %s | %d | %s%s | %s%s |" % (a2, b2, f["n"], _pts(f), " *" if _separable(f) else "",
                                                           _pts(mm), " *" if _separable(mm) else ""))
    ce = summ.get("compute_equivalence")
    if ce:
        lines += ["", "## Compute-equivalence", "",
                  "Mean final success over the %d seeds all these rows ran, independent chains with 1×, 1.5× and 2× the "
                  "tokens per step: %s; TRACE (default rule) at 1×: %.1f%%. Reading: %s." % (
                      ce["seeds"], ", ".join("%s× %.1f%%" % (k, 100 * v) for k, v in ce["chains"].items()),
                      100 * ce["trace"], ce["reading"])]
    diffs = sorted({k for v in s.values() for k in v["start_by_difficulty"]})
    lines += ["", "## By difficulty (fewest calls to the target), success % at step 0 → final", "",
              "| sampler | " + " | ".join("difficulty %s" % k for k in diffs) + " |", "|---|" + "---|" * len(diffs)]
    for name, v in s.items():
        lines.append("| %s | %s |" % (name, " | ".join("%.1f → %.1f" % (100 * v["start_by_difficulty"].get(k, 0), 100 * v["final_by_difficulty"].get(k, 0))
                                                       for k in diffs)))
    keys = _lost_keys(task)
    lines += ["", "## Where failed rollouts were lost (share of failed rollouts by the turn after which no continuation could succeed)", "",
              "| sampler | " + " | ".join("turn " + k for k in keys) + " |", "|---|" + "---|" * len(keys)]
    for name, v in s.items():
        lost = v["lost_at_turn"]
        lines.append("| %s | %s |" % (name, " | ".join("%.1f" % (100 * lost.get(k, 0)) for k in keys)))
    costs = [x for x in s if "chain_tokens" in s[x]]
    if costs:
        lines += ["", "## What a fork costs (generated tokens; finished rollouts only)", "",
                  "Fork / chain: a finished fork's tokens over a finished fresh chain's, in the same run. Failed rollouts' "
                  "tokens from the lost turn: the share of a failed rollout's tokens generated from the turn it was lost at "
                  "on, i.e. what a fork at the last node where it was still winnable regenerates.", "",
                  "| sampler | tokens per chain | forks per step | tokens per fork | fork / chain % | failed rollouts' tokens from the lost turn % | wall s per run | CPU s per run |",
                  "|---|---|---|---|---|---|---|---|"]
        for name in costs:
            v = s[name]
            lines.append("| %s | %.1f | %s | %s | %s | %s | %s | %s |" % (
                name, v["chain_tokens"]["mean"], "%.1f" % v["forks_per_step"]["mean"] if "forks_per_step" in v else "0",
                "%.1f" % v["fork_tokens"]["mean"] if "fork_tokens" in v else "—",
                _pts(v["fork_to_chain"], False) if "fork_to_chain" in v else "—",
                _pts(v["failed_from_lost_turn"], False) if "failed_from_lost_turn" in v else "—",
                "%.0f" % v["wall_s"]["mean"] if "wall_s" in v else "—", "%.0f" % v["cpu_s"]["mean"] if "cpu_s" in v else "—"))
    traces = [x for x in s if "allocator_share" in s[x]]
    if traces:
        lines += ["", "## TRACE rows", "", "| sampler | rule | plans / step | rollouts started at the prompt % | allocator ms / step | "
                  "allocator share of step % | learned α, τ (geometric mean; range) |", "|---|---|---|---|---|---|---|"]
        for name in traces:
            v = s[name]
            learned = v.get("learned")
            lines.append("| %s | %s | %.1f | %s | %.0f | %s | %s |" % (
                name, "/".join(v["rule"]), v["plans_per_step"]["mean"], _pts(v["root_share"], False),
                v["allocator_ms_per_step"]["mean"], _pts(v["allocator_share"], False),
                "α %.2f [%.2f, %.2f], τ %.2f [%.2f, %.2f]" % (learned["alpha_geomean"], *learned["alpha_range"], learned["tau_geomean"], *learned["tau_range"])
                if learned else "—"))
    lines += ["", "Machine: %s%s, %d cores, Python %s, torch %s, transformers %s, Node %s; %d processes; load average %.1f at the "
              "start, %.1f at the end; wall %.0f s; trace-alloc commit %s." % (
                  m["cpu"], ", GPU " + m["gpu"] if m.get("gpu") else "", m["cores"], m["python"], m["torch"], m["transformers"], m["node"], m["processes"],
                  m["loadavg_start"][0], m["loadavg_end"][0], m["wall_s"], m["trace_alloc_commit"])]
    earlier = result.get("invocations", [])[:-1]
    if earlier:
        how = "`--resume` or `merge.py`" if any(i.get("merged_from") for i in result["invocations"]) else "`--resume`"
        lines[-1] += (" That is the last of %d invocations (%s); the earlier ones: %s." % (
            len(earlier) + 1, how, "; ".join("wall %.0f s, load %.1f to %.1f, commit %s" % (
                e["machine"]["wall_s"], e["machine"]["loadavg_start"][0], e["machine"]["loadavg_end"][0],
                e["machine"]["trace_alloc_commit"]) for e in earlier)))
    lines.append("")
    return "\n".join(lines)
