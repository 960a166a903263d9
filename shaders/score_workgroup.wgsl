// One workgroup per sibling group: lanes stride over the children (any k), each lane sums
// its children's responses against every sibling, then the workgroup reduces max/sums for
// the softmax through workgroup memory (group_finish.wgsl). Used for mid-sized groups;
// score_tiles.wgsl + score_reduce.wgsl spread the largest ones over many workgroups.

override WG: u32 = 64u;  // a power of two (tree reductions)

var<workgroup> entry: vec4<u32>;
@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let li = wid.y * P.gridX + wid.x;
  if (li >= P.count) {
    return;
  }
  if (lid == 0u) {
    entry = work[P.workBase + li];
  }
  let e = workgroupUniformLoad(&entry);
  let s0 = e.x;
  let k = e.y;
  let o0 = e.z;
  if (k == 1u) {
    if (lid == 0u) {
      out[o0] = vec4<f32>(0.0, 1.0, 0.0, 0.0);
      outI[e.w] = 0.0;
    }
    return;
  }
  for (var i = lid; i < k; i += WG) {
    out[o0 + i] = vec4<f32>(0.0, 0.0, 0.0, rowScale(s0 + i));
  }
  storageBarrier();
  let inv = 1.0 / f32(k - 1u);
  for (var i = lid; i < k; i += WG) {
    let fi = out[o0 + i].w;
    var acc = vec2<f32>(0.0);
    for (var j = 0u; j < k; j++) {
      if (j != i) {
        acc += splitOf(s0 + i, s0 + j) * response(s0 + i, fi, s0 + j, out[o0 + j].w);
      }
    }
    // Only .x and .z are written: other lanes may still be reading this slot's .w.
    out[o0 + i].x = acc.x * inv;
    out[o0 + i].z = acc.y * inv;
  }
  storageBarrier();
  finishGroup(lid, e);
}
