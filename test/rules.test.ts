// The allocation rules are modules behind one interface (src/allocate/rules/), found by name in
// one registry: the passes that plan packed and live forests never ask which rule runs, and
// option validation and the CLI learn each rule's settings and q0 from its module.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DEFAULT_RULE, RULES, resolveAllocateOptions } from '../src/allocate/options.js';
import { ruleNamed } from '../src/allocate/rules/index.js';
import type { RuleSetting } from '../src/allocate/rules/rule.js';
import { parseFlags, SCORE_FLAGS, scoreSettings, UsageError } from '../src/cli/flags.js';
import { SCORE_RULES } from '../src/score/types.js';

const root = join(import.meta.dirname, '..');

/** Files that run every rule the same way: no comparison with a rule's name, no list of names. */
const RULE_AGNOSTIC = [
  'src/allocate/allocate.ts', 'src/allocate/threaded.ts', 'src/allocate/shards.ts', 'src/allocate/trees.ts',
  'src/allocate/liveness.ts', 'src/allocate/priority.ts', 'src/allocate/rounding.ts', 'src/allocate/plan.ts',
  'src/allocate/options.ts', 'src/live/plan.ts', 'src/live/shards.ts',
];

/** Each line of `text` that names a rule in code (comments left out). */
function ruleNamesInCode(text: string): string[] {
  const code = text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/\/\/.*$/gm, '');
  return code.split('\n').filter((line) => /['"`]v\d+['"`]/.test(line));
}

describe('allocation rules', () => {
  it('the passes are the same for every rule: no rule named in their code (the scanner itself is checked)', () => {
    expect(ruleNamesInCode("if (rule === 'v3') x();\n// 'v2' in a comment\n/** 'v1' */")).toEqual(["if (rule === 'v3') x();"]);
    const named = RULE_AGNOSTIC.flatMap((file) => ruleNamesInCode(readFileSync(join(root, file), 'utf8')).map((line) => `${file}: ${line.trim()}`));
    expect(named).toEqual([]);
  });

  it('the registry names each module by its key, and holds the default', () => {
    expect(RULES).toEqual(['v1', 'v2', 'v3', 'v4', 'v5']);
    expect(SCORE_RULES).toEqual(RULES); // scoring's own list (src/score sits below src/allocate) names the same rules
    expect(RULES).toContain(DEFAULT_RULE);
    for (const rule of RULES) expect(ruleNamed(rule).name).toBe(rule);
  });

  it('options take each rule\'s defaults and q0 from its module, and refuse a fixed q0 or a setting it has none of', () => {
    for (const rule of RULES) {
      const spec = ruleNamed(rule);
      const resolved = resolveAllocateOptions({ rule });
      expect(resolved.treeFloor).toBe(spec.treeFloor.default);
      for (const [setting, value] of Object.entries(spec.defaults)) expect(resolved[setting as RuleSetting]).toBe(value);
      if (spec.treeFloor.fixed) expect(() => resolveAllocateOptions({ rule, treeFloor: spec.treeFloor.default * 2 })).toThrow(`treeFloor is fixed at ${spec.treeFloor.default} under rule ${rule}`);
      else expect(resolveAllocateOptions({ rule, treeFloor: 0.5 }).treeFloor).toBe(0.5);
      if (spec.defaults.forkKeep === undefined) expect(() => resolveAllocateOptions({ rule, forkKeep: 0.5 })).toThrow(`forkKeep is a rule v3, v4 and v5 setting; rule ${rule} has none`);
      else expect(resolveAllocateOptions({ rule, forkKeep: 0.5 }).forkKeep).toBe(0.5);
    }
    expect(() => resolveAllocateOptions({ rule: 'v9' as never })).toThrow("rule must be 'v1', 'v2', 'v3', 'v4' or 'v5', got v9");
  });

  it('the CLI accepts a rule-specific flag exactly under the rules that read it (--widen anywhere, with a notice)', () => {
    const settings = (argv: string[]) => scoreSettings(parseFlags(argv, SCORE_FLAGS).values);
    for (const rule of RULES) {
      const spec = ruleNamed(rule);
      for (const [flag, setting] of [['--contest-gain', 'contestGain'], ['--fork-keep', 'forkKeep']] as const) {
        const run = () => settings(['--rule', rule, flag, '0.5']);
        if (spec.defaults[setting] === undefined) expect(run).toThrow(UsageError);
        else expect(run().allocate[setting]).toBe(0.5);
      }
      const floor = () => settings(['--rule', rule, '--tree-floor', '0.5']);
      if (spec.treeFloor.fixed) expect(floor).toThrow(`--tree-floor belongs to --rule v2, v3, v4 and v5 (the rule is ${rule}, whose q0 is fixed at ${spec.treeFloor.default})`);
      else expect(floor().allocate.treeFloor).toBe(0.5);
      expect(settings(['--rule', rule, '--widen', '0.5']).notices).toHaveLength(spec.defaults.widen === undefined ? 1 : 0);
    }
    expect(() => settings(['--rule', 'v1', '--contest-gain', '1'])).toThrow('--contest-gain belongs to --rule v2, v3, v4 and v5 (the rule is v1)');
  });
});
