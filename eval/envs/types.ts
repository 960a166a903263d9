// Moved to src/sim (the demo's training comparison uses it); eval imports it from there.
export { addNoise, MOVES, rbf2, unitVector, type Env, type Transition } from '../../src/sim/env.js';
