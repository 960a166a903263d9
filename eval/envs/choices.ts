// Moved to src/sim (the demo's training comparison uses it); eval imports it from there.
export { ChoicesEnv, midChoice, mixedPrompts, twoChoices, twoChoicesClean, type ChoicePrompt, type ChoicesOptions } from '../../src/sim/choices.js';
