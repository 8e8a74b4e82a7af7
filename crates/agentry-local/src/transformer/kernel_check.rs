//! What the kernels' tests share: random quantized data, and a comparison of a kernel's
//! products with candle's dot products.

use super::kernel_x86::{BlockQ4K, BlockQ6K, BlockQ8K, QK_K};
use super::tensor::cast;
use candle_core::quantized::GgmlType;
use candle_core::quantized::k_quants as candle;

/// Quantizes `rows` rows of `k_blocks · 256` random values into `T` blocks.
pub(crate) fn random_blocks<T: GgmlType>(
    rng: &mut fastrand::Rng,
    rows: usize,
    k_blocks: usize,
) -> Vec<T> {
    let values: Vec<f32> = (0..rows * k_blocks * QK_K)
        .map(|i| {
            // Give each row its own offset so that Q4_K mins are exercised.
            let offset = ((i / (k_blocks * QK_K)) % 5) as f32 * 0.25 - 0.5;
            rng.f32() * 2.0 - 1.0 + offset
        })
        .collect();
    let mut blocks = vec![T::zeros(); rows * k_blocks];
    T::from_float(&values, &mut blocks);
    blocks
}

/// Dequantizes blocks with candle into rows of `k_blocks · 256` values.
fn dequantize<T: GgmlType>(blocks: &[T], k_blocks: usize) -> Vec<Vec<f32>> {
    blocks
        .chunks(k_blocks)
        .map(|row| {
            let mut values = vec![0.0; k_blocks * QK_K];
            T::to_float(row, &mut values);
            values
        })
        .collect()
}

/// Runs `gemm` and compares every entry with candle's `vec_dot`, and checks that the
/// padding between `n` and `ld` is untouched.
///
/// Both sides add up the same integers, so they differ only by f32 rounding, which
/// is relative to the size of the summed terms rather than of the result: the
/// tolerance is 1e-4 of the larger of the result and a tenth of `Σ |w_i · x_i|`.
pub(crate) fn check<W: GgmlType<VecDotType = candle::BlockQ8K>>(
    w: &[W],
    x: &[candle::BlockQ8K],
    k_blocks: usize,
    ld: usize,
    gemm: impl FnOnce(&[candle::BlockQ8K], &mut [f32]),
) {
    let (n, m) = (w.len() / k_blocks, x.len() / k_blocks);
    let (w_values, x_values) = (dequantize(w, k_blocks), dequantize(x, k_blocks));
    let mut out = vec![f32::NAN; m * ld];
    gemm(x, &mut out);
    for t in 0..m {
        let xrow = &x[t * k_blocks..][..k_blocks];
        for r in 0..ld {
            let got = out[t * ld + r];
            if r >= n {
                assert!(got.is_nan(), "padding written at t={t} r={r}");
                continue;
            }
            let want = W::vec_dot(k_blocks * QK_K, &w[r * k_blocks..][..k_blocks], xrow);
            let magnitude: f32 = w_values[r]
                .iter()
                .zip(&x_values[t])
                .map(|(a, b)| (a * b).abs())
                .sum();
            let tolerance = 1e-4 * want.abs().max(0.1 * magnitude);
            assert!(
                (got - want).abs() <= tolerance,
                "m={m} n={n} k_blocks={k_blocks} t={t} r={r}: got {got}, want {want}, tolerance {tolerance}"
            );
        }
    }
}

/// Whether this CPU runs the AVX-512 VNNI kernels; when it does not, says that `test` is
/// skipped (the model then computes with the AVX2 kernels or candle's dot products).
pub(crate) fn vnni_or_skip(test: &str) -> bool {
    runs_or_skip(super::kernel_x86::available(), "AVX-512 VNNI", test)
}

/// Whether this CPU runs the AVX2 kernels; when it does not, says that `test` is skipped.
pub(crate) fn avx2_or_skip(test: &str) -> bool {
    runs_or_skip(super::kernel_avx2::available(), "AVX2, FMA and F16C", test)
}

fn runs_or_skip(available: bool, features: &str, test: &str) -> bool {
    if !available {
        println!("skipped: {test}: this CPU lacks {features}, so those kernels are not used here");
    }
    available
}

/// Runs `run(rng, m, n, k_blocks, ld)` for every combination of `ms`, `ns` and `k_blocks` in
/// {1, 6, 35} (the prompt and decode paths, short and long rows), with a random `ld > n`.
pub(crate) fn random_shapes(
    seed: u64,
    ns: &[usize],
    ms: &[usize],
    mut run: impl FnMut(&mut fastrand::Rng, usize, usize, usize, usize),
) {
    let mut rng = fastrand::Rng::with_seed(seed);
    for k_blocks in [1, 6, 35] {
        for &n in ns {
            for &m in ms {
                let ld = n + rng.usize(1..9);
                run(&mut rng, m, n, k_blocks, ld);
            }
        }
    }
}

/// f16 bits of 1.0.
const ONE_F16: u16 = 0x3C00;

/// Feeds saturated quants, scales and activations (every activation quant `i8::MIN` or
/// `i8::MAX`) to `q4k` and `q6k` as `m` rows of activations for each of `ms` and `n` weight
/// rows of `k_blocks` blocks, for them to compare a kernel with candle: any overflow of the
/// integer sums shows up there.
pub(crate) fn extremes(
    ms: &[usize],
    n: usize,
    k_blocks: usize,
    mut q4k: impl FnMut(&[BlockQ4K], &[BlockQ8K]),
    mut q6k: impl FnMut(&[BlockQ6K], &[BlockQ8K]),
) {
    for &m in ms {
        for q in [i8::MIN, i8::MAX] {
            let activation = BlockQ8K {
                d: 1.0,
                qs: [q; QK_K],
                bsums: [16 * i16::from(q); 16],
            };
            let x = vec![activation; m * k_blocks];
            for (nibbles, packed) in [(0xFF, 0xFF), (0x00, 0xFF), (0xFF, 0x3F), (0x00, 0x00)] {
                let block = BlockQ4K {
                    d: ONE_F16,
                    dmin: ONE_F16,
                    scales: [packed; 12],
                    qs: [nibbles; 128],
                };
                q4k(&vec![block; n * k_blocks], &x);
            }
            for (bits, scale) in [
                (0xFF, i8::MIN),
                (0x00, i8::MIN),
                (0xFF, i8::MAX),
                (0x00, i8::MAX),
            ] {
                let block = BlockQ6K {
                    ql: [bits; 128],
                    qh: [bits; 64],
                    scales: [scale; 16],
                    d: ONE_F16,
                };
                q6k(&vec![block; n * k_blocks], &x);
            }
        }
    }
}

/// The `Q4_K` and `Q6_K` products of one set of kernels, with the contract of
/// [`super::kernel_x86::gemm_q4k`].
pub(crate) struct Products {
    pub(crate) q4k: unsafe fn(&[BlockQ4K], &[BlockQ8K], usize, &mut [f32], usize),
    pub(crate) q6k: unsafe fn(&[BlockQ6K], &[BlockQ8K], usize, &mut [f32], usize),
}

/// Compares both products with candle on random blocks, for the decode and prompt shapes of
/// [`random_shapes`].
///
/// # Safety
/// The CPU must have the kernels' features.
pub(crate) unsafe fn random_products(products: &Products, seed: u64) {
    let (ns, ms) = (&[1, 3, 16, 17, 256], &[1, 2, 3, 4, 5, 7, 16, 33]);
    random_shapes(seed, ns, ms, |rng, m, n, k_blocks, ld| {
        let w = random_blocks::<candle::BlockQ4K>(rng, n, k_blocks);
        let x = random_blocks::<candle::BlockQ8K>(rng, m, k_blocks);
        check(&w, &x, k_blocks, ld, |x, out| {
            // SAFETY: the caller vouches for the features.
            unsafe { (products.q4k)(cast(&w), cast(x), k_blocks, out, ld) }
        });
        let w = random_blocks::<candle::BlockQ6K>(rng, n, k_blocks);
        check(&w, &x, k_blocks, ld, |x, out| {
            // SAFETY: as above.
            unsafe { (products.q6k)(cast(&w), cast(x), k_blocks, out, ld) }
        });
    });
}

/// Compares both products with candle on the [`extremes`], for one activation row and six.
///
/// # Safety
/// The CPU must have the kernels' features.
pub(crate) unsafe fn extreme_products(products: &Products) {
    let (n, k_blocks) = (5, 35);
    extremes(
        &[1, 6],
        n,
        k_blocks,
        |w, x| {
            check::<candle::BlockQ4K>(cast(w), cast(x), k_blocks, n, |x, out| {
                // SAFETY: the caller vouches for the features.
                unsafe { (products.q4k)(w, cast(x), k_blocks, out, n) }
            })
        },
        |w, x| {
            check::<candle::BlockQ6K>(cast(w), cast(x), k_blocks, n, |x, out| {
                // SAFETY: as above.
                unsafe { (products.q6k)(w, cast(x), k_blocks, out, n) }
            })
        },
    );
}

/// The tests every set of `Q4_K`/`Q6_K` kernels passes: a `tests` module, in the kernels'
/// module, comparing its `gemm_q4k` and `gemm_q6k` with candle on random blocks (from `seed`)
/// and on the extremes, each test skipped where `$available` (given the test's name) says the
/// CPU lacks the kernels' features.
macro_rules! k_quant_product_tests {
    ($available:ident, $seed:expr) => {
        mod tests {
            use super::*;
            use crate::transformer::kernel_check::{
                Products, extreme_products, random_products, $available,
            };

            const PRODUCTS: Products = Products {
                q4k: gemm_q4k,
                q6k: gemm_q6k,
            };

            #[test]
            fn q4k_and_q6k_match_candle() {
                if $available("q4k_and_q6k_match_candle") {
                    // SAFETY: `$available` found the kernels' features.
                    unsafe { random_products(&PRODUCTS, $seed) }
                }
            }

            #[test]
            fn extremes_do_not_overflow() {
                if $available("extremes_do_not_overflow") {
                    // SAFETY: as above.
                    unsafe { extreme_products(&PRODUCTS) }
                }
            }
        }
    };
}

pub(crate) use k_quant_product_tests;
