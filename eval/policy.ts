// Moved to src/sim (the demo's training comparison uses it); eval imports it from there.
export { TabularPolicy } from '../src/sim/policy.js';
