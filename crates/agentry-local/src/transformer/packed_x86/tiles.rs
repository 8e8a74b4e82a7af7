//! The two tile layouts, and how one GGUF block is stored as a row of a tile and rebuilt from
//! it.

use crate::transformer::kernel_x86::{BlockQ4K, BlockQ6K};

/// Weight rows per tile.
pub(in crate::transformer) const TILE_ROWS: usize = 16;

/// 16 weight rows × one Q4_K super-block (256 values per row), interleaved for
/// `vpdpbusd`.
///
/// Quant vector `8c + p` (`c` in `0..4`, `p` in `0..8`) holds, at bytes
/// `4r..4r + 4`, bytes `32c + 4p..32c + 4p + 4` of row `r`'s GGUF `qs`: low nibbles are
/// values `64c + 4p..` (sub-block `2c`), high nibbles values `64c + 32 + 4p..`
/// (sub-block `2c + 1`).
#[repr(C, align(64))]
#[derive(Clone, Copy)]
pub(in crate::transformer) struct TileQ4K {
    /// Interleaved quants, see the type's documentation.
    pub(super) qs: [[u8; 64]; 32],
    /// `scales[j][r]`: 6-bit scale of sub-block `j` of row `r`.
    pub(super) scales: [[u8; 16]; 8],
    /// `mins[i][2r + h]`: 6-bit min of sub-block `2i + h` of row `r`.
    pub(super) mins: [[u8; 32]; 4],
    /// Per-row super-block scale of the scales (f16 bits).
    pub(super) d: [u16; 16],
    /// Per-row super-block scale of the mins (f16 bits).
    pub(super) dmin: [u16; 16],
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
pub(in crate::transformer) struct TileQ6K {
    /// Interleaved quants, see the type's documentation.
    pub(super) qs: [[[u8; 64]; 3]; 16],
    /// `scales[j][r]`: scale of sub-block `j` of row `r`.
    pub(super) scales: [[i8; 16]; 16],
    /// Per-row super-block scale (f16 bits).
    pub(super) d: [u16; 16],
}

const _: () = assert!(size_of::<TileQ4K>() == 2368 && size_of::<TileQ6K>() == 3392);

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
    pub(super) fn put(&mut self, r: usize, b: &BlockQ4K) {
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
    pub(super) fn get(&self, r: usize) -> BlockQ4K {
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
    pub(super) fn put(&mut self, r: usize, b: &BlockQ6K) {
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
    pub(super) fn get(&self, r: usize) -> BlockQ6K {
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
