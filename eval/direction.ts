// The "direction" of a results table (issue 5: "`npm run eval:quick` reproduces the table's
// direction") and the check that compares a quick run against the committed full run.
//
// Definitions (docs/EVALUATION.md, "Direction"):
// - leader: the allocator with the highest mean final success over the run's seeds;
// - leading group: the leader plus every allocator not separable from it at 95%, i.e. whose
//   paired 95% t-interval of the per-seed difference (leader − allocator) contains 0 (every
//   allocator runs on the same seeds, and a seed fixes the environment instance, so the
//   comparison is paired by seed);
// - separably behind: the rest (that interval lies entirely above 0).
// One comparison per allocator against the leader, each at 95%, no multiplicity correction.
// `checkDirection` compares a quick run with a full run: PASS, INCONCLUSIVE (only SPEC TRACE's
// verdict differs, and the two runs' gap estimates do not contradict each other) or FAIL.
import { meanCi, type Interval } from './stats.js';

export interface Direction {
  /** Highest mean final success (first in input order on an exact tie). */
  leader: string;
  /** Leader first, then the allocators not separable from it, by decreasing mean. */
  leadingGroup: string[];
  /** Allocators separably below the leader, by decreasing mean. */
  behind: string[];
  /** Mean final success per allocator. */
  means: Record<string, number>;
  /** Paired 95% interval of (leader − allocator) over seeds, per allocator other than the leader. */
  gaps: Record<string, Interval>;
  seeds: number;
  /** The per-seed final success it was computed from. */
  bySeed: Readonly<Record<string, readonly number[]>>;
}

/** Paired 95% t-interval of mean(a[s] − b[s]) over seeds s. */
export function pairedGap(a: readonly number[], b: readonly number[]): Interval {
  if (a.length !== b.length) throw new Error(`pairedGap: ${a.length} vs ${b.length} seeds (the comparison is paired by seed)`);
  return meanCi(a.map((x, i) => x - b[i]));
}

/**
 * Leader, leading group and separably-behind set from per-seed final success
 * (`bySeed[allocator][i]` = run on the i-th seed; every allocator must have the same seeds).
 */
export function direction(bySeed: Readonly<Record<string, readonly number[]>>): Direction {
  const names = Object.keys(bySeed);
  if (names.length === 0) throw new Error('direction: no allocators');
  const seeds = bySeed[names[0]].length;
  const means: Record<string, number> = {};
  for (const n of names) {
    if (bySeed[n].length !== seeds) throw new Error(`direction: ${n} has ${bySeed[n].length} seeds, ${names[0]} has ${seeds}`);
    means[n] = bySeed[n].reduce((s, x) => s + x, 0) / seeds;
  }
  const leader = names.reduce((b, n) => (means[n] > means[b] ? n : b));
  const gaps: Record<string, Interval> = {};
  const group: string[] = [], behind: string[] = [];
  for (const n of names) {
    if (n === leader) continue;
    gaps[n] = pairedGap(bySeed[leader], bySeed[n]);
    (gaps[n].lo > 0 ? behind : group).push(n);
  }
  const byMean = (x: string, y: string) => means[y] - means[x];
  return { leader, leadingGroup: [leader, ...group.sort(byMean)], behind: behind.sort(byMean), means, gaps, seeds, bySeed };
}

export type CheckStatus = 'PASS' | 'INCONCLUSIVE' | 'FAIL';

export interface DirectionCheck {
  /** PASS: every condition holds. INCONCLUSIVE: only SPEC TRACE verdicts differ, without contradicting each other. FAIL: otherwise. */
  status: CheckStatus;
  pass: boolean;
  /** Conditions that do not hold (empty unless FAIL). */
  failures: string[];
  /** Watched allocators whose verdicts differ but whose gap intervals overlap (one run merely resolves less). */
  unresolved: string[];
  /** Condition by condition, for the printout. */
  details: string[];
  /** Allocators (other than those the check is about) whose inside/outside verdict differs; not failures. */
  otherDifferences: string[];
  /** Watched allocators whose verdicts differ, with both runs' gaps to the full leader. */
  mismatches: Array<{ allocator: string; full: 'inside' | 'outside'; quick: 'inside' | 'outside'; gapFull: Interval; gapQuick: Interval; compatible: boolean }>;
}

/**
 * Does a quick run reproduce a full run's direction in one environment? Conditions:
 * (1) the quick leader is in the full run's leading group; (2) the full leader is in the quick
 * run's leading group; (3) each of `watched` (SPEC TRACE) is inside both leading groups or
 * outside both. PASS when all hold; FAIL when (1) or (2) does not.
 * When only (3) does not hold, the two verdicts are compared as estimates: each run's paired 95%
 * interval of the gap (full leader − allocator). If the two intervals overlap, the runs do not
 * contradict each other — one resolves a gap the other cannot — and the check is INCONCLUSIVE
 * (never PASS); if they are disjoint, FAIL. `label` names allocators in messages.
 */
export function checkDirection(quick: Direction, full: Direction, watched: readonly string[], label: (a: string) => string = (a) => a): DirectionCheck {
  const failures: string[] = [], unresolved: string[] = [], details: string[] = [];
  const mismatches: DirectionCheck['mismatches'] = [];
  const inQ = (a: string) => quick.leadingGroup.includes(a), inF = (a: string) => full.leadingGroup.includes(a);
  const known = (a: string, d: Direction) => a in d.means;
  if (!known(quick.leader, full)) failures.push(`quick leader ${label(quick.leader)} is not in the full run at all`);
  else if (!inF(quick.leader)) failures.push(`quick leader ${label(quick.leader)} is separably behind the full leader ${label(full.leader)}`);
  details.push(`quick leader ${label(quick.leader)} ${inF(quick.leader) ? 'is' : 'is NOT'} in the full leading group`);
  if (!known(full.leader, quick)) failures.push(`full leader ${label(full.leader)} is not in the quick run at all`);
  else if (!inQ(full.leader)) failures.push(`full leader ${label(full.leader)} is separably behind the quick leader ${label(quick.leader)}`);
  details.push(`full leader ${label(full.leader)} ${inQ(full.leader) ? 'is' : 'is NOT'} in the quick leading group`);
  const word = (x: boolean): 'inside' | 'outside' => (x ? 'inside' : 'outside');
  const pts = (x: number) => (100 * x).toFixed(1);
  const iv = (g: Interval) => `${pts(g.mean)} [${pts(g.lo)}, ${pts(g.hi)}]`;
  for (const w of watched) {
    if (!known(w, quick) || !known(w, full)) { failures.push(`${label(w)} is missing from the ${known(w, quick) ? 'full' : 'quick'} run`); continue; }
    const q = inQ(w), f = inF(w);
    if (q === f) { details.push(`${label(w)} ${word(f)} the leading group in both`); continue; }
    if (!known(full.leader, quick)) { failures.push(`${label(w)}: full ${word(f)}, quick ${word(q)}`); continue; }
    // Both gaps against the full run's leader, paired by seed within each run.
    const gF = pairedGap(full.bySeed[full.leader], full.bySeed[w]), gQ = pairedGap(quick.bySeed[full.leader], quick.bySeed[w]);
    const compatible = gF.lo <= gQ.hi && gQ.lo <= gF.hi;
    mismatches.push({ allocator: w, full: word(f), quick: word(q), gapFull: gF, gapQuick: gQ, compatible });
    const msg = `${label(w)} is ${word(f)} the leading group in the full run but ${word(q)} in the quick run; gap to ${label(full.leader)}, points: full ${iv(gF)}, quick ${iv(gQ)}`;
    if (compatible) unresolved.push(`${msg} — the intervals overlap: compatible, not resolved`);
    else failures.push(`${msg} — the intervals are disjoint: contradiction`);
    details.push(`${label(w)}: full ${word(f)}, quick ${word(q)}${compatible ? ' (compatible)' : ''}`);
  }
  const otherDifferences = Object.keys(full.means)
    .filter((a) => a in quick.means && !watched.includes(a) && inQ(a) !== inF(a))
    .map((a) => `${label(a)} ${inF(a) ? 'inside' : 'outside'} (full) vs ${inQ(a) ? 'inside' : 'outside'} (quick)`);
  const status: CheckStatus = failures.length > 0 ? 'FAIL' : unresolved.length > 0 ? 'INCONCLUSIVE' : 'PASS';
  return { status, pass: status === 'PASS', failures, unresolved, details, otherDifferences, mismatches };
}

/** Overall status: the worst environment's. */
export function overallStatus(checks: readonly DirectionCheck[]): CheckStatus {
  return checks.some((c) => c.status === 'FAIL') ? 'FAIL' : checks.some((c) => c.status === 'INCONCLUSIVE') ? 'INCONCLUSIVE' : 'PASS';
}

/**
 * How stable a smaller run's direction is: split the run's seeds into disjoint blocks of `size`
 * and check each block's direction against the whole run's.
 */
export function blockChecks(bySeed: Readonly<Record<string, readonly number[]>>, size: number, watched: readonly string[], label: (a: string) => string = (a) => a): Array<{ from: number; to: number; check: DirectionCheck }> {
  const whole = direction(bySeed);
  const n = whole.seeds, out: Array<{ from: number; to: number; check: DirectionCheck }> = [];
  for (let a = 0; a + size <= n; a += size) {
    const block = direction(Object.fromEntries(Object.entries(bySeed).map(([k, v]) => [k, v.slice(a, a + size)])));
    out.push({ from: a + 1, to: a + size, check: checkDirection(block, whole, watched, label) });
  }
  return out;
}

/**
 * `checkDirection` on what both runs have: both directions are recomputed on the allocators
 * present in both (a quick run trains fewer rows than the full run), and only the watched
 * allocators present in both are watched. `exclude` leaves rows out of both (rows that ran with
 * more budget than the others).
 */
export function checkCommon(quick: Readonly<Record<string, readonly number[]>>, full: Readonly<Record<string, readonly number[]>>, watched: readonly string[], label: (a: string) => string = (a) => a, exclude: readonly string[] = []): DirectionCheck {
  const common = Object.keys(quick).filter((a) => a in full && !exclude.includes(a));
  const pick = (bySeed: Readonly<Record<string, readonly number[]>>) => Object.fromEntries(common.map((a) => [a, bySeed[a]]));
  return checkDirection(direction(pick(quick)), direction(pick(full)), watched.filter((w) => common.includes(w)), label);
}
