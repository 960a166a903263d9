// The published package as a user gets it: `npm pack` into a temp folder, the tarball unpacked
// into a fresh temp project, and that project type-checked (strict, NodeNext, no skipLibCheck)
// against every TypeScript example of the shipped Markdown, with TypeScript 5 and with
// TypeScript 7 (whose DOM lib declares WebGPU itself). Offline: the package's runtime
// dependencies are linked from this repository's node_modules, and both compilers are the
// repo's own (`typescript` and the `typescript-7` alias).
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, posix } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const REPO = fileURLToPath(new URL('..', import.meta.url));
/** The compilers a consumer may have: today's `npm i typescript` installs 7.x, many projects pin 5.x. */
const COMPILERS = { 'ts5': join(REPO, 'node_modules/typescript/bin/tsc'), 'ts7': join(REPO, 'node_modules/typescript-7/bin/tsc') } as const;
type Compiler = keyof typeof COMPILERS;

interface PackResult { filename: string; files: Array<{ path: string }> }

let work: string;
let tarball: string;
let shipped: Set<string>;
let project: string;

function run(cmd: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = {}) {
  const r = spawnSync(cmd, args, { cwd, encoding: 'utf8', maxBuffer: 1 << 26, env: { ...process.env, ...env } });
  return { code: r.status, stdout: r.stdout ?? '', stderr: r.stderr ?? '', error: r.error };
}

/** npm with its cache and logs inside our temp folder, so the test writes nowhere else. */
function npm(args: string[], cwd: string) {
  return run('npm', args, cwd, {
    npm_config_cache: join(work, 'npm-cache'),
    npm_config_logs_max: '0',
    npm_config_update_notifier: 'false',
    npm_config_fund: 'false',
    npm_config_audit: 'false',
  });
}

beforeAll(() => {
  if (!existsSync(join(REPO, 'dist/index.d.ts'))) throw new Error('dist/ is missing: build first (npm test runs tsc before vitest)');
  work = mkdtempSync(join(tmpdir(), 'trace-alloc-pack-'));
  // dist/ is fresh (npm test builds it first); --ignore-scripts skips the prepare rebuild.
  const packed = npm(['pack', '--json', '--ignore-scripts', '--pack-destination', work], REPO);
  if (packed.code !== 0) throw new Error(`npm pack failed (${packed.code}): ${packed.stderr}${packed.error ?? ''}`);
  const [result] = JSON.parse(packed.stdout) as PackResult[];
  tarball = join(work, result.filename);
  shipped = new Set(result.files.map((f) => f.path));

  project = join(work, 'consumer');
  const installed = join(project, 'node_modules/trace-alloc');
  mkdirSync(installed, { recursive: true });
  const untar = run('tar', ['-xzf', tarball, '-C', installed, '--strip-components=1'], work);
  if (untar.code !== 0) throw new Error(`tar failed: ${untar.stderr}`);
  // What `npm install <tarball>` would add: the runtime dependencies, and nothing else.
  const manifest = JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8')) as { dependencies?: Record<string, string> };
  for (const dep of Object.keys(manifest.dependencies ?? {})) {
    const link = join(project, 'node_modules', dep);
    mkdirSync(dirname(link), { recursive: true });
    symlinkSync(join(REPO, 'node_modules', dep), link, 'dir');
  }
  writeFileSync(join(project, 'package.json'), `${JSON.stringify({ name: 'consumer', private: true, type: 'module' })}\n`);
}, 120_000);

afterAll(() => {
  if (work) rmSync(work, { recursive: true, force: true });
});

// ---------------------------------------------------------------------------------------------
// Declarations a consumer can compile

/** ```ts / ```typescript blocks of a Markdown file, in order. */
function typescriptBlocks(markdown: string): string[] {
  return [...markdown.matchAll(/^```(?:ts|typescript|mts)\s*\n([\s\S]*?)^```\s*$/gm)].map((m) => m[1]);
}

/**
 * What the doc examples take as given (the surrounding program): declared only where a block
 * uses the name without defining it. Types come through a namespace import, so they cannot
 * clash with the names a block imports.
 */
const CONTEXT: Record<string, string> = {
  forest: 'declare const forest: TraceAllocTypes.PackedForest;',
  scores: 'declare const scores: TraceAllocTypes.Scores;',
  allocation: 'declare const allocation: TraceAllocTypes.Allocation;',
  newRollouts: 'declare const newRollouts: Float64Array;',
  newRewardSum: 'declare const newRewardSum: Float64Array;',
  nodes: 'declare const nodes: TraceAllocTypes.NodeInput[];',
  embedding: 'declare const embedding: number[];',
  rows: 'declare const rows: Int32Array;',
  updated: 'declare const updated: TraceAllocTypes.PackedForest;',
  alpha: 'declare const alpha: number;',
  tau: 'declare const tau: number;',
  params: 'declare const params: TraceAllocTypes.ScoreParams;',
};

function defines(block: string, name: string): boolean {
  return new RegExp(`\\b(?:const|let|var|function|class)\\s+${name}\\b|\\bimport\\b[^;]*\\b${name}\\b[^;]*\\bfrom\\b`).test(block);
}

function withContext(block: string): string {
  const given = Object.entries(CONTEXT)
    .filter(([name]) => new RegExp(`\\b${name}\\b`).test(block) && !defines(block, name))
    .map(([, declaration]) => declaration);
  return [`import type * as TraceAllocTypes from 'trace-alloc';`, ...given, '', block, 'export {};', ''].join('\n');
}

/** Shipped Markdown files whose TypeScript examples a user would copy. */
function documentedExamples(): Array<{ file: string; index: number; code: string }> {
  const files = [...shipped].filter((p) => p === 'README.md' || /^docs\/.*\.md$/.test(p)).sort();
  return files.flatMap((file) => typescriptBlocks(readFileSync(join(REPO, file), 'utf8')).map((code, index) => ({ file, index, code })));
}

function typeCheck(compiler: Compiler, compilerOptions: Record<string, unknown>, label: string, extra: Record<string, string> = {}) {
  const examples = documentedExamples();
  const dir = join(project, `${compiler}-${label}`);
  mkdirSync(dir, { recursive: true });
  const names = examples.map(({ file, index, code }) => {
    const name = `${file.replace(/[/.]/g, '_')}_${index}.ts`;
    writeFileSync(join(dir, name), withContext(code));
    return name;
  });
  for (const [name, code] of Object.entries(extra)) {
    writeFileSync(join(dir, name), code);
    names.push(name);
  }
  writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({
    compilerOptions: { strict: true, module: 'NodeNext', moduleResolution: 'NodeNext', target: 'ES2022', noEmit: true, skipLibCheck: false, ...compilerOptions },
    files: names,
  }));
  return { ...run(process.execPath, [COMPILERS[compiler], '-p', dir], dir), examples };
}

describe('published declarations', () => {
  it('extracts the README examples (a renamed fence would otherwise go unchecked)', () => {
    const readme = readFileSync(join(REPO, 'README.md'), 'utf8');
    const fences = [...readme.matchAll(/^```(\w*)/gm)].map((m) => m[1]).filter((lang) => lang !== '');
    const tsFences = fences.filter((lang) => /^(ts|typescript|mts|js|javascript|mjs)$/.test(lang));
    expect(tsFences.every((lang) => /^(ts|typescript|mts)$/.test(lang)), `README code fences: ${fences.join(', ')}`).toBe(true);
    expect(typescriptBlocks(readme).length).toBe(tsFences.length);
    expect(tsFences.length).toBeGreaterThanOrEqual(3);
  });

  function linkDevPackage(name: string): void {
    const link = join(project, 'node_modules', name);
    if (existsSync(link)) return;
    mkdirSync(dirname(link), { recursive: true });
    symlinkSync(join(REPO, 'node_modules', name), link, 'dir');
  }

  it('uses the compilers it names (TypeScript 5.x and 7.x)', () => {
    expect(run(process.execPath, [COMPILERS.ts5, '--version'], REPO).stdout).toMatch(/Version 5\./);
    expect(run(process.execPath, [COMPILERS.ts7, '--version'], REPO).stdout).toMatch(/Version 7\./);
  });

  for (const compiler of Object.keys(COMPILERS) as Compiler[]) {
    it(`${compiler}: type-check every README and docs example in a strict consumer with no "types" of its own`, () => {
      // types: [] — no @types/node, no @webgpu/types listed: the package must bring what it needs.
      const r = typeCheck(compiler, { types: [] }, 'no-types');
      expect(r.examples.filter((e) => e.file === 'README.md').length).toBeGreaterThanOrEqual(3);
      expect(`${r.stdout}${r.stderr}`).toBe('');
      expect(r.code).toBe(0);
    }, 120_000);

    it(`${compiler}: type-check alongside @types/node too (the usual Node project)`, () => {
      linkDevPackage('@types/node');
      const r = typeCheck(compiler, { types: ['node'] }, 'node-types');
      expect(`${r.stdout}${r.stderr}`).toBe('');
      expect(r.code).toBe(0);
    }, 120_000);

    // The settings strict projects add on top of `strict`: an indexed read may be undefined, and an
    // optional property may not be set to undefined. The quick start must compile under them as
    // written, and the declarations too (skipLibCheck stays off).
    it(`${compiler}: type-check every example under noUncheckedIndexedAccess and exactOptionalPropertyTypes`, () => {
      linkDevPackage('@types/node');
      const r = typeCheck(compiler, { types: ['node'], noUncheckedIndexedAccess: true, exactOptionalPropertyTypes: true }, 'strictest');
      expect(r.examples.filter((e) => e.file === 'README.md').length).toBeGreaterThanOrEqual(3);
      expect(`${r.stdout}${r.stderr}`).toBe('');
      expect(r.code).toBe(0);
    }, 120_000);

    it(`${compiler}: type-check with no DOM lib at all (the declarations need no WebGPU or DOM types)`, () => {
      linkDevPackage('@types/node');
      const r = typeCheck(compiler, { types: ['node'], lib: ['ES2023'] }, 'no-dom');
      expect(`${r.stdout}${r.stderr}`).toBe('');
      expect(r.code).toBe(0);
    }, 120_000);
  }

  // The WebGPU objects the API hands out are empty interfaces in the package; with real WebGPU
  // types in the program (TS 7's DOM lib, or @webgpu/types added by the consumer on TS 5) they
  // merge into the full types, so a consumer can call WebGPU on them.
  const useDevice = [
    "import { GpuContext } from 'trace-alloc';",
    'const context = await GpuContext.create();',
    'const limit: number = context.device.limits.maxBufferSize;',
    "const buffer = context.device.createBuffer({ size: 16, usage: 0x80 }); // STORAGE",
    'buffer.destroy();',
    'export { limit };',
    '',
  ].join('\n');

  it('ts7: the WebGPU objects it hands out have TypeScript 7\'s own WebGPU types', () => {
    const r = typeCheck('ts7', { types: [] }, 'webgpu-dom', { 'use-device.ts': useDevice });
    expect(`${r.stdout}${r.stderr}`).toBe('');
    expect(r.code).toBe(0);
  }, 120_000);

  it('ts5: the WebGPU objects it hands out take @webgpu/types when the consumer adds it', () => {
    linkDevPackage('@webgpu/types');
    const r = typeCheck('ts5', { types: ['@webgpu/types'] }, 'webgpu-types', { 'use-device.ts': useDevice });
    expect(`${r.stdout}${r.stderr}`).toBe('');
    expect(r.code).toBe(0);
  }, 120_000);

  it('ts5: without WebGPU types, a device is an opaque handle (calling WebGPU on it is a type error)', () => {
    const r = typeCheck('ts5', { types: [] }, 'webgpu-opaque', { 'use-device.ts': useDevice });
    expect(r.code).not.toBe(0);
    expect(r.stdout).toMatch(/use-device\.ts.*(limits|createBuffer)/);
    expect(r.stdout).not.toMatch(/node_modules\/trace-alloc/);
  }, 120_000);

  it('cite nothing a user cannot read: no internal "SPEC", every docs/ file named is in the package', () => {
    const declarations = [...shipped].filter((p) => p.endsWith('.d.ts'));
    expect(declarations).toContain('dist/index.d.ts');
    const problems: string[] = [];
    for (const file of declarations) {
      const text = readFileSync(join(project, 'node_modules/trace-alloc', file), 'utf8');
      if (/\bSPEC\b/.test(text)) problems.push(`${file}: cites SPEC`);
      for (const [doc] of text.matchAll(/\bdocs\/[\w./-]+\.md\b/g)) if (!shipped.has(doc)) problems.push(`${file}: ${doc} is not shipped`);
    }
    expect(problems).toEqual([]);
  });

  it('context declarations are added only where an example leaves a name undefined', () => {
    expect(withContext('const forest = 1;\nforest;')).not.toContain('declare const forest');
    expect(withContext('score(forest);')).toContain('declare const forest');
    expect(withContext("import { scores } from 'x';\nscores;")).not.toContain('declare const scores');
  });
});

// ---------------------------------------------------------------------------------------------
// Tarball contents

/** Relative link targets of a Markdown file: `[..](target)` and `![..](target)`, anchors dropped. */
function relativeLinks(markdown: string): string[] {
  const targets = [...markdown.matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((m) => m[1]);
  return targets.filter((t) => !/^[a-z][a-z0-9+.-]*:/i.test(t) && !t.startsWith('#')).map((t) => t.split('#')[0]);
}

describe('tarball', () => {
  it('ships LICENSE and the repository, homepage and bugs fields', () => {
    expect(shipped.has('LICENSE')).toBe(true);
    const license = readFileSync(join(REPO, 'LICENSE'), 'utf8');
    expect(license).toMatch(/^MIT License/);
    expect(license).toContain('Copyright (c) 2026 trace-alloc contributors');
    const pkg = JSON.parse(readFileSync(join(project, 'node_modules/trace-alloc/package.json'), 'utf8')) as Record<string, unknown>;
    expect(pkg.license).toBe('MIT');
    expect(pkg.repository).toMatchObject({ type: 'git', url: expect.stringMatching(/^git\+https:\/\/github\.com\/.+\.git$/) });
    expect(pkg.homepage).toMatch(/^https:\/\//);
    expect(pkg.bugs).toMatchObject({ url: expect.stringMatching(/^https:\/\/.+\/issues$/) });
  });

  it('holds every file that a shipped Markdown file links to', () => {
    const markdown = [...shipped].filter((p) => p.endsWith('.md'));
    expect(markdown).toEqual(expect.arrayContaining(['README.md', 'docs/ALGORITHM.md', 'docs/PROTOCOL.md', 'examples/python/README.md']));
    const missing: string[] = [];
    for (const file of markdown) {
      for (const link of relativeLinks(readFileSync(join(REPO, file), 'utf8'))) {
        const target = posix.normalize(posix.join(posix.dirname(file), link)).replace(/\/$/, '');
        const inside = target !== '..' && !target.startsWith('../');
        const found = inside && (shipped.has(target) || [...shipped].some((p) => p.startsWith(`${target}/`)));
        if (!found) missing.push(`${file}: ${link}`);
      }
    }
    expect(missing).toEqual([]);
  });

  it('finds links the way a reader does', () => {
    expect(relativeLinks('see [a](docs/A.md#x), ![img](img/b.png "t"), [web](https://x.org), [top](#y), [dir](examples/python/)'))
      .toEqual(['docs/A.md', 'img/b.png', 'examples/python/']);
  });

  it('is ESM-only: import() works from CommonJS, require() fails as the README says', () => {
    const cjs = join(project, 'probe.cjs');
    writeFileSync(cjs, [
      "import('trace-alloc').then((m) => console.log('import', typeof m.packForest));",
      "try { require('trace-alloc'); console.log('require ok'); } catch (e) { console.log('require', e.code); }",
    ].join('\n'));
    const r = run(process.execPath, [cjs], project);
    expect(r.stderr).toBe('');
    expect(r.stdout).toContain('require ERR_PACKAGE_PATH_NOT_EXPORTED');
    expect(r.stdout).toContain('import function');
    const readme = readFileSync(join(REPO, 'README.md'), 'utf8');
    expect(readme).toMatch(/ESM-only/);
    expect(readme).toContain("await import('trace-alloc')");
  }, 60_000);
});
