// Builds the platform wheel of the Python package: the client plus everything
// `trace-alloc serve --stdio` needs, so `pip install` of the wheel gives a working
// `trace_alloc.Service()` on a machine with no checkout and no Node.
//
//   npm run build:wheel                      # -> python/dist/trace_alloc-<v>-py3-none-<platform>.whl
//   npx tsx python/build-wheel.ts --out DIR [--python PYTHON]
//
// The runtime is staged from this checkout (run `npm run build` first; the npm script does):
//   node                   the Node binary running this script (process.execPath)
//   app/dist/**.js         the built library and CLI (no declarations or source maps)
//   app/shaders/*.wgsl     the WGSL kernels
//   app/node_modules/…     the runtime dependencies ("dependencies", transitively; for
//                          `webgpu` only this platform's dawn.node), no types, maps or sources
//   MANIFEST.json          platform, arch, versions: the wheel's platform tag comes from it
// and python/build-backend/trace_alloc_build.py packs it as trace_alloc/_runtime/.
import { spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const REPO = fileURLToPath(new URL('..', import.meta.url));
const BACKEND = join(REPO, 'python/build-backend/trace_alloc_build.py');

interface PackageJson { name: string; version: string; dependencies?: Record<string, string>; optionalDependencies?: Record<string, string> }

function readPackage(dir: string): PackageJson {
  return JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as PackageJson;
}

/** Where Node would find package `name` from inside `from`: the nearest node_modules, not above the repository. */
function resolvePackage(name: string, from: string): string | undefined {
  for (let dir = from; ; dir = dirname(dir)) {
    const candidate = join(dir, 'node_modules', name);
    if (existsSync(join(candidate, 'package.json'))) return candidate;
    if (resolve(dir) === resolve(REPO) || dirname(dir) === dir) return undefined;
  }
}

/**
 * The package folders `serve` can load at run time: this package's "dependencies", then theirs,
 * transitively (optional ones when installed). Type-only packages (`@types/*`) are left out.
 */
export function runtimePackages(root = REPO): string[] {
  const found = new Set<string>();
  const visit = (dir: string): void => {
    const pkg = readPackage(dir);
    const optional = new Set(Object.keys(pkg.optionalDependencies ?? {}));
    for (const name of [...Object.keys(pkg.dependencies ?? {}), ...optional]) {
      if (name.startsWith('@types/')) continue;
      const at = resolvePackage(name, dir);
      if (!at) {
        if (optional.has(name)) continue;
        throw new Error(`${relative(root, dir) || 'package.json'} depends on ${name}, which is not installed: run npm ci`);
      }
      if (found.has(at)) continue;
      found.add(at);
      visit(at);
    }
  };
  visit(root);
  return [...found].sort();
}

/** Files Node never loads: declarations, TypeScript sources, source maps, docs other than licences. */
function runtimeFile(name: string): boolean {
  if (/\.(map|ts|mts|cts)$/.test(name)) return false;
  if (/\.md$/i.test(name)) return /^licen[cs]e/i.test(name);
  return true;
}

/** Copies `from` into `to`: runtime files only, no nested node_modules (staged as packages of their own). */
function copyTree(from: string, to: string, skip: (rel: string) => boolean = () => false, rel = ''): void {
  for (const entry of readdirSync(from, { withFileTypes: true })) {
    const sub = rel ? `${rel}/${entry.name}` : entry.name;
    if (entry.name === 'node_modules' || skip(sub)) continue;
    if (entry.isDirectory()) copyTree(join(from, entry.name), join(to, entry.name), skip, sub);
    else if (entry.isFile() && runtimeFile(entry.name)) {
      mkdirSync(to, { recursive: true });
      copyFileSync(join(from, entry.name), join(to, entry.name));
    }
  }
}

/** `webgpu` ships dawn.node for every platform (130 MiB) and its build scripts: keep this platform's binary. */
function webgpuSkip(rel: string): boolean {
  const platform = process.platform === 'darwin' ? 'darwin-universal' : `${process.platform}-${process.arch}`;
  if (rel === 'build') return true;
  const m = /^dist\/([^/]+)$/.exec(rel);
  return m !== null && m[1] !== platform;
}

export interface StagedRuntime { dir: string; manifest: Record<string, string> }

/** Stages the runtime into `dir` (created; must not exist or be empty). */
export function stageRuntime(dir: string): StagedRuntime {
  const main = join(REPO, 'dist/cli/main.js');
  if (!existsSync(main)) throw new Error(`${main} is missing: run npm run build first`);
  const app = join(dir, 'app');
  mkdirSync(app, { recursive: true });
  const nodeName = process.platform === 'win32' ? 'node.exe' : 'node';
  copyFileSync(realpathSync(process.execPath), join(dir, nodeName));
  chmodSync(join(dir, nodeName), 0o755);
  copyFileSync(join(REPO, 'package.json'), join(app, 'package.json'));
  copyFileSync(join(REPO, 'LICENSE'), join(app, 'LICENSE'));
  copyTree(join(REPO, 'dist'), join(app, 'dist'), (rel) => /\.d\.ts$/.test(rel));
  copyTree(join(REPO, 'shaders'), join(app, 'shaders'));
  const versions: Record<string, string> = {};
  for (const pkgDir of runtimePackages()) {
    const rel = relative(REPO, pkgDir);
    const pkg = readPackage(pkgDir);
    versions[pkg.name] = pkg.version;
    copyTree(pkgDir, join(app, rel), pkg.name === 'webgpu' ? webgpuSkip : undefined);
    copyFileSync(join(pkgDir, 'package.json'), join(app, rel, 'package.json'));
  }
  const manifest = {
    platform: process.platform,
    arch: process.arch,
    node: process.version,
    'trace-alloc': readPackage(REPO).version,
    webgpu: versions.webgpu ?? 'missing',
  };
  writeFileSync(join(dir, 'MANIFEST.json'), `${JSON.stringify(manifest, null, 2)}\n`);
  return { dir, manifest };
}

/** Builds the platform wheel into `out` with `python` (standard library only); returns its path. */
export function buildWheel(out: string, python = 'python3'): string {
  const stage = mkdtempSync(join(tmpdir(), 'trace-alloc-wheel-'));
  try {
    const { dir } = stageRuntime(join(stage, 'runtime'));
    const r = spawnSync(python, [BACKEND, resolve(out), dir], { cwd: join(REPO, 'python'), encoding: 'utf8', env: { ...process.env, PYTHONDONTWRITEBYTECODE: '1' } });
    if (r.error) throw new Error(`${python} could not be started: ${r.error.message}`);
    if (r.status !== 0) throw new Error(`the wheel build failed (exit ${r.status}): ${r.stderr}`);
    return r.stdout.trim().split('\n').pop()!;
  } finally {
    rmSync(stage, { recursive: true, force: true });
  }
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const value = (flag: string): string | undefined => {
    const i = args.indexOf(flag);
    return i >= 0 ? args[i + 1] : undefined;
  };
  const wheel = buildWheel(value('--out') ?? join(REPO, 'python/dist'), value('--python'));
  console.log(wheel);
}
