// Runs before every test file (vitest.config.ts, setupFiles): fast-check's global seed, so a
// property that names no seed of its own is still the same cases on every run (test/property-seed.ts).
import fc from 'fast-check';
import { PROPERTY_SEED } from './property-seed.js';

if (PROPERTY_SEED !== undefined) fc.configureGlobal({ ...fc.readConfigureGlobal(), seed: PROPERTY_SEED });
