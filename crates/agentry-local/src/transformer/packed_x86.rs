//! AVX-512 VNNI kernels for K-quant weights repacked into 16-row tiles.
//!
//! The GGUF layout stores each weight row's blocks contiguously, which forces a kernel
//! to dot one row at a time: per 64 values it needs a `vpmaddubsw` and a `vpdpwssd`,
//! plus the block's scale handling, for every activation row. The layout here instead
//! groups 16 weight rows × one 256-value super-block into a *tile* whose quants are
//! interleaved so that one 64-byte vector holds 4 consecutive quants of each of the 16
//! rows. A single `vpdpbusd` (u8 weights × i8 activations → i32) then multiplies those
//! 64 quants with one broadcast group of 4 activation bytes, producing 16 rows × 4
//! products at once. The per-row scales of a sub-block are stored as 16 consecutive
//! bytes, so turning the 16 integer sums into f32 and scaling them takes one convert
//! and one FMA per sub-block and activation row.
//!
//! Tiles are built once at load time by [`pack_q4k`] / [`pack_q6k`] and replace the
//! GGUF blocks in memory: a [`TileQ4K`] takes 2368 bytes for 16 × 144 bytes of blocks
//! (+2.8%), a [`TileQ6K`] 3392 bytes for 16 × 210 (+0.95%, padding to a cache-line
//! multiple). [`unpack_row_q4k`] / [`unpack_row_q6k`] give the original blocks back.
//!
//! # Kernels
//!
//! Activations are Q8_K blocks. Before multiplying, each of them is copied into a
//! small record that also holds the terms that do not depend on the weight quants
//! (Q4_K: sums of pairs of `bsums` for the mins; Q6_K: `−32 · bsums` for the offset),
//! laid out by k block first so that the activation rows of one tile are adjacent.
//!
//! With one activation row (decode) the kernel streams the tiles once, front to back,
//! with software prefetching ahead of the tile being processed; it is bound by memory
//! bandwidth. With several rows (prompt processing) each tile's quants are expanded
//! into registers once per k block and used for a group of activation rows (16 for
//! Q4_K, 8 for Q6_K, chosen by measurement) whose 16-row accumulators stay in
//! registers.

use super::kernel_x86::{BlockQ4K, BlockQ6K, BlockQ8K, dpwssd};
use std::arch::x86_64::*;

/// Weight rows per tile.
pub(super) const TILE_ROWS: usize = 16;

/// 16 weight rows × one Q4_K super-block (256 values per row), interleaved for
/// `vpdpbusd`.
///
/// Quant vector `8c + p` (`c` in `0..4`, `p` in `0..8`) holds, at bytes
/// `4r..4r + 4`, bytes `32c + 4p..32c + 4p + 4` of row `r`'s GGUF `qs`: low nibbles are
/// values `64c + 4p..` (sub-block `2c`), high nibbles values `64c + 32 + 4p..`
/// (sub-block `2c + 1`).
#[repr(C, align(64))]
#[derive(Clone, Copy)]
pub(super) struct TileQ4K {
    /// Interleaved quants, see the type's documentation.
    qs: [[u8; 64]; 32],
    /// `scales[j][r]`: 6-bit scale of sub-block `j` of row `r`.
    scales: [[u8; 16]; 8],
    /// `mins[i][2r + h]`: 6-bit min of sub-block `2i + h` of row `r`.
    mins: [[u8; 32]; 4],
    /// Per-row super-block scale of the scales (f16 bits).
    d: [u16; 16],
    /// Per-row super-block scale of the mins (f16 bits).
    dmin: [u16; 16],
}

/// 16 weight rows × one Q6_K super-block (256 values per row), interleaved for
/// `vpdpbusd`.
///
/// Sub-block `j` (values `16j..16j + 16`) is stored as three vectors: `qs[j][0]` holds
/// the low four bits of groups 0 (low nibble) and 1 (high nibble), `qs[j][1]` those of
/// groups 2 and 3, and `qs[j][2]` the high two bits of groups 0, 2, 1, 3 at bits
/// `0..2`, `2..4`, `4..6`, `6..8`. Group `g` is values `16j + 4g..16j + 4g + 4`, at
/// bytes `4r..4r + 4` for row `r`.
#[repr(C, align(64))]
#[derive(Clone, Copy)]
pub(super) struct TileQ6K {
    /// Interleaved quants, see the type's documentation.
    qs: [[[u8; 64]; 3]; 16],
    /// `scales[j][r]`: scale of sub-block `j` of row `r`.
    scales: [[i8; 16]; 16],
    /// Per-row super-block scale (f16 bits).
    d: [u16; 16],
}

const _: () = assert!(size_of::<TileQ4K>() == 2368 && size_of::<TileQ6K>() == 3392);

/// Repacks `rows × k_blocks` row-major Q4_K blocks into tiles ordered
/// `[row tile][k block]`; `None` unless the row count is a positive multiple of
/// [`TILE_ROWS`].
pub(super) fn pack_q4k(w: &[BlockQ4K], k_blocks: usize) -> Option<Vec<TileQ4K>> {
    pack(w, k_blocks, TileQ4K::put)
}

/// Repacks `rows × k_blocks` row-major Q6_K blocks into tiles ordered
/// `[row tile][k block]`; `None` unless the row count is a positive multiple of
/// [`TILE_ROWS`].
pub(super) fn pack_q6k(w: &[BlockQ6K], k_blocks: usize) -> Option<Vec<TileQ6K>> {
    pack(w, k_blocks, TileQ6K::put)
}

/// Writes the `k_blocks` GGUF blocks of weight row `r` of `tiles` (as returned by
/// [`pack_q4k`]) into `out`.
pub(super) fn unpack_row_q4k(tiles: &[TileQ4K], k_blocks: usize, r: usize, out: &mut [BlockQ4K]) {
    unpack_row(tiles, k_blocks, r, out, TileQ4K::get);
}

/// Writes the `k_blocks` GGUF blocks of weight row `r` of `tiles` (as returned by
/// [`pack_q6k`]) into `out`.
pub(super) fn unpack_row_q6k(tiles: &[TileQ6K], k_blocks: usize, r: usize, out: &mut [BlockQ6K]) {
    unpack_row(tiles, k_blocks, r, out, TileQ6K::get);
}

/// Q4_K tiles × Q8_K activations.
///
/// `tiles` are whole row tiles (`k_blocks` tiles each, `n = 16 · tiles.len() /
/// k_blocks` weight rows); `x` holds `m` activation rows of `k_blocks` blocks each.
/// Writes `out[t * ld + r] = dot(weight row r, activation row t)` for every `r < n`,
/// `t < m` (`ld >= n`); other entries of `out` are left untouched.
///
/// # Safety
/// [`super::kernel_x86::available`] must be true.
pub(super) unsafe fn gemm_packed_q4k(
    tiles: &[TileQ4K],
    x: &[BlockQ8K],
    k_blocks: usize,
    out: &mut [f32],
    ld: usize,
) {
    // SAFETY: the caller guarantees the CPU features `gemm` is compiled for.
    unsafe { gemm(tiles, x, k_blocks, out, ld) }
}

/// Q6_K tiles × Q8_K activations; same contract as [`gemm_packed_q4k`].
///
/// # Safety
/// [`super::kernel_x86::available`] must be true.
pub(super) unsafe fn gemm_packed_q6k(
    tiles: &[TileQ6K],
    x: &[BlockQ8K],
    k_blocks: usize,
    out: &mut [f32],
    ld: usize,
) {
    // SAFETY: the caller guarantees the CPU features `gemm` is compiled for.
    unsafe { gemm(tiles, x, k_blocks, out, ld) }
}

/// Budget for the weights of the panel of row tiles that is reused for every group of
/// activation rows before moving on (prompt path), so that they stay in L2 next to the
/// activations.
const PANEL_BYTES: usize = 512 * 1024;

/// How far ahead of the tile being processed the decode path prefetches weights.
const PREFETCH_BYTES: usize = 4096;

/// Shared driver of [`pack_q4k`] and [`pack_q6k`]: `put(tile, row, block)` stores one
/// block as row `row` of a tile.
fn pack<B, P: Copy + Default>(
    w: &[B],
    k_blocks: usize,
    put: fn(&mut P, usize, &B),
) -> Option<Vec<P>> {
    if k_blocks == 0 || !w.len().is_multiple_of(TILE_ROWS * k_blocks) {
        return None;
    }
    let mut tiles = vec![P::default(); w.len() / TILE_ROWS];
    for (row_tile, blocks) in tiles
        .chunks_exact_mut(k_blocks)
        .zip(w.chunks_exact(TILE_ROWS * k_blocks))
    {
        for (r, row) in blocks.chunks_exact(k_blocks).enumerate() {
            for (tile, block) in row_tile.iter_mut().zip(row) {
                put(tile, r, block);
            }
        }
    }
    Some(tiles)
}

/// Shared driver of [`unpack_row_q4k`] and [`unpack_row_q6k`]: `get(tile, row)`
/// rebuilds one block.
fn unpack_row<B, P>(
    tiles: &[P],
    k_blocks: usize,
    r: usize,
    out: &mut [B],
    get: fn(&P, usize) -> B,
) {
    let row_tile = &tiles[r / TILE_ROWS * k_blocks..][..k_blocks];
    for (o, tile) in out[..k_blocks].iter_mut().zip(row_tile) {
        *o = get(tile, r % TILE_ROWS);
    }
}

impl Default for TileQ4K {
    fn default() -> Self {
        Self {
            qs: [[0; 64]; 32],
            scales: [[0; 16]; 8],
            mins: [[0; 32]; 4],
            d: [0; 16],
            dmin: [0; 16],
        }
    }
}

impl TileQ4K {
    /// Stores `b` as row `r`.
    fn put(&mut self, r: usize, b: &BlockQ4K) {
        for (v, src) in self.qs.iter_mut().zip(b.qs.chunks_exact(4)) {
            v[4 * r..4 * r + 4].copy_from_slice(src);
        }
        let (scales, mins) = decode_scales_mins(&b.scales);
        for j in 0..8 {
            self.scales[j][r] = scales[j];
            self.mins[j / 2][2 * r + j % 2] = mins[j];
        }
        self.d[r] = b.d;
        self.dmin[r] = b.dmin;
    }

    /// Rebuilds the block of row `r`.
    fn get(&self, r: usize) -> BlockQ4K {
        let mut qs = [0; 128];
        for (dst, v) in qs.chunks_exact_mut(4).zip(&self.qs) {
            dst.copy_from_slice(&v[4 * r..4 * r + 4]);
        }
        let scales = std::array::from_fn(|j| self.scales[j][r]);
        let mins = std::array::from_fn(|j| self.mins[j / 2][2 * r + j % 2]);
        BlockQ4K {
            d: self.d[r],
            dmin: self.dmin[r],
            scales: encode_scales_mins(&scales, &mins),
            qs,
        }
    }
}

/// Splits GGML's 12-byte packing of eight 6-bit scales and eight 6-bit mins
/// (`get_scale_min_k4`) into `(scales, mins)`.
fn decode_scales_mins(p: &[u8; 12]) -> ([u8; 8], [u8; 8]) {
    let mut scales = [0; 8];
    let mut mins = [0; 8];
    for j in 0..4 {
        scales[j] = p[j] & 63;
        mins[j] = p[j + 4] & 63;
        scales[j + 4] = (p[j + 8] & 0xF) | ((p[j] >> 6) << 4);
        mins[j + 4] = (p[j + 8] >> 4) | ((p[j + 4] >> 6) << 4);
    }
    (scales, mins)
}

/// Inverse of [`decode_scales_mins`] (every bit of the 12 bytes is used, so the
/// packing round-trips exactly).
fn encode_scales_mins(scales: &[u8; 8], mins: &[u8; 8]) -> [u8; 12] {
    let mut p = [0; 12];
    for j in 0..4 {
        p[j] = scales[j] | ((scales[j + 4] >> 4) << 6);
        p[j + 4] = mins[j] | ((mins[j + 4] >> 4) << 6);
        p[j + 8] = (scales[j + 4] & 0xF) | ((mins[j + 4] & 0xF) << 4);
    }
    p
}

impl Default for TileQ6K {
    fn default() -> Self {
        Self {
            qs: [[[0; 64]; 3]; 16],
            scales: [[0; 16]; 16],
            d: [0; 16],
        }
    }
}

/// Bit position, within a byte of a [`TileQ6K`] high-bits vector, of the two high bits
/// of group `g`.
const Q6K_HIGH_SHIFT: [u32; 4] = [0, 4, 2, 6];

impl TileQ6K {
    /// Stores `b` as row `r`.
    fn put(&mut self, r: usize, b: &BlockQ6K) {
        let q = q6k_values(b);
        for (j, sub) in self.qs.iter_mut().enumerate() {
            for g in 0..4 {
                for i in 0..4 {
                    let value = q[16 * j + 4 * g + i];
                    sub[g / 2][4 * r + i] |= (value & 0xF) << (4 * (g % 2));
                    sub[2][4 * r + i] |= (value >> 4) << Q6K_HIGH_SHIFT[g];
                }
            }
            self.scales[j][r] = b.scales[j];
        }
        self.d[r] = b.d;
    }

    /// Rebuilds the block of row `r`.
    fn get(&self, r: usize) -> BlockQ6K {
        let mut q = [0; 256];
        for (j, sub) in self.qs.iter().enumerate() {
            for g in 0..4 {
                for i in 0..4 {
                    let low = (sub[g / 2][4 * r + i] >> (4 * (g % 2))) & 0xF;
                    let high = (sub[2][4 * r + i] >> Q6K_HIGH_SHIFT[g]) & 3;
                    q[16 * j + 4 * g + i] = low | (high << 4);
                }
            }
        }
        q6k_block(&q, std::array::from_fn(|j| self.scales[j][r]), self.d[r])
    }
}

/// The 256 unsigned 6-bit quants of a Q6_K block, in value order.
fn q6k_values(b: &BlockQ6K) -> [u8; 256] {
    let mut q = [0; 256];
    for half in 0..2 {
        let (ql, qh) = (&b.ql[64 * half..], &b.qh[32 * half..]);
        for l in 0..32 {
            let base = 128 * half + l;
            q[base] = (ql[l] & 0xF) | ((qh[l] & 3) << 4);
            q[base + 32] = (ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4);
            q[base + 64] = (ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4);
            q[base + 96] = (ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4);
        }
    }
    q
}

/// Inverse of [`q6k_values`], completed with the block's scales and `d`.
fn q6k_block(q: &[u8; 256], scales: [i8; 16], d: u16) -> BlockQ6K {
    let mut b = BlockQ6K {
        ql: [0; 128],
        qh: [0; 64],
        scales,
        d,
    };
    for half in 0..2 {
        let q = &q[128 * half..];
        for l in 0..32 {
            b.ql[64 * half + l] = (q[l] & 0xF) | ((q[l + 64] & 0xF) << 4);
            b.ql[64 * half + l + 32] = (q[l + 32] & 0xF) | ((q[l + 96] & 0xF) << 4);
            b.qh[32 * half + l] = (q[l] >> 4)
                | ((q[l + 32] >> 4) << 2)
                | ((q[l + 64] >> 4) << 4)
                | ((q[l + 96] >> 4) << 6);
        }
    }
    b
}

/// A tile format: how activations are prepared for it and how one tile is dotted with
/// a group of activation rows.
trait Packed: Copy {
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
struct ActQ4K {
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
struct ActQ6K {
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

/// Shared driver of [`gemm_packed_q4k`] and [`gemm_packed_q6k`].
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,fma")]
fn gemm<P: Packed>(tiles: &[P], x: &[BlockQ8K], k_blocks: usize, out: &mut [f32], ld: usize) {
    assert!(k_blocks > 0, "k_blocks must be positive");
    assert!(
        tiles.len().is_multiple_of(k_blocks),
        "tiles are not whole row tiles"
    );
    assert!(
        x.len().is_multiple_of(k_blocks),
        "activations are not whole rows"
    );
    let n = TILE_ROWS * tiles.len() / k_blocks;
    let m = x.len() / k_blocks;
    assert!(ld >= n, "ld {ld} < n {n}");
    assert!(m == 0 || out.len() >= (m - 1) * ld + n, "out too short");
    // Activation blocks ordered [k block][activation row].
    let acts: Vec<P::Act> = (0..k_blocks)
        .flat_map(|kb| x.iter().skip(kb).step_by(k_blocks).map(P::act))
        .collect();
    if m == 1 {
        decode(tiles, &acts, out);
    } else {
        let job = Job {
            acts: &acts,
            m,
            k_blocks,
            ld,
        };
        prompt(tiles, &job, out);
    }
}

/// What the prompt path needs besides the tiles and the output.
struct Job<'a, A> {
    /// Prepared activation blocks, `[k block][activation row]`.
    acts: &'a [A],
    /// Activation rows.
    m: usize,
    /// Blocks per row.
    k_blocks: usize,
    /// Distance between output rows.
    ld: usize,
}

/// One activation row: each row tile's k blocks in turn, prefetching ahead.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,fma")]
fn decode<P: Packed>(tiles: &[P], acts: &[P::Act], out: &mut [f32]) {
    for (row_tile, out) in tiles
        .chunks_exact(acts.len())
        .zip(out.chunks_exact_mut(TILE_ROWS))
    {
        let mut acc = _mm512_setzero_ps();
        for (tile, a) in row_tile.iter().zip(acts) {
            let ahead = (tile as *const P).cast::<i8>().wrapping_add(PREFETCH_BYTES);
            for offset in (0..size_of::<P>()).step_by(64) {
                // Prefetching never faults, so running past the end of `tiles` is harmless.
                _mm_prefetch::<_MM_HINT_T0>(ahead.wrapping_add(offset));
            }
            // SAFETY: this function is compiled with every feature `dot` needs.
            let [dot] = unsafe { tile.dot(std::array::from_ref(a)) };
            acc = _mm512_fmadd_ps(dot, _mm512_set1_ps(P::act_d(a)), acc);
        }
        // SAFETY: `out` is exactly 16 floats.
        unsafe { _mm512_storeu_ps(out.as_mut_ptr(), acc) };
    }
}

/// Several activation rows: for each panel of row tiles of about [`PANEL_BYTES`], every
/// group of up to `P::TOKENS` activation rows is multiplied with each row tile.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,fma")]
fn prompt<P: Packed>(tiles: &[P], job: &Job<P::Act>, out: &mut [f32]) {
    let row_tile_bytes = job.k_blocks * size_of::<P>();
    let panel_tiles = (PANEL_BYTES / row_tile_bytes).max(1);
    for (panel_index, panel) in tiles.chunks(panel_tiles * job.k_blocks).enumerate() {
        let first_row = panel_index * panel_tiles * TILE_ROWS;
        let mut t0 = 0;
        while t0 < job.m {
            let size = P::TOKENS.min(job.m - t0);
            let run = match size {
                1 => token_group::<P, 1>,
                2 => token_group::<P, 2>,
                3 => token_group::<P, 3>,
                4 => token_group::<P, 4>,
                5 => token_group::<P, 5>,
                6 => token_group::<P, 6>,
                7 => token_group::<P, 7>,
                8 => token_group::<P, 8>,
                9 => token_group::<P, 9>,
                10 => token_group::<P, 10>,
                11 => token_group::<P, 11>,
                12 => token_group::<P, 12>,
                13 => token_group::<P, 13>,
                14 => token_group::<P, 14>,
                15 => token_group::<P, 15>,
                _ => token_group::<P, 16>,
            };
            run(panel, job, t0, &mut out[t0 * job.ld + first_row..]);
            t0 += size;
        }
    }
}

/// Multiplies every row tile of `panel` with activation rows `t0..t0 + T`, writing row
/// `t0 + t` of the result to `out[t * ld..]`.
#[inline]
#[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512vnni,fma")]
fn token_group<P: Packed, const T: usize>(
    panel: &[P],
    job: &Job<P::Act>,
    t0: usize,
    out: &mut [f32],
) {
    for (r, row_tile) in panel.chunks_exact(job.k_blocks).enumerate() {
        let mut acc = [_mm512_setzero_ps(); T];
        for (kb, tile) in row_tile.iter().enumerate() {
            let acts = job.acts[kb * job.m + t0..]
                .first_chunk::<T>()
                .expect("activation rows in range");
            // SAFETY: this function is compiled with every feature `dot` needs.
            let dots = unsafe { tile.dot(acts) };
            for ((acc, dot), a) in acc.iter_mut().zip(dots).zip(acts) {
                *acc = _mm512_fmadd_ps(dot, _mm512_set1_ps(P::act_d(a)), *acc);
            }
        }
        for (t, acc) in acc.iter().enumerate() {
            let o = &mut out[t * job.ld + TILE_ROWS * r..][..TILE_ROWS];
            // SAFETY: `o` is exactly 16 floats.
            unsafe { _mm512_storeu_ps(o.as_mut_ptr(), *acc) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transformer::kernel_check::{
        check, extremes, random_blocks, random_shapes, vnni_or_skip,
    };
    use crate::transformer::tensor::cast;
    use candle_core::quantized::k_quants as candle;

    #[test]
    fn q4k_matches_candle() {
        if !vnni_or_skip("q4k_matches_candle") {
            return;
        }
        random_shapes(
            0x7113,
            &[16, 32, 48, 256],
            &[1, 2, 3, 4, 5, 7, 8, 9, 16, 33],
            |rng, m, n, k_blocks, ld| {
                let w = random_blocks::<candle::BlockQ4K>(rng, n, k_blocks);
                let x = random_blocks::<candle::BlockQ8K>(rng, m, k_blocks);
                let tiles = pack_q4k(cast(&w), k_blocks).expect("whole row tiles");
                check(&w, &x, k_blocks, ld, |x, out| {
                    // SAFETY: `vnni_or_skip` found the kernels' features above.
                    unsafe { gemm_packed_q4k(&tiles, cast(x), k_blocks, out, ld) }
                });
            },
        );
    }

    #[test]
    fn q6k_matches_candle() {
        if !vnni_or_skip("q6k_matches_candle") {
            return;
        }
        random_shapes(
            0x7113,
            &[16, 32, 48, 256],
            &[1, 2, 3, 4, 5, 7, 8, 9, 16, 33],
            |rng, m, n, k_blocks, ld| {
                let w = random_blocks::<candle::BlockQ6K>(rng, n, k_blocks);
                let x = random_blocks::<candle::BlockQ8K>(rng, m, k_blocks);
                let tiles = pack_q6k(cast(&w), k_blocks).expect("whole row tiles");
                check(&w, &x, k_blocks, ld, |x, out| {
                    // SAFETY: `vnni_or_skip` found the kernels' features above.
                    unsafe { gemm_packed_q6k(&tiles, cast(x), k_blocks, out, ld) }
                });
            },
        );
    }

    #[test]
    fn extremes_do_not_overflow() {
        if !vnni_or_skip("extremes_do_not_overflow") {
            return;
        }
        // Both paths: one activation row, and a tile.
        let (n, k_blocks) = (32, 35);
        extremes(
            &[1, 9],
            n,
            k_blocks,
            |w, x| {
                let tiles = pack_q4k(w, k_blocks).expect("whole row tiles");
                check::<candle::BlockQ4K>(cast(w), cast(x), k_blocks, n, |x, out| {
                    // SAFETY: `vnni_or_skip` found the kernels' features above.
                    unsafe { gemm_packed_q4k(&tiles, cast(x), k_blocks, out, n) }
                })
            },
            |w, x| {
                let tiles = pack_q6k(w, k_blocks).expect("whole row tiles");
                check::<candle::BlockQ6K>(cast(w), cast(x), k_blocks, n, |x, out| {
                    // SAFETY: as above.
                    unsafe { gemm_packed_q6k(&tiles, cast(x), k_blocks, out, n) }
                })
            },
        );
    }

    #[test]
    fn partial_row_tiles_are_refused() {
        let mut rng = fastrand::Rng::with_seed(3);
        for rows in [1, 15, 17, 40] {
            let w4 = random_blocks::<candle::BlockQ4K>(&mut rng, rows, 2);
            assert!(pack_q4k(cast(&w4), 2).is_none(), "Q4K rows={rows}");
            let w6 = random_blocks::<candle::BlockQ6K>(&mut rng, rows, 2);
            assert!(pack_q6k(cast(&w6), 2).is_none(), "Q6K rows={rows}");
        }
        assert!(pack_q4k(&[], 0).is_none());
        assert!(pack_q6k(&[], 0).is_none());
    }

    /// Blocks with every byte random (not just what quantization produces), so that
    /// every bit of the GGUF layout has to survive the round trip.
    fn random_bytes<B: Copy>(rng: &mut fastrand::Rng, count: usize) -> Vec<B> {
        let mut bytes = vec![0u8; count * size_of::<B>()];
        rng.fill(&mut bytes);
        // SAFETY: `B` is a plain-old-data block type for which every bit pattern is valid.
        (0..count)
            .map(|i| unsafe {
                bytes
                    .as_ptr()
                    .add(i * size_of::<B>())
                    .cast::<B>()
                    .read_unaligned()
            })
            .collect()
    }

    #[test]
    fn unpack_row_round_trips() {
        let mut rng = fastrand::Rng::with_seed(11);
        let (rows, k_blocks) = (48, 6);
        let w4: Vec<BlockQ4K> = random_bytes(&mut rng, rows * k_blocks);
        let w6: Vec<BlockQ6K> = random_bytes(&mut rng, rows * k_blocks);
        let t4 = pack_q4k(&w4, k_blocks).expect("whole row tiles");
        let t6 = pack_q6k(&w6, k_blocks).expect("whole row tiles");
        let mut b4 = vec![w4[0]; k_blocks];
        let mut b6 = vec![w6[0]; k_blocks];
        for r in 0..rows {
            unpack_row_q4k(&t4, k_blocks, r, &mut b4);
            assert_eq!(b4, w4[r * k_blocks..][..k_blocks], "Q4K row {r}");
            unpack_row_q6k(&t6, k_blocks, r, &mut b6);
            assert_eq!(b6, w6[r * k_blocks..][..k_blocks], "Q6K row {r}");
        }
    }
}
