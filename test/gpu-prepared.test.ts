import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GpuContext } from '../src/gpu/context.js';
import { GpuInputRangeError } from '../src/gpu/errors.js';
import { prepareForest, wholeChunkWork } from '../src/gpu/prepared.js';
import { GpuScorer } from '../src/gpu/scorer.js';
import { packForest } from '../src/forest/packed.js';
import { scoreCpu } from '../src/score/cpu.js';
import { generateForest } from '../src/synth/generate.js';
import { deviation, gpuDescribe, withinTolerance } from './gpu-support.js';

describe('the device layout kept with a forest', () => {
  it('is built once per forest, precision and chunk cap, with its work lists', () => {
    const forest = generateForest({ trees: 40, dim: 8, seed: 3 });
    const a = prepareForest(forest, false, 1 << 20);
    expect(prepareForest(forest, false, 1 << 20)).toBe(a);
    expect(prepareForest(forest, true, 1 << 20)).not.toBe(a);
    const small = prepareForest(forest, false, 4096);
    expect(small.length).toBeGreaterThan(1);
    expect(small.map((p) => p.chunk.groupEnd - p.chunk.groupStart).reduce((x, y) => x + y, 0)).toBe(forest.groupCount);
    expect(wholeChunkWork(forest, a[0], 'auto')).toBe(wholeChunkWork(forest, a[0], 'auto'));
    expect(a[0].embedding.buffer).toBeInstanceOf(ArrayBuffer); // Dawn's writeBuffer cannot take SharedArrayBuffer views
    expect(prepareForest(generateForest({ trees: 40, dim: 8, seed: 3 }), false, 1 << 20)).not.toBe(a);
  });

  it('caches nothing for a forest the f32 kernels cannot score', () => {
    const wide = packForest({ trees: [{ id: 'w', nodes: [{ embedding: [1] }, { parent: 0, reward: -4e30, visits: 1, embedding: [1] }, { parent: 0, reward: 4e30, visits: 1, embedding: [2] }] }] });
    expect(() => prepareForest(wide, false, 1 << 20)).toThrow(GpuInputRangeError);
    expect(() => prepareForest(wide, false, 1 << 20)).toThrow(GpuInputRangeError);
  });
});

gpuDescribe('GPU calls on a forest whose layout is kept', () => {
  let ctx: GpuContext;
  beforeAll(async () => { ctx = await GpuContext.create(); });
  afterAll(() => ctx?.destroy());

  it('score the same on the first and later calls, chunked or not, and as resident forests', async () => {
    const forest = generateForest({ trees: 120, dim: 24, seed: 5 });
    const ref = scoreCpu(forest, { alpha: 0.5, tau: 0.7 });
    for (const maxChunkBytes of [undefined, 16384]) {
      const scorer = await GpuScorer.create({ context: ctx, maxChunkBytes });
      const first = await scorer.score(forest, { alpha: 0.5, tau: 0.7 });
      const again = await scorer.score(forest, { alpha: 0.5, tau: 0.7 });
      expect(withinTolerance(deviation(forest, first, ref))).toBe(true);
      expect(Array.from(again.weight)).toEqual(Array.from(first.weight));
      expect(Array.from(again.intensity)).toEqual(Array.from(first.intensity));
      const resident = await scorer.resident(forest);
      const all = await resident.scoreAll({ alpha: 0.5, tau: 0.7 });
      expect(Array.from(all.contrast)).toEqual(Array.from(first.contrast));
      resident.destroy();
      scorer.destroy();
    }
  });
});
