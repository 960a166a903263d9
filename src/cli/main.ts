#!/usr/bin/env node
import { exitCodeFor } from './exit-code.js';
import { UsageError } from './flags.js';

import type { CommandHelp } from './help.js';

/** The commands, each with its one-line summary and its help (loaded only when asked for). */
const COMMANDS: Record<string, { line: string; help: () => Promise<CommandHelp> }> = {
  score: { line: 'score a forest and write the allocation plan (JSON)', help: async () => (await import('./score.js')).SCORE_COMMAND },
  demo: { line: 'the main job on a seeded synthetic batch, with a summary', help: async () => (await import('./demo.js')).DEMO_COMMAND },
  viz: { line: "an explorable priority heatmap of the forest's trees (HTML, or SVG)", help: async () => (await import('./viz.js')).VIZ_COMMAND },
  serve: { line: 'a live forest driven by JSON Lines over stdin/stdout', help: async () => (await import('./serve.js')).SERVE_COMMAND },
  convert: { line: 'a forest from one format to another (json, jsonl, npz, arrow)', help: async () => (await import('./convert.js')).CONVERT_COMMAND },
};

const USAGE = `trace-alloc — TRACE rollout allocation for tree-structured agentic RL

usage:
  trace-alloc score FILE|- [flags]     ${COMMANDS.score.line}
  trace-alloc demo [flags]             ${COMMANDS.demo.line}
  trace-alloc viz FILE|- --out FILE    ${COMMANDS.viz.line}
  trace-alloc serve --stdio [flags]    ${COMMANDS.serve.line}
  trace-alloc convert IN OUT [flags]   ${COMMANDS.convert.line}
  trace-alloc --version, -V            print the version
  trace-alloc --help, -h               print this help

Run 'trace-alloc <command> --help' (or 'trace-alloc help <command>') for a command's flags,
each with its default.`;

// Mesa's Vulkan drivers warn on stderr without a runtime dir; give them one before WebGPU loads.
process.env.XDG_RUNTIME_DIR ??= '/tmp';

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (rest.includes('--help') || rest.includes('-h')) return printHelp(command);
  switch (command) {
    case 'score':
      return (await import('./score.js')).runScore(rest);
    case 'demo':
      return (await import('./demo.js')).runDemo(rest);
    case 'viz':
      return (await import('./viz.js')).runViz(rest);
    case 'serve':
      return (await import('./serve.js')).runServe(rest);
    case 'convert':
      return (await import('./convert.js')).runConvert(rest);
    case '--version':
    case '-V':
    case '-v':
      process.stdout.write(`${await version()}\n`);
      return 0;
    case undefined:
      throw new UsageError("a command is needed: score, demo, viz, serve or convert (see 'trace-alloc --help')");
    case 'help':
      return printHelp(rest[0]);
    case '--help':
    case '-h':
      process.stdout.write(`${USAGE}\n`);
      return 0;
    default:
      throw new UsageError(`unknown command ${JSON.stringify(command)} (try: score, demo, viz, serve, convert)`);
  }
}

async function printHelp(command: string | undefined): Promise<number> {
  const entry = command === undefined ? undefined : COMMANDS[command];
  if (entry === undefined) process.stdout.write(`${USAGE}\n`);
  else process.stdout.write(`${(await import('./help.js')).renderCommandHelp(await entry.help())}\n`);
  return 0;
}

async function version(): Promise<string> {
  const { readFileSync } = await import('node:fs');
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
  return pkg.version;
}

main(process.argv.slice(2)).then(
  (code) => { process.exitCode = code; },
  (err: unknown) => {
    const code = exitCodeFor(err);
    const message = err instanceof Error ? err.message : String(err);
    process.stderr.write(`trace-alloc: ${message.replace(/\s*\n\s*/g, ' ')}\n`);
    if (code === 1 && process.env.TRACE_ALLOC_DEBUG && err instanceof Error) process.stderr.write(`${err.stack}\n`);
    process.exitCode = code;
  },
);
