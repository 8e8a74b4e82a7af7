//! Repacking whole matrices of GGUF blocks into tiles, and one weight row back out of them.

use super::tiles::{TILE_ROWS, TileQ4K, TileQ6K};
use crate::transformer::kernel_x86::{BlockQ4K, BlockQ6K};

/// Repacks `rows × k_blocks` row-major Q4_K blocks into tiles ordered
/// `[row tile][k block]`; `None` unless the row count is a positive multiple of
/// [`TILE_ROWS`].
pub(in crate::transformer) fn pack_q4k(w: &[BlockQ4K], k_blocks: usize) -> Option<Vec<TileQ4K>> {
    pack(w, k_blocks, TileQ4K::put)
}

/// Repacks `rows × k_blocks` row-major Q6_K blocks into tiles ordered
/// `[row tile][k block]`; `None` unless the row count is a positive multiple of
/// [`TILE_ROWS`].
pub(in crate::transformer) fn pack_q6k(w: &[BlockQ6K], k_blocks: usize) -> Option<Vec<TileQ6K>> {
    pack(w, k_blocks, TileQ6K::put)
}

/// Writes the `k_blocks` GGUF blocks of weight row `r` of `tiles` (as returned by
/// [`pack_q4k`]) into `out`.
pub(in crate::transformer) fn unpack_row_q4k(
    tiles: &[TileQ4K],
    k_blocks: usize,
    r: usize,
    out: &mut [BlockQ4K],
) {
    unpack_row(tiles, k_blocks, r, out, TileQ4K::get);
}

/// Writes the `k_blocks` GGUF blocks of weight row `r` of `tiles` (as returned by
/// [`pack_q6k`]) into `out`.
pub(in crate::transformer) fn unpack_row_q6k(
    tiles: &[TileQ6K],
    k_blocks: usize,
    r: usize,
    out: &mut [BlockQ6K],
) {
    unpack_row(tiles, k_blocks, r, out, TileQ6K::get);
}

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
