import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

// The layers of src/ stay one-way: no module imports itself back through others, and no folder
// imports a folder that imports it (src/score is the interface src/gpu implements, so the backend
// choice that needs both lives above them in src/backend). Imports are read with TypeScript's
// own pre-processor, so `import type`, re-exports and `import()` all count.

const root = join(import.meta.dirname, '..');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

/** Each src/ file (relative to the repository) and the src/ files it imports. */
function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of sourceFiles(join(root, 'src'))) {
    const { importedFiles } = ts.preProcessFile(readFileSync(file, 'utf8'), true, true);
    const targets = importedFiles
      .map((imported) => imported.fileName)
      .filter((name) => name.startsWith('.'))
      .map((name) => relative(root, join(dirname(file), name)).replace(/\.js$/, '.ts'));
    graph.set(relative(root, file), targets);
  }
  return graph;
}

/** The cycles of `graph` (strongly connected components of more than one node, or a self-edge), each sorted. */
function cycles(graph: Map<string, string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (node: string): void => {
    index.set(node, next);
    low.set(node, next++);
    stack.push(node);
    onStack.add(node);
    for (const target of graph.get(node) ?? []) {
      if (!graph.has(target)) continue;
      if (!index.has(target)) {
        visit(target);
        low.set(node, Math.min(low.get(node)!, low.get(target)!));
      } else if (onStack.has(target)) {
        low.set(node, Math.min(low.get(node)!, index.get(target)!));
      }
    }
    if (low.get(node) !== index.get(node)) return;
    const component: string[] = [];
    let member: string;
    do {
      member = stack.pop()!;
      onStack.delete(member);
      component.push(member);
    } while (member !== node);
    if (component.length > 1 || (graph.get(node) ?? []).includes(node)) found.push(component.sort());
  };
  for (const node of graph.keys()) if (!index.has(node)) visit(node);
  return found;
}

/** The folder-to-folder imports of a file graph (src/index.ts is the top, its own "folder"). */
function folderGraph(files: Map<string, string[]>): Map<string, string[]> {
  const folders = new Map<string, Set<string>>();
  for (const [file, targets] of files) {
    const from = dirname(file);
    const set = folders.get(from) ?? new Set<string>();
    for (const target of targets) if (dirname(target) !== from) set.add(dirname(target));
    folders.set(from, set);
  }
  return new Map([...folders].map(([folder, set]) => [folder, [...set]]));
}

describe('layering of src/', () => {
  const files = importGraph();

  it('reads the imports it checks (a sanity check of the scanner)', () => {
    expect(files.get('src/backend/select.ts')).toContain('src/gpu/scorer.ts');
    expect(files.get('src/forest/packed.ts')).toContain('src/forest/limits.ts');
    expect(cycles(new Map([['a', ['b']], ['b', ['a']], ['c', ['a']]]))).toEqual([['a', 'b']]);
  });

  it('has no import cycle between modules (src/forest/limits.ts and packed.ts once imported each other)', () => {
    expect(cycles(files)).toEqual([]);
  });

  it('has no import cycle between folders (src/score and src/gpu once imported each other)', () => {
    expect(cycles(folderGraph(files))).toEqual([]);
  });

  it('keeps src/score below src/gpu: the scorer interface and the CPU reference import no GPU code', () => {
    const upward = [...files].filter(([file]) => file.startsWith('src/score/')).flatMap(([file, targets]) => targets.filter((t) => t.startsWith('src/gpu/') || t.startsWith('src/backend/')).map((t) => `${file} -> ${t}`));
    expect(upward).toEqual([]);
  });
});
