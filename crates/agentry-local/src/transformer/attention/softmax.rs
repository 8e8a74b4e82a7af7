//! The softmax of attention's scores, and the exponential it computes in vector code.

/// Turns the first `seen` scores of each row of `padded` into weights that add up to one.
///
/// The largest score is found per lane and the exponentials computed in vector code
/// ([`exp`]). Each row's sum is taken in order, one score after another: a sum kept per lane
/// would change the weights' last bits, and the smallest models' greedy choices with them. The
/// rows' sums are taken side by side instead, so that they do not wait on one another.
///
/// Inlined, so that it is compiled for the vectors its caller is compiled for (no
/// multiply-add is fused: the bits are the same on every variant).
#[inline(always)]
pub(super) fn softmax_rows(scores: &mut [f32], padded: usize, seen: usize) {
    const WIDTH: usize = 16;
    const ROWS: usize = 8;
    for row in scores.chunks_exact_mut(padded) {
        let row = &mut row[..seen];
        let mut lanes = [f32::NEG_INFINITY; WIDTH];
        let mut chunks = row.chunks_exact(WIDTH);
        for chunk in chunks.by_ref() {
            for (max, s) in lanes.iter_mut().zip(chunk) {
                *max = max.max(*s);
            }
        }
        let max = chunks
            .remainder()
            .iter()
            .chain(&lanes)
            .copied()
            .fold(f32::NEG_INFINITY, f32::max);
        for s in row.iter_mut() {
            *s = exp(*s - max);
        }
    }
    for rows in scores.chunks_mut(ROWS * padded) {
        let mut sums = [0f32; ROWS];
        let (r, s) = (&*rows, &mut sums);
        match rows.len() / padded {
            1 => sums_in_order::<1>(r, padded, seen, s),
            2 => sums_in_order::<2>(r, padded, seen, s),
            3 => sums_in_order::<3>(r, padded, seen, s),
            4 => sums_in_order::<4>(r, padded, seen, s),
            5 => sums_in_order::<5>(r, padded, seen, s),
            6 => sums_in_order::<6>(r, padded, seen, s),
            7 => sums_in_order::<7>(r, padded, seen, s),
            _ => sums_in_order::<ROWS>(r, padded, seen, s),
        }
        for (row, sum) in rows.chunks_exact_mut(padded).zip(&sums) {
            let inverse = 1.0 / sum;
            for s in &mut row[..seen] {
                *s *= inverse;
            }
        }
    }
}

/// Writes into `out[..N]` the sums of the first `seen` values of the first `N` rows of
/// `padded` values in `rows`, each sum taken in order, the rows side by side in registers.
#[inline(always)]
fn sums_in_order<const N: usize>(rows: &[f32], padded: usize, seen: usize, out: &mut [f32]) {
    let rows: [&[f32]; N] = std::array::from_fn(|h| &rows[h * padded..][..seen]);
    let mut sums = [0f32; N];
    for j in 0..seen {
        for (sum, row) in sums.iter_mut().zip(&rows) {
            *sum += row[j];
        }
    }
    out[..N].copy_from_slice(&sums);
}

/// `e^x` for `x ≤ 0` (a score minus the largest), in plain arithmetic that the compiler turns
/// into vector code where the library call is scalar. It is computed in `f64` to about 1e-14
/// and rounded once, so it is the nearest `f32` to `e^x`; the library's `exp` is within about
/// half a unit of it too, and the two give the same bits for all but about 1 in 2,000 values
/// (then one unit apart). `e^x = 2^n × e^r`, with `n` the nearest whole number to `x / ln 2`,
/// and `e^r`, for `|r| ≤ ln 2 / 2`, from its Taylor series to the 11th power.
#[inline(always)]
pub(super) fn exp(x: f32) -> f32 {
    // Adding 1.5 × 2^52 rounds to the nearest whole number, which the low bits then hold.
    const ROUND: f64 = 6_755_399_441_055_744.0;
    // ln 2 in two parts: `n × LN2_HIGH` is exact (the high part has 20 significant bits).
    const LN2_HIGH: f64 = 0.693_145_751_953_125;
    const LN2_LOW: f64 = 1.428_606_820_309_417_2e-6;
    // Below -104, e^x rounds to 0 as an `f32`; so does e^-104. (A comparison, not `max`, so
    // that NaN stays NaN, as the library's `exp` keeps it.)
    let x = f64::from(x);
    let x = if x < -104.0 { -104.0 } else { x };
    let big = x * std::f64::consts::LOG2_E + ROUND;
    let n = big - ROUND;
    let r = (x - n * LN2_HIGH) - n * LN2_LOW;
    let mut p = 1.0 / 39_916_800.0;
    for c in [
        1.0 / 3_628_800.0,
        1.0 / 362_880.0,
        1.0 / 40_320.0,
        1.0 / 5_040.0,
        1.0 / 720.0,
        1.0 / 120.0,
        1.0 / 24.0,
        1.0 / 6.0,
        0.5,
        1.0,
        1.0,
    ] {
        p = p * r + c;
    }
    // 2^n, built from its exponent bits (`n` is the difference of the two bit patterns).
    let n = big.to_bits().wrapping_sub(ROUND.to_bits()) as i64;
    (p * f64::from_bits(((n + 1023) as u64) << 52)) as f32
}
