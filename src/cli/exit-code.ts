import { ForestError } from '../forest/errors.js';
import { OptionError } from '../util/errors.js';
import { UsageError } from './flags.js';

/** The CLI's exit code for a failure: bad input and bad flags exit 2 (with one line); anything else is our fault and exits 1. */
export function exitCodeFor(err: unknown): 1 | 2 {
  return err instanceof UsageError || err instanceof ForestError || err instanceof OptionError ? 2 : 1;
}
