//! Activations quantized to `Q8_K` on AVX2: GGML's rounding of each activation to the nearest of
//! 255 steps of its block's largest magnitude, as candle's `BlockQ8K::from_float` computes it,
//! compiled for AVX2 so that rounding is a few vector instructions instead of a library call per
//! value. The arithmetic and its order are the same, so the blocks are the same, bit for bit.

use super::kernel_x86::{BlockQ8K, QK_K};

/// Whether this CPU has what [`quantize_q8k`] needs (AVX2; the standard library caches the
/// answer).
pub(super) fn available() -> bool {
    is_x86_feature_detected!("avx2")
}

/// Quantizes `xs` (whole blocks of 256 values) into `ys`, one block each: `d` is the block's
/// value of largest magnitude (the first, if several) over −127, `qs` each value over `d`
/// rounded half away from zero, and `bsums` the sums of `qs` sixteen at a time. A block of zeros
/// has `d` = 0; a NaN's quant is 0.
///
/// # Panics
/// When `ys` has fewer blocks than `xs` holds.
///
/// # Safety
/// The CPU must have AVX2.
#[target_feature(enable = "avx2")]
pub(super) unsafe fn quantize_q8k(xs: &[f32], ys: &mut [BlockQ8K]) {
    assert!(ys.len() >= xs.len() / QK_K);
    for (y, xs) in ys.iter_mut().zip(xs.chunks_exact(QK_K)) {
        // The largest magnitude (`max` passes over NaN), then the first value that has it.
        let amax = xs.iter().fold(0f32, |amax, x| amax.max(x.abs()));
        if amax == 0.0 {
            y.d = 0.0;
            y.qs.fill(0);
            y.bsums.fill(0);
            continue;
        }
        let max = xs[xs.iter().position(|x| x.abs() == amax).unwrap_or(0)];
        let iscale = -127f32 / max;
        for (q, &x) in y.qs.iter_mut().zip(xs) {
            // A saturating conversion: NaN becomes 0.
            *q = (iscale * x).round().clamp(-128.0, 127.0) as i8;
        }
        for (sum, qs) in y.bsums.iter_mut().zip(y.qs.chunks_exact(16)) {
            *sum = qs.iter().map(|&q| i16::from(q)).sum();
        }
        y.d = 1.0 / iscale;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transformer::tensor::cast;
    use candle_core::quantized::k_quants::{BlockQ8K as CandleQ8K, GgmlType};

    /// Blocks of every kind of activation that decides a bit: random magnitudes over many
    /// scales, values whose quant lies exactly halfway between two integers, a negative and a
    /// positive largest magnitude (twice, to see that the first wins), zeros and signed zeros,
    /// NaN, infinities and subnormals.
    fn blocks() -> Vec<f32> {
        let mut rng = fastrand::Rng::with_seed(0x98);
        let mut xs = Vec::new();
        for scale in [1e-30f32, 1e-6, 0.1, 1.0, 37.0, 1e6, 1e30] {
            xs.extend((0..QK_K).map(|_| (rng.f32() * 2.0 - 1.0) * scale));
        }
        // Largest magnitude 127 (a negative one first, then a positive one), so that
        // `iscale` is ∓1 and `k + 0.5` quantizes to a tie.
        let mut ties: Vec<f32> = (0..QK_K).map(|i| (i % 250) as f32 * 0.5 - 62.0).collect();
        ties[3] = -127.0;
        ties[200] = 127.0;
        xs.extend(&ties);
        xs.extend(ties.iter().map(|x| -x));
        xs.extend([0.0f32; QK_K]);
        xs.extend((0..QK_K).map(|i| if i % 2 == 0 { -0.0 } else { 0.0 }));
        let mut odd: Vec<f32> = (0..QK_K).map(|_| rng.f32() - 0.5).collect();
        odd[7] = f32::NAN;
        xs.extend(&odd);
        odd[9] = f32::INFINITY;
        xs.extend(&odd);
        odd[9] = f32::NEG_INFINITY;
        xs.extend(&odd);
        xs.extend(
            (0..QK_K).map(|i| f32::from_bits(i as u32 + 1) * if i % 3 == 0 { -1.0 } else { 1.0 }),
        );
        xs.extend((0..QK_K).map(|i| if i == 100 { f32::NAN } else { 0.0 }));
        xs
    }

    #[test]
    fn quantizing_gives_candles_blocks_bit_for_bit() {
        if !available() {
            eprintln!("skipped: quantizing_gives_candles_blocks_bit_for_bit: this CPU lacks AVX2");
            return;
        }
        let xs = blocks();
        let n = xs.len() / QK_K;
        let mut theirs = vec![CandleQ8K::zeros(); n];
        CandleQ8K::from_float(&xs, &mut theirs);
        let mut ours = vec![
            BlockQ8K {
                d: 0.0,
                qs: [0; QK_K],
                bsums: [0; 16]
            };
            n
        ];
        // SAFETY: `available` found AVX2.
        unsafe { quantize_q8k(&xs, &mut ours) };
        let theirs: &[BlockQ8K] = cast(&theirs);
        for (i, (a, b)) in ours.iter().zip(theirs).enumerate() {
            assert_eq!(
                a.d.to_bits(),
                b.d.to_bits(),
                "block {i}: d {} vs {}",
                a.d,
                b.d
            );
            assert_eq!(a.qs, b.qs, "block {i}: quants");
            assert_eq!(a.bsums, b.bsums, "block {i}: sums");
        }
    }
}
