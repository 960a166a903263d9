// Pairs of the largest sibling groups, spread over many workgroups. A group's k × k pair matrix
// is cut into tiles of WG rows × one column strip (at most 16 strips per group, so a strip is
// WG columns up to k = 1024 and k/16 beyond): one workgroup per tile, so one workgroup's work
// is bounded by WG·⌈k/16⌉ responses instead of k², and a 4096-child group runs as 1024
// independent workgroups instead of one long one. Lane l takes row i = ti·WG + l and sums
// s_ij·c_ij and s_ij·ċ_ij over the strip's columns j ≠ i; the partial sums go to
// out[partial + tj·k + i] (one writer each, no atomics), and score_reduce.wgsl adds them up in
// strip order, so the result is deterministic.
//
// Tile entry: two vec4 — (first slot, k, ti, tj), (partial base in out's vec4 units, first
// column, end column, 0).

override WG: u32 = 64u;

var<workgroup> tile: array<vec4<u32>, 2>;
var<workgroup> colScale: array<f32, WG>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let li = wid.y * P.gridX + wid.x;
  if (li >= P.count) {
    return;
  }
  if (lid == 0u) {
    tile[0] = work[P.workBase + 2u * li];
    tile[1] = work[P.workBase + 2u * li + 1u];
  }
  let t = workgroupUniformLoad(&tile);
  let s0 = t[0].x;
  let k = t[0].y;
  let i = t[0].z * WG + lid;
  let rowValid = i < k;
  var fi = 0.0;
  if (rowValid) {
    fi = rowScale(s0 + i);
  }
  var acc = vec2<f32>(0.0);
  // Column row scales, WG at a time through workgroup memory (2 row passes per WG² pairs).
  for (var j0 = t[1].y; j0 < t[1].z; j0 += WG) {
    var fj = 0.0;
    if (j0 + lid < t[1].z) {
      fj = rowScale(s0 + j0 + lid);
    }
    colScale[lid] = fj;
    workgroupBarrier();
    if (rowValid) {
      let cols = min(WG, t[1].z - j0);
      for (var c = 0u; c < cols; c++) {
        let j = j0 + c;
        if (j != i) {
          acc += splitOf(s0 + i, s0 + j) * response(s0 + i, fi, s0 + j, colScale[c]);
        }
      }
    }
    workgroupBarrier();
  }
  if (rowValid) {
    out[t[1].x + t[0].w * k + i] = vec4<f32>(acc, 0.0, 0.0);
  }
}
