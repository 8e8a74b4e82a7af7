//! One group's attention: the query heads that share a key/value head, at one position, take
//! their scores from its keys, their weights from a softmax and their outputs from its values,
//! on the portable loops or the x86 kernels.

use super::cache::BLOCK;
use super::softmax::softmax_rows;
use super::stored::Stored;
use super::vectors::Vectors;

/// Scratch space a thread's attention reuses: the heads' scores, and stored keys or values
/// widened to `f32` where the portable loops read an `f16` cache.
#[derive(Default)]
pub(super) struct Room {
    scores: Vec<f32>,
    widened: Vec<f32>,
}

/// Independent partial sums per score (head dimensions are a multiple of it).
const LANES: usize = 4;

/// The query heads that share one key/value head, for one position, and the keys and values
/// they see.
pub(super) struct Group<'a, E> {
    /// The heads' queries, one after another.
    pub(super) queries: &'a [f32],
    /// The head's keys, blocks of [`BLOCK`] positions transposed (see [`KvCache`]).
    pub(super) keys: &'a [E],
    /// The values of the positions seen, one row after another.
    pub(super) values: &'a [E],
    pub(super) head_dim: usize,
    /// Positions seen (`0 .. seen`).
    pub(super) seen: usize,
}

impl<E: Stored> Group<'_, E> {
    /// Writes each head's attention output into `out` (laid out as `queries`), using `room`
    /// for the heads' weights.
    ///
    /// # Safety
    /// The CPU must have the features of `vectors`.
    pub(super) unsafe fn attend(&self, vectors: Vectors, room: &mut Room, out: &mut [f32]) {
        match vectors {
            // SAFETY: the caller vouches for the features of each variant.
            #[cfg(target_arch = "x86_64")]
            Vectors::Avx512 => unsafe { self.attend_avx512(room, out) },
            #[cfg(target_arch = "x86_64")]
            Vectors::Avx2 => unsafe { self.attend_avx2(room, out) },
            Vectors::Narrow => self.attend_with::<false, PORTABLE>(room, out),
            // SAFETY: as above.
            #[cfg(all(test, target_arch = "x86_64"))]
            Vectors::PortableFma => unsafe { self.attend_portable_fma(room, out) },
        }
    }

    /// The portable loops compiled for FMA, which the vector kernels give the bits of.
    #[cfg(all(test, target_arch = "x86_64"))]
    #[target_feature(enable = "avx2,fma")]
    fn attend_portable_fma(&self, room: &mut Room, out: &mut [f32]) {
        self.attend_with::<true, PORTABLE>(room, out)
    }

    /// [`attend_with`](Self::attend_with) compiled for AVX2, FMA and F16C, with the AVX2
    /// kernels.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma,f16c")]
    fn attend_avx2(&self, room: &mut Room, out: &mut [f32]) {
        self.attend_with::<true, AVX2>(room, out)
    }

    /// [`attend_with`](Self::attend_with) compiled for AVX-512, with the AVX-512 kernels.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,avx2,fma,f16c")]
    fn attend_avx512(&self, room: &mut Room, out: &mut [f32]) {
        self.attend_with::<true, AVX512>(room, out)
    }

    /// Attention for the group: `FUSED` where compiled for FMA; `KERNELS` says which loops
    /// compute the scores and the outputs ([`PORTABLE`], [`AVX2`] or [`AVX512`]; the vector
    /// kernels read each key and value once for the group's heads).
    #[inline(always)]
    fn attend_with<const FUSED: bool, const KERNELS: u8>(&self, room: &mut Room, out: &mut [f32]) {
        let (hd, seen) = (self.head_dim, self.seen);
        let Room { scores, widened } = room;
        let scale = 1.0 / (hd as f32).sqrt();
        let padded = seen.next_multiple_of(BLOCK);
        let heads = self.queries.len() / hd;
        scores.clear();
        scores.resize(heads * padded, 0.0);
        // The vector kernels take four dimensions at a time.
        let vector_scores = KERNELS != PORTABLE && hd.is_multiple_of(4);
        if !vector_scores {
            for (query, scores) in self
                .queries
                .chunks_exact(hd)
                .zip(scores.chunks_exact_mut(padded))
            {
                self.scores_of_one::<FUSED>(query, scale, scores, widened);
            }
        }
        #[cfg(target_arch = "x86_64")]
        if vector_scores && KERNELS == AVX2 {
            use crate::transformer::attention_x86::grouped_scores_avx2;
            // SAFETY: `AVX2` is compiled only where the CPU has AVX2, FMA and F16C.
            unsafe { grouped_scores_avx2(self.keys, self.queries, hd, scale, scores, padded) };
        }
        #[cfg(target_arch = "x86_64")]
        if vector_scores && KERNELS == AVX512 {
            for (queries, scores) in self
                .queries
                .chunks(TOGETHER * hd)
                .zip(scores.chunks_mut(TOGETHER * padded))
            {
                use crate::transformer::attention_x86::grouped_scores;
                let (k, q, s) = (self.keys, queries, &mut *scores);
                // SAFETY: `AVX512` is compiled only where the CPU has AVX-512F and FMA.
                unsafe {
                    match queries.len() / hd {
                        1 => self.scores_of_one::<FUSED>(queries, scale, scores, widened),
                        2 => grouped_scores::<2, _>(k, q, hd, scale, s, padded),
                        3 => grouped_scores::<3, _>(k, q, hd, scale, s, padded),
                        4 => grouped_scores::<4, _>(k, q, hd, scale, s, padded),
                        5 => grouped_scores::<5, _>(k, q, hd, scale, s, padded),
                        _ => grouped_scores::<TOGETHER, _>(k, q, hd, scale, s, padded),
                    }
                }
            }
        }
        softmax_rows(scores, padded, seen);
        #[cfg(target_arch = "x86_64")]
        {
            use crate::transformer::attention_x86::{Avx2Values, Avx512Values, GroupedValues};
            // SAFETY: `AVX2` is compiled only where the CPU has AVX2, FMA and F16C, and
            // `AVX512` only where it also has AVX-512F; each kernel's head dimensions are
            // checked here.
            if KERNELS == AVX2 && hd.is_multiple_of(Avx2Values::WIDTH) {
                return unsafe { self.grouped_values::<Avx2Values>(scores, padded, out) };
            }
            if KERNELS == AVX512 && hd.is_multiple_of(Avx512Values::WIDTH) {
                return unsafe { self.grouped_values::<Avx512Values>(scores, padded, out) };
            }
        }
        self.weighted_values::<FUSED>(scores, padded, out, widened);
    }

    /// The outputs from the vector kernel `K`, [`TOGETHER`] heads to a pass over the values.
    ///
    /// # Safety
    /// The CPU must have `K`'s features, and `head_dim` must be a multiple of `K::WIDTH`.
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    unsafe fn grouped_values<K: crate::transformer::attention_x86::GroupedValues>(
        &self,
        weights: &[f32],
        padded: usize,
        out: &mut [f32],
    ) {
        let (v, hd) = (self.values, self.head_dim);
        for (o, w) in out
            .chunks_mut(TOGETHER * hd)
            .zip(weights.chunks(TOGETHER * padded))
        {
            // SAFETY: the caller vouches for the features and the head dimension.
            unsafe {
                match o.len() / hd {
                    1 => K::run::<1, E>(v, w, hd, padded, o),
                    2 => K::run::<2, E>(v, w, hd, padded, o),
                    3 => K::run::<3, E>(v, w, hd, padded, o),
                    4 => K::run::<4, E>(v, w, hd, padded, o),
                    5 => K::run::<5, E>(v, w, hd, padded, o),
                    _ => K::run::<TOGETHER, E>(v, w, hd, padded, o),
                }
            }
        }
    }

    /// `scores[j] = query · key j × scale` for one query head and every position seen, a block
    /// of positions at a time (the last block's positions past the last one seen read zeroed or
    /// stale cache, and their scores are ignored). Four partial sums per score, so that four
    /// chains of fused multiply-adds run side by side instead of one waiting on the other.
    #[inline(always)]
    fn scores_of_one<const FUSED: bool>(
        &self,
        query: &[f32],
        scale: f32,
        scores: &mut [f32],
        widened: &mut Vec<f32>,
    ) {
        let block_len = self.head_dim * BLOCK;
        for (block, keys) in scores
            .chunks_exact_mut(BLOCK)
            .zip(self.keys.chunks_exact(block_len))
        {
            let keys = E::widen(keys, widened);
            let mut sums = [[0f32; BLOCK]; LANES];
            for (q, keys) in query
                .chunks_exact(LANES)
                .zip(keys.chunks_exact(BLOCK * LANES))
            {
                for ((sums, &q), keys) in sums.iter_mut().zip(q).zip(keys.chunks_exact(BLOCK)) {
                    for (s, k) in sums.iter_mut().zip(keys) {
                        *s = multiply_add::<FUSED>(q, *k, *s);
                    }
                }
            }
            for (i, out) in block.iter_mut().enumerate() {
                *out = (sums[0][i] + sums[1][i] + sums[2][i] + sums[3][i]) * scale;
            }
        }
    }

    /// `out[h] = Σ_j weights[h][j] × value j` for every head: each value row is read once for
    /// all the heads, four rows at a time (so each head's output is loaded and stored once
    /// per four positions).
    #[inline(always)]
    fn weighted_values<const FUSED: bool>(
        &self,
        weights: &[f32],
        padded: usize,
        out: &mut [f32],
        widened: &mut Vec<f32>,
    ) {
        let hd = self.head_dim;
        out.fill(0.0);
        let mut fours = self.values.chunks_exact(4 * hd);
        let mut j = 0;
        for rows in fours.by_ref() {
            let rows = E::widen(rows, widened);
            let (v0, rest) = rows.split_at(hd);
            let (v1, rest) = rest.split_at(hd);
            let (v2, v3) = rest.split_at(hd);
            for (out, w) in out.chunks_exact_mut(hd).zip(weights.chunks_exact(padded)) {
                let (w0, w1, w2, w3) = (w[j], w[j + 1], w[j + 2], w[j + 3]);
                for ((((o, a), b), c), d) in out.iter_mut().zip(v0).zip(v1).zip(v2).zip(v3) {
                    let sum = multiply_add::<FUSED>(w0, *a, *o);
                    let sum = multiply_add::<FUSED>(w1, *b, sum);
                    let sum = multiply_add::<FUSED>(w2, *c, sum);
                    *o = multiply_add::<FUSED>(w3, *d, sum);
                }
            }
            j += 4;
        }
        for value in E::widen(fours.remainder(), widened).chunks_exact(hd) {
            for (out, w) in out.chunks_exact_mut(hd).zip(weights.chunks_exact(padded)) {
                for (o, v) in out.iter_mut().zip(value) {
                    *o = multiply_add::<FUSED>(w[j], *v, *o);
                }
            }
            j += 1;
        }
    }
}

/// The most query heads whose scores (AVX-512) or outputs (both vector kernels) are computed
/// in one pass over the keys or values (their sums fill 24 of the 32 AVX-512 registers, or 12
/// of the 16 AVX2 ones).
const TOGETHER: usize = 6;

/// [`Group::attend_with`]'s portable loops.
const PORTABLE: u8 = 0;
/// [`Group::attend_with`]'s AVX2 kernels.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
const AVX2: u8 = 1;
/// [`Group::attend_with`]'s AVX-512 kernels.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
const AVX512: u8 = 2;

/// `a * b + c`, fused into one instruction where the caller is compiled for FMA (elsewhere
/// `mul_add` would be a slow library call).
#[inline(always)]
fn multiply_add<const FUSED: bool>(a: f32, b: f32, c: f32) -> f32 {
    if FUSED { a.mul_add(b, c) } else { a * b + c }
}
