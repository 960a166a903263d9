// Second pass for the groups score_tiles.wgsl scored: one workgroup per group adds each
// child's partial sums over the column tiles in tile order (deterministic), divides by k − 1,
// and finishes the group (softmax, gradients, intensity) as score_workgroup.wgsl does.
//
// Entry: two vec4 per group: (first slot, k, first output slot, output index), then
// (partial base, column tiles, 0, 0).

override WG: u32 = 64u;  // a power of two (tree reductions)

var<workgroup> entry: vec4<u32>;
var<workgroup> tiles: vec4<u32>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let li = wid.y * P.gridX + wid.x;
  if (li >= P.count) {
    return;
  }
  if (lid == 0u) {
    entry = work[P.workBase + 2u * li];
    tiles = work[P.workBase + 2u * li + 1u];
  }
  let e = workgroupUniformLoad(&entry);
  let p = workgroupUniformLoad(&tiles);
  let k = e.y;
  let o0 = e.z;
  let inv = 1.0 / f32(k - 1u);
  for (var i = lid; i < k; i += WG) {
    var acc = vec2<f32>(0.0);
    for (var t = 0u; t < p.y; t++) {
      acc += out[p.x + t * k + i].xy;
    }
    out[o0 + i] = vec4<f32>(acc.x * inv, 0.0, acc.y * inv, 0.0);
  }
  storageBarrier();
  finishGroup(lid, e);
}
