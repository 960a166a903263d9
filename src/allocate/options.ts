import { OptionError } from '../util/errors.js';
import type { RuleSetting, RuleSettings } from './rules/rule.js';
import { andList, DEFAULT_RULE, isRule, ruleList, ruleNamed, rulesReading, RULES, type Rule } from './rules/index.js';

export { DEFAULT_RULE, RULES, type Rule };

/** Allocation settings (docs/ALGORITHM.md, "Allocation"). Every field is optional. */
export interface AllocateOptions {
  /** 'v5' (default), 'v4', 'v3', 'v2' or 'v1'. Defaults to the rule the scores were computed with. */
  rule?: Rule;
  /** Per-tree budget B (integer >= 0), one for all trees or one per tree. Default 16. Ignored when `totalBudget` is set. */
  budget?: number | ArrayLike<number>;
  /** Global budget mode: one integer total split across live trees by their intensity. */
  totalBudget?: number;
  /** Global mode floor per live tree, μ (integer >= 0). Default 1. */
  minPerTree?: number;
  /** ρ ∈ [0, 1): siblings with w < ρ·max w are pruned. Default 0.5. */
  pruneRatio?: number;
  /** v1 only. λ ∈ [0, 1]: share of an open node's mass kept at the node, scaled by the group intensity. Default 0.5. */
  widen?: number;
  /**
   * v2 to v5. κ >= 0: how strongly a contested fork draws budget. v2: an open node heading a fork
   * claims 1 + κ·I. v3, v4, v5: a contested fork emits κ·ψ·I. Default 4.
   */
  contestGain?: number;
  /** v3, v4 and v5. η ∈ [0, 1]: the part of a contested fork's emission kept at the fork itself; the rest goes down to its children. Default 0.25. */
  forkKeep?: number;
  /**
   * v2 to v5. q0 > 0: every live tree's floor in the global split. v2: Q_t = q0 + mean intensity of
   * its forks, default 0.25; v3, v4, v5: Q_t = q0 + the intensity of its root's fork, default 1 (v1 uses 1e-3).
   */
  treeFloor?: number;
  /** D0 (integer >= 1): depth of a node with uniform priority. Default 4. */
  baseDepth?: number;
  /** γ >= 0: how strongly priority stretches depth. Default 1. */
  depthGain?: number;
  /** Default 1. */
  minDepth?: number;
  /** Default 4·baseDepth. */
  maxDepth?: number;
}

export interface ResolvedAllocateOptions {
  rule: Rule;
  budget: number | ArrayLike<number>;
  totalBudget: number | undefined;
  minPerTree: number;
  pruneRatio: number;
  widen: number;
  contestGain: number;
  forkKeep: number;
  treeFloor: number;
  baseDepth: number;
  depthGain: number;
  minDepth: number;
  maxDepth: number;
}

export const DEFAULT_BUDGET = 16;

/**
 * A rule-specific setting's value where the rule does not read it (the resolved options carry
 * every setting): the default of the rules that do.
 */
const UNREAD_SETTING: RuleSettings = { widen: 0.5, contestGain: 4, forkKeep: 0.25 };

/** Settings a rule that does not read them refuses; it accepts and ignores the others (as it did before rules could refuse one). */
const REFUSED_WHERE_UNREAD: readonly RuleSetting[] = ['forkKeep'];

/** The default of a rule-specific setting under `rule`. */
export function settingDefault(rule: Rule, setting: RuleSetting): number {
  return ruleNamed(rule).defaults[setting] ?? UNREAD_SETTING[setting];
}

export function resolveAllocateOptions(options: AllocateOptions = {}, scoredRule?: Rule): ResolvedAllocateOptions {
  const rule = options.rule ?? scoredRule ?? DEFAULT_RULE;
  check(isRule(rule), `rule must be ${ruleList()}`, rule);
  if (scoredRule !== undefined && rule !== scoredRule) throw new OptionError(`rule ${rule} does not match the scores, which were computed with rule ${scoredRule}`);
  const spec = ruleNamed(rule);
  const contestGain = options.contestGain ?? settingDefault(rule, 'contestGain');
  const treeFloor = options.treeFloor ?? spec.treeFloor.default;
  check(Number.isFinite(contestGain) && contestGain >= 0 && contestGain <= 1e6, 'contestGain must be a number in [0, 1e6]', contestGain);
  check(Number.isFinite(treeFloor) && treeFloor > 0 && treeFloor <= 1e6, 'treeFloor must be a number in (0, 1e6]', treeFloor);
  if (spec.treeFloor.fixed && options.treeFloor !== undefined && options.treeFloor !== spec.treeFloor.default) throw new OptionError(`treeFloor is fixed at ${spec.treeFloor.default} under rule ${rule}`);
  const forkKeep = options.forkKeep ?? settingDefault(rule, 'forkKeep');
  check(Number.isFinite(forkKeep) && forkKeep >= 0 && forkKeep <= 1, 'forkKeep must be a number in [0, 1]', forkKeep);
  for (const setting of REFUSED_WHERE_UNREAD) {
    if (options[setting] !== undefined && spec.defaults[setting] === undefined) throw new OptionError(`${setting} is a rule ${andList(rulesReading(setting))} setting; rule ${rule} has none`);
  }
  const pruneRatio = options.pruneRatio ?? 0.5;
  const widen = options.widen ?? settingDefault(rule, 'widen');
  const baseDepth = options.baseDepth ?? 4;
  const depthGain = options.depthGain ?? 1;
  const minDepth = options.minDepth ?? 1;
  const maxDepth = options.maxDepth ?? 4 * baseDepth;
  const minPerTree = options.minPerTree ?? 1;
  const budget = options.budget ?? DEFAULT_BUDGET;
  check(Number.isFinite(pruneRatio) && pruneRatio >= 0 && pruneRatio < 1, 'pruneRatio must be in [0, 1)', pruneRatio);
  check(Number.isFinite(widen) && widen >= 0 && widen <= 1, 'widen must be in [0, 1]', widen);
  check(Number.isInteger(baseDepth) && baseDepth >= 1 && baseDepth <= MAX_WHOLE, `baseDepth must be an integer in [1, ${MAX_WHOLE}]`, baseDepth);
  check(Number.isFinite(depthGain) && depthGain >= 0, 'depthGain must be a finite number >= 0', depthGain);
  check(Number.isInteger(minDepth) && minDepth >= 0 && minDepth <= MAX_WHOLE, 'minDepth must be an integer >= 0', minDepth);
  check(Number.isInteger(maxDepth) && maxDepth >= minDepth && maxDepth <= MAX_WHOLE, `maxDepth must be an integer in [minDepth (${minDepth}), ${MAX_WHOLE}]`, maxDepth);
  check(Number.isInteger(minPerTree) && minPerTree >= 0, 'minPerTree must be an integer >= 0', minPerTree);
  if (options.totalBudget !== undefined) {
    check(isBudget(options.totalBudget), `totalBudget must be an integer in [0, ${MAX_WHOLE}]`, options.totalBudget);
  } else if (typeof budget === 'number') {
    check(isBudget(budget), `budget must be an integer in [0, ${MAX_WHOLE}]`, budget);
  } else {
    for (let t = 0; t < budget.length; t++) check(isBudget(budget[t]), `budget[${t}] must be an integer in [0, ${MAX_WHOLE}]`, budget[t]);
  }
  return { rule, budget, totalBudget: options.totalBudget, minPerTree, pruneRatio, widen, contestGain, forkKeep, treeFloor, baseDepth, depthGain, minDepth, maxDepth };
}

/** Branch counts and depths are stored as Int32, so budgets and depths stop at 2³¹ − 1. */
export const MAX_WHOLE = 0x7fffffff;

/** A budget: an integer in [0, 2³¹ − 1]. */
export function isBudget(x: unknown): x is number {
  if (typeof x !== 'number') return false;
  return Number.isInteger(x) && x >= 0 && x <= MAX_WHOLE;
}

function check(ok: boolean, message: string, value: unknown): void {
  if (!ok) throw new OptionError(`${message}, got ${String(value)}`);
}
