import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('..', import.meta.url));

/** The first ```python block after `heading` in a Markdown file. */
function pythonBlock(path: string, heading: string): string {
  const text = readFileSync(`${root}${path}`, 'utf8');
  const at = text.indexOf(heading);
  expect(at, `${path} has no "${heading}"`).toBeGreaterThanOrEqual(0);
  const block = /```python\n([\s\S]*?)```/.exec(text.slice(at));
  expect(block, `${path} has no python block after "${heading}"`).not.toBeNull();
  return block![1]!;
}

/**
 * README.md's Python section shows the TRL script of python/README.md, character for character:
 * python/tests/test_readme.py runs that one as written (a tiny model, no downloads), so the
 * front page's copy runs too.
 */
describe("README.md's Python snippet", () => {
  it("is python/README.md's TRL script, which python/tests/test_readme.py runs", () => {
    const front = pythonBlock('README.md', '## Python\n');
    expect(front).toBe(pythonBlock('python/README.md', "## In TRL's GRPOTrainer"));
    expect(front).toContain('trainer.train()');
  });
});
