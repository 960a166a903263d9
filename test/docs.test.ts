// The docs stand alone: no pointer to files a reader of the repository or the package cannot
// see (a spec kept elsewhere, a shared folder, issue numbers), every link leads somewhere, and
// every CLI flag and protocol operation is documented somewhere a user looks.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { DEMO_COMMAND } from '../src/cli/demo.js';
import { type CommandHelp, renderCommandHelp } from '../src/cli/help.js';
import { SCORE_COMMAND } from '../src/cli/score.js';
import { SERVE_COMMAND } from '../src/cli/serve.js';
import { VIZ_COMMAND } from '../src/cli/viz.js';
import { LiveSession } from '../src/live/protocol.js';
import { runCli } from './cli-helpers.js';

const REPO = fileURLToPath(new URL('..', import.meta.url));
const SKIP = new Set(['node_modules', 'dist', '.git', 'tmp', 'coverage']);

/** README.md, docs/**\/*.md, bench/results/*.md and every folder's README. */
function userDocs(): string[] {
  const found: string[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (SKIP.has(entry.name) || entry.name.startsWith('.')) continue;
      const path = join(dir, entry.name);
      const rel = relative(REPO, path);
      if (entry.isDirectory()) walk(path);
      else if (/^readme\.md$/i.test(entry.name) || (/\.md$/.test(rel) && /^(docs|bench\/results)\//.test(rel))) found.push(rel);
    }
  };
  walk(REPO);
  return found.sort();
}

const OUTSIDE_REFERENCES: Array<[RegExp, string]> = [
  [/\bSPEC\b/, 'a spec file the reader cannot see (the contract is docs/ALGORITHM.md)'],
  [/§/, 'a section number (refer to a section by its name, e.g. docs/ALGORITHM.md, "Allocation")'],
  [/\.\.\/shared\b|\/work\/shared\b/, 'a folder outside the repository'],
  [/\b[Ii]ssues?\s+#?\d+/, 'an issue number'],
];

/** Each offending line as `line N: text — why`. */
function outsideReferences(text: string): string[] {
  return text.split('\n').flatMap((line, i) => OUTSIDE_REFERENCES
    .filter(([pattern]) => pattern.test(line))
    .map(([, why]) => `line ${i + 1}: ${line.trim()} — ${why}`));
}

const COMMANDS: CommandHelp[] = [SCORE_COMMAND, DEMO_COMMAND, VIZ_COMMAND, SERVE_COMMAND];

describe('docs refer only to what the reader has', () => {
  const docs = userDocs();

  it('finds the docs it checks', () => {
    expect(docs).toEqual(expect.arrayContaining(['README.md', 'docs/ALGORITHM.md', 'docs/GPU.md', 'src/cli/README.md', 'bench/results/latest.md']));
  });

  it.each(docs)('%s', (file) => {
    expect(outsideReferences(readFileSync(join(REPO, file), 'utf8'))).toEqual([]);
  });

  it('the CLI help texts too', () => {
    const texts = [runCli(['--help']).stdout, ...COMMANDS.map(renderCommandHelp)];
    expect(texts.flatMap(outsideReferences)).toEqual([]);
  });

  it('flags each kind of reference', () => {
    expect(outsideReferences('see SPEC §4')).toHaveLength(2);
    expect(outsideReferences('read ../shared/x and /work/shared/y')).toHaveLength(1);
    expect(outsideReferences('fixed in Issue 5; issue #12')).toHaveLength(1);
    expect(outsideReferences('docs/ALGORITHM.md, "Allocation"; a spec-like test; tissue 5')).toEqual([]);
  });
});

/** A heading's anchor as GitHub makes it: lower case, punctuation dropped (letters of any script kept), spaces to hyphens. */
export function anchorOf(heading: string): string {
  return heading.trim().toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, '').replace(/\s/g, '-');
}

/** The anchors of a Markdown file's headings (fenced code left out; a repeated heading gets -1, -2, … as on GitHub). */
function anchorsOf(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  for (const [, text] of markdown.replace(/^```[\s\S]*?^```/gm, '').matchAll(/^#{1,6}\s+(.*)$/gm)) {
    const base = anchorOf(text);
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    anchors.add(count === 0 ? base : `${base}-${count}`);
  }
  return anchors;
}

/** Relative links of a Markdown file (`[..](target)`, images too; web links left out) that lead nowhere: no such file, or no such heading. */
function brokenLinks(file: string): string[] {
  const text = readFileSync(join(REPO, file), 'utf8').replace(/^```[\s\S]*?^```/gm, '');
  const broken: string[] = [];
  for (const [, target] of text.matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
    if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue;
    const [path, anchor] = target.split('#');
    const into = path === '' ? join(REPO, file) : join(REPO, dirname(file), path);
    if (!existsSync(into)) { broken.push(`${target}: no such file`); continue; }
    if (anchor !== undefined && /\.md$/i.test(into) && !anchorsOf(readFileSync(into, 'utf8')).has(decodeURIComponent(anchor))) broken.push(`${target}: no such heading`);
  }
  return broken;
}

describe('links lead somewhere', () => {
  it.each(userDocs())('%s', (file) => {
    expect(brokenLinks(file)).toEqual([]);
  });

  it('makes anchors as GitHub does', () => {
    expect(anchorOf('The demo: `trace-alloc demo`')).toBe('the-demo-trace-alloc-demo');
    expect(anchorOf('Learning α and τ')).toBe('learning-α-and-τ');
    expect(anchorOf('Input paths (`npm run bench:io`)')).toBe('input-paths-npm-run-benchio');
    expect(anchorsOf('# A\n## A\n```\n# not a heading\n```\n')).toEqual(new Set(['a', 'a-1']));
  });

  it('the README lists every section in its contents', () => {
    const readme = readFileSync(join(REPO, 'README.md'), 'utf8');
    const contents = /^## Contents\n([\s\S]*?)^## /m.exec(readme);
    expect(contents, 'a "## Contents" section').not.toBeNull();
    const sections = [...readme.replace(/^```[\s\S]*?^```/gm, '').matchAll(/^## (.*)$/gm)].map((m) => m[1]).filter((h) => h !== 'Contents');
    const listed = [...contents![1].matchAll(/\]\(#([^)]+)\)/g)].map((m) => m[1]);
    expect(listed).toEqual(sections.map(anchorOf));
  });
});

describe('every flag and protocol field is documented', () => {
  /** Where a user looks for a command's flags: the CLI reference, and the command's own page. */
  const PAGES: Record<string, string[]> = { score: ['docs/CLI.md'], demo: ['docs/CLI.md'], viz: ['docs/CLI.md', 'docs/VIZ.md'], serve: ['docs/PROTOCOL.md'] };

  it.each(COMMANDS.map((c) => [c.name, c] as const))('trace-alloc %s', (name, command) => {
    const text = PAGES[name].map((page) => readFileSync(join(REPO, page), 'utf8')).join('\n');
    const missing = Object.keys(command.flags).filter((flag) => !text.includes(`--${flag}`));
    expect(missing, `flags of ${name} missing from ${PAGES[name].join(', ')}`).toEqual([]);
  });

  it('docs/PROTOCOL.md has a row for every operation and names every field it takes', async () => {
    const protocol = readFileSync(join(REPO, 'docs/PROTOCOL.md'), 'utf8');
    const session = new LiveSession({ backend: 'cpu' });
    try {
      const ask = async (request: object) => JSON.parse((await session.handleLine(JSON.stringify(request)))!) as { error: { message: string } };
      // The service names its operations and each one's fields in its error messages.
      const ops = /\(one of: ([^)]*)\)/.exec((await ask({ op: 'no-such-op' })).error.message)![1].split(', ');
      expect(ops).toEqual(expect.arrayContaining(['plan', 'set-params']));
      const missing: string[] = [];
      for (const op of ops) {
        if (!protocol.includes(`| \`${op}\` |`)) missing.push(`op ${op}`);
        const listed = /\(fields: ([^)]*)\)/.exec((await ask({ op, 'no-such-field': 1 })).error.message);
        for (const field of listed === null || listed[1] === 'none' ? [] : listed[1].split(', ')) if (!protocol.includes(`\`${field}\``)) missing.push(`${op}.${field}`);
      }
      expect(missing).toEqual([]);
    } finally {
      session.destroy();
    }
  });
});

it('the git tree has no file that docs call by a private path', () => {
  const r = spawnSync('git', ['ls-files'], { cwd: REPO, encoding: 'utf8' });
  if (r.status !== 0) return; // not a git checkout (an unpacked package): nothing to check
  expect(r.stdout.split('\n').filter((f) => /(^|\/)SPEC\.md$/i.test(f))).toEqual([]);
});
