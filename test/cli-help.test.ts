import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { DEMO_COMMAND } from '../src/cli/demo.js';
import { type CommandHelp, renderCommandHelp, undocumentedFlags } from '../src/cli/help.js';
import { SCORE_COMMAND } from '../src/cli/score.js';
import { SERVE_COMMAND } from '../src/cli/serve.js';
import { extensionMismatch, VIZ_COMMAND } from '../src/cli/viz.js';
import { runCli } from './cli-helpers.js';

const COMMANDS: CommandHelp[] = [SCORE_COMMAND, DEMO_COMMAND, VIZ_COMMAND, SERVE_COMMAND];
const VERSION = (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }).version;

const dir = mkdtempSync(join(tmpdir(), 'trace-alloc-cli-help-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('trace-alloc --version and --help', () => {
  it.each(['--version', '-V', '-v'])('%s prints the package version', (flag) => {
    const r = runCli([flag]);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(`${VERSION}\n`);
  });

  it.each(['--help', '-h', 'help'])('%s lists every command', (flag) => {
    const r = runCli([flag]);
    expect(r.code).toBe(0);
    for (const { name } of COMMANDS) expect(r.stdout).toMatch(new RegExp(`^  trace-alloc ${name}\\b`, 'm'));
    expect(r.stdout).toContain('--version');
  });

  describe.each(COMMANDS.map((c) => [c.name, c] as const))('%s --help', (name, command) => {
    it('documents every flag the parser accepts', () => {
      expect(undocumentedFlags(command)).toEqual([]);
    });

    it('lists every flag with its default and meaning, however it is asked for', () => {
      const outputs = [runCli([name, '--help']), runCli([name, '-h']), runCli(['help', name])];
      for (const r of outputs) {
        expect(r.code).toBe(0);
        expect(r.stderr).toBe('');
        expect(r.stdout).toBe(`${renderCommandHelp(command)}\n`);
      }
      const text = outputs[0].stdout.replace(/\n {6,}/g, ' '); // undo the wrapping of long lines
      for (const [flag, doc] of Object.entries(command.docs)) {
        const line = text.split('\n').find((l) => l.startsWith(`  --${flag} `) || l === `  --${flag}` || l.startsWith(`  --${flag}  `));
        expect(line, `--${flag} in ${name} --help`).toBeDefined();
        expect(line).toContain(doc.meaning);
        expect(line).toContain(doc.required ? '[required]' : `[default: ${doc.default}]`);
      }
    });
  });

  it('refuses to render help for a flag without documentation', () => {
    const broken = { ...SCORE_COMMAND, flags: { ...SCORE_COMMAND.flags, 'new-flag': 'int' } } as CommandHelp;
    expect(undocumentedFlags(broken)).toEqual(['new-flag']);
    expect(() => renderCommandHelp(broken)).toThrow(/no help for --new-flag/);
  });

  it('keeps help lines within 100 columns', () => {
    for (const command of COMMANDS) {
      for (const line of renderCommandHelp(command).split('\n')) expect(line.length, line).toBeLessThanOrEqual(100);
    }
  });
});

describe('viz output extension', () => {
  const forest = join(dir, 'forest.json');
  writeFileSync(forest, JSON.stringify({ dim: 2, trees: [{ id: 'a', nodes: [{ parent: -1, embedding: [1, 0] }, { parent: 0, reward: 1, visits: 1, embedding: [1, 0.1] }, { parent: 0, visits: 1, embedding: [0, 1] }] }] }));

  it('warns, but writes, when --svg goes to an .html file', () => {
    const out = join(dir, 'tree.html');
    const r = runCli(['viz', forest, '--svg', '--out', out, '--backend', 'cpu']);
    expect(r.code).toBe(0);
    expect(r.stderr).toMatch(/^trace-alloc: warning: --svg writes an SVG image, but --out .*tree\.html ends in \.html/m);
    expect(readFileSync(out, 'utf8')).toMatch(/<svg/);
  });

  it('says nothing when the extension fits', () => {
    const r = runCli(['viz', forest, '--svg', '--out', join(dir, 'tree.svg'), '--backend', 'cpu']);
    expect(r.code).toBe(0);
    expect(r.stderr).not.toMatch(/warning/);
  });

  it('names the mismatch either way', () => {
    expect(extensionMismatch('a.HTM', true)).toMatch(/ends in \.htm/);
    expect(extensionMismatch('a.svg', false)).toMatch(/without --svg/);
    expect(extensionMismatch('a.svg', true)).toBeUndefined();
    expect(extensionMismatch('a.html', false)).toBeUndefined();
  });
});
