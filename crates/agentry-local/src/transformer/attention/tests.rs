//! Attention over the cache against the textbook's, the kernels against the portable loops'
//! bits, and the softmax's exponential against the library's.

use super::cache::KvCache;
use super::softmax::{exp, softmax_rows};
use super::vectors::{Vectors, every_vectors};
use crate::CachePrecision;
use half::f16;

/// Attention as written in the textbook, one head at a time.
fn naive(keys: &[Vec<f32>], values: &[Vec<f32>], query: &[f32]) -> Vec<f32> {
    let scale = 1.0 / (query.len() as f32).sqrt();
    let scores: Vec<f32> = keys
        .iter()
        .map(|k| k.iter().zip(query).map(|(a, b)| a * b).sum::<f32>() * scale)
        .collect();
    let max = scores.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let exps: Vec<f32> = scores.iter().map(|s| (s - max).exp()).collect();
    let total: f32 = exps.iter().sum();
    let mut out = vec![0.0; query.len()];
    for (e, v) in exps.iter().zip(values) {
        for (o, x) in out.iter_mut().zip(v) {
            *o += e / total * x;
        }
    }
    out
}

/// Writes positions into a cache stored as `precision` says in passes of `passes`
/// positions (as a prompt, a token and a longer prompt would), attends with the last
/// pass's queries, and compares every head's output with [`naive`] over the keys and
/// values as stored.
fn check_against_naive(
    precision: CachePrecision,
    group: usize,
    kv_heads: usize,
    hd: usize,
    passes: &[usize],
) {
    let heads = group * kv_heads;
    let mut rng = fastrand::Rng::with_seed(7);
    let mut random = |n: usize| (0..n).map(|_| rng.f32() * 2.0 - 1.0).collect::<Vec<f32>>();
    let stored = |x: f32| match precision {
        CachePrecision::F32 => x,
        CachePrecision::F16 => f16::from_f32(x).to_f32(),
    };
    let size = passes.iter().sum::<usize>() + 3;
    let mut cache = KvCache::new(1, kv_heads, hd, size, precision);
    let mut all_k = Vec::new();
    let mut all_v = Vec::new();
    let mut start = 0;
    let mut last = (0, Vec::new(), Vec::new());
    for &count in passes {
        let (k, v, q) = (
            random(count * kv_heads * hd),
            random(count * kv_heads * hd),
            random(count * heads * hd),
        );
        cache.write(0, start, &k, &v);
        all_k.extend(k.iter().map(|&x| stored(x)));
        all_v.extend(v.iter().map(|&x| stored(x)));
        let outs = every_vectors()
            .into_iter()
            .map(|vectors| {
                let mut out = vec![0.0; q.len()];
                // SAFETY: `every_vectors` lists only what this CPU has.
                unsafe { cache.attend_on(vectors, 0, start, &q, heads, &mut out) };
                (vectors, out)
            })
            .collect::<Vec<_>>();
        last = (start, q, outs);
        start += count;
    }
    let (first, q, outs) = last;
    let width = kv_heads * hd;
    for (vectors, out) in outs {
        for t in 0..q.len() / (heads * hd) {
            for h in 0..heads {
                let kv = h / group;
                let seen = first + t + 1;
                let row = |all: &[f32], j: usize| all[j * width + kv * hd..][..hd].to_vec();
                let keys: Vec<_> = (0..seen).map(|j| row(&all_k, j)).collect();
                let values: Vec<_> = (0..seen).map(|j| row(&all_v, j)).collect();
                let at = (t * heads + h) * hd;
                let want = naive(&keys, &values, &q[at..at + hd]);
                for (got, want) in out[at..at + hd].iter().zip(&want) {
                    assert!(
                        (got - want).abs() < 1e-5,
                        "{precision} {vectors:?}, {group} heads per group, {hd} dimensions, \
                         position {t}, head {h}: {got} vs {want}"
                    );
                }
            }
        }
    }
}

#[test]
fn grouped_query_attention_over_the_cache_matches_the_textbook() {
    // 21 positions written in three passes of 5, 1 and 15, crossing position blocks.
    for precision in [CachePrecision::F32, CachePrecision::F16] {
        check_against_naive(precision, 3, 2, 8, &[5, 1, 15]);
    }
}

#[test]
fn an_f16_cache_stores_each_value_rounded_to_the_nearest_half() {
    // 1 + 2^-11 lies halfway between two halves and rounds to even (1); 1 + 3 × 2^-11 to
    // 1 + 2^-9. One position, one head of 8 dimensions, so its output is its value.
    let mut cache = KvCache::new(1, 1, 8, 1, CachePrecision::F16);
    let value = [
        1.0 + 2f32.powi(-11),
        1.0 + 3.0 * 2f32.powi(-11),
        65504.0,
        -0.0,
        1e-8,
        3.0,
        0.1,
        2.5,
    ];
    cache.write(0, 0, &[0.0; 8], &value);
    let mut out = [9.0; 8];
    cache.attend(0, 0, &[1.0; 8], 1, &mut out);
    let want = value.map(|x| f16::from_f32(x).to_f32());
    assert_eq!(out, want);
    assert_eq!(&want[..3], [1.0, 1.0 + 2f32.powi(-9), 65504.0]);
}

#[test]
fn softmax_weights_add_up_to_one_and_keep_order() {
    // Two rows of 4 scores in rows of 6; what lies past the scores is left alone.
    let mut scores = [1.0, 3.0, -2.0, 3.0, 9.0, 9.0, 0.5, 0.5, 0.5, 0.5, 9.0, 9.0];
    softmax_rows(&mut scores, 6, 4);
    for row in scores.chunks_exact(6) {
        assert!((row[..4].iter().sum::<f32>() - 1.0).abs() < 1e-6, "{row:?}");
        assert_eq!(row[4..], [9.0, 9.0]);
    }
    assert!(scores[1] > scores[0] && scores[0] > scores[2]);
    assert_eq!(scores[1], scores[3]);
    assert_eq!(scores[6..10], [0.25; 4]);
    // Forty rows of 37 (past a whole number of lanes and of rows side by side): the same
    // bits as a row on its own, summed in order with the library's exponential where they
    // agree.
    let mut rng = fastrand::Rng::with_seed(5);
    let mut many: Vec<f32> = (0..40 * 37).map(|_| rng.f32() * 20.0 - 10.0).collect();
    let original = many.clone();
    softmax_rows(&mut many, 37, 37);
    for (row, before) in many.chunks_exact(37).zip(original.chunks_exact(37)) {
        let max = before.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        let exps: Vec<f32> = before.iter().map(|s| exp(s - max)).collect();
        let sum: f32 = exps.iter().sum();
        let want: Vec<f32> = exps.iter().map(|e| e * (1.0 / sum)).collect();
        assert_eq!(row, &want[..]);
    }
}

#[test]
fn exp_gives_the_library_exps_bits_but_rarely_one_unit_apart() {
    // Every 1/4096 from -110 to 0 (exact in `f32`), and a million random values.
    let mut rng = fastrand::Rng::with_seed(3);
    let steps = (0..=110 * 4096).map(|i| -(i as f32) / 4096.0);
    let random = (0..1_000_000).map(|_| -rng.f32() * 110.0);
    let (mut count, mut apart) = (0, 0);
    for x in steps.chain(random) {
        let (got, want) = (exp(x), x.exp());
        count += 1;
        if got != want {
            apart += 1;
            let ulps = (got.to_bits() as i64 - want.to_bits() as i64).abs();
            assert!(ulps <= 1, "e^{x}: {got} vs the library's {want}");
        }
    }
    assert!(apart * 1000 < count, "{apart} of {count} values differ");
    assert_eq!(exp(0.0), 1.0);
    assert_eq!(exp(-1000.0), 0.0);
    assert_eq!(exp(f32::NEG_INFINITY), 0.0);
    assert!(exp(f32::NAN).is_nan());
}

#[test]
fn the_vector_kernels_give_the_portable_loops_bits() {
    // Each sum in the portable loops' order: the same bits, for both precisions, every
    // group size and the head dimensions the kernels take.
    #[cfg(target_arch = "x86_64")]
    for precision in [CachePrecision::F32, CachePrecision::F16] {
        let kernels: Vec<_> = every_vectors()
            .into_iter()
            .filter(|v| matches!(v, Vectors::Avx2 | Vectors::Avx512))
            .collect();
        if kernels.is_empty() {
            println!("skipped: this CPU has neither AVX2 nor AVX-512");
            return;
        }
        for group in 1..=9 {
            for hd in [16, 64, 128] {
                let (kv_heads, heads) = (2, 2 * group);
                let mut rng = fastrand::Rng::with_seed(11);
                let mut random =
                    |n: usize| -> Vec<f32> { (0..n).map(|_| rng.f32() * 4.0 - 2.0).collect() };
                let mut cache = KvCache::new(1, kv_heads, hd, 64, precision);
                // A prompt of 37 positions, then one more, attended by the last.
                cache.write(
                    0,
                    0,
                    &random(37 * kv_heads * hd),
                    &random(37 * kv_heads * hd),
                );
                cache.write(0, 37, &random(kv_heads * hd), &random(kv_heads * hd));
                let q = random(heads * hd);
                let run = |vectors| {
                    let mut out = vec![0.0; q.len()];
                    // SAFETY: `every_vectors` lists only what this CPU has, and
                    // `PortableFma` needs AVX2 and FMA, which it has when it has a kernel.
                    unsafe { cache.attend_on(vectors, 0, 37, &q, heads, &mut out) };
                    out
                };
                let want = run(Vectors::PortableFma);
                for &vectors in &kernels {
                    let got = run(vectors);
                    let same = got
                        .iter()
                        .zip(&want)
                        .all(|(a, b)| a.to_bits() == b.to_bits());
                    assert!(
                        same,
                        "{precision} {vectors:?}, {group} heads per group, {hd}"
                    );
                }
            }
        }
    }
}

#[test]
fn every_group_size_matches_the_textbook() {
    // 1 to 9 query heads per key/value head: the one-head path, each grouped width, and a
    // group split into passes of `TOGETHER` heads and a remainder; each on every variant
    // of the loops this CPU runs.
    // Head dimensions of 8 (the portable loops for values), 64 and 128 (the vector ones).
    // Both precisions.
    for precision in [CachePrecision::F32, CachePrecision::F16] {
        for group in 1..=9 {
            for hd in [8, 64, 128] {
                check_against_naive(precision, group, 2, hd, &[7, 1, 18]);
            }
        }
    }
}
