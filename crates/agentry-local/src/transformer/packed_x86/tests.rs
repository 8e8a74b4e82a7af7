//! The kernels against candle's dot products, and the tiles' round trip.

use super::*;
use crate::transformer::kernel_check::{
    check, extremes, random_blocks, random_shapes, vnni_or_skip,
};
use crate::transformer::kernel_x86::{BlockQ4K, BlockQ6K};
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
