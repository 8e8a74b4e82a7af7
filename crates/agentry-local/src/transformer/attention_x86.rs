//! Attention's inner loops on AVX-512 and on AVX2: the query heads that share a key/value head
//! take their scores from one pass over its keys (a block of 16 positions is one or two vectors
//! per dimension, shared by the heads) and their outputs from one pass over its values, keeping
//! their sums in registers. The portable loops read the keys once per head. An `f16` cache is
//! widened to `f32` as it is loaded.
//!
//! Each sum is taken in the portable loops' order (four partial sums per score over the
//! dimensions `d % 4`, added in that order; each output summed over the positions in order),
//! so every variant gives the same bits.

use std::arch::x86_64::*;

use super::attention::{BLOCK, Stored};

// A block of positions' scores is one vector.
const _: () = assert!(BLOCK == 16);

/// Sixteen stored values from `at`, as `f32`s.
///
/// # Safety
/// The CPU must have AVX-512F, and `at ..` must hold sixteen values.
#[target_feature(enable = "avx512f")]
#[inline]
unsafe fn load<E: Stored>(at: *const E) -> __m512 {
    // SAFETY: the caller vouches for the sixteen values (32 or 64 bytes).
    unsafe {
        if E::HALF {
            _mm512_cvtph_ps(_mm256_loadu_si256(at.cast()))
        } else {
            _mm512_loadu_ps(at.cast())
        }
    }
}

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
pub(super) unsafe fn grouped_scores<const G: usize, E: Stored>(
    keys: &[E],
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
                *key = unsafe { load(k.add((b * head_dim + d + lane) * BLOCK)) };
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
unsafe fn grouped_values<const G: usize, const C: usize, E: Stored>(
    values: &[E],
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
                *vector = unsafe { load(v.add(j * head_dim + first + c * 16)) };
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

/// A kernel computing `G` heads' outputs from one pass over the values (see
/// [`grouped_values`]).
pub(super) trait GroupedValues {
    /// The head dimension must be a multiple of it.
    const WIDTH: usize;

    /// `out[h] = Σ_j weights[h × padded + j] × value j` for `G` heads.
    ///
    /// # Safety
    /// The CPU must have the kernel's features; `head_dim` must be a multiple of `WIDTH`.
    unsafe fn run<const G: usize, E: Stored>(
        values: &[E],
        weights: &[f32],
        head_dim: usize,
        padded: usize,
        out: &mut [f32],
    );
}

/// [`grouped_values`], four vectors (64 dimensions) of each head at a time.
pub(super) struct Avx512Values;

impl GroupedValues for Avx512Values {
    const WIDTH: usize = 64;

    #[inline(always)]
    unsafe fn run<const G: usize, E: Stored>(
        values: &[E],
        weights: &[f32],
        head_dim: usize,
        padded: usize,
        out: &mut [f32],
    ) {
        // SAFETY: the caller vouches for AVX-512F and FMA; 64 divides `head_dim`.
        unsafe { grouped_values::<G, 4, E>(values, weights, head_dim, padded, out) }
    }
}

/// [`grouped_values_avx2`].
pub(super) struct Avx2Values;

impl GroupedValues for Avx2Values {
    const WIDTH: usize = 16;

    #[inline(always)]
    unsafe fn run<const G: usize, E: Stored>(
        values: &[E],
        weights: &[f32],
        head_dim: usize,
        padded: usize,
        out: &mut [f32],
    ) {
        // SAFETY: the caller vouches for AVX2, FMA and F16C; 16 divides `head_dim`.
        unsafe { grouped_values_avx2::<G, E>(values, weights, head_dim, padded, out) }
    }
}

/// Eight stored values from `at`, as `f32`s.
///
/// # Safety
/// The CPU must have AVX and F16C, and `at ..` must hold eight values.
#[target_feature(enable = "avx,f16c")]
#[inline]
unsafe fn load8<E: Stored>(at: *const E) -> __m256 {
    // SAFETY: the caller vouches for the eight values (16 or 32 bytes).
    unsafe {
        if E::HALF {
            _mm256_cvtph_ps(_mm_loadu_si128(at.cast()))
        } else {
            _mm256_loadu_ps(at.cast())
        }
    }
}

/// Query heads whose scores the AVX2 kernel computes together (their sums fill 12 of the 16
/// vector registers).
const TOGETHER_AVX2: usize = 3;

/// [`grouped_scores`] on AVX2, for all the heads of `queries` at once: for each block of
/// keys, the heads go [`TOGETHER_AVX2`] at a time over its two halves (eight positions, one
/// vector per dimension), so the block comes from memory once and from the first-level cache
/// for the rest.
///
/// # Panics
/// When `head_dim` is not a multiple of 4, or `scores` is too short for the heads and blocks.
///
/// # Safety
/// The CPU must have AVX2, FMA and F16C.
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) unsafe fn grouped_scores_avx2<E: Stored>(
    keys: &[E],
    queries: &[f32],
    head_dim: usize,
    scale: f32,
    scores: &mut [f32],
    padded: usize,
) {
    let heads = queries.len() / head_dim;
    let blocks = keys.len() / (head_dim * BLOCK);
    assert!(head_dim.is_multiple_of(4));
    assert!(blocks == 0 || heads == 0 || scores.len() >= (heads - 1) * padded + blocks * BLOCK);
    let block_len = head_dim * BLOCK;
    // A block's passes compute far longer than its first pass takes to read it, and the
    // hardware prefetchers do not run far enough ahead to keep memory busy meanwhile: each
    // pass fetches its share of the block after next, a line per step.
    let passes = heads.div_ceil(TOGETHER_AVX2);
    let lines = (block_len * size_of::<E>()).div_ceil(64);
    let share = lines.div_ceil(passes.max(1));
    for b in 0..blocks {
        let block = &keys[b * block_len..(b + 1) * block_len];
        let ahead = keys.as_ptr().wrapping_add((b + 2) * block_len).cast::<i8>();
        let mut first = 0;
        while first < heads {
            let together = (heads - first).min(TOGETHER_AVX2);
            let queries = &queries[first * head_dim..(first + together) * head_dim];
            let at = first * padded + b * BLOCK;
            let out = &mut scores[at..];
            let ahead = Ahead {
                at: ahead.wrapping_add(first / TOGETHER_AVX2 * share * 64),
                lines: share,
            };
            // SAFETY: the caller vouches for the features; the heads' rows of `scores` hold
            // this block (checked above).
            unsafe {
                match together {
                    1 => block_scores_avx2::<1, E>(
                        block, queries, head_dim, scale, out, padded, ahead,
                    ),
                    2 => block_scores_avx2::<2, E>(
                        block, queries, head_dim, scale, out, padded, ahead,
                    ),
                    _ => block_scores_avx2::<3, E>(
                        block, queries, head_dim, scale, out, padded, ahead,
                    ),
                }
            }
            first += together;
        }
    }
}

/// Lines of memory for a kernel to prefetch as it goes: `lines` 64-byte lines from `at` (which
/// may lie past the end of the data: prefetching never faults).
#[derive(Clone, Copy)]
struct Ahead {
    at: *const i8,
    lines: usize,
}

impl Ahead {
    /// Prefetches the lines of step `step` of `steps` (an even share of them, in order).
    #[inline(always)]
    fn step(self, step: usize, steps: usize) {
        let per_step = self.lines.div_ceil(steps);
        for line in step * per_step..((step + 1) * per_step).min(self.lines) {
            // SAFETY: prefetching never faults, whatever the address.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(self.at.wrapping_add(line * 64)) }
        }
    }
}

/// Scores of `G` heads (`queries`) for one block of keys (`block`, `head_dim × 16` values,
/// dimension-major), into `out[h × padded ..][.. 16]`, prefetching `ahead` as it goes.
///
/// # Safety
/// The CPU must have AVX2, FMA and F16C; `queries` must hold `G` heads and `out` their rows.
#[target_feature(enable = "avx2,fma,f16c")]
#[inline]
unsafe fn block_scores_avx2<const G: usize, E: Stored>(
    block: &[E],
    queries: &[f32],
    head_dim: usize,
    scale: f32,
    out: &mut [f32],
    padded: usize,
    ahead: Ahead,
) {
    debug_assert!(block.len() == head_dim * BLOCK && queries.len() == G * head_dim);
    debug_assert!(out.len() >= (G - 1) * padded + BLOCK);
    let (k, q, o) = (block.as_ptr(), queries.as_ptr(), out.as_mut_ptr());
    let scale = _mm256_set1_ps(scale);
    let steps = head_dim / 4 * 2;
    for half in [0, 8] {
        let mut sums = [[_mm256_setzero_ps(); 4]; G];
        for d in (0..head_dim).step_by(4) {
            ahead.step(half / 8 * head_dim / 4 + d / 4, steps);
            for lane in 0..4 {
                // SAFETY: `d + lane < head_dim` and `half + 8 ≤ 16`: inside the block.
                let key = unsafe { load8(k.add((d + lane) * BLOCK + half)) };
                for (h, sums) in sums.iter_mut().enumerate() {
                    // SAFETY: `h < G` and `d + lane < head_dim`: inside `queries`.
                    let q = _mm256_set1_ps(unsafe { *q.add(h * head_dim + d + lane) });
                    sums[lane] = _mm256_fmadd_ps(q, key, sums[lane]);
                }
            }
        }
        for (h, [s0, s1, s2, s3]) in sums.iter().enumerate() {
            let sum = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(*s0, *s1), *s2), *s3);
            // SAFETY: row `h < G` of `out` holds the block (checked by the caller).
            unsafe { _mm256_storeu_ps(o.add(h * padded + half), _mm256_mul_ps(sum, scale)) }
        }
    }
}

/// Value rows the AVX2 kernel takes at a time (8 KB of an `f32` cache's rows of 128): each
/// span comes from memory once, for its first 16 dimensions, and from the first-level cache
/// for the rest.
const ROWS_AVX2: usize = 16;
/// How many spans ahead of the one being summed each pass prefetches its share of.
const AHEAD_SPANS: usize = 2;

/// [`grouped_values`] on AVX2: spans of [`ROWS_AVX2`] value rows, and within a span each
/// head's output 16 dimensions (two vectors) at a time, its sums in registers over the span.
///
/// # Panics
/// When `head_dim` is not a multiple of 16, or `weights` or `out` is too short.
///
/// # Safety
/// The CPU must have AVX2, FMA and F16C.
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn grouped_values_avx2<const G: usize, E: Stored>(
    values: &[E],
    weights: &[f32],
    head_dim: usize,
    padded: usize,
    out: &mut [f32],
) {
    let seen = values.len() / head_dim;
    assert!(head_dim.is_multiple_of(16) && out.len() >= G * head_dim);
    assert!(seen == 0 || weights.len() >= (G - 1) * padded + seen);
    let (v, w, o) = (values.as_ptr(), weights.as_ptr(), out.as_mut_ptr());
    out[..G * head_dim].fill(0.0);
    // The passes below read a span a 64-byte line of each row at a time, which the hardware
    // prefetchers do not follow: each pass fetches its share of the span after next.
    let share = ROWS_AVX2 * head_dim * size_of::<E>() / (head_dim / 16);
    for span in (0..seen).step_by(ROWS_AVX2) {
        let end = (span + ROWS_AVX2).min(seen);
        let ahead = v
            .wrapping_add((span + AHEAD_SPANS * ROWS_AVX2) * head_dim)
            .cast::<i8>();
        for first in (0..head_dim).step_by(16) {
            let share = Ahead {
                at: ahead.wrapping_add(first / 16 * share),
                lines: share.div_ceil(64),
            };
            share.step(0, 1);
            // SAFETY: `h < G` and `first + 8 c + 7 < head_dim`: inside `out`.
            let mut sums: [[__m256; 2]; G] = std::array::from_fn(|h| {
                std::array::from_fn(|c| unsafe {
                    _mm256_loadu_ps(o.add(h * head_dim + first + c * 8))
                })
            });
            for j in span..end {
                // SAFETY: `j < seen` and `first + 15 < head_dim`: inside `values`.
                let row = unsafe {
                    let at = v.add(j * head_dim + first);
                    [load8(at), load8(at.add(8))]
                };
                for (h, sums) in sums.iter_mut().enumerate() {
                    // SAFETY: `h < G` and `j < seen`: inside `weights` (checked above).
                    let weight = _mm256_set1_ps(unsafe { *w.add(h * padded + j) });
                    for (sum, vector) in sums.iter_mut().zip(&row) {
                        *sum = _mm256_fmadd_ps(weight, *vector, *sum);
                    }
                }
            }
            for (h, sums) in sums.iter().enumerate() {
                for (c, sum) in sums.iter().enumerate() {
                    // SAFETY: as above.
                    unsafe { _mm256_storeu_ps(o.add(h * head_dim + first + c * 8), *sum) }
                }
            }
        }
    }
}
