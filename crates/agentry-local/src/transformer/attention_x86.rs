//! Attention's inner loops on AVX-512: the query heads that share a key/value head take their
//! scores from one pass over its keys (a block of 16 positions is one vector per dimension,
//! shared by every head) and their outputs from one pass over its values, keeping their sums
//! in registers. The portable loops read the keys once per head.

use std::arch::x86_64::{
    _mm512_add_ps, _mm512_fmadd_ps, _mm512_loadu_ps, _mm512_mul_ps, _mm512_set1_ps,
    _mm512_setzero_ps, _mm512_storeu_ps,
};

use super::attention::BLOCK;

// A block of positions' scores is one vector.
const _: () = assert!(BLOCK == 16);

/// `scores[h × padded + j] = query h · key j × scale` for `G` query heads (`queries`, `G` rows
/// of `head_dim`) and the positions of every whole block in `keys` (blocks of `head_dim × 16`
/// values, dimension-major: see `KvCache`).
///
/// # Panics
/// When `head_dim` is not a multiple of 4, or `queries` or `scores` is too short for `G` heads
/// and the blocks.
///
/// # Safety
/// The CPU must have AVX-512F and FMA.
#[target_feature(enable = "avx512f,fma")]
pub(super) unsafe fn grouped_scores<const G: usize>(
    keys: &[f32],
    queries: &[f32],
    head_dim: usize,
    scale: f32,
    scores: &mut [f32],
    padded: usize,
) {
    let blocks = keys.len() / (head_dim * BLOCK);
    assert!(head_dim.is_multiple_of(4) && queries.len() >= G * head_dim);
    assert!(blocks == 0 || scores.len() >= (G - 1) * padded + blocks * BLOCK);
    let (k, q, out) = (keys.as_ptr(), queries.as_ptr(), scores.as_mut_ptr());
    let scale = _mm512_set1_ps(scale);
    for b in 0..blocks {
        // Four sums per head, over the dimensions `d` with `d % 4` = 0, 1, 2, 3, added up in
        // that order at the end: the portable loop's order, so both give the same bits. (It
        // also keeps four chains of multiply-adds side by side for a group of one or two.)
        let mut sums = [[_mm512_setzero_ps(); 4]; G];
        for d in (0..head_dim).step_by(4) {
            let mut key = [_mm512_setzero_ps(); 4];
            for (lane, key) in key.iter_mut().enumerate() {
                // SAFETY: `b < blocks` and `d + lane < head_dim`: inside `keys`.
                *key = unsafe { _mm512_loadu_ps(k.add((b * head_dim + d + lane) * BLOCK)) };
            }
            for (h, sums) in sums.iter_mut().enumerate() {
                for (lane, (sum, key)) in sums.iter_mut().zip(&key).enumerate() {
                    // SAFETY: `h < G` and `d + lane < head_dim`: inside `queries`.
                    let q = _mm512_set1_ps(unsafe { *q.add(h * head_dim + d + lane) });
                    *sum = _mm512_fmadd_ps(q, *key, *sum);
                }
            }
        }
        for (h, [s0, s1, s2, s3]) in sums.iter().enumerate() {
            let sum = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(*s0, *s1), *s2), *s3);
            // SAFETY: row `h < G` of `scores` holds block `b` (checked above).
            unsafe { _mm512_storeu_ps(out.add(h * padded + b * BLOCK), _mm512_mul_ps(sum, scale)) }
        }
    }
}

/// `out[h] = Σ_j weights[h × padded + j] × value j` for `G` query heads (`out`, `G` rows of
/// `head_dim`) over every row of `values` (the positions seen, `head_dim` values each). Each
/// head's output is kept in registers, `C` vectors (16 × `C` dimensions) at a time, so each
/// value row is read once for all the heads and nothing is loaded or stored per position.
///
/// # Panics
/// When `head_dim` is not a multiple of 16 × `C`, or `weights` or `out` is too short.
///
/// # Safety
/// The CPU must have AVX-512F and FMA.
#[target_feature(enable = "avx512f,fma")]
pub(super) unsafe fn grouped_values<const G: usize, const C: usize>(
    values: &[f32],
    weights: &[f32],
    head_dim: usize,
    padded: usize,
    out: &mut [f32],
) {
    let seen = values.len() / head_dim;
    let width = C * 16;
    assert!(head_dim.is_multiple_of(width) && out.len() >= G * head_dim);
    assert!(seen == 0 || weights.len() >= (G - 1) * padded + seen);
    let (v, w, o) = (values.as_ptr(), weights.as_ptr(), out.as_mut_ptr());
    for first in (0..head_dim).step_by(width) {
        let mut sums = [[_mm512_setzero_ps(); C]; G];
        for j in 0..seen {
            let mut row = [_mm512_setzero_ps(); C];
            for (c, vector) in row.iter_mut().enumerate() {
                // SAFETY: `j < seen` and `first + 16 c + 15 < head_dim`: inside `values`.
                *vector = unsafe { _mm512_loadu_ps(v.add(j * head_dim + first + c * 16)) };
            }
            for (h, sums) in sums.iter_mut().enumerate() {
                // SAFETY: `h < G` and `j < seen`: inside `weights` (checked above).
                let weight = _mm512_set1_ps(unsafe { *w.add(h * padded + j) });
                for (sum, vector) in sums.iter_mut().zip(&row) {
                    *sum = _mm512_fmadd_ps(weight, *vector, *sum);
                }
            }
        }
        for (h, sums) in sums.iter().enumerate() {
            for (c, sum) in sums.iter().enumerate() {
                // SAFETY: `h < G` and `first + 16 c + 15 < head_dim`: inside `out`.
                unsafe { _mm512_storeu_ps(o.add(h * head_dim + first + c * 16), *sum) }
            }
        }
    }
}
