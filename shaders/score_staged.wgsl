// Small sibling groups, several per workgroup, with every global read coalesced. A workgroup
// takes one *bin* of consecutive work entries (at most 64 children, their rows at most
// STAGE_FLOATS floats, their pairs at most STAGE_PAIRS) and
//   1. copies each group's embedding block — contiguous in slot order — into workgroup memory,
//      lane l reading element l, l + 64, …, so neighbouring lanes read neighbouring addresses;
//   2. computes each child's row scale (a lane per child) and then each pair's distance once,
//      lanes striding over all pairs of the bin (not per group, so small groups fill the lanes),
//      from workgroup memory (rows at an odd stride, so lanes reading the same component of
//      different rows hit different banks);
//   3. gives one lane to each child: its sums of s_ij·c_ij and s_ij·ċ_ij over its siblings
//      (Δ and the response are O(1) per pair), then its group's softmax over ≤ 64 values in
//      workgroup memory, and writes its outputs — consecutive for the bin's children.
// No atomics, fixed summation order: deterministic. Global traffic: each embedding row,
// feature record (own record coalesced, siblings' broadcast) and output once.
//
// Work list: one vec4 per bin, (first entry, groups, 0, 0), followed by the entries
// (first slot, k, first output slot, output index) the bins point into.

override WG: u32 = 64u;          // lanes = most children per bin (the host packs bins by it)
const STAGE_FLOATS: u32 = 2304u; // staged embedding floats per bin (9 KiB): the host's STAGE_FLOATS
const STAGE_PAIRS: u32 = 1024u;  // pairs per bin: the host's STAGE_PAIRS

var<workgroup> bin: vec4<u32>;
var<workgroup> entries: array<vec4<u32>, WG>;
var<workgroup> groupFirst: array<u32, WG>;  // per group of the bin: its first child in the bin
var<workgroup> pairBase: array<u32, WG>;    // …and its first pair
var<workgroup> rows: array<f32, STAGE_FLOATS>;
var<workgroup> dists: array<f32, STAGE_PAIRS>;
var<workgroup> scales: array<f32, WG>;
var<workgroup> sums: array<vec2<f32>, WG>;

// Index of the pair (i, j), i < j, among the k(k − 1)/2 pairs of a group, row by row.
fn pairIndex(i: u32, j: u32, k: u32) -> u32 {
  return i * k - i * (i + 1u) / 2u + (j - i - 1u);
}

// 1/‖e‖ of staged row c (0 for a zero row), as rowScale does for a row in `emb`.
fn stagedScale(base: u32) -> f32 {
  var s = 0.0;
  for (var d = 0u; d < P.dim; d++) {
    let x = rows[base + d];
    s = fma(x, x, s);
  }
  if (s > 1e-30 && s < 1e30) {
    return inverseSqrt(s);
  }
  var m = 0.0;
  for (var d = 0u; d < P.dim; d++) {
    m = max(m, abs(rows[base + d]));
  }
  if (m == 0.0) {
    return 0.0;
  }
  let invM = 1.0 / m;
  s = 0.0;
  for (var d = 0u; d < P.dim; d++) {
    let x = rows[base + d] * invM;
    s = fma(x, x, s);
  }
  return invM * inverseSqrt(s);
}

fn stagedDistance(bi: u32, fi: f32, bj: u32, fj: f32) -> f32 {
  if (fi == 0.0 || fj == 0.0) {
    return 0.5;
  }
  var s = 0.0;
  for (var d = 0u; d < P.dim; d++) {
    let diff = rows[bi + d] * fi - rows[bj + d] * fj;
    s = fma(diff, diff, s);
  }
  return clamp(s * 0.25, 0.0, 1.0);
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
  let li = wid.y * P.gridX + wid.x;
  if (li >= P.count) {
    return;
  }
  if (lid == 0u) {
    bin = work[P.workBase + li];
  }
  let b = workgroupUniformLoad(&bin);
  let groups = b.y;
  if (lid < groups) {
    entries[lid] = work[P.workBase + b.x + lid];
  }
  workgroupBarrier();
  let rs = P.dim | 1u;  // staged row stride: odd, so lanes reading one component spread over banks
  // 1. Coalesced copies; this lane's child (group g, index i), if any.
  var at = 0u;
  var pairs = 0u;
  var g = groups;
  var i = 0u;
  for (var q = 0u; q < groups; q++) {
    let eq = entries[q];
    // Element x = lid + 64·t of the block is (row r, component d); stepped without a division.
    var r = 0u;
    var d = lid;
    while (d >= P.dim && r < eq.y) {
      d -= P.dim;
      r++;
    }
    for (; r < eq.y; ) {
      rows[(at + r) * rs + d] = embAt((eq.x + r) * P.stride + d);
      d += WG;
      while (d >= P.dim && r < eq.y) {
        d -= P.dim;
        r++;
      }
    }
    if (lid == 0u) {
      groupFirst[q] = at;
      pairBase[q] = pairs;
    }
    if (lid >= at && lid < at + eq.y) {
      g = q;
      i = lid - at;
    }
    at += eq.y;
    pairs += eq.y * (eq.y - 1u) / 2u;
  }
  workgroupBarrier();
  let hasChild = g < groups;
  if (hasChild) {
    scales[lid] = stagedScale(lid * rs);
  }
  workgroupBarrier();
  // 2. Every pair's distance once, lanes over the bin's pairs.
  for (var p = lid; p < pairs; p += WG) {
    var q = 0u;
    while (q + 1u < groups && pairBase[q + 1u] <= p) {
      q++;
    }
    let k = entries[q].y;
    var pi = 0u;
    var rest = p - pairBase[q];
    while (rest >= k - 1u - pi) {
      rest -= k - 1u - pi;
      pi++;
    }
    let ci = groupFirst[q] + pi;
    let cj = ci + 1u + rest;
    dists[p] = stagedDistance(ci * rs, scales[ci], cj * rs, scales[cj]);
  }
  workgroupBarrier();
  var e = vec4<u32>(0u);
  var first = 0u;  // this group's first child in the bin
  // 3. This child's contrast sums against its siblings.
  if (hasChild) {
    e = entries[g];
    first = groupFirst[g];
    let k = e.y;
    let base = pairBase[g];
    var acc = vec2<f32>(0.0);
    let a = feat[e.x + i];
    for (var j = 0u; j < k; j++) {
      if (j != i) {
        let bf = feat[e.x + j];
        let dist = dists[base + pairIndex(min(i, j), max(i, j), k)];
        acc += splitOfFeat(a, bf) * responseOf(feedbackOf(a, bf), dist);
      }
    }
    var inv = 0.0;
    if (k > 1u) {
      inv = 1.0 / f32(k - 1u);
    }
    sums[lid] = acc * inv;
  }
  workgroupBarrier();
  // Softmax of this child's group (k ≤ 64 values in workgroup memory).
  if (hasChild) {
    let k = e.y;
    if (k == 1u) {
      out[e.z] = vec4<f32>(0.0, 1.0, 0.0, 0.0);
      outI[e.w] = 0.0;
      return;
    }
    var cMax = -3.0e38;
    var cSum = 0.0;
    for (var j = 0u; j < k; j++) {
      let c = sums[first + j].x;
      cMax = max(cMax, c);
      cSum += c;
    }
    var z = 0.0;
    var zC = 0.0;
    var zCd = 0.0;
    for (var j = 0u; j < k; j++) {
      let s = sums[first + j];
      let ez = exp((s.x - cMax) / P.tau);
      z += ez;
      zC += ez * s.x;
      zCd += ez * s.y;
    }
    let own = sums[lid];
    let w = exp((own.x - cMax) / P.tau) / z;
    out[e.z + i] = vec4<f32>(own.x, w, (own.y - zCd / z) / P.tau, -(own.x - zC / z) / P.tau);
    if (i == 0u) {
      outI[e.w] = cSum / f32(k);
    }
  }
}
