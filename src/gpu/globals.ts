// The WebGPU objects that trace-alloc's public API passes through (a `navigator.gpu`, adapters,
// devices, buffers, pipelines), declared as empty global interfaces so that its type
// declarations compile in every consumer with nothing added:
// - TypeScript 7's DOM lib declares WebGPU itself; these interfaces merge with its declarations
//   (the full types then apply). Shipping `@webgpu/types` instead collides with it there
//   (TS2300 "Duplicate identifier 'GPUBindingResource'", 182 errors).
// - Without WebGPU in the lib (TypeScript 5, or no DOM lib), they are opaque handles; a project
//   that calls WebGPU itself adds `@webgpu/types` to its "types", whose interfaces merge too.
// Only interfaces may appear here (type aliases cannot merge): the public API spells WebGPU's
// type aliases out (`PowerPreference`, buffer usage as a number).
export {};

declare global {
  interface GPU {}
  interface GPUAdapter {}
  interface GPUDevice {}
  interface GPUBuffer {}
  interface GPUBindGroup {}
  interface GPUBindGroupLayout {}
  interface GPUComputePipeline {}
  interface GPUQuerySet {}
}
