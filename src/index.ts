// Public API of trace-alloc. Everything a training job needs is re-exported from here.
export type { ForestInput, TreeInput, NodeInput } from './forest/input.js';
export { ForestError, type ForestErrorLocation } from './forest/errors.js';
export { packForest, packColumns, type PackedForest, type ForestColumns } from './forest/packed.js';
export { DEFAULT_PARAMS, CONTRAST_EPSILON, resolveParams, type ScoreParams, type Scores, type Scorer, type RealArray } from './score/types.js';
export { CpuScorer, scoreCpu, scoreGroupsCpu, allocateScores, CpuScratch } from './score/cpu.js';
export { createScorer, type Backend, type CreateScorerOptions } from './score/select.js';
export { parseForest, loadForestFile, parseJsonLenient, type ForestFormat } from './forest/load.js';
export { allocate, type Allocation } from './allocate/allocate.js';
export { resolveAllocateOptions, DEFAULT_BUDGET, type AllocateOptions, type ResolvedAllocateOptions } from './allocate/options.js';
export { planToJson, type PlanJson, type TreePlan, type NodeAllocation, type NodeScore, type GroupScore } from './allocate/plan.js';
export { generateForest, generateRegularForest, type RandomShape, type RegularShape, type SynthFeatures } from './synth/generate.js';
export { Rng } from './util/random.js';
export { outcomeVarianceGains, MIN_NEW_ROLLOUTS, type Gains } from './learn/gain.js';
export { objectiveGradient, type ObjectiveGradient } from './learn/gradient.js';
export { createLearnState, ascend, learnedParams, learnStateFromJson, resolveLearnOptions, ALPHA_RANGE, TAU_RANGE, type LearnState, type LearnOptions, type ResolvedLearnOptions } from './learn/state.js';
export { learnStep, type LearnStepResult } from './learn/learn.js';
