//! One tile times a group of activation rows: the activations prepared for each tile format,
//! and the `vpdpbusd` loops.

use super::tiles::{TileQ4K, TileQ6K};
use crate::transformer::kernel_x86::{BlockQ8K, dpwssd};
use std::arch::x86_64::*;

/// A tile format: how activations are prepared for it and how one tile is dotted with
/// a group of activation rows.
pub(super) trait Packed: Copy {
    /// Largest number of activation rows multiplied with one expanded tile (prompt
    /// path), at most 16; chosen by measurement.
    const TOKENS: usize;

    /// One Q8_K block with the terms that the format needs precomputed.
    type Act: Copy;

    /// Prepares one activation block.
    fn act(x: &BlockQ8K) -> Self::Act;

    /// The activation block's scale.
    fn act_d(a: &Self::Act) -> f32;

    /// For each of the `T` activation blocks, the 16 rows' dot products with this
    /// tile, not yet multiplied by the activation block's scale.
    ///
    /// # Safety
    /// The CPU must support the features listed on the implementation.
    unsafe fn dot<const T: usize>(&self, acts: &[Self::Act; T]) -> [__m512; T];
}

/// A Q8_K block prepared for [`TileQ4K`].
#[derive(Clone, Copy)]
pub(super) struct ActQ4K {
    /// Quants, as the groups of 4 bytes that `vpdpbusd` broadcasts.
    qs: [i32; 64],
    /// Scale.
    d: f32,
    /// Word `h` of `pairs[i]` is `bsums[4i + 2h] + bsums[4i + 2h + 1]`, the sum of the
    /// quants of Q4_K sub-block `2i + h`.
    pairs: [i32; 4],
}

/// A Q8_K block prepared for [`TileQ6K`].
#[derive(Clone, Copy)]
pub(super) struct ActQ6K {
    /// Quants, as the groups of 4 bytes that `vpdpbusd` broadcasts.
    qs: [i32; 64],
    /// Scale.
    d: f32,
    /// `−32 · bsums[j]`: the Q6_K offset's share of sub-block `j`, used as the
    /// starting value of its integer sum.
    offsets: [i32; 16],
}

/// The quants of `x` as 4-byte groups.
fn quant_groups(x: &BlockQ8K) -> [i32; 64] {
    std::array::from_fn(|g| {
        let q = &x.qs[4 * g..4 * g + 4];
        i32::from_le_bytes([q[0] as u8, q[1] as u8, q[2] as u8, q[3] as u8])
    })
}

impl Packed for TileQ4K {
    const TOKENS: usize = 16;
    type Act = ActQ4K;

    fn act(x: &BlockQ8K) -> ActQ4K {
        let pair = |j: usize| (x.bsums[2 * j] + x.bsums[2 * j + 1]) as u16;
        ActQ4K {
            qs: quant_groups(x),
            d: x.d,
            pairs: std::array::from_fn(|i| {
                (u32::from(pair(2 * i)) | (u32::from(pair(2 * i + 1)) << 16)) as i32
            }),
        }
    }

    fn act_d(a: &ActQ4K) -> f32 {
        a.d
    }

    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,fma")]
    unsafe fn dot<const T: usize>(&self, acts: &[ActQ4K; T]) -> [__m512; T] {
        let d = f16x16(&self.d);
        // The high-nibble sub-blocks are dotted as `16 · q` (masked, not shifted).
        let d_high = _mm512_mul_ps(d, _mm512_set1_ps(1.0 / 16.0));
        let mut acc = self.mins_term(acts);
        for sub in 0..8 {
            let (pair, high) = (sub / 2, sub % 2 == 1);
            let mask = _mm512_set1_epi8(if high { 0xF0u8 as i8 } else { 0x0F });
            let w: [__m512i; 8] =
                std::array::from_fn(|p| _mm512_and_si512(load(&self.qs[8 * pair + p]), mask));
            // SAFETY: `scales[sub]` is 16 bytes, exactly one unaligned 128-bit load.
            let raw = unsafe { _mm_loadu_si128(self.scales[sub].as_ptr().cast()) };
            let scale = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(raw));
            let scale = _mm512_mul_ps(scale, if high { d_high } else { d });
            for (acc, a) in acc.iter_mut().zip(acts) {
                let x = &a.qs[8 * sub..8 * sub + 8];
                let mut sum = _mm512_setzero_si512();
                for (w, x) in w.iter().zip(x) {
                    sum = _mm512_dpbusd_epi32(sum, *w, _mm512_set1_epi32(*x));
                }
                *acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum), scale, *acc);
            }
        }
        acc
    }
}

impl TileQ4K {
    /// `−dmin · Σ_j min_j · Σ(quants of sub-block j)` per row, for each activation.
    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,fma")]
    fn mins_term<const T: usize>(&self, acts: &[ActQ4K; T]) -> [__m512; T] {
        let neg_dmin = _mm512_sub_ps(_mm512_setzero_ps(), f16x16(&self.dmin));
        // SAFETY: each `mins[i]` is 32 bytes, exactly one unaligned 256-bit load.
        let mins: [__m512i; 4] = std::array::from_fn(|i| unsafe {
            _mm512_cvtepu8_epi16(_mm256_loadu_si256(self.mins[i].as_ptr().cast()))
        });
        acts.each_ref().map(|a| {
            let mut sum = _mm512_setzero_si512();
            for (mins, pairs) in mins.iter().zip(a.pairs) {
                sum = dpwssd(sum, *mins, _mm512_set1_epi32(pairs));
            }
            _mm512_mul_ps(_mm512_cvtepi32_ps(sum), neg_dmin)
        })
    }
}

impl Packed for TileQ6K {
    const TOKENS: usize = 8;
    type Act = ActQ6K;

    fn act(x: &BlockQ8K) -> ActQ6K {
        ActQ6K {
            qs: quant_groups(x),
            d: x.d,
            offsets: x.bsums.map(|s| -32 * i32::from(s)),
        }
    }

    fn act_d(a: &ActQ6K) -> f32 {
        a.d
    }

    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,fma")]
    unsafe fn dot<const T: usize>(&self, acts: &[ActQ6K; T]) -> [__m512; T] {
        let d = f16x16(&self.d);
        let mut acc = [_mm512_setzero_ps(); T];
        for (j, sub) in self.qs.iter().enumerate() {
            let w = q6k_expand(sub);
            // SAFETY: `scales[j]` is 16 bytes, exactly one unaligned 128-bit load.
            let raw = unsafe { _mm_loadu_si128(self.scales[j].as_ptr().cast()) };
            let scale = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(raw)), d);
            for (acc, a) in acc.iter_mut().zip(acts) {
                let x = &a.qs[4 * j..4 * j + 4];
                let mut sum = _mm512_set1_epi32(a.offsets[j]);
                for (w, x) in w.iter().zip(x) {
                    sum = _mm512_dpbusd_epi32(sum, *w, _mm512_set1_epi32(*x));
                }
                *acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum), scale, *acc);
            }
        }
        acc
    }
}

/// Assembles the four vectors of unsigned 6-bit quants (groups 0..4) of one
/// [`TileQ6K`] sub-block.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl")]
fn q6k_expand(sub: &[[u8; 64]; 3]) -> [__m512i; 4] {
    let [low01, low23, high] = sub.each_ref().map(|v| load(v));
    let two_bits = _mm512_set1_epi8(0x33);
    // Bits 0..2 / 4..6: high bits of groups 0 / 1 (`h01`) and 2 / 3 (`h23`), zero elsewhere.
    let h01 = _mm512_and_si512(high, two_bits);
    let h23 = _mm512_and_si512(_mm512_srli_epi16::<2>(high), two_bits);
    let nibble = _mm512_set1_epi8(0x0F);
    // 0xCA: bitwise `a ? b : c`, i.e. low nibble from `b`, high nibble from `c`. The
    // 16-bit shifts move bits across bytes, but only into the half that is not selected.
    let join = |low, high| _mm512_ternarylogic_epi32::<0xCA>(nibble, low, high);
    [
        join(low01, _mm512_slli_epi16::<4>(h01)),
        join(_mm512_srli_epi16::<4>(low01), h01),
        join(low23, _mm512_slli_epi16::<4>(h23)),
        join(_mm512_srli_epi16::<4>(low23), h23),
    ]
}

/// Loads one 64-byte aligned vector.
#[inline]
#[target_feature(enable = "avx512f")]
fn load(v: &[u8; 64]) -> __m512i {
    // SAFETY: 64 readable bytes; tiles are 64-byte aligned and every vector sits at a
    // multiple of 64 within them.
    unsafe { _mm512_load_si512(v.as_ptr().cast()) }
}

/// Converts 16 f16 values to f32.
#[inline]
#[target_feature(enable = "avx512f")]
fn f16x16(h: &[u16; 16]) -> __m512 {
    // SAFETY: 32 readable bytes, one unaligned 256-bit load.
    _mm512_cvtph_ps(unsafe { _mm256_loadu_si256(h.as_ptr().cast()) })
}
