// The Python interpreter of every test that runs Python (the package's pytest suite, the
// examples, numpy cross-checks): `$TRACE_ALLOC_PYTHON` when set — CI sets it to the virtualenv
// that .ci/test-all (npm run test:all, which CI runs) builds from nothing — else `python3` on PATH.
export const PYTHON = process.env.TRACE_ALLOC_PYTHON || 'python3';
