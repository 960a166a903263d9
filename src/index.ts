// Public API of trace-alloc. Everything a training job needs is re-exported from here.
// The GPU classes expose WebGPU types (GPUDevice, GPU, …); this directive makes the emitted
// index.d.ts load them from the `@webgpu/types` dependency, so a consumer's `tsc` needs no
// "types" entry of its own (`preserve` keeps it in the declaration output).
/// <reference types="@webgpu/types" preserve="true" />
export type { ForestInput, TreeInput, NodeInput } from './forest/input.js';
export { ForestError, type ForestErrorLocation } from './forest/errors.js';
export { packForest, packColumns, assertPackedForest, type PackedForest, type ForestColumns, type PackOptions } from './forest/packed.js';
export { DEFAULT_MAX_GROUP_SIZE, checkGroupSizes } from './forest/limits.js';
export { DEFAULT_PARAMS, CONTRAST_EPSILON, resolveParams, type ScoreParams, type Scores, type Scorer, type RealArray } from './score/types.js';
export { CpuScorer, scoreCpu, scoreGroupsCpu, allocateScores, CpuScratch, type CpuScorerOptions } from './score/cpu.js';
export { PARALLEL_MIN_COST, scoringCost, defaultThreads } from './score/threads.js';
export { createScorer, type Backend, type CreateScorerOptions } from './backend/select.js';
export { parseForest, loadForestFile, parseJsonLenient, parseColumnarForest, sniffColumnar, type ForestFormat, type ColumnarFormat } from './forest/load.js';
export { writeForestFile, forestBytes } from './forest/write.js';
export { allocate, type Allocation } from './allocate/allocate.js';
export { globalBudgetShares, allocateShard, splitGathered, checkGathered, shareFingerprint, StaleSharesError, type ShardShares } from './allocate/shards.js';
export { resolveAllocateOptions, DEFAULT_BUDGET, type AllocateOptions, type ResolvedAllocateOptions } from './allocate/options.js';
export { planToJson, NonFiniteOutputError, type PlanJson, type TreePlan, type NodeAllocation, type NodeScore, type GroupScore } from './allocate/plan.js';
export { generateForest, generateRegularForest, type RandomShape, type RegularShape, type SynthFeatures } from './synth/generate.js';
export { Rng } from './util/random.js';
export { outcomeVarianceGains, MIN_NEW_ROLLOUTS, type Gains } from './learn/gain.js';
export { objectiveGradient, type ObjectiveGradient } from './learn/gradient.js';
export { createLearnState, ascend, learnedParams, learnStateFromJson, resolveLearnOptions, ALPHA_RANGE, TAU_RANGE, type LearnState, type LearnOptions, type ResolvedLearnOptions } from './learn/state.js';
export { learnStep, type LearnStepResult } from './learn/learn.js';
export { GpuContext, type GpuContextOptions } from './gpu/context.js';
export { GpuScorer, type GpuScorerOptions } from './gpu/scorer.js';
export { ResidentForest, type ResidentOptions, type GroupScores, type GpuTimings } from './gpu/resident.js';
export { GpuUnavailableError, GpuDeviceLostError, GpuValidationError, GpuInputRangeError, GpuParamRangeError, GpuNonFiniteError } from './gpu/errors.js';
export { OptionError, ScorerDestroyedError } from './util/errors.js';
export { score, type ScoreOptions, type TimedScorer } from './backend/select.js';
export { writeTreeView, writeTreeSvg, type WriteTreeViewOptions, type WriteTreeSvgOptions, type WrittenView } from './viz/write.js';
export { renderTreeView, type TreeViewOptions, type TreeViewPage } from './viz/html.js';
export { renderTreeSvg, type TreeSvgOptions } from './viz/svg.js';
export { rankTreesByContest, selectTrees, type TreeSelection, type SelectOptions } from './viz/model.js';
export type { ColorMetric } from './viz/palette.js';
export { createLiveForest, type CreateLiveForestOptions } from './live/create.js';
export { LiveForest, type LiveStats } from './live/forest.js';
export { LiveError, type LiveErrorCode, type NodeUpdate } from './live/store.js';
export type { LivePlanOptions, LivePlanSummary } from './live/plan.js';
export { GpuLiveBackend, type GpuLiveOptions, type GpuLiveStats } from './live/gpu.js';
export { LiveSession, type SessionOptions, type ProtocolError, type ProtocolErrorCode } from './live/protocol.js';
export { snapshotLive, liveScoresOn, type LiveSnapshot } from './live/snapshot.js';
