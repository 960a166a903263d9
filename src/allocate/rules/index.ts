import { DEFAULT_SCORE_RULE } from '../../score/types.js';
import { joinWords } from '../../util/words.js';
import type { AllocationRule, RuleSetting } from './rule.js';
import { v1 } from './v1.js';
import { v2 } from './v2.js';
import { v3 } from './v3.js';
import { v4 } from './v4.js';
import { v5 } from './v5.js';

/** Every allocation rule by its name (`--rule`, the plan's `params.rule`). A new rule is one file here and one line below. */
const REGISTRY = { v1, v2, v3, v4, v5 } as const satisfies Record<string, AllocationRule>;

/** The allocation rule: 'v5' (the default), 'v4', 'v3', 'v2' or 'v1' (each kept exactly for reproducibility). See docs/ALGORITHM.md. */
export type Rule = keyof typeof REGISTRY;
export const RULES: readonly Rule[] = Object.keys(REGISTRY) as Rule[];
export const DEFAULT_RULE: Rule = DEFAULT_SCORE_RULE;

export function isRule(name: unknown): name is Rule {
  return typeof name === 'string' && Object.hasOwn(REGISTRY, name);
}

/** The module of a rule. */
export function ruleNamed(name: Rule): AllocationRule {
  return REGISTRY[name];
}

/** The rules that read `setting` (for messages: "v2 and v3"). */
export function rulesReading(setting: RuleSetting): Rule[] {
  return RULES.filter((r) => REGISTRY[r].defaults[setting] !== undefined);
}

/** 'v1', 'v2' or 'v3' (each name in `quote`), for messages that list the rules. */
export function ruleList(quote = "'"): string {
  return joinWords(RULES.map((r) => `${quote}${r}${quote}`), 'or');
}

/** Names joined as a reader writes them: "v3", "v3 and v4", "v2, v3, v4 and v5". */
export function andList(names: readonly string[]): string {
  return joinWords(names, 'and');
}
