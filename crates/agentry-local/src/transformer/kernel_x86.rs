//! AVX-512 VNNI kernels for quantized matrix products with GGML K-quant weights.
//!
//! Weights are Q4_K or Q6_K blocks, activations are Q8_K blocks; all three block
//! layouts are byte-for-byte identical to GGML's (and to candle's `k_quants` types),
//! so slices of those types can be reinterpreted as the structs defined here.
//!
//! # How a block dot product is computed
//!
//! Both weight formats store unsigned quants (Q4_K: `0..=15`, Q6_K: `0..=63`), so each
//! 64-element slice of a weight block is expanded into one `__m512i` of `u8`s and
//! multiplied with the matching 64 activation bytes by `vpmaddubsw` (u8 × i8, pairs
//! summed into i16; the largest magnitude, `2 · 63 · 128`, cannot saturate). The i16
//! products are then multiplied by the per-sub-block scales and accumulated into i32
//! lanes by `vpdpwssd`, which fuses the scaling into the accumulation. The constant
//! parts of the dequantization (Q4_K's `dmin · min`, Q6_K's `−32` offset) are applied
//! through the activation block's `bsums`. Each block yields one integer vector that is
//! converted to f32 once and folded into an f32 accumulator with the block scales.
//!
//! # Tiling
//!
//! With several activation rows (prompt processing) a weight block is *unpacked*
//! (nibbles / high bits split into bytes, scales spread into i16 vectors) into
//! registers once and then dotted with a tile of 8 activation rows (4 for long rows,
//! so that the tile stays in L1), for a panel of weight rows that stays in L2.
//! With one activation row (decode) the kernel is bound by memory bandwidth: it walks
//! the weights once, front to back, with software prefetching well ahead; the
//! out-of-order core overlaps consecutive blocks, whose dot products are independent.

use std::arch::x86_64::*;
use std::sync::OnceLock;

/// Number of values in one K-quant super-block.
pub(super) const QK_K: usize = 256;

/// A Q4_K block: 256 4-bit quants in 8 sub-blocks of 32, each with a 6-bit scale
/// and a 6-bit min; value = `d · scale · q − dmin · min`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct BlockQ4K {
    /// Super-block scale for the quantized scales (f16 bits).
    pub d: u16,
    /// Super-block scale for the quantized mins (f16 bits).
    pub dmin: u16,
    /// Eight 6-bit scales and eight 6-bit mins, packed as in GGML's `get_scale_min_k4`.
    pub scales: [u8; 12],
    /// Quants: byte `32c + l` holds value `64c + l` (low nibble) and `64c + 32 + l` (high nibble).
    pub qs: [u8; 128],
}

/// A Q6_K block: 256 6-bit quants in 16 sub-blocks of 16, each with an i8 scale;
/// value = `d · scale · (q − 32)`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct BlockQ6K {
    /// Low four bits of the quants.
    pub ql: [u8; 128],
    /// High two bits of the quants, four quants per byte.
    pub qh: [u8; 64],
    /// Per-sub-block scales.
    pub scales: [i8; 16],
    /// Super-block scale (f16 bits).
    pub d: u16,
}

/// A Q8_K block: 256 i8 quants with an f32 scale and precomputed partial sums.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct BlockQ8K {
    /// Scale: value = `d · q`.
    pub d: f32,
    /// Quants.
    pub qs: [i8; 256],
    /// `bsums[i]` is the sum of `qs[16i..16i + 16]`.
    pub bsums: [i16; 16],
}

const _: () = assert!(size_of::<BlockQ4K>() == 144 && align_of::<BlockQ4K>() == 2);
const _: () = assert!(size_of::<BlockQ6K>() == 210 && align_of::<BlockQ6K>() == 2);
const _: () = assert!(size_of::<BlockQ8K>() == 292 && align_of::<BlockQ8K>() == 4);

/// Whether this CPU has what the kernels need (avx512f, avx512bw, avx512vl,
/// avx512vnni and fma; checked once, cached).
pub(super) fn available() -> bool {
    static AVAILABLE: OnceLock<bool> = OnceLock::new();
    *AVAILABLE.get_or_init(|| {
        is_x86_feature_detected!("avx512f")
            && is_x86_feature_detected!("avx512bw")
            && is_x86_feature_detected!("avx512vl")
            && is_x86_feature_detected!("avx512vnni")
            && is_x86_feature_detected!("fma")
    })
}

/// Q4_K × Q8_K matrix product.
///
/// Weight rows are `k_blocks` consecutive blocks each (`n = w.len() / k_blocks` rows);
/// activation rows are `k_blocks` consecutive [`BlockQ8K`] each
/// (`m = x.len() / k_blocks` rows). Writes `out[t * ld + r] = dot(weight row r,
/// activation row t)` for every `r < n`, `t < m` (`ld >= n`); other entries of `out`
/// are left untouched.
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

/// Activation rows processed together against one unpacked weight block (prompt
/// path) when a tile of that many rows fits in [`L1_TILE_BYTES`].
pub(super) const WIDE_TILE: usize = 8;

/// Activation rows per tile when a [`WIDE_TILE`] would not fit in L1 (long rows).
pub(super) const NARROW_TILE: usize = 4;

/// Budget for one tile of activation rows, leaving room in L1 for the weights.
pub(super) const L1_TILE_BYTES: usize = 32 * 1024;

/// Weight rows whose blocks are reused for every activation tile before moving on
/// (prompt path); sized so that the rows stay in L2 while the activation tile stays in L1.
pub(super) const ROW_PANEL: usize = 64;

/// How far ahead of the block being processed the decode path prefetches weights.
/// Hardware prefetching alone leaves the kernel well short of DRAM bandwidth.
pub(super) const PREFETCH_BYTES: usize = 4096;

/// A weight block format that can be unpacked into registers once and then dotted
/// with any number of Q8_K blocks.
trait KBlock {
    /// Register-resident form of one weight block.
    type Unpacked: Copy;

    /// Expands the block's quants and scales into vectors.
    ///
    /// # Safety
    /// The CPU must support the features listed on the implementation.
    unsafe fn unpack(&self) -> Self::Unpacked;

    /// Returns 16 lanes whose sum, multiplied by `x.d`, is the block dot product.
    ///
    /// # Safety
    /// The CPU must support the features listed on the implementation.
    unsafe fn dot(u: &Self::Unpacked, x: &BlockQ8K) -> __m512;
}

/// [`BlockQ4K`] spread into registers.
#[derive(Clone, Copy)]
struct Q4KUnpacked {
    /// Quants of values `64v..64v + 64` as bytes, for `v` in `0..4`.
    q: [__m512i; 4],
    /// i16 scale of the sub-block each byte pair of `q[v]` belongs to.
    scales: [__m512i; 4],
    /// Words `2j` and `2j + 1` hold min `j` (pairs with `bsums`); upper half zero.
    mins: __m512i,
    /// `d` broadcast.
    d: __m512,
    /// `dmin` broadcast.
    dmin: __m512,
}

impl KBlock for BlockQ4K {
    type Unpacked = Q4KUnpacked;

    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,fma")]
    unsafe fn unpack(&self) -> Q4KUnpacked {
        let scales_mins = q4k_scales_mins(&self.scales);
        let (chunks, _) = self.qs.as_chunks::<32>();
        let scale = |v: usize| _mm512_permutexvar_epi16(Q4K_SCALE_INDEX[v], scales_mins);
        // Both f16 scales converted at once: lanes alternate d, dmin.
        let both = u32::from(self.d) | (u32::from(self.dmin) << 16);
        let both = _mm512_cvtph_ps(_mm256_set1_epi32(both as i32));
        Q4KUnpacked {
            q: [
                q4k_nibbles(&chunks[0]),
                q4k_nibbles(&chunks[1]),
                q4k_nibbles(&chunks[2]),
                q4k_nibbles(&chunks[3]),
            ],
            scales: [scale(0), scale(1), scale(2), scale(3)],
            mins: _mm512_permutexvar_epi16(Q4K_MIN_INDEX, scales_mins),
            d: _mm512_moveldup_ps(both),
            dmin: _mm512_movehdup_ps(both),
        }
    }

    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,fma")]
    unsafe fn dot(u: &Q4KUnpacked, x: &BlockQ8K) -> __m512 {
        let sums = scaled_dot(&u.q, &u.scales, x, _mm512_setzero_si512());
        let mins = _mm512_madd_epi16(load_bsums(x), u.mins);
        let sums = _mm512_mul_ps(_mm512_cvtepi32_ps(sums), u.d);
        _mm512_fnmadd_ps(_mm512_cvtepi32_ps(mins), u.dmin, sums)
    }
}

/// [`BlockQ6K`] spread into registers.
#[derive(Clone, Copy)]
struct Q6KUnpacked {
    /// Unsigned quants (`0..=63`) of values `64v..64v + 64` as bytes, for `v` in `0..4`.
    q: [__m512i; 4],
    /// i16 scale of the sub-block each byte pair of `q[v]` belongs to.
    scales: [__m512i; 4],
    /// Words `0..16` hold `-32 · scale` (pairs with `bsums`); upper half zero.
    offsets: __m512i,
    /// `d` broadcast.
    d: __m512,
}

impl KBlock for BlockQ6K {
    type Unpacked = Q6KUnpacked;

    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,fma")]
    unsafe fn unpack(&self) -> Q6KUnpacked {
        let (ql, _) = self.ql.as_chunks::<64>();
        let (qh, _) = self.qh.as_chunks::<32>();
        let [q0, q1] = q6k_quants(&ql[0], &qh[0]);
        let [q2, q3] = q6k_quants(&ql[1], &qh[1]);
        // SAFETY: `scales` is 16 bytes, exactly one unaligned 128-bit load.
        let raw = unsafe { _mm_loadu_si128(self.scales.as_ptr().cast()) };
        let words = _mm512_zextsi256_si512(_mm256_cvtepi8_epi16(raw));
        let scale = |v: usize| _mm512_permutexvar_epi16(Q6K_SCALE_INDEX[v], words);
        Q6KUnpacked {
            q: [q0, q1, q2, q3],
            scales: [scale(0), scale(1), scale(2), scale(3)],
            offsets: _mm512_sub_epi16(_mm512_setzero_si512(), _mm512_slli_epi16::<5>(words)),
            d: _mm512_cvtph_ps(_mm256_set1_epi16(self.d as i16)),
        }
    }

    #[inline]
    #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,fma")]
    unsafe fn dot(u: &Q6KUnpacked, x: &BlockQ8K) -> __m512 {
        let offset = _mm512_madd_epi16(load_bsums(x), u.offsets);
        let sums = scaled_dot(&u.q, &u.scales, x, offset);
        _mm512_mul_ps(_mm512_cvtepi32_ps(sums), u.d)
    }
}

/// Adds `Σ scale · q · x` over the whole block to the i32 lanes of `acc`.
///
/// `q[v]` and `scales[v]` cover activation bytes `64v..64v + 64`.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni")]
fn scaled_dot(q: &[__m512i; 4], scales: &[__m512i; 4], x: &BlockQ8K, mut acc: __m512i) -> __m512i {
    let (xs, _) = x.qs.as_chunks::<64>();
    for ((q, scale), xs) in q.iter().zip(scales).zip(xs) {
        // SAFETY: `xs` is 64 bytes, exactly one unaligned 512-bit load.
        let xv = unsafe { _mm512_loadu_si512(xs.as_ptr().cast()) };
        acc = dpwssd(acc, _mm512_maddubs_epi16(*q, xv), *scale);
    }
    acc
}

/// `vpdpwssd`: adds the pairwise i16 products of `a` and `b` to the i32 lanes of `acc`.
///
/// Written as inline assembly because LLVM otherwise splits chains of
/// `_mm512_dpwssd_epi32` into `vpmaddwd` + `vpaddd` to shorten their latency, which
/// costs an extra vector uop per 64 values in kernels that are throughput-bound.
#[inline]
#[target_feature(enable = "avx512f,avx512vnni")]
pub(crate) fn dpwssd(mut acc: __m512i, a: __m512i, b: __m512i) -> __m512i {
    // SAFETY: a register-only instruction of the features this function requires.
    unsafe {
        std::arch::asm!(
            "vpdpwssd {acc}, {a}, {b}",
            acc = inout(zmm_reg) acc,
            a = in(zmm_reg) a,
            b = in(zmm_reg) b,
            options(pure, nomem, nostack, preserves_flags),
        );
    }
    acc
}

/// Loads the 16 `bsums` of `x` as i16 words into the low half of a vector.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl")]
fn load_bsums(x: &BlockQ8K) -> __m512i {
    // SAFETY: `bsums` is 32 bytes, exactly one unaligned 256-bit load.
    _mm512_zextsi256_si512(unsafe { _mm256_loadu_si256(x.bsums.as_ptr().cast()) })
}

/// Reinterprets 32 words as a vector (for permutation indices).
const fn words(index: [i16; 32]) -> __m512i {
    // SAFETY: `[i16; 32]` and `__m512i` have the same size and any bit pattern is valid.
    unsafe { std::mem::transmute::<[i16; 32], __m512i>(index) }
}

/// Position of Q4_K scale `j` among the words decoded by [`q4k_scales_mins`]; min `j`
/// sits four words later.
const fn q4k_scale_word(j: usize) -> i16 {
    (j + 4 * (j / 4)) as i16
}

/// Index for Q4_K vector `v`: scale `2v` in the low 256 bits, scale `2v + 1` in the high ones.
const fn q4k_scale_index(v: usize) -> __m512i {
    let mut index = [0; 32];
    let mut i = 0;
    while i < 32 {
        index[i] = q4k_scale_word(2 * v + i / 16);
        i += 1;
    }
    words(index)
}

/// Per-vector scale indices for Q4_K, see [`q4k_scale_index`].
const Q4K_SCALE_INDEX: [__m512i; 4] = [
    q4k_scale_index(0),
    q4k_scale_index(1),
    q4k_scale_index(2),
    q4k_scale_index(3),
];

/// Index repeating each Q4_K min twice in words `0..16`, so that `vpmaddwd` with the
/// 16 `bsums` yields `min_j · (bsums[2j] + bsums[2j + 1])`. Words `16..` select the
/// zero upper half of the decoded scales.
const Q4K_MIN_INDEX: __m512i = {
    let mut index = [16; 32];
    let mut i = 0;
    while i < 16 {
        index[i] = q4k_scale_word(i / 2) + 4;
        i += 1;
    }
    words(index)
};

/// Index for Q6_K vector `v`: scale `4v + l` in 128-bit lane `l`.
const fn q6k_scale_index(v: usize) -> __m512i {
    let mut index = [0; 32];
    let mut i = 0;
    while i < 32 {
        index[i] = (4 * v + i / 8) as i16;
        i += 1;
    }
    words(index)
}

/// Per-vector scale indices for Q6_K, see [`q6k_scale_index`].
const Q6K_SCALE_INDEX: [__m512i; 4] = [
    q6k_scale_index(0),
    q6k_scale_index(1),
    q6k_scale_index(2),
    q6k_scale_index(3),
];

/// Decodes the packed 6-bit scales and mins of a Q4_K block (GGML's
/// `get_scale_min_k4`) into i16 words: scales `0..4`, mins `0..4`, scales `4..8`,
/// mins `4..8`, then zeros. The bit twiddling runs on scalar registers, which are
/// otherwise idle, leaving the vector ports to the dot products.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl")]
fn q4k_scales_mins(packed: &[u8; 12]) -> __m512i {
    let [first, second] = q4k_scale_min_bytes(packed);
    let bytes = _mm_set_epi64x(second as i64, first as i64);
    _mm512_zextsi256_si512(_mm256_cvtepu8_epi16(bytes))
}

/// The packed 6-bit scales and mins of a Q4_K block (GGML's `get_scale_min_k4`) as bytes of
/// two words: scales `0..4` then mins `0..4` in the first, scales `4..8` then mins `4..8` in
/// the second (little-endian).
#[inline]
pub(super) fn q4k_scale_min_bytes(packed: &[u8; 12]) -> [u64; 2] {
    const LOW6: u64 = 0x3f3f_3f3f_3f3f_3f3f;
    const LOW4: u64 = 0x0f0f_0f0f_0f0f_0f0f;
    const LOW2: u64 = 0x0303_0303_0303_0303;
    let (head, tail) = packed.split_first_chunk::<8>().expect("12 bytes");
    let head = u64::from_le_bytes(*head);
    let tail = u64::from(u32::from_le_bytes(tail.try_into().expect("4 bytes")));
    // Bytes 0..4: low six bits of bytes 0..4 (scales), bytes 4..8: of bytes 4..8 (mins).
    let first = head & LOW6;
    // Low / high nibbles of bytes 8..12, topped with the two high bits of bytes 0..8.
    let second = ((tail | ((tail >> 4) << 32)) & LOW4) | (((head >> 6) & LOW2) << 4);
    [first, second]
}

/// Expands 32 bytes of Q4_K quants (values `64c..64c + 64`) into 64 bytes:
/// low nibbles in the low 256 bits, high nibbles in the high 256 bits.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl")]
fn q4k_nibbles(bytes: &[u8; 32]) -> __m512i {
    // SAFETY: `bytes` is 32 bytes, exactly one unaligned 256-bit load.
    let both = _mm512_broadcast_i64x4(unsafe { _mm256_loadu_si256(bytes.as_ptr().cast()) });
    let high_shifted = _mm512_mask_srli_epi16::<4>(both, 0xFFFF_0000, both);
    _mm512_and_si512(high_shifted, _mm512_set1_epi8(0x0F))
}

/// Assembles the 128 unsigned 6-bit quants of one half of a Q6_K block from its 64 `ql`
/// and 32 `qh` bytes, as two vectors covering values `0..64` and `64..128` of the half.
///
/// Value `l` of the half takes `ql[l] & 0xF` and bits `2(l / 32)..` of `qh[l % 32]` for
/// `l < 64`; value `64 + l` takes `ql[l] >> 4` and bits `4 + 2(l / 32)..` of `qh[l % 32]`.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl")]
fn q6k_quants(ql: &[u8; 64], qh: &[u8; 32]) -> [__m512i; 2] {
    // SAFETY: `ql` is 64 bytes and `qh` 32 bytes, one unaligned load each.
    let (low, high) = unsafe {
        (
            _mm512_loadu_si512(ql.as_ptr().cast()),
            _mm512_broadcast_i64x4(_mm256_loadu_si256(qh.as_ptr().cast())),
        )
    };
    // Move bits 2..4 / 6..8 of the upper copy to 0..2 / 4..6, like the lower copy's,
    // then keep exactly those bits so the shifts below bring in zeros above bit 5.
    let high = _mm512_mask_srli_epi16::<2>(high, 0xFFFF_0000, high);
    let high = _mm512_and_si512(high, _mm512_set1_epi8(0x33));
    let nibble = _mm512_set1_epi8(0x0F);
    // 0xCA: bitwise `a ? b : c`, i.e. low nibble from `b`, high nibble from `c`.
    [
        _mm512_ternarylogic_epi32::<0xCA>(nibble, low, _mm512_slli_epi16::<4>(high)),
        _mm512_ternarylogic_epi32::<0xCA>(nibble, _mm512_srli_epi16::<4>(low), high),
    ]
}

super::kernel_drivers::k_quant_drivers!("avx512f,avx512bw,avx512vl,avx512vnni,fma");

/// Dot product of one weight row with one activation row of the same length,
/// prefetching the weights that follow the row.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,fma")]
fn decode_row<B: KBlock>(row: &[B], x: &[BlockQ8K]) -> f32 {
    let mut acc = _mm512_setzero_ps();
    for (block, xb) in row.iter().zip(x) {
        let ahead = (block as *const B)
            .cast::<i8>()
            .wrapping_add(PREFETCH_BYTES);
        for offset in (0..size_of::<B>()).step_by(64) {
            // Prefetching never faults, so running past the end of `row` is harmless.
            _mm_prefetch::<_MM_HINT_T0>(ahead.wrapping_add(offset));
        }
        // SAFETY: this function is compiled with every feature `unpack`/`dot` need.
        let dot = unsafe { B::dot(&block.unpack(), xb) };
        acc = _mm512_fmadd_ps(dot, _mm512_set1_ps(xb.d), acc);
    }
    _mm512_reduce_add_ps(acc)
}

/// Dots one weight row with each of the first `T` activation rows of `x` (rows of
/// `row.len()` blocks), unpacking every weight block once for all of them, and passes
/// each result with its activation index to `store`.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,fma")]
fn tile<B: KBlock, const T: usize>(row: &[B], x: &[BlockQ8K], store: &mut impl FnMut(usize, f32)) {
    let k_blocks = row.len();
    let x = &x[..T * k_blocks];
    let mut acc = [_mm512_setzero_ps(); T];
    for (kb, block) in row.iter().enumerate() {
        // SAFETY: this function is compiled with every feature `unpack`/`dot` need.
        let u = unsafe { block.unpack() };
        for (t, acc) in acc.iter_mut().enumerate() {
            let xb = &x[t * k_blocks + kb];
            // SAFETY: as above.
            let dot = unsafe { B::dot(&u, xb) };
            *acc = _mm512_fmadd_ps(dot, _mm512_set1_ps(xb.d), *acc);
        }
    }
    for (t, acc) in acc.iter().enumerate() {
        store(t, _mm512_reduce_add_ps(*acc));
    }
}

#[cfg(test)]
super::kernel_check::k_quant_product_tests!(vnni_or_skip, 0x5eed);
