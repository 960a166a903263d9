// The end of scoring one sibling group with a whole workgroup, shared by score_workgroup.wgsl
// and score_reduce.wgsl: out[o0 + i] holds (C_i, ·, Ċ_i, ·) on entry; the max-shifted softmax
// statistics are tree-reduced in workgroup memory, then (C, w, gA, gB) and I are written.

var<workgroup> red: array<vec4<f32>, WG>;  // WG: the kernel's workgroup size, a power of two

fn reduceMaxSum(lid: u32, v: vec4<f32>) -> vec4<f32> {
  // .x is reduced with max, .yzw with +.
  red[lid] = v;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s >>= 1u) {
    if (lid < s) {
      let a = red[lid];
      let b = red[lid + s];
      red[lid] = vec4<f32>(max(a.x, b.x), a.yzw + b.yzw);
    }
    workgroupBarrier();
  }
  let r = red[0];
  workgroupBarrier();
  return r;
}

// e: the group's work entry (first slot, k, first output slot, output index); k ≥ 2.
fn finishGroup(lid: u32, e: vec4<u32>) {
  let k = e.y;
  let o0 = e.z;
  var part = vec4<f32>(-3.0e38, 0.0, 0.0, 0.0);
  for (var i = lid; i < k; i += WG) {
    let c = out[o0 + i].x;
    part = vec4<f32>(max(part.x, c), part.y + c, 0.0, 0.0);
  }
  let mc = reduceMaxSum(lid, part);
  let cMax = mc.x;
  part = vec4<f32>(0.0);
  for (var i = lid; i < k; i += WG) {
    let o = out[o0 + i];
    let z = exp((o.x - cMax) / P.tau);
    part += vec4<f32>(0.0, z, z * o.x, z * o.z);
  }
  let zs = reduceMaxSum(lid, part);
  let wC = zs.z / zs.y;
  let wCd = zs.w / zs.y;
  for (var i = lid; i < k; i += WG) {
    let o = out[o0 + i];
    let w = exp((o.x - cMax) / P.tau) / zs.y;
    out[o0 + i] = vec4<f32>(o.x, w, (o.z - wCd) / P.tau, -(o.x - wC) / P.tau);
  }
  if (lid == 0u) {
    outI[e.w] = mc.y / f32(k);
  }
}
