/**
 * A setting out of its documented range (α, τ, budgets, depths…). The CLI reports it like a
 * bad flag (exit 2); every other RangeError is an internal failure (exit 1).
 */
export class OptionError extends RangeError {
  override name = 'OptionError';
}

/** A scorer used after `destroy()`: every backend (cpu, gpu, auto) refuses the same way. */
export class ScorerDestroyedError extends Error {
  override name = 'ScorerDestroyedError';
  constructor(backend: string) {
    super(`this ${backend} scorer was destroyed: create a new one with createScorer`);
  }
}
