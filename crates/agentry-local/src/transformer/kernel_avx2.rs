//! AVX2 kernels for quantized matrix products with GGML K-quant weights, for x86-64 CPUs
//! without AVX-512 VNNI: the block formats and contract of [`super::kernel_x86`], on 256-bit
//! vectors.
//!
//! # How a block dot product is computed
//!
//! A weight block's quants are expanded to bytes, 32 at a time (one sub-block of Q4_K, two of
//! Q6_K), and multiplied with the matching 32 activation bytes by `vpmaddubsw` (u8 × i8, pairs
//! summed into i16; at most `2 · 63 · 128`, so it cannot saturate). `vpmaddwd` then multiplies
//! those i16 sums by their sub-block's scale and adds pairs into i32 lanes. The constant parts
//! of the dequantization (Q4_K's `dmin · min`, Q6_K's `−32` offset) go through the activation
//! block's `bsums`. Each block yields one integer vector, converted to f32 once and folded into
//! an f32 accumulator with the block scales.
//!
//! The drivers are the AVX-512 kernels' (`kernel_drivers.rs`): one activation row (decode)
//! walks the weights once with software prefetching ahead; several (prompt processing) expand
//! each weight block once for a tile of activation rows. With half the registers, a block is
//! expanded 32 values at a time, each part multiplied with every row of the tile while it is in
//! registers.

use std::arch::x86_64::*;
use std::sync::OnceLock;

use super::kernel_x86::{
    BlockQ4K, BlockQ6K, BlockQ8K, L1_TILE_BYTES, NARROW_TILE, PREFETCH_BYTES, ROW_PANEL, WIDE_TILE,
    q4k_scale_min_bytes,
};

/// Whether this CPU has what the kernels need (avx2, fma and f16c; checked once, cached).
pub(super) fn available() -> bool {
    static AVAILABLE: OnceLock<bool> = OnceLock::new();
    *AVAILABLE.get_or_init(|| {
        is_x86_feature_detected!("avx2")
            && is_x86_feature_detected!("fma")
            && is_x86_feature_detected!("f16c")
    })
}

/// Q4_K × Q8_K matrix product, with the contract of [`super::kernel_x86::gemm_q4k`].
///
/// # Safety
/// [`available`] must be true.
pub(super) unsafe fn gemm_q4k(
    w: &[BlockQ4K],
    x: &[BlockQ8K],
    k_blocks: usize,
    out: &mut [f32],
    ld: usize,
) {
    // SAFETY: the caller guarantees the CPU features `gemm` is compiled for.
    unsafe { gemm(w, x, k_blocks, out, ld) }
}

/// Q6_K × Q8_K matrix product; same contract as [`gemm_q4k`].
///
/// # Safety
/// [`available`] must be true.
pub(super) unsafe fn gemm_q6k(
    w: &[BlockQ6K],
    x: &[BlockQ8K],
    k_blocks: usize,
    out: &mut [f32],
    ld: usize,
) {
    // SAFETY: the caller guarantees the CPU features `gemm` is compiled for.
    unsafe { gemm(w, x, k_blocks, out, ld) }
}

/// A weight block format whose 32-value parts are expanded one at a time (sixteen 256-bit
/// registers do not hold a whole expanded block next to the sums of a tile of activation
/// rows).
trait KBlock {
    /// What every part needs: the decoded scales, and the block scales broadcast.
    type Prepared: Copy;

    /// Decodes the block's scales.
    ///
    /// # Safety
    /// The CPU must have AVX2, FMA and F16C.
    unsafe fn prepare(&self) -> Self::Prepared;

    /// The quants of values `32i..32i + 32` as bytes, and the i16 scale of each byte pair.
    ///
    /// # Safety
    /// The CPU must have AVX2.
    unsafe fn part(&self, prepared: &Self::Prepared, i: usize) -> (__m256i, __m256i);

    /// Eight lanes whose sum, multiplied by `x.d`, is the block dot product, from the
    /// integer sums of the parts' products with `x`.
    ///
    /// # Safety
    /// The CPU must have AVX2 and FMA.
    unsafe fn finish(prepared: &Self::Prepared, sums: __m256i, x: &BlockQ8K) -> __m256;
}

/// A [`BlockQ4K`]'s decoded scales.
#[derive(Clone, Copy)]
struct Q4KPrepared {
    /// Bytes of the scales and mins (see [`q4k_scale_min_bytes`]).
    scales: [u64; 2],
    /// The eight mins as i16 words (word `j` pairs with `bsums[2j] + bsums[2j + 1]`).
    mins: __m128i,
    /// `d` broadcast.
    d: __m256,
    /// `dmin` broadcast.
    dmin: __m256,
}

impl KBlock for BlockQ4K {
    type Prepared = Q4KPrepared;

    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn prepare(&self) -> Q4KPrepared {
        let [first, second] = q4k_scale_min_bytes(&self.scales);
        let mins = _mm_set_epi32(0, 0, (second >> 32) as i32, (first >> 32) as i32);
        let both = _mm_cvtph_ps(_mm_set_epi16(
            0,
            0,
            0,
            0,
            0,
            0,
            self.dmin as i16,
            self.d as i16,
        ));
        Q4KPrepared {
            scales: [first, second],
            mins: _mm_cvtepu8_epi16(mins),
            d: _mm256_broadcastss_ps(both),
            dmin: _mm256_broadcastss_ps(_mm_movehdup_ps(both)),
        }
    }

    #[inline]
    #[target_feature(enable = "avx2")]
    unsafe fn part(&self, prepared: &Q4KPrepared, i: usize) -> (__m256i, __m256i) {
        // Byte `32c + l` holds value `64c + l` in its low nibble and `64c + 32 + l` in its
        // high one: part `i` is the low or high nibbles of chunk `i / 2`.
        // SAFETY: `i < 8`, so the chunk's 32 bytes are inside `qs`: one unaligned load.
        let bytes = unsafe { _mm256_loadu_si256(self.qs.as_ptr().add(32 * (i / 2)).cast()) };
        let bytes = if i.is_multiple_of(2) {
            bytes
        } else {
            _mm256_srli_epi16::<4>(bytes)
        };
        // Scales `0..4` are bytes `0..4` of the first word, `4..8` of the second.
        let scale = (prepared.scales[i / 4] >> (8 * (i % 4))) & 0xFF;
        (
            _mm256_and_si256(bytes, _mm256_set1_epi8(0x0F)),
            _mm256_set1_epi16(scale as i16),
        )
    }

    #[inline]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn finish(prepared: &Q4KPrepared, sums: __m256i, x: &BlockQ8K) -> __m256 {
        // SAFETY: `bsums` is 32 bytes, exactly one unaligned 256-bit load.
        let bsums = unsafe { _mm256_loadu_si256(x.bsums.as_ptr().cast()) };
        let pairs = _mm_hadd_epi16(
            _mm256_castsi256_si128(bsums),
            _mm256_extracti128_si256::<1>(bsums),
        );
        let mins = _mm256_zextsi128_si256(_mm_madd_epi16(pairs, prepared.mins));
        let sums = _mm256_mul_ps(_mm256_cvtepi32_ps(sums), prepared.d);
        _mm256_fnmadd_ps(_mm256_cvtepi32_ps(mins), prepared.dmin, sums)
    }
}

/// A [`BlockQ6K`]'s decoded scales.
#[derive(Clone, Copy)]
struct Q6KPrepared {
    /// The 16 scale bytes.
    scales: __m128i,
    /// `-32 · scale` of the 16 sub-blocks as i16 words (pairs with `bsums`).
    offsets: __m256i,
    /// `d` broadcast.
    d: __m256,
}

impl KBlock for BlockQ6K {
    type Prepared = Q6KPrepared;

    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn prepare(&self) -> Q6KPrepared {
        // SAFETY: `scales` is 16 bytes, exactly one unaligned 128-bit load.
        let scales = unsafe { _mm_loadu_si128(self.scales.as_ptr().cast()) };
        let words = _mm256_cvtepi8_epi16(scales);
        Q6KPrepared {
            scales,
            offsets: _mm256_sub_epi16(_mm256_setzero_si256(), _mm256_slli_epi16::<5>(words)),
            d: _mm256_cvtph_ps(_mm_set1_epi16(self.d as i16)),
        }
    }

    #[inline]
    #[target_feature(enable = "avx2")]
    unsafe fn part(&self, prepared: &Q6KPrepared, i: usize) -> (__m256i, __m256i) {
        // Part `4h + k` is values `32k..32k + 32` of half `h`. Value `l` of a half
        // (`l < 32`) takes the low nibble of `ql[l]` and bits 0..2 of `qh[l]`; `32 + l` the
        // low nibble of `ql[32 + l]` and bits 2..4; `64 + l` the high nibble of `ql[l]` and
        // bits 4..6; `96 + l` the high nibble of `ql[32 + l]` and bits 6..8.
        let (half, k) = (i / 4, i % 4);
        // SAFETY: `half < 2` and `k < 4`: 32 bytes inside `ql` and inside `qh`.
        let (low, high) = unsafe {
            (
                _mm256_loadu_si256(self.ql.as_ptr().add(64 * half + 32 * (k % 2)).cast()),
                _mm256_loadu_si256(self.qh.as_ptr().add(32 * half).cast()),
            )
        };
        let low = if k < 2 {
            low
        } else {
            _mm256_srli_epi16::<4>(low)
        };
        // The two bits of `high`, moved to bits 4..6 (each mask keeps the shift within bytes).
        let high = match k {
            0 => _mm256_slli_epi16::<4>(_mm256_and_si256(high, _mm256_set1_epi8(0x03))),
            1 => _mm256_slli_epi16::<2>(_mm256_and_si256(high, _mm256_set1_epi8(0x0C))),
            2 => _mm256_and_si256(high, _mm256_set1_epi8(0x30)),
            _ => _mm256_srli_epi16::<2>(_mm256_and_si256(high, _mm256_set1_epi8(0xC0_u8 as i8))),
        };
        let quants = _mm256_or_si256(_mm256_and_si256(low, _mm256_set1_epi8(0x0F)), high);
        let scales = _mm256_cvtepi8_epi16(_mm_shuffle_epi8(prepared.scales, Q6K_SCALE_PAIR[i]));
        (quants, scales)
    }

    #[inline]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn finish(prepared: &Q6KPrepared, sums: __m256i, x: &BlockQ8K) -> __m256 {
        // SAFETY: `bsums` is 32 bytes, exactly one unaligned 256-bit load.
        let bsums = unsafe { _mm256_loadu_si256(x.bsums.as_ptr().cast()) };
        let sums = _mm256_add_epi32(sums, _mm256_madd_epi16(bsums, prepared.offsets));
        _mm256_mul_ps(_mm256_cvtepi32_ps(sums), prepared.d)
    }
}

/// Shuffles of the 16 Q6_K scale bytes: pair `i` repeats scale `2i` in bytes `0..8` and scale
/// `2i + 1` in bytes `8..16` (widened to words, one per 128-bit half of a part's products).
const Q6K_SCALE_PAIR: [__m128i; 8] = {
    let mut pairs = [[0u8; 16]; 8];
    let mut i = 0;
    while i < 8 {
        let mut b = 0;
        while b < 16 {
            pairs[i][b] = (2 * i + b / 8) as u8;
            b += 1;
        }
        i += 1;
    }
    // SAFETY: `[[u8; 16]; 8]` and `[__m128i; 8]` have the same size and any bit pattern is
    // valid.
    unsafe { std::mem::transmute::<[[u8; 16]; 8], [__m128i; 8]>(pairs) }
};

/// Adds to `acc[t]` the dot product of `block` with activation block `x(t)` (times its `d`),
/// for each `t < T`: each part of the block is expanded once for all of them.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn accumulate<'x, B: KBlock, const T: usize>(
    block: &B,
    x: impl Fn(usize) -> &'x BlockQ8K,
    acc: &mut [__m256; T],
) {
    // SAFETY: this function is compiled with every feature `prepare`/`part`/`finish` need.
    let prepared = unsafe { block.prepare() };
    let mut sums = [_mm256_setzero_si256(); T];
    for i in 0..8 {
        // SAFETY: as above.
        let (quants, scales) = unsafe { block.part(&prepared, i) };
        for (t, sum) in sums.iter_mut().enumerate() {
            // SAFETY: part `i` of a Q8_K block is 32 bytes inside `qs`: one unaligned load.
            let xv = unsafe { _mm256_loadu_si256(x(t).qs.as_ptr().add(32 * i).cast()) };
            let products = _mm256_madd_epi16(_mm256_maddubs_epi16(quants, xv), scales);
            *sum = _mm256_add_epi32(*sum, products);
        }
    }
    for (t, (acc, sums)) in acc.iter_mut().zip(sums).enumerate() {
        let xb = x(t);
        // SAFETY: as above.
        let dot = unsafe { B::finish(&prepared, sums, xb) };
        *acc = _mm256_fmadd_ps(dot, _mm256_set1_ps(xb.d), *acc);
    }
}

/// The sum of the eight lanes.
#[inline]
#[target_feature(enable = "avx2")]
fn reduce_add(v: __m256) -> f32 {
    let four = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps::<1>(v));
    let two = _mm_add_ps(four, _mm_movehl_ps(four, four));
    _mm_cvtss_f32(_mm_add_ss(two, _mm_movehdup_ps(two)))
}

super::kernel_drivers::k_quant_drivers!("avx2,fma,f16c");

/// Dot product of one weight row with one activation row of the same length, prefetching the
/// weights that follow the row.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn decode_row<B: KBlock>(row: &[B], x: &[BlockQ8K]) -> f32 {
    let mut acc = [_mm256_setzero_ps()];
    for (block, xb) in row.iter().zip(x) {
        let ahead = (block as *const B)
            .cast::<i8>()
            .wrapping_add(PREFETCH_BYTES);
        for offset in (0..size_of::<B>()).step_by(64) {
            // Prefetching never faults, so running past the end of `row` is harmless.
            _mm_prefetch::<_MM_HINT_T0>(ahead.wrapping_add(offset));
        }
        accumulate(block, |_| xb, &mut acc);
    }
    reduce_add(acc[0])
}

/// Dots one weight row with each of the first `T` activation rows of `x`, expanding every
/// weight block once for all of them, and passes each result with its row index to `store`.
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
fn tile<B: KBlock, const T: usize>(row: &[B], x: &[BlockQ8K], store: &mut impl FnMut(usize, f32)) {
    let k_blocks = row.len();
    let x = &x[..T * k_blocks];
    let mut acc = [_mm256_setzero_ps(); T];
    for (kb, block) in row.iter().enumerate() {
        accumulate(block, |t| &x[t * k_blocks + kb], &mut acc);
    }
    for (t, acc) in acc.iter().enumerate() {
        store(t, reduce_add(*acc));
    }
}

#[cfg(test)]
super::kernel_check::k_quant_product_tests!(avx2_or_skip, 0xa2);
