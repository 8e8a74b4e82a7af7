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
//!
//! `tiles.rs` holds the two tile layouts and how one GGUF block goes in and comes back out,
//! `pack.rs` the repacking of whole matrices, `dot.rs` one tile times activation rows, and
//! `gemm.rs` the products over every tile (the decode and the prompt paths).

mod dot;
mod gemm;
mod pack;
#[cfg(test)]
mod tests;
mod tiles;

pub(super) use gemm::{gemm_packed_q4k, gemm_packed_q6k};
pub(super) use pack::{pack_q4k, pack_q6k, unpack_row_q4k, unpack_row_q6k};
pub(super) use tiles::{TILE_ROWS, TileQ4K, TileQ6K};
