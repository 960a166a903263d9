/**
 * Work other than scoring that a worker runs over ranges of a job, chunk by chunk from the same
 * kind of shared queue: export `name` of the module at `module` (a file URL of compiled
 * JavaScript, or the path of a TypeScript source when the worker runs under tsx), called as
 * `fn(data, bounds[c], bounds[c + 1])`. The pool imports nothing of the caller's layer itself.
 */
export interface RangeTask {
  module: string;
  name: string;
}
