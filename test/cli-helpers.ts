import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** The built CLI; `npm test` runs `tsc` first so the tests exercise the real binary. */
export const CLI = fileURLToPath(new URL('../dist/cli/main.js', import.meta.url));

export interface CliResult { code: number | null; stdout: string; stderr: string }

export function runCli(args: string[], input?: string, env: NodeJS.ProcessEnv = {}): CliResult {
  if (!existsSync(CLI)) throw new Error(`${CLI} is missing: build first (npm test runs tsc before vitest)`);
  const r = spawnSync(process.execPath, [CLI, ...args], { input, encoding: 'utf8', maxBuffer: 1 << 28, env: { ...process.env, XDG_RUNTIME_DIR: process.env.XDG_RUNTIME_DIR ?? '/tmp', ...env } });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}
