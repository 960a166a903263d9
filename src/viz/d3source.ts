import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

let cached: string | undefined;

/**
 * d3-hierarchy's UMD build, read from the installed package so the page carries the layout
 * code itself (no bundler, no CDN). The package's `exports` map hides `dist/`, so resolve its
 * entry point and read the sibling file.
 */
export function d3HierarchySource(): string {
  if (cached !== undefined) return cached;
  const require = createRequire(import.meta.url);
  let entry: string;
  try {
    entry = require.resolve('d3-hierarchy');
  } catch {
    throw new Error('the viz needs the d3-hierarchy package (npm install d3-hierarchy)');
  }
  const text = readFileSync(join(dirname(entry), 'd3-hierarchy.min.js'), 'utf8');
  // Inlined into a <script>: a closing tag inside it would end the element early.
  if (/<\/script/i.test(text)) throw new Error('d3-hierarchy.min.js contains "</script" and cannot be inlined');
  cached = text;
  return text;
}
