/**
 * The seed every fast-check property of the suite runs under unless it names its own.
 *
 * CI must not flake: with a fixed seed each run checks the same cases, so a red run means the
 * code changed, not the dice. To explore new cases, run the suite with
 * `TRACE_ALLOC_TEST_SEED=random` (fast-check draws a seed per property and prints it on failure)
 * or with `TRACE_ALLOC_TEST_SEED=<integer>` to reproduce one. `test/setup-fast-check.ts` installs
 * it for every test file; the suites that read their own variable (`CONFORMANCE_SEED`,
 * `FUZZ_SEED`) fall back to it.
 */
const RAW = process.env.TRACE_ALLOC_TEST_SEED;
const DEFAULT_SEED = 20261207;

function parseSeed(raw: string | undefined): number | undefined {
  if (raw === undefined || raw === '') return DEFAULT_SEED;
  if (raw === 'random') return undefined;
  if (!/^-?\d+$/.test(raw) || !Number.isSafeInteger(Number(raw))) {
    throw new Error(`TRACE_ALLOC_TEST_SEED must be an integer or "random", got ${JSON.stringify(raw)}`);
  }
  return Number(raw);
}

/** The fixed seed, or undefined under `TRACE_ALLOC_TEST_SEED=random`. */
export const PROPERTY_SEED: number | undefined = parseSeed(RAW);
