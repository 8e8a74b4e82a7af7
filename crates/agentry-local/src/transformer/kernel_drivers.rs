//! The drivers the K-quant kernels share: how a matrix product is split into decode rows or
//! prompt tiles is the same on every instruction set, but each copy must be compiled with its
//! own instruction set's features for the block code to inline into it.

/// Defines `gemm` (the shared driver of a module's `gemm_q4k` and `gemm_q6k`) and `prompt`
/// (its several-rows case), compiled with `$features`. The invoking module supplies
/// `decode_row(row, x) -> f32` and `tile::<B, T>(row, x, store)`, both compiled with the same
/// features, and brings `KBlock`, `BlockQ8K` and the tiling constants of `kernel_x86` into
/// scope.
macro_rules! k_quant_drivers {
    ($features:literal) => {
        /// Shared driver of [`gemm_q4k`] and [`gemm_q6k`]: one activation row walks the
        /// weights once ([`decode_row`]); several go in tiles ([`prompt`]).
        #[target_feature(enable = $features)]
        fn gemm<B: KBlock>(w: &[B], x: &[BlockQ8K], k_blocks: usize, out: &mut [f32], ld: usize) {
            debug_assert!(k_blocks > 0, "k_blocks must be positive");
            debug_assert!(
                w.len().is_multiple_of(k_blocks),
                "weights are not whole rows"
            );
            debug_assert!(
                x.len().is_multiple_of(k_blocks),
                "activations are not whole rows"
            );
            let n = w.len() / k_blocks;
            let m = x.len() / k_blocks;
            debug_assert!(ld >= n, "ld {ld} < n {n}");
            debug_assert!(m == 0 || out.len() >= (m - 1) * ld + n, "out too short");
            if m == 1 {
                for (row, o) in w.chunks_exact(k_blocks).zip(&mut out[..n]) {
                    *o = decode_row(row, x);
                }
            } else if WIDE_TILE * k_blocks * size_of::<BlockQ8K>() <= L1_TILE_BYTES {
                prompt::<B, WIDE_TILE>(w, x, k_blocks, out, ld);
            } else {
                prompt::<B, NARROW_TILE>(w, x, k_blocks, out, ld);
            }
        }

        /// Several activation rows: for each panel of [`ROW_PANEL`] weight rows, every tile
        /// of `TILE` activation rows is multiplied with each row of the panel ([`tile`]; the
        /// last, partial tile split into one of [`NARROW_TILE`] rows, if it is that large,
        /// and the rest).
        #[inline]
        #[target_feature(enable = $features)]
        fn prompt<B: KBlock, const TILE: usize>(
            w: &[B],
            x: &[BlockQ8K],
            k_blocks: usize,
            out: &mut [f32],
            ld: usize,
        ) {
            let m = x.len() / k_blocks;
            for (panel_index, panel) in w.chunks(ROW_PANEL * k_blocks).enumerate() {
                let first_row = panel_index * ROW_PANEL;
                let mut t0 = 0;
                while t0 < m {
                    let size = match m - t0 {
                        left if left >= TILE => TILE,
                        left if left >= NARROW_TILE => NARROW_TILE,
                        left => left,
                    };
                    let tokens = &x[t0 * k_blocks..];
                    for (r, row) in panel.chunks_exact(k_blocks).enumerate() {
                        let mut store =
                            |t: usize, dot: f32| out[(t0 + t) * ld + first_row + r] = dot;
                        match size {
                            1 => tile::<B, 1>(row, tokens, &mut store),
                            2 => tile::<B, 2>(row, tokens, &mut store),
                            3 => tile::<B, 3>(row, tokens, &mut store),
                            NARROW_TILE => tile::<B, NARROW_TILE>(row, tokens, &mut store),
                            _ => tile::<B, TILE>(row, tokens, &mut store),
                        }
                    }
                    t0 += size;
                }
            }
        }
    };
}

pub(super) use k_quant_drivers;
