// One invocation per sibling group, WG groups per workgroup: no barriers and no idle lanes
// for the many small forks of typical rollout trees. Correct for any k and dim, but work per
// invocation grows as k²·dim, so the host routes large groups to score_workgroup.wgsl.

override WG: u32 = 64u;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let li = (wid.y * P.gridX + wid.x) * WG + lid;
  if (li >= P.count) {
    return;
  }
  let e = work[P.workBase + li];
  let s0 = e.x;
  let k = e.y;
  let o0 = e.z;
  if (k == 1u) {
    out[o0] = vec4<f32>(0.0, 1.0, 0.0, 0.0);
    outI[e.w] = 0.0;
    return;
  }
  for (var i = 0u; i < k; i++) {
    out[o0 + i] = vec4<f32>(0.0, 0.0, 0.0, rowScale(s0 + i));
  }
  // Each pair once; both children accumulate (v2: in shares s_ij and s_ji = 2 − s_ij).
  for (var i = 0u; i < k; i++) {
    let fi = out[o0 + i].w;
    for (var j = i + 1u; j < k; j++) {
      let r = response(s0 + i, fi, s0 + j, out[o0 + j].w);
      let sij = splitOf(s0 + i, s0 + j);
      let sji = splitOf(s0 + j, s0 + i);
      out[o0 + i].x += sij * r.x;
      out[o0 + i].z += sij * r.y;
      out[o0 + j].x += sji * r.x;
      out[o0 + j].z += sji * r.y;
    }
  }
  let inv = 1.0 / f32(k - 1u);
  var cMax = -3.0e38;
  var cSum = 0.0;
  for (var i = 0u; i < k; i++) {
    let c = out[o0 + i].x * inv;
    cMax = max(cMax, c);
    cSum += c;
  }
  var z = 0.0;
  var zC = 0.0;
  var zCd = 0.0;
  for (var i = 0u; i < k; i++) {
    let o = out[o0 + i];
    let c = o.x * inv;
    let ez = exp((c - cMax) / P.tau);
    z += ez;
    zC += ez * c;
    zCd += ez * o.z * inv;
  }
  let wC = zC / z;
  let wCd = zCd / z;
  for (var i = 0u; i < k; i++) {
    let o = out[o0 + i];
    let c = o.x * inv;
    let cd = o.z * inv;
    let w = exp((c - cMax) / P.tau) / z;
    out[o0 + i] = vec4<f32>(c, w, (cd - wCd) / P.tau, -(c - wC) / P.tau);
  }
  outI[e.w] = cSum / f32(k);
}
