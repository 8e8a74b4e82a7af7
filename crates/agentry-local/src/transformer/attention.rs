//! Causal self-attention over a key/value cache written in place, with grouped-query heads read
//! where they are (the query heads that share a key/value head read it together; nothing is
//! copied or expanded).

use rayon::prelude::*;

/// Keys and values of every layer, for positions `0 .. capacity`. Keys are stored transposed
/// in blocks of [`BLOCK`] positions (within a block, dimension `d` of its positions is
/// contiguous), so that a query's scores for a block are a sum of vectors with no horizontal
/// reduction, read from one contiguous span; values as rows. The memory is reserved zeroed,
/// so the system maps it only as positions are written.
pub(crate) struct KvCache {
    /// The most positions it holds.
    capacity: usize,
    /// Positions each head's storage has room for: `capacity` rounded up to whole blocks.
    room: usize,
    kv_heads: usize,
    head_dim: usize,
    /// Per layer: `[kv head][position / BLOCK][head_dim][position % BLOCK]`.
    keys: Vec<Vec<f32>>,
    /// Per layer: `[kv head][position][head_dim]`.
    values: Vec<Vec<f32>>,
}

impl KvCache {
    /// A cache of `capacity` positions for `layers` layers.
    pub(crate) fn new(layers: usize, kv_heads: usize, head_dim: usize, capacity: usize) -> Self {
        let room = capacity.next_multiple_of(BLOCK);
        let size = kv_heads * room * head_dim;
        KvCache {
            capacity,
            room,
            kv_heads,
            head_dim,
            keys: (0..layers).map(|_| vec![0f32; size]).collect(),
            values: (0..layers).map(|_| vec![0f32; size]).collect(),
        }
    }

    /// The most positions it holds.
    pub(crate) fn capacity(&self) -> usize {
        self.capacity
    }

    /// Stores the keys and values of positions `start ..` (`k` and `v` hold one row of all
    /// key/value heads per position).
    pub(crate) fn write(&mut self, layer: usize, start: usize, k: &[f32], v: &[f32]) {
        let (hd, room, width) = (self.head_dim, self.room, self.kv_heads * self.head_dim);
        let (keys, values) = (&mut self.keys[layer], &mut self.values[layer]);
        for (t, (k_row, v_row)) in k.chunks_exact(width).zip(v.chunks_exact(width)).enumerate() {
            let position = start + t;
            for h in 0..self.kv_heads {
                let head = h * hd * room;
                let block = head + position / BLOCK * hd * BLOCK + position % BLOCK;
                for (d, &value) in k_row[h * hd..(h + 1) * hd].iter().enumerate() {
                    keys[block + d * BLOCK] = value;
                }
                let at = head + position * hd;
                values[at..at + hd].copy_from_slice(&v_row[h * hd..(h + 1) * hd]);
            }
        }
    }

    /// Attention of the queries `q` (one row of all query heads per position, positions
    /// `start ..`) over the cached positions up to each query's own, into `out` (same shape).
    pub(crate) fn attend(
        &self,
        layer: usize,
        start: usize,
        q: &[f32],
        heads: usize,
        out: &mut [f32],
    ) {
        let hd = self.head_dim;
        let group = heads / self.kv_heads;
        let (keys, values) = (&self.keys[layer], &self.values[layer]);
        out.par_chunks_mut(group * hd)
            .zip(q.par_chunks(group * hd))
            .enumerate()
            .for_each_init(Vec::new, |scores: &mut Vec<f32>, (i, (out, q))| {
                let (t, kv_head) = (i / self.kv_heads, i % self.kv_heads);
                let seen = start + t + 1;
                let head = kv_head * hd * self.room;
                let group = Group {
                    queries: q,
                    keys: &keys[head..head + seen.next_multiple_of(BLOCK) * hd],
                    values: &values[head..head + seen * hd],
                    head_dim: hd,
                    seen,
                };
                group.attend(scores, out);
            });
    }
}

/// Positions whose scores are computed together (two 8-wide vectors per query head).
const BLOCK: usize = 16;

/// Independent partial sums per score (head dimensions are a multiple of it).
const LANES: usize = 4;

/// The query heads that share one key/value head, for one position, and the keys and values
/// they see.
struct Group<'a> {
    /// The heads' queries, one after another.
    queries: &'a [f32],
    /// The head's keys, blocks of [`BLOCK`] positions transposed (see [`KvCache`]).
    keys: &'a [f32],
    /// The values of the positions seen, one row after another.
    values: &'a [f32],
    head_dim: usize,
    /// Positions seen (`0 .. seen`).
    seen: usize,
}

impl Group<'_> {
    /// Writes each head's attention output into `out` (laid out as `queries`), using
    /// `scores` as room for the heads' weights.
    fn attend(&self, scores: &mut Vec<f32>, out: &mut [f32]) {
        #[cfg(target_arch = "x86_64")]
        if wide_vectors() {
            // SAFETY: the CPU has AVX2 and FMA (checked above).
            return unsafe { self.attend_avx2(scores, out) };
        }
        self.attend_with::<false>(scores, out)
    }

    /// [`attend_with`](Self::attend_with) compiled for AVX2 and FMA.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma")]
    fn attend_avx2(&self, scores: &mut Vec<f32>, out: &mut [f32]) {
        self.attend_with::<true>(scores, out)
    }

    #[inline(always)]
    fn attend_with<const FUSED: bool>(&self, scores: &mut Vec<f32>, out: &mut [f32]) {
        let (hd, seen) = (self.head_dim, self.seen);
        let scale = 1.0 / (hd as f32).sqrt();
        let padded = seen.next_multiple_of(BLOCK);
        scores.clear();
        scores.resize(self.queries.len() / hd * padded, 0.0);
        for (query, scores) in self
            .queries
            .chunks_exact(hd)
            .zip(scores.chunks_exact_mut(padded))
        {
            self.scores::<FUSED>(query, scale, scores);
            softmax(&mut scores[..seen]);
        }
        out.fill(0.0);
        for (j, value) in self.values.chunks_exact(hd).enumerate() {
            for (out, scores) in out.chunks_exact_mut(hd).zip(scores.chunks_exact(padded)) {
                for (o, v) in out.iter_mut().zip(value) {
                    *o = multiply_add::<FUSED>(scores[j], *v, *o);
                }
            }
        }
    }

    /// `scores[j] = query · key j × scale` for every position seen, a block of positions at a
    /// time (the last block's positions past the last one seen read zeroed or stale cache, and
    /// their scores are ignored).
    #[inline(always)]
    fn scores<const FUSED: bool>(&self, query: &[f32], scale: f32, scores: &mut [f32]) {
        let block_len = self.head_dim * BLOCK;
        for (block, keys) in scores
            .chunks_exact_mut(BLOCK)
            .zip(self.keys.chunks_exact(block_len))
        {
            // Four partial sums over the dimensions, so that four chains of fused
            // multiply-adds run side by side instead of one waiting on the other.
            let mut sums = [[0f32; BLOCK]; LANES];
            for (q, keys) in query
                .chunks_exact(LANES)
                .zip(keys.chunks_exact(BLOCK * LANES))
            {
                for ((sums, &q), keys) in sums.iter_mut().zip(q).zip(keys.chunks_exact(BLOCK)) {
                    for (s, k) in sums.iter_mut().zip(keys) {
                        *s = multiply_add::<FUSED>(q, *k, *s);
                    }
                }
            }
            for (i, out) in block.iter_mut().enumerate() {
                *out = (sums[0][i] + sums[1][i] + sums[2][i] + sums[3][i]) * scale;
            }
        }
    }
}

/// Whether the CPU has AVX2 and FMA (checked once).
#[cfg(target_arch = "x86_64")]
fn wide_vectors() -> bool {
    static WIDE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *WIDE.get_or_init(|| is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma"))
}

/// `a * b + c`, fused into one instruction where the caller is compiled for FMA (elsewhere
/// `mul_add` would be a slow library call).
#[inline(always)]
fn multiply_add<const FUSED: bool>(a: f32, b: f32, c: f32) -> f32 {
    if FUSED { a.mul_add(b, c) } else { a * b + c }
}

/// Turns scores into weights that add up to one.
fn softmax(scores: &mut [f32]) {
    let max = scores.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let mut sum = 0.0;
    for s in scores.iter_mut() {
        *s = (*s - max).exp();
        sum += *s;
    }
    let inverse = 1.0 / sum;
    for s in scores.iter_mut() {
        *s *= inverse;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Attention as written in the textbook, one head at a time.
    fn naive(keys: &[Vec<f32>], values: &[Vec<f32>], query: &[f32]) -> Vec<f32> {
        let scale = 1.0 / (query.len() as f32).sqrt();
        let mut weights: Vec<f32> = keys
            .iter()
            .map(|k| k.iter().zip(query).map(|(a, b)| a * b).sum::<f32>() * scale)
            .collect();
        softmax(&mut weights);
        let mut out = vec![0.0; query.len()];
        for (w, v) in weights.iter().zip(values) {
            for (o, x) in out.iter_mut().zip(v) {
                *o += w * x;
            }
        }
        out
    }

    #[test]
    fn grouped_query_attention_over_the_cache_matches_the_textbook() {
        let (heads, kv_heads, hd) = (6, 2, 8);
        let mut rng = fastrand::Rng::with_seed(7);
        let mut random = |n: usize| (0..n).map(|_| rng.f32() * 2.0 - 1.0).collect::<Vec<f32>>();
        let mut cache = KvCache::new(1, kv_heads, hd, 40);
        // 21 positions written in three passes of 5, 1 and 15 (crossing position blocks), as
        // a prompt, a token and a longer prompt would; then queries for the last pass.
        let mut all_k = Vec::new();
        let mut all_v = Vec::new();
        let mut start = 0;
        let mut last = (0, Vec::new(), Vec::new());
        for count in [5, 1, 15] {
            let (k, v, q) = (
                random(count * kv_heads * hd),
                random(count * kv_heads * hd),
                random(count * heads * hd),
            );
            cache.write(0, start, &k, &v);
            all_k.extend_from_slice(&k);
            all_v.extend_from_slice(&v);
            let mut out = vec![0.0; q.len()];
            cache.attend(0, start, &q, heads, &mut out);
            last = (start, q, out);
            start += count;
        }
        let (first, q, out) = last;
        let width = kv_heads * hd;
        for t in 0..q.len() / (heads * hd) {
            for h in 0..heads {
                let kv = h / (heads / kv_heads);
                let seen = first + t + 1;
                let row = |all: &[f32], j: usize| all[j * width + kv * hd..][..hd].to_vec();
                let keys: Vec<_> = (0..seen).map(|j| row(&all_k, j)).collect();
                let values: Vec<_> = (0..seen).map(|j| row(&all_v, j)).collect();
                let at = (t * heads + h) * hd;
                let want = naive(&keys, &values, &q[at..at + hd]);
                for (got, want) in out[at..at + hd].iter().zip(&want) {
                    assert!(
                        (got - want).abs() < 1e-5,
                        "position {t}, head {h}: {got} vs {want}"
                    );
                }
            }
        }
    }

    #[test]
    fn softmax_weights_add_up_to_one_and_keep_order() {
        let mut scores = [1.0, 3.0, -2.0, 3.0];
        softmax(&mut scores);
        assert!((scores.iter().sum::<f32>() - 1.0).abs() < 1e-6);
        assert!(scores[1] > scores[0] && scores[0] > scores[2]);
        assert_eq!(scores[1], scores[3]);
    }
}
