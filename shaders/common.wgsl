// Shared declarations of the TRACE scoring kernels (SPEC §2). The host prepends a prelude
// that defines `EmbScalar` (f32, or f16 behind `enable f16;`) and concatenates this file
// with one kernel file; WGSL has no includes.
//
// Layout (one chunk of a packed forest; see docs/GPU.md "Device layout"):
//   feat[slot]  per child slot: reward and uncertainty (minus the group's reference: 0, or the
//               midpoint for groups with values beyond 1e30) as f32 triples hi + mid + lo that
//               hold the float64 value exactly, so a pair's difference is exact to a few f32
//               ulps of the difference itself however wide the group's values spread; the
//               reward class in reward.w (0 unvisited, negative under 2 visits); in uncertainty.w the `share` (u + ε) times a per-group
//               power of two (max in [1, 2)): v2's split of a pair's contrast is the ratio of
//               two shares, exact whatever the scale. |stored value| ≤ 1e30, so Δ stays finite.
//   emb         `stride` scalars per child slot, slot-major, so a group's rows are contiguous.
//   work[i]     one entry per group to score: (first slot, k, first output slot, output index),
//               each dispatch's entries from P.workBase on.
//   out[o]      per output slot (C, w, gA, gB); `.w` and `.x/.z` double as scratch for the
//               row scale and the contrast sums while a group is being scored.
//   outI[i]     intensity of work entry i's group.

struct Params {
  alpha: f32,
  tau: f32,
  count: u32,   // work entries in this dispatch
  dim: u32,
  gridX: u32,   // workgroups along x: dispatches over 65 535 workgroups fold into 2-D grids
  stride: u32,  // scalars per embedding row (dim, rounded up to even for f16 so rows are 4-byte aligned)
  rule: u32,    // 0: v1 (each pair's response counts fully for both siblings); 1: v2, v3 (split by uncertainty); 2: v4 (split, and the uncertainty gate); 3: v5 (split, and the gate after 2 visits each)
  workBase: u32, // this dispatch's first entry in `work`: every dispatch of a chunk shares one work buffer (and bind group)
}

struct Feat {
  reward: vec4<f32>,       // hi, mid, lo, reward class (0 unvisited, < 0 under 2 visits; equal |class|: equal float64 rewards)
  uncertainty: vec4<f32>,  // hi, mid, lo, share = (uncertainty + ε)·2^-e, e per group
}

@group(0) @binding(0) var<uniform> P: Params;
@group(0) @binding(1) var<storage, read> feat: array<Feat>;
@group(0) @binding(2) var<storage, read> emb: array<EmbScalar>;
@group(0) @binding(3) var<storage, read> work: array<vec4<u32>>;
@group(0) @binding(4) var<storage, read_write> out: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read_write> outI: array<f32>;

const EPS: f32 = 1e-6;

fn embAt(i: u32) -> f32 {
  return f32(emb[i]);
}

// 1/‖e‖ of a slot's embedding, or 0 for a zero row (and for dim 0). One pass when the plain
// sum of squares is safely inside the f32 range; otherwise the row is scaled by its max-abs
// first so the squares cannot overflow or underflow.
fn rowScale(slot: u32) -> f32 {
  let base = slot * P.stride;
  var s = 0.0;
  for (var d = 0u; d < P.dim; d++) {
    let x = embAt(base + d);
    s = fma(x, x, s);
  }
  if (s > 1e-30 && s < 1e30) {
    return inverseSqrt(s);
  }
  var m = 0.0;
  for (var d = 0u; d < P.dim; d++) {
    m = max(m, abs(embAt(base + d)));
  }
  if (m == 0.0) {
    return 0.0;
  }
  let invM = 1.0 / m;
  s = 0.0;
  for (var d = 0u; d < P.dim; d++) {
    let x = embAt(base + d) * invM;
    s = fma(x, x, s);
  }
  return invM * inverseSqrt(s);
}

// Semantic distance d = ‖ê_i − ê_j‖²/4 in [0, 1]; 0.5 (similarity 0) when either norm is 0.
fn distance(si: u32, fi: f32, sj: u32, fj: f32) -> f32 {
  if (fi == 0.0 || fj == 0.0) {
    return 0.5;
  }
  let bi = si * P.stride;
  let bj = sj * P.stride;
  var s = 0.0;
  for (var d = 0u; d < P.dim; d++) {
    let diff = embAt(bi + d) * fi - embAt(bj + d) * fj;
    s = fma(diff, diff, s);
  }
  return clamp(s * 0.25, 0.0, 1.0);
}

// (s, e) with s + e = a + b exactly (Knuth's TwoSum; WGSL does not reassociate).
fn twoSum(a: f32, b: f32) -> vec2<f32> {
  let s = a + b;
  let bb = s - a;
  return vec2<f32>(s, (a - (s - bb)) + (b - bb));
}

// |x − y| for two exact f32 triples, to a few f32 ulps of the result: the hi and mid
// differences are split error-free, so cancellation between components loses nothing.
fn tripleDiff(x: vec3<f32>, y: vec3<f32>) -> f32 {
  let h = twoSum(x.x, -y.x);
  let m = twoSum(x.y, -y.y);
  return abs((h.x + m.x) + ((h.y + m.y) + (x.z - y.z)));
}

// Feedback difference Δ = Δr + Δu; Δr only when both siblings were visited. The gates: Δu
// counts only when outcome evidence allows it (v4: one sibling unvisited, or their rewards
// differ; v5 also while either sibling has fewer than 2 visits, a negative class).
fn feedbackOf(a: Feat, b: Feat) -> f32 {
  var dr = 0.0;
  let visited = a.reward.w != 0.0 && b.reward.w != 0.0;
  if (visited) {
    dr = tripleDiff(a.reward.xyz, b.reward.xyz);
    if (abs(a.reward.w) == abs(b.reward.w) && (P.rule == 2u || (P.rule == 3u && a.reward.w > 0.0 && b.reward.w > 0.0))) {
      return dr;
    }
  }
  return dr + tripleDiff(a.uncertainty.xyz, b.uncertainty.xyz);
}

// (c_ij, ∂c_ij/∂a) from Δ and the distance. ∂c/∂a is written as −c·(α·d/den) so it cannot
// overflow for huge Δ.
fn responseOf(delta: f32, dist: f32) -> vec2<f32> {
  let ad = P.alpha * dist;
  let den = delta + ad + EPS;
  let c = delta / den;
  return vec2<f32>(c, -c * (ad / den));
}

fn response(si: u32, fi: f32, sj: u32, fj: f32) -> vec2<f32> {
  return responseOf(feedbackOf(feat[si], feat[sj]), distance(si, fi, sj, fj));
}

// v2's split of the pair (i, j): s_ij = 2(u_i + ε)/(u_i + u_j + 2ε), from the scaled shares (a
// ratio, so f32 holds it to a few ulps however large or small the uncertainties). v1: 1.
// Both shares are normal f32 (the host's range limit), so the sum is never 0.
fn splitOfFeat(a: Feat, b: Feat) -> f32 {
  if (P.rule == 0u) {
    return 1.0;
  }
  return 2.0 * a.uncertainty.w / (a.uncertainty.w + b.uncertainty.w);
}

fn splitOf(si: u32, sj: u32) -> f32 {
  if (P.rule == 0u) {
    return 1.0;
  }
  return splitOfFeat(feat[si], feat[sj]);
}
