"""A float64 prototype of TRACE's scoring and allocation (rule v3 and v4 candidates), in process,
for exploring rule designs on tuning seeds before they are written in the library.

`plan(forest, total, knobs)` mirrors docs/ALGORITHM.md's v3 (with `knobs` at their v3 values it
must give the service's v3 plans, and with `gate="pair"` its v4 plans, the default; `tune.py --check`
compares with the default) and adds the candidate changes as knobs:

- `gate`: where an uncertainty gap counts as contest: "always" (v3), "pair" (only in a pair whose
  rewards differ or with an unvisited sibling), "group" (only in a group whose visited rewards
  differ, or in a pair with an unvisited sibling), "never", "visits" (as "pair", but the gap also
  counts while either sibling has fewer than `gate_m` visits: "pair" is `gate_m` 1, v3 ∞).
- `pass`: how a contested fork's pass is split over its kept children: "nu" (v3: w·ν, success
  seen) or "mix" (w·m, m = 4p̂(1−p̂) the chance-of-mixed-outcomes of the child's continuations,
  p̂ its success rate shrunk toward its parent's with prior weight `beta`).
- `kappa`, `eta`, `rho`, `q0`: v3's κ, η, ρ, q0.
- `signal`: the global split's per-tree evidence: "iroot" (v3) or "mixroot" (4p̂(1−p̂) of the root).
- `base`, `base_where`, `base_by`: a base fork share (candidate v5), a claim `base` (0 in v3 and
  v4) beside the root's fresh share, spread over the tree's reached open non-root nodes that some
  rollout went through and that have a next turn, in proportion to `base_by`: "entropy" (the
  mean token entropy of the node's next turns, as entropy forking ranks them), "nu-entropy" (that
  times ν, success seen) or "equal". `base_where`: "mixed" (only in trees whose visited rewards
  differ, so an all-failed or all-solved prompt still gets chains only) or "all" (every tree:
  the promise that a failed prompt is never spread over its branches no longer holds) or "cheap"
  (t19: every tree whose base forks are cheap: the mean of `relative_cost` over the base's nodes,
  weighted as the base is split, at most `base_cost_max`, 1/3 by default, the cheap fork of the
  anchors, where a fork saves most of a chain; the promise does not hold in those trees either)
  or "peak" (t20: every tree where the policy's hesitation stands out: the next-turn entropy of
  the base's nodes, weighted as the base is split, at least `base_peak` (1.5) times the mean over
  every node the base could use; a policy that hesitates about equally everywhere, as the
  simulations' tabular ones do, gives no place to fork) or "cheap-peak" (both gates).
  `base_cost_unit`: what the cost gate counts, "tokens" (t19, t20: each turn's generated tokens,
  which the forest does not carry) or "turns" (t21: each turn as 1, from the tree alone, as the
  simulations' gate counts environment steps).
  `base_top` (0: off): the base share goes, in equal parts, only to the `base_top` eligible nodes
  with the highest next-turn entropy among those not yet forked (one child), as entropy forking
  picks its forks (ties to the older node; forked nodes only where too few unforked ones exist):
  the base explores new forks where the policy hesitates, the contest feeds forks that showed it.
- `unc`: the uncertainty the scores read: "turn" (each node's own turn's mean token entropy, what
  this example sends the service) or "next" (the mean token entropy of the node's next turns, the
  policy's uncertainty after the step, which is what the input format's `uncertainty` means and
  what the simulations give; 0 at a terminal node or one with no next turn yet).
- `trie`: plan on the forest with identical prefixes merged (`allocator_view.PrefixTrie`: a node per distinct
  token sequence, so siblings are turns that differ), instead of one node per generated turn, where
  two chains that wrote the same first turns are siblings with identical embeddings.
- `region`: how a region's amount is spread over its reached open nodes: "equal" (v3), "late"
  (in proportion to each node's position in the region's chain, 1 for its first node: forks that
  start later cost fewer tokens and re-sample the later turns), "deep" (all of it on the
  region's deepest reached open node), or "hesitation" (t24: in proportion to each node's
  uncertainty as the scores read it, `unc`; with "next", where the policy hesitated over the
  next turn, as entropy forking picks; equal where the region's total is 0).
- `cost`: what a claim buys: "branches" (v3, v4: x_v = B·π_v / Σπ, whatever a branch started at v
  costs) or "tokens" (candidate v5: the claims are shares of the tree's generated tokens, so a
  node's branches are its share divided by the relative cost c_v of a rollout started there,
  x_v ∝ π_v / c_v; c_v = the mean generated tokens from v to the episode's end over v's finished
  rollouts, divided by the root's, see `relative_cost`; a fork that saves most of a chain then
  gets several branches for the tokens one fresh chain costs).
- `fork_cost_max` (None: off), `fork_cost_unit`: a bound on what the rule's own forks cost (t25).
  After the contest's claims are placed, a claim on a non-root node whose `relative_cost` (in
  `fork_cost_unit`, "tokens" or "turns") is above `fork_cost_max` moves to the root: a fork that
  would cost more than that share of a chain buys a fresh chain instead. t23 counted where v5's
  claims sit by that cost; this is the bound it described, run as a training row.
"""

from __future__ import annotations

import math

import numpy as np

from allocator_view import PrefixTrie, next_turn_entropy

EPS = 1e-6
V3 = {"gate": "always", "pass": "nu", "beta": 1.0, "kappa": 4.0, "eta": 0.25, "rho": 0.5, "q0": 1.0,
      "signal": "iroot", "alpha": 1.0, "tau": 0.5, "keep_mix": False, "fresh": 1.0,
      "region": "equal", "base": 0.0, "base_where": "mixed", "base_by": "entropy", "base_top": 0, "cost": "branches",
      "unc": "turn", "trie": False, "gate_m": 1, "base_cost_max": 1 / 3, "base_peak": 1.5,
      "base_cost_unit": "tokens", "fork_cost_max": None, "fork_cost_unit": "tokens"}


def score_group(kids, nodes, knobs, tree_has_range=False, unc=None):
    """C, w, I of one sibling group (docs/ALGORITHM.md §2, v2/v3 sharing), with the gate.
    `unc`: the children's uncertainties, when not each node's own `uncertainty`."""
    k = len(kids)
    if k < 2:
        return [0.0], [1.0], 0.0
    alpha, tau, gate = knobs["alpha"], knobs["tau"], knobs["gate"]
    e = [nodes[c].embedding for c in kids]
    norms = [float(np.linalg.norm(x)) for x in e]
    r = [nodes[c].reward_sum / nodes[c].visits if nodes[c].visits else 0.0 for c in kids]
    n = [nodes[c].visits for c in kids]
    u = unc if unc is not None else [nodes[c].uncertainty for c in kids]
    vis = [r[i] for i in range(k) if n[i] > 0]
    group_differs = len(vis) >= 2 and max(vis) > min(vis)
    C = [0.0] * k
    for i in range(k):
        for j in range(i + 1, k):
            if norms[i] == 0 or norms[j] == 0:
                d = 0.5
            else:
                diff = e[i] / norms[i] - e[j] / norms[j]
                d = min(1.0, max(0.0, float(diff @ diff) / 4))
            visited = n[i] > 0 and n[j] > 0
            dr = abs(r[i] - r[j]) if visited else 0.0
            du = abs(u[i] - u[j])
            if gate == "pair":
                du = du if (dr > 0 or not visited) else 0.0
            elif gate == "tree":
                du = du if (tree_has_range or not visited or dr > 0) else 0.0
            elif gate == "group":
                du = du if (group_differs or not visited) else 0.0
            elif gate == "never":
                du = 0.0
            elif gate == "visits":
                du = du if (dr > 0 or min(n[i], n[j]) < knobs["gate_m"]) else 0.0
            delta = dr + du
            c = delta / (delta + alpha * d + EPS)
            ui, uj = u[i] + EPS, u[j] + EPS
            si = 2 / (1 + uj / ui)
            C[i] += si * c
            C[j] += (2 - si) * c
    C = [x / (k - 1) for x in C]
    cmax = max(C)
    w = [math.exp((x - cmax) / tau) for x in C]
    z = sum(w)
    w = [x / z for x in w]
    return C, w, sum(C) / k


class TreeView:
    """One tree of the trainer's forest with its scores."""

    def __init__(self, forest, t, knobs):
        self.ids = forest.tree_nodes[t]
        self.local = {v: i for i, v in enumerate(self.ids)}
        N = len(self.ids)
        nodes = forest.nodes
        self.nodes = [nodes[v] for v in self.ids]
        self.parent = [self.local[x.parent] if x.parent >= 0 else -1 for x in self.nodes]
        self.children = [[self.local[c] for c in x.children] for x in self.nodes]
        self.terminal = [x.terminal for x in self.nodes]
        self.visits = [x.visits for x in self.nodes]
        self.reward = [x.reward_sum / x.visits if x.visits else 0.0 for x in self.nodes]
        self.w = [1.0] * N
        self.I = [0.0] * N
        vis = [nodes[v].reward_sum / nodes[v].visits for v in self.ids if nodes[v].visits]
        has_range = len(vis) >= 2 and max(vis) > min(vis)
        # The uncertainty the scores read: "turn" = each node's own turn's token entropy (what this
        # example sends), "next" = the mean token entropy of the node's next turns (its children's
        # turns; 0 at a terminal node or one not yet continued): the policy's uncertainty *after*
        # the step, as the input format defines it and the simulations give it.
        if knobs["unc"] == "next":
            self.u = [next_turn_entropy(forest, v) for v in self.ids]
        else:
            self.u = [x.uncertainty for x in self.nodes]
        for v in range(N):
            kids = self.children[v]
            if kids:
                _, w, I = score_group([self.ids[c] for c in kids], nodes, knobs, has_range,
                                      [self.u[c] for c in kids])
                for c, wc in zip(kids, w):
                    self.w[c] = wc
                self.I[v] = I
        live = [not t for t in self.terminal]
        for v in range(N - 1, 0, -1):
            if live[v]:
                live[self.parent[v]] = True
        self.live = live


def kept_split(tv: TreeView, rho):
    kept = [False] * len(tv.ids)
    pruned = [False] * len(tv.ids)
    for v, kids in enumerate(tv.children):
        X = [c for c in kids if tv.live[c]]
        V = [c for c in X if tv.visits[c] > 0]
        if not V:
            for c in X:
                kept[c] = True
            continue
        bar = rho * max(tv.w[c] for c in V)
        for c in X:
            if tv.visits[c] == 0 or tv.w[c] >= bar:
                kept[c] = True
            else:
                pruned[c] = True
    return kept, pruned


def success_seen(tv: TreeView):
    vis = [tv.reward[v] for v in range(len(tv.ids)) if tv.visits[v] > 0]
    nu = [1.0] * len(tv.ids)
    if vis and max(vis) > min(vis):
        lo, hi = min(vis), max(vis)
        for v in range(len(tv.ids)):
            if tv.visits[v] > 0:
                nu[v] = (tv.reward[v] - lo) / (hi - lo)
            elif tv.parent[v] >= 0:
                nu[v] = nu[tv.parent[v]]
    return nu


def success_estimate(tv: TreeView, beta):
    """p̂: each node's success rate shrunk toward its parent's (root: toward ½), rewards read as success fractions in [0, 1]."""
    p = [0.5] * len(tv.ids)
    for v in range(len(tv.ids)):
        prior = 0.5 if tv.parent[v] < 0 else p[tv.parent[v]]
        n = tv.visits[v]
        r = min(1.0, max(0.0, tv.reward[v]))
        p[v] = (n * r + beta * prior) / (n + beta)
    return p


def relative_cost(tv: TreeView, floor=0.05, unit="tokens"):
    """c_v: the mean generated tokens from node v to the episode's end over the finished rollouts
    through v (a turn's generated tokens are its span), divided by the root's; a node with no
    finished rollout below takes its parent's cost less its own turn. Clamped to [floor, 4] so a
    one-token remainder cannot take the whole tree. All 1 while no rollout of the tree has finished.
    `unit` "turns" counts each turn as 1 instead of its tokens: what the forest itself carries (its
    depths), and what the simulations' cost gate counts (environment steps)."""
    N = len(tv.ids)
    if unit not in ("tokens", "turns"):
        raise ValueError('unit must be "tokens" or "turns", got %r' % (unit,))
    turn = (lambda x: float(x.span[1] - x.span[0])) if unit == "tokens" else (lambda x: 1.0)
    gen = [turn(x) if tv.parent[i] >= 0 else 0.0 for i, x in enumerate(tv.nodes)]
    leaves = [1.0 if tv.terminal[v] else 0.0 for v in range(N)]
    rest = [0.0] * N  # summed tokens from v to its finished leaves
    for v in range(N - 1, 0, -1):  # children have larger local indices than their parents
        p = tv.parent[v]
        leaves[p] += leaves[v]
        rest[p] += rest[v] + gen[v] * leaves[v]
    if leaves[0] == 0:
        return [1.0] * N
    cost = [rest[0] / leaves[0]] + [0.0] * (N - 1)
    for v in range(1, N):
        cost[v] = rest[v] / leaves[v] if leaves[v] > 0 else max(1.0, cost[tv.parent[v]] - gen[v])
    root = max(1.0, cost[0])
    return [min(4.0, max(floor, c / root)) for c in cost]


def tree_mass(tv: TreeView, budget, knobs):
    N = len(tv.ids)
    mass = [0.0] * N
    if not tv.live[0] or budget == 0:
        return mass, budget > 0 and not tv.live[0]
    kept, _ = kept_split(tv, knobs["rho"])
    reach = [False] * N
    psi = [1.0] * N
    for v in range(N):
        p = tv.parent[v]
        if p < 0:
            reach[v] = True
        else:
            reach[v] = reach[p] and kept[v]
            psi[v] = psi[p] * len(tv.children[p]) * tv.w[v]
    tv.reach = reach
    if knobs["pass"] == "nu":
        factor = success_seen(tv)
    else:
        p = success_estimate(tv, knobs["beta"])
        factor = [4 * x * (1 - x) for x in p]
    region = list(range(N))
    pos = [1] * N
    open_in = [0.0] * N
    u_in = [0.0] * N  # t24: the summed uncertainty of each region's reached open nodes
    deepest = [-1] * N
    for v in range(1, N):
        p = tv.parent[v]
        starts = p == 0 or len(tv.children[p]) >= 2
        region[v] = v if starts else region[p]
        pos[v] = 1 if starts else pos[p] + 1
        if reach[v] and not tv.terminal[v]:
            open_in[region[v]] += pos[v] if knobs["region"] == "late" else 1
            u_in[region[v]] += tv.u[v]
            if deepest[region[v]] < 0 or pos[v] > pos[deepest[region[v]]]:
                deepest[region[v]] = v
    def spread(v):
        if knobs["region"] == "hesitation" and u_in[region[v]] > 0:
            return tv.u[v] / u_in[region[v]]
        if knobs["region"] == "late":
            return pos[v] / open_in[region[v]]
        if knobs["region"] == "deep":
            return 1.0 if deepest[region[v]] == v else 0.0
        return 1.0 / open_in[region[v]]
    claim = [0.0] * N
    region_claim = [0.0] * N
    if not tv.terminal[0]:
        claim[0] = knobs["fresh"]
    kappa, eta = knobs["kappa"], knobs["eta"]
    for v in range(N):
        kids = tv.children[v]
        if not reach[v] or len(kids) < 2 or not tv.I[v] > 0:
            continue
        e = kappa * psi[v] * tv.I[v]
        if not e > 0:
            continue
        is_open = not tv.terminal[v]
        keep = eta * e if is_open else 0.0
        claim[v] += keep
        passed = e - keep
        W = sum(tv.w[c] for c in kids if reach[c])
        taken = 0.0
        if W > 0:
            for c in kids:
                if reach[c]:
                    s = passed * tv.w[c] * factor[c] / W
                    region_claim[c] += s
                    taken += s
        if is_open:
            claim[v] += max(0.0, passed - taken)
    for v in range(1, N):
        if reach[v] and not tv.terminal[v] and region_claim[region[v]] > 0:
            claim[v] += region_claim[region[v]] * spread(v)
    if knobs["fork_cost_max"] is not None:
        c = relative_cost(tv, unit=knobs["fork_cost_unit"])
        for v in range(1, N):
            if claim[v] > 0 and c[v] > knobs["fork_cost_max"]:
                claim[0] += claim[v]
                claim[v] = 0.0
    hists = getattr(tv, "cost_hist", None)
    if hists is not None:
        # t23 (diagnostic): the claims on non-root nodes by the relative cost of a rollout started
        # there, in tenths of a chain's (relative_cost; 0.9 and over in the last), counted in
        # generated tokens and in turns
        for unit, hist in hists.items():
            c = relative_cost(tv, unit=unit)
            for v in range(1, N):
                if claim[v] > 0:
                    hist[min(9, int(c[v] * 10))] += claim[v]
    if knobs["base"] > 0:
        vis = [tv.reward[v] for v in range(N) if tv.visits[v] > 0]
        if knobs["base_where"] != "mixed" or (vis and max(vis) > min(vis)):
            nu = success_seen(tv)
            # The nodes the base could use (reached, open, visited, continued) and their next-turn
            # entropy: the mean token entropy of their children's turns.
            nxt = {v: sum(tv.nodes[c].uncertainty for c in tv.children[v]) / len(tv.children[v])
                   for v in range(1, N) if reach[v] and not tv.terminal[v] and tv.visits[v] > 0 and tv.children[v]}
            a = [0.0] * N
            for v, ent in nxt.items():
                a[v] = {"entropy": ent, "nu-entropy": nu[v] * ent, "equal": 1.0}[knobs["base_by"]]
            if knobs["base_top"] > 0:
                order = sorted((v for v in range(1, N) if a[v] > 0),
                               key=lambda v: (len(tv.children[v]) >= 2, -nxt[v], v))
                top = set(order[: knobs["base_top"]])
                a = [1.0 if v in top else 0.0 for v in range(N)]
            total_a = sum(a)
            if total_a > 0 and knobs["base_where"] in ("peak", "cheap-peak"):
                # t20: the policy's hesitation must stand out in the tree: the next-turn entropy of
                # the base's nodes (weighted as the base is split) at least base_peak times the mean
                # over the nodes the base could use whose next turn has entropy > 0.
                hesitant = [e for e in nxt.values() if e > 0]
                mean_all = sum(hesitant) / len(hesitant) if hesitant else 0.0
                picked = sum(a[v] * nxt[v] for v in nxt) / total_a
                if not (mean_all > 0 and picked >= knobs["base_peak"] * mean_all):
                    total_a = 0.0
            if total_a > 0 and knobs["base_where"] in ("cheap", "cheap-peak"):
                # The tree's base forks, at their relative costs, must cost at most base_cost_max
                # of a chain on average, or the tree keeps v5's allocation.
                c = relative_cost(tv, unit=knobs["base_cost_unit"])
                if sum(a[v] * c[v] for v in range(N)) / total_a > knobs["base_cost_max"]:
                    total_a = 0.0
            if total_a > 0:
                tv.base_on = True
                for v in range(1, N):
                    claim[v] += knobs["base"] * a[v] / total_a
    if knobs["cost"] == "tokens":
        c = relative_cost(tv)
        claim = [x / c[v] for v, x in enumerate(claim)]
    total = sum(claim)
    if total > 0:
        return [budget * c / total for c in claim], False
    opens = [v for v in range(N) if reach[v] and not tv.terminal[v]]
    if not opens:
        return mass, True
    for v in opens:
        mass[v] = budget / len(opens)
    return mass, False


def largest_remainder(x, total):
    b = [math.floor(v) for v in x]
    rest = total - sum(b)
    order = sorted([i for i in range(len(x)) if x[i] > 0], key=lambda i: (-(x[i] - math.floor(x[i])), i))
    i = 0
    while rest > 0 and order:
        b[order[i % len(order)]] += 1
        rest -= 1
        i += 1
    return b


def contested(tv: TreeView) -> bool:
    """Whether a reached fork of the tree (k >= 2) has I > 0 (reach as in tree_mass, at ρ = knobs' rho)."""
    return any(len(tv.children[v]) >= 2 and tv.I[v] > 0 for v in range(len(tv.ids)) if tv.reach[v])


def plan(forest, total, knobs, min_per_tree=1, diag=None):
    """Per tree of the forest: a list of (trainer node id, branches). With `diag` (a dict), adds
    to its counts: `trees` (live trees given a budget), `contested` (those with a reached contested
    fork), `budget`, `fork_mass` (the budget's real-valued mass off the root, before rounding),
    `fork_units` (whole branches off the root) and `base_trees` (those given a base share). A
    `diag` holding `cost_hist` ({unit: 10 bins} for "tokens" and "turns") also gets the claims on
    non-root nodes added there by tenths of relative cost (the forest's nodes need their spans)."""
    knobs = {**V3, **knobs}
    if knobs["trie"]:
        forest = PrefixTrie(forest)
    views = [TreeView(forest, t, knobs) for t in range(len(forest.tree_nodes))]
    if diag is not None and "cost_hist" in diag:
        for tv in views:
            tv.cost_hist = diag["cost_hist"]
    q = []
    for tv in views:
        if not tv.live[0]:
            q.append(0.0)
            continue
        if knobs["signal"] == "iroot":
            s = tv.I[0] if len(tv.children[0]) >= 2 else 0.0
        else:
            p = success_estimate(tv, knobs["beta"])[0]
            s = 4 * p * (1 - p)
        q.append(knobs["q0"] + s)
    L = sum(1 for x in q if x > 0)
    rest = total - min_per_tree * L
    Q = sum(q)
    share = [min_per_tree + rest * x / Q if x > 0 else 0.0 for x in q]
    budgets = largest_remainder(share, total)
    out = []
    for tv, b in zip(views, budgets):
        mass, _ = tree_mass(tv, b, knobs)
        br = largest_remainder(mass, b) if b > 0 and sum(mass) > 0 else [0] * len(mass)
        if diag is not None and b > 0 and tv.live[0]:
            diag["trees"] = diag.get("trees", 0) + 1
            diag["contested"] = diag.get("contested", 0) + int(contested(tv))
            diag["budget"] = diag.get("budget", 0) + b
            diag["fork_mass"] = diag.get("fork_mass", 0.0) + sum(mass[1:])
            diag["fork_units"] = diag.get("fork_units", 0) + sum(br[1:])
            diag["base_trees"] = diag.get("base_trees", 0) + int(getattr(tv, "base_on", False))
        out.append([(tv.ids[v], br[v]) for v in range(len(br)) if br[v] > 0])
    return out
