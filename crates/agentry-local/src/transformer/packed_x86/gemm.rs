//! The products over every tile: one activation row streamed past the tiles (decode), or
//! groups of rows multiplied with panels of tiles kept in L2 (the prompt).

use super::dot::Packed;
use super::tiles::{TILE_ROWS, TileQ4K, TileQ6K};
use crate::transformer::kernel_x86::BlockQ8K;
use std::arch::x86_64::*;

/// Q4_K tiles × Q8_K activations.
///
/// `tiles` are whole row tiles (`k_blocks` tiles each, `n = 16 · tiles.len() /
/// k_blocks` weight rows); `x` holds `m` activation rows of `k_blocks` blocks each.
/// Writes `out[t * ld + r] = dot(weight row r, activation row t)` for every `r < n`,
/// `t < m` (`ld >= n`); other entries of `out` are left untouched.
///
/// # Safety
/// [`crate::transformer::kernel_x86::available`] must be true.
pub(in crate::transformer) unsafe fn gemm_packed_q4k(
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
/// [`crate::transformer::kernel_x86::available`] must be true.
pub(in crate::transformer) unsafe fn gemm_packed_q6k(
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
