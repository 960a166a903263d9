import { createRequire } from 'node:module';
import path from 'node:path';
import * as tf from '@tensorflow/tfjs';
import { setWasmPaths } from '@tensorflow/tfjs-backend-wasm';
import type { PackedForest } from '../../src/forest/packed.js';

/**
 * Peer (b): the same math batched in TensorFlow.js on its WebAssembly backend (float32).
 * Groups are bucketed by size k so each bucket is a dense [G, k, D] tensor; similarity is a
 * batched Gram matrix, the rest is elementwise over [G, k, k] — what a user fluent in tensor
 * code would write, with the distance in the cancellation-free form SPEC §2 asks for (the
 * Gram-matrix shortcut misses the float32 tolerance on near-duplicate siblings). Gathering rows into the buckets and reading results back are timed: the
 * packed rows have to get in and the scores have to get out for the peer to be useful.
 */
export interface TfjsInfo {
  version: string;
  backend: string;
  simd: boolean;
  threads: boolean;
}

let ready: TfjsInfo | undefined;

export async function initTfjs(): Promise<TfjsInfo> {
  if (ready) return ready;
  const require = createRequire(import.meta.url);
  const dist = path.join(path.dirname(require.resolve('@tensorflow/tfjs-backend-wasm/package.json')), 'dist') + path.sep;
  setWasmPaths(dist);
  if (!(await tf.setBackend('wasm'))) throw new Error('TensorFlow.js could not start its wasm backend');
  await tf.ready();
  ready = { version: tf.version.tfjs, backend: tf.getBackend(), simd: tf.env().getBool('WASM_HAS_SIMD_SUPPORT'), threads: tf.env().getBool('WASM_HAS_MULTITHREAD_SUPPORT') };
  return ready;
}

// Keep each chunk's transient tensors to a few tens of MB inside the wasm heap.
const MAX_PAIR_ELEMS = 4 << 20;
const MAX_ROW_ELEMS = 8 << 20;
const MAX_PAIR_DIM_ELEMS = 8 << 20;

export function scoreTfjs(forest: PackedForest, alpha = 1, tau = 0.5): { contrast: Float64Array; weight: Float64Array; gradAlpha: Float64Array; gradTau: Float64Array; intensity: Float64Array } {
  const { nodeCount, groupCount, groupOffset, groupChild, dim, embedding, reward, visits, uncertainty } = forest;
  const out = {
    contrast: new Float64Array(nodeCount),
    weight: new Float64Array(nodeCount).fill(1),
    gradAlpha: new Float64Array(nodeCount),
    gradTau: new Float64Array(nodeCount),
    intensity: new Float64Array(groupCount),
  };
  const buckets = new Map<number, number[]>();
  for (let g = 0; g < groupCount; g++) {
    const k = (groupOffset[g + 1] as number) - (groupOffset[g] as number);
    if (k < 2) continue; // a lone child keeps contrast 0, weight 1
    let list = buckets.get(k);
    if (!list) buckets.set(k, (list = []));
    list.push(g);
  }
  for (const [k, groups] of buckets) {
    const d = Math.max(1, dim);
    const chunk = Math.max(1, Math.min(Math.floor(MAX_PAIR_ELEMS / (k * k)), Math.floor(MAX_ROW_ELEMS / (k * d)), Math.floor(MAX_PAIR_DIM_ELEMS / (k * k * d))));
    const offDiag = tf.sub(1, tf.eye(k));
    for (let start = 0; start < groups.length; start += chunk) {
      const ids = groups.slice(start, start + chunk);
      const G = ids.length;
      const rows = new Int32Array(G * k);
      ids.forEach((g, i) => rows.set(groupChild.subarray(groupOffset[g] as number, (groupOffset[g] as number) + k), i * k));
      const e = new Float32Array(G * k * dim);
      const r = new Float32Array(G * k);
      const seen = new Float32Array(G * k);
      const u = new Float32Array(G * k);
      // Rewards and uncertainties relative to the group's first child, subtracted in float64:
      // only differences matter, and float32 keeps small differences of nearly equal values
      // this way (|u_i − u_j| of two uncertainties near 0.8 loses ~1e-7 absolute otherwise,
      // enough to miss the 1e-4 tolerance on contrast for near-duplicate siblings).
      rows.forEach((row, i) => {
        const first = rows[i - (i % k)] as number;
        if (dim > 0) e.set(embedding.subarray(row * dim, (row + 1) * dim), i * dim);
        r[i] = (reward[row] as number) - (reward[first] as number);
        seen[i] = (visits[row] as number) > 0 ? 1 : 0;
        u[i] = (uncertainty[row] as number) - (uncertainty[first] as number);
      });
      const [C, w, gA, gB, I] = tf.tidy(() => {
        let dist: tf.Tensor;
        if (dim === 0) {
          dist = tf.fill([G, k, k], 0.5);
        } else {
          const E = tf.tensor3d(e, [G, k, dim]);
          const norm = tf.sqrt(tf.sum(tf.square(E), -1, true));
          const zero = tf.equal(norm, 0);
          const unit = tf.div(E, tf.where(zero, tf.onesLike(norm), norm));
          // SPEC §2: d = ‖ê_i − ê_j‖²/4, not (1 − ê_i·ê_j)/2, which cancels in float32 for near-duplicates.
          const diff = tf.sub(tf.expandDims(unit, 2), tf.expandDims(unit, 1));
          const sq = tf.clipByValue(tf.div(tf.sum(tf.square(diff), -1), 4), 0, 1);
          const either = tf.logicalOr(zero, tf.transpose(zero, [0, 2, 1]));
          dist = tf.where(either, tf.fill([G, k, k], 0.5), sq);
        }
        const col = (x: Float32Array) => tf.tensor3d(x, [G, k, 1]);
        const row = (x: Float32Array) => tf.tensor3d(x, [G, 1, k]);
        const both = tf.mul(col(seen), row(seen));
        const delta = tf.add(tf.mul(tf.abs(tf.sub(col(r), row(r))), both), tf.abs(tf.sub(col(u), row(u))));
        const den = tf.add(tf.add(delta, tf.mul(alpha, dist)), 1e-6);
        const c = tf.mul(tf.div(delta, den), offDiag);
        const dc = tf.mul(tf.div(tf.mul(-alpha, tf.mul(delta, dist)), tf.square(den)), offDiag);
        const Ci = tf.div(tf.sum(c, -1), k - 1);
        const Cd = tf.div(tf.sum(dc, -1), k - 1);
        const wi = tf.softmax(tf.div(Ci, tau), -1);
        const wC = tf.sum(tf.mul(wi, Ci), -1, true);
        const wCd = tf.sum(tf.mul(wi, Cd), -1, true);
        return [Ci, wi, tf.div(tf.sub(Cd, wCd), tau), tf.div(tf.sub(Ci, wC), -tau), tf.mean(Ci, -1)];
      });
      const [cd, wd, ad, bd, id] = [C, w, gA, gB, I].map((t) => t!.dataSync()) as Float32Array[];
      tf.dispose([C!, w!, gA!, gB!, I!]);
      rows.forEach((row, i) => {
        out.contrast[row] = cd![i]!;
        out.weight[row] = wd![i]!;
        out.gradAlpha[row] = ad![i]!;
        out.gradTau[row] = bd![i]!;
      });
      ids.forEach((g, i) => (out.intensity[g] = id![i]!));
    }
    offDiag.dispose();
  }
  return out;
}
