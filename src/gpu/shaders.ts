import { readFile } from 'node:fs/promises';

/** The WGSL kernels live in `shaders/` at the package root (shipped in the npm package). */
export type KernelName = 'score_workgroup' | 'score_thread' | 'score_tiles' | 'score_reduce' | 'score_staged';

/** Files after common.wgsl that make up each kernel's module (WGSL has no includes). */
const KERNEL_FILES: Readonly<Record<KernelName, readonly string[]>> = {
  score_thread: ['score_thread'],
  score_workgroup: ['group_finish', 'score_workgroup'],
  score_tiles: ['score_tiles'],
  score_reduce: ['group_finish', 'score_reduce'],
  score_staged: ['score_staged'],
};

const cache = new Map<string, string>();

async function shaderFile(name: string): Promise<string> {
  let text = cache.get(name);
  if (text === undefined) {
    // Two levels up from both src/gpu/ (tsx, vitest) and dist/gpu/ (after tsc).
    text = await readFile(new URL(`../../shaders/${name}.wgsl`, import.meta.url), 'utf8');
    cache.set(name, text);
  }
  return text;
}

/** Full module source: a prelude choosing the embedding scalar type, common.wgsl, the kernel's files. */
export async function kernelSource(kernel: KernelName, f16: boolean): Promise<string> {
  const prelude = f16 ? 'enable f16;\nalias EmbScalar = f16;\n' : 'alias EmbScalar = f32;\n';
  const parts = await Promise.all(['common', ...KERNEL_FILES[kernel]].map(shaderFile));
  return prelude + parts.join('\n');
}
