//! Causal self-attention over a key/value cache written in place, with grouped-query heads read
//! where they are (the query heads that share a key/value head read it together; nothing is
//! copied or expanded).

use half::f16;
use half::slice::{HalfBitsSliceExt, HalfFloatSliceExt};
use rayon::prelude::*;

use crate::CachePrecision;

/// Keys and values of every layer, for positions `0 .. capacity`, stored as
/// [`CachePrecision`] says. Keys are stored transposed in blocks of [`BLOCK`] positions
/// (within a block, dimension `d` of its positions is contiguous), so that a query's scores
/// for a block are a sum of vectors with no horizontal reduction, read from one contiguous
/// span; values as rows. The memory is reserved zeroed, so the system maps it only as
/// positions are written.
pub(crate) struct KvCache {
    shape: Shape,
    layers: Layers,
}

/// The layers' storage, in one number format.
enum Layers {
    F32(Vec<Layer<f32>>),
    F16(Vec<Layer<u16>>),
}

/// One layer's keys and values.
struct Layer<E> {
    /// `[kv head][position / BLOCK][head_dim][position % BLOCK]`.
    keys: Vec<E>,
    /// `[kv head][position][head_dim]`.
    values: Vec<E>,
}

/// How a layer's storage is laid out.
#[derive(Clone, Copy)]
struct Shape {
    /// The most positions it holds.
    capacity: usize,
    /// Positions each head's storage has room for: `capacity` rounded up to whole blocks.
    room: usize,
    kv_heads: usize,
    head_dim: usize,
}

impl KvCache {
    /// A cache of `capacity` positions for `layers` layers, stored as `precision` says.
    pub(crate) fn new(
        layers: usize,
        kv_heads: usize,
        head_dim: usize,
        capacity: usize,
        precision: CachePrecision,
    ) -> Self {
        let room = capacity.next_multiple_of(BLOCK);
        let shape = Shape {
            capacity,
            room,
            kv_heads,
            head_dim,
        };
        let layers = match precision {
            CachePrecision::F32 => Layers::F32((0..layers).map(|_| shape.layer()).collect()),
            CachePrecision::F16 => Layers::F16((0..layers).map(|_| shape.layer()).collect()),
        };
        KvCache { shape, layers }
    }

    /// The most positions it holds.
    pub(crate) fn capacity(&self) -> usize {
        self.shape.capacity
    }

    /// Stores the keys and values of positions `start ..` (`k` and `v` hold one row of all
    /// key/value heads per position).
    pub(crate) fn write(&mut self, layer: usize, start: usize, k: &[f32], v: &[f32]) {
        match &mut self.layers {
            Layers::F32(layers) => self.shape.write(&mut layers[layer], start, k, v),
            Layers::F16(layers) => self.shape.write(&mut layers[layer], start, k, v),
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
        // SAFETY: `vectors()` is what this CPU has.
        unsafe { self.attend_on(vectors(), layer, start, q, heads, out) }
    }

    /// [`attend`](Self::attend) with the loops compiled for `vectors`.
    ///
    /// # Safety
    /// The CPU must have the features of `vectors`.
    unsafe fn attend_on(
        &self,
        vectors: Vectors,
        layer: usize,
        start: usize,
        q: &[f32],
        heads: usize,
        out: &mut [f32],
    ) {
        // SAFETY: the caller vouches for `vectors`.
        unsafe {
            match &self.layers {
                Layers::F32(layers) => {
                    self.shape
                        .attend(vectors, &layers[layer], start, q, heads, out)
                }
                Layers::F16(layers) => {
                    self.shape
                        .attend(vectors, &layers[layer], start, q, heads, out)
                }
            }
        }
    }
}

impl Shape {
    /// A layer's storage, zeroed.
    fn layer<E: Stored>(&self) -> Layer<E> {
        let size = self.kv_heads * self.room * self.head_dim;
        Layer {
            keys: vec![E::ZERO; size],
            values: vec![E::ZERO; size],
        }
    }

    /// See [`KvCache::write`].
    fn write<E: Stored>(&self, layer: &mut Layer<E>, start: usize, k: &[f32], v: &[f32]) {
        let (hd, room, width) = (self.head_dim, self.room, self.kv_heads * self.head_dim);
        let (keys, values) = (&mut layer.keys, &mut layer.values);
        for (t, (k_row, v_row)) in k.chunks_exact(width).zip(v.chunks_exact(width)).enumerate() {
            let position = start + t;
            for h in 0..self.kv_heads {
                let head = h * hd * room;
                let block = head + position / BLOCK * hd * BLOCK + position % BLOCK;
                for (d, &value) in k_row[h * hd..(h + 1) * hd].iter().enumerate() {
                    keys[block + d * BLOCK] = E::narrow(value);
                }
                let at = head + position * hd;
                for (stored, &value) in values[at..at + hd].iter_mut().zip(&v_row[h * hd..]) {
                    *stored = E::narrow(value);
                }
            }
        }
    }

    /// See [`KvCache::attend_on`].
    ///
    /// # Safety
    /// The CPU must have the features of `vectors`.
    unsafe fn attend<E: Stored>(
        &self,
        vectors: Vectors,
        layer: &Layer<E>,
        start: usize,
        q: &[f32],
        heads: usize,
        out: &mut [f32],
    ) {
        let hd = self.head_dim;
        let group = heads / self.kv_heads;
        let (keys, values) = (&layer.keys, &layer.values);
        out.par_chunks_mut(group * hd)
            .zip(q.par_chunks(group * hd))
            .enumerate()
            .for_each_init(Room::default, |room, (i, (out, q))| {
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
                // SAFETY: the caller vouches for `vectors`.
                unsafe { group.attend(vectors, room, out) };
            });
    }
}

/// A number format the cache stores: `f32`, or an `f16` kept as its bits (a `u16`, whose
/// zeroed reservation the system maps only as it is written, like `f32`'s).
pub(super) trait Stored: Copy + Send + Sync + 'static {
    /// Zero.
    const ZERO: Self;
    /// Whether it is the bits of an `f16` (the vector loops widen it as they load).
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    const HALF: bool;
    /// `x` as stored (rounded to nearest).
    fn narrow(x: f32) -> Self;
    /// `stored` as `f32`s: itself, or widened into `room`.
    fn widen<'a>(stored: &'a [Self], room: &'a mut Vec<f32>) -> &'a [f32];
}

impl Stored for f32 {
    const ZERO: Self = 0.0;
    const HALF: bool = false;

    #[inline(always)]
    fn narrow(x: f32) -> Self {
        x
    }

    #[inline(always)]
    fn widen<'a>(stored: &'a [Self], _: &'a mut Vec<f32>) -> &'a [f32] {
        stored
    }
}

impl Stored for u16 {
    const ZERO: Self = 0;
    const HALF: bool = true;

    #[inline(always)]
    fn narrow(x: f32) -> Self {
        f16::from_f32(x).to_bits()
    }

    #[inline(always)]
    fn widen<'a>(stored: &'a [Self], room: &'a mut Vec<f32>) -> &'a [f32] {
        room.resize(stored.len(), 0.0);
        stored.reinterpret_cast::<f16>().convert_to_f32_slice(room);
        room
    }
}

/// Scratch space a thread's attention reuses: the heads' scores, and stored keys or values
/// widened to `f32` where the portable loops read an `f16` cache.
#[derive(Default)]
struct Room {
    scores: Vec<f32>,
    widened: Vec<f32>,
}

/// Positions whose scores are computed together (one 16-lane or two 8-lane vectors per query
/// head).
pub(super) const BLOCK: usize = 16;

/// Independent partial sums per score (head dimensions are a multiple of it).
const LANES: usize = 4;

/// The query heads that share one key/value head, for one position, and the keys and values
/// they see.
struct Group<'a, E> {
    /// The heads' queries, one after another.
    queries: &'a [f32],
    /// The head's keys, blocks of [`BLOCK`] positions transposed (see [`KvCache`]).
    keys: &'a [E],
    /// The values of the positions seen, one row after another.
    values: &'a [E],
    head_dim: usize,
    /// Positions seen (`0 .. seen`).
    seen: usize,
}

impl<E: Stored> Group<'_, E> {
    /// Writes each head's attention output into `out` (laid out as `queries`), using `room`
    /// for the heads' weights.
    ///
    /// # Safety
    /// The CPU must have the features of `vectors`.
    unsafe fn attend(&self, vectors: Vectors, room: &mut Room, out: &mut [f32]) {
        match vectors {
            // SAFETY: the caller vouches for the features of each variant.
            #[cfg(target_arch = "x86_64")]
            Vectors::Avx512 => unsafe { self.attend_avx512(room, out) },
            #[cfg(target_arch = "x86_64")]
            Vectors::Avx2 => unsafe { self.attend_avx2(room, out) },
            Vectors::Narrow => self.attend_with::<false, PORTABLE>(room, out),
            // SAFETY: as above.
            #[cfg(all(test, target_arch = "x86_64"))]
            Vectors::PortableFma => unsafe { self.attend_portable_fma(room, out) },
        }
    }

    /// The portable loops compiled for FMA, which the vector kernels give the bits of.
    #[cfg(all(test, target_arch = "x86_64"))]
    #[target_feature(enable = "avx2,fma")]
    fn attend_portable_fma(&self, room: &mut Room, out: &mut [f32]) {
        self.attend_with::<true, PORTABLE>(room, out)
    }

    /// [`attend_with`](Self::attend_with) compiled for AVX2, FMA and F16C, with the AVX2
    /// kernels.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma,f16c")]
    fn attend_avx2(&self, room: &mut Room, out: &mut [f32]) {
        self.attend_with::<true, AVX2>(room, out)
    }

    /// [`attend_with`](Self::attend_with) compiled for AVX-512, with the AVX-512 kernels.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,avx2,fma,f16c")]
    fn attend_avx512(&self, room: &mut Room, out: &mut [f32]) {
        self.attend_with::<true, AVX512>(room, out)
    }

    /// Attention for the group: `FUSED` where compiled for FMA; `KERNELS` says which loops
    /// compute the scores and the outputs ([`PORTABLE`], [`AVX2`] or [`AVX512`]; the vector
    /// kernels read each key and value once for the group's heads).
    #[inline(always)]
    fn attend_with<const FUSED: bool, const KERNELS: u8>(&self, room: &mut Room, out: &mut [f32]) {
        let (hd, seen) = (self.head_dim, self.seen);
        let Room { scores, widened } = room;
        let scale = 1.0 / (hd as f32).sqrt();
        let padded = seen.next_multiple_of(BLOCK);
        let heads = self.queries.len() / hd;
        scores.clear();
        scores.resize(heads * padded, 0.0);
        // The vector kernels take four dimensions at a time.
        let vector_scores = KERNELS != PORTABLE && hd.is_multiple_of(4);
        if !vector_scores {
            for (query, scores) in self
                .queries
                .chunks_exact(hd)
                .zip(scores.chunks_exact_mut(padded))
            {
                self.scores_of_one::<FUSED>(query, scale, scores, widened);
            }
        }
        #[cfg(target_arch = "x86_64")]
        if vector_scores && KERNELS == AVX2 {
            use super::attention_x86::grouped_scores_avx2;
            // SAFETY: `AVX2` is compiled only where the CPU has AVX2, FMA and F16C.
            unsafe { grouped_scores_avx2(self.keys, self.queries, hd, scale, scores, padded) };
        }
        #[cfg(target_arch = "x86_64")]
        if vector_scores && KERNELS == AVX512 {
            for (queries, scores) in self
                .queries
                .chunks(TOGETHER * hd)
                .zip(scores.chunks_mut(TOGETHER * padded))
            {
                use super::attention_x86::grouped_scores;
                let (k, q, s) = (self.keys, queries, &mut *scores);
                // SAFETY: `AVX512` is compiled only where the CPU has AVX-512F and FMA.
                unsafe {
                    match queries.len() / hd {
                        1 => self.scores_of_one::<FUSED>(queries, scale, scores, widened),
                        2 => grouped_scores::<2, _>(k, q, hd, scale, s, padded),
                        3 => grouped_scores::<3, _>(k, q, hd, scale, s, padded),
                        4 => grouped_scores::<4, _>(k, q, hd, scale, s, padded),
                        5 => grouped_scores::<5, _>(k, q, hd, scale, s, padded),
                        _ => grouped_scores::<TOGETHER, _>(k, q, hd, scale, s, padded),
                    }
                }
            }
        }
        softmax_rows(scores, padded, seen);
        #[cfg(target_arch = "x86_64")]
        {
            use super::attention_x86::{Avx2Values, Avx512Values, GroupedValues};
            // SAFETY: `AVX2` is compiled only where the CPU has AVX2, FMA and F16C, and
            // `AVX512` only where it also has AVX-512F; each kernel's head dimensions are
            // checked here.
            if KERNELS == AVX2 && hd.is_multiple_of(Avx2Values::WIDTH) {
                return unsafe { self.grouped_values::<Avx2Values>(scores, padded, out) };
            }
            if KERNELS == AVX512 && hd.is_multiple_of(Avx512Values::WIDTH) {
                return unsafe { self.grouped_values::<Avx512Values>(scores, padded, out) };
            }
        }
        self.weighted_values::<FUSED>(scores, padded, out, widened);
    }

    /// The outputs from the vector kernel `K`, [`TOGETHER`] heads to a pass over the values.
    ///
    /// # Safety
    /// The CPU must have `K`'s features, and `head_dim` must be a multiple of `K::WIDTH`.
    #[cfg(target_arch = "x86_64")]
    #[inline(always)]
    unsafe fn grouped_values<K: super::attention_x86::GroupedValues>(
        &self,
        weights: &[f32],
        padded: usize,
        out: &mut [f32],
    ) {
        let (v, hd) = (self.values, self.head_dim);
        for (o, w) in out
            .chunks_mut(TOGETHER * hd)
            .zip(weights.chunks(TOGETHER * padded))
        {
            // SAFETY: the caller vouches for the features and the head dimension.
            unsafe {
                match o.len() / hd {
                    1 => K::run::<1, E>(v, w, hd, padded, o),
                    2 => K::run::<2, E>(v, w, hd, padded, o),
                    3 => K::run::<3, E>(v, w, hd, padded, o),
                    4 => K::run::<4, E>(v, w, hd, padded, o),
                    5 => K::run::<5, E>(v, w, hd, padded, o),
                    _ => K::run::<TOGETHER, E>(v, w, hd, padded, o),
                }
            }
        }
    }

    /// `scores[j] = query · key j × scale` for one query head and every position seen, a block
    /// of positions at a time (the last block's positions past the last one seen read zeroed or
    /// stale cache, and their scores are ignored). Four partial sums per score, so that four
    /// chains of fused multiply-adds run side by side instead of one waiting on the other.
    #[inline(always)]
    fn scores_of_one<const FUSED: bool>(
        &self,
        query: &[f32],
        scale: f32,
        scores: &mut [f32],
        widened: &mut Vec<f32>,
    ) {
        let block_len = self.head_dim * BLOCK;
        for (block, keys) in scores
            .chunks_exact_mut(BLOCK)
            .zip(self.keys.chunks_exact(block_len))
        {
            let keys = E::widen(keys, widened);
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

    /// `out[h] = Σ_j weights[h][j] × value j` for every head: each value row is read once for
    /// all the heads, four rows at a time (so each head's output is loaded and stored once
    /// per four positions).
    #[inline(always)]
    fn weighted_values<const FUSED: bool>(
        &self,
        weights: &[f32],
        padded: usize,
        out: &mut [f32],
        widened: &mut Vec<f32>,
    ) {
        let hd = self.head_dim;
        out.fill(0.0);
        let mut fours = self.values.chunks_exact(4 * hd);
        let mut j = 0;
        for rows in fours.by_ref() {
            let rows = E::widen(rows, widened);
            let (v0, rest) = rows.split_at(hd);
            let (v1, rest) = rest.split_at(hd);
            let (v2, v3) = rest.split_at(hd);
            for (out, w) in out.chunks_exact_mut(hd).zip(weights.chunks_exact(padded)) {
                let (w0, w1, w2, w3) = (w[j], w[j + 1], w[j + 2], w[j + 3]);
                for ((((o, a), b), c), d) in out.iter_mut().zip(v0).zip(v1).zip(v2).zip(v3) {
                    let sum = multiply_add::<FUSED>(w0, *a, *o);
                    let sum = multiply_add::<FUSED>(w1, *b, sum);
                    let sum = multiply_add::<FUSED>(w2, *c, sum);
                    *o = multiply_add::<FUSED>(w3, *d, sum);
                }
            }
            j += 4;
        }
        for value in E::widen(fours.remainder(), widened).chunks_exact(hd) {
            for (out, w) in out.chunks_exact_mut(hd).zip(weights.chunks_exact(padded)) {
                for (o, v) in out.iter_mut().zip(value) {
                    *o = multiply_add::<FUSED>(w[j], *v, *o);
                }
            }
            j += 1;
        }
    }
}

/// The most query heads whose scores (AVX-512) or outputs (both vector kernels) are computed
/// in one pass over the keys or values (their sums fill 24 of the 32 AVX-512 registers, or 12
/// of the 16 AVX2 ones).
const TOGETHER: usize = 6;

/// [`Group::attend_with`]'s portable loops.
const PORTABLE: u8 = 0;
/// [`Group::attend_with`]'s AVX2 kernels.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
const AVX2: u8 = 1;
/// [`Group::attend_with`]'s AVX-512 kernels.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
const AVX512: u8 = 2;

/// The widest vectors the CPU has, for attention's loops.
#[derive(Clone, Copy, Debug)]
enum Vectors {
    /// AVX-512F (and AVX2, FMA, F16C).
    #[cfg(target_arch = "x86_64")]
    Avx512,
    /// AVX2, FMA and F16C.
    #[cfg(target_arch = "x86_64")]
    Avx2,
    /// Neither: the portable loops.
    Narrow,
    /// The portable loops compiled for FMA (AVX2 and FMA), for tests to compare the kernels'
    /// bits with.
    #[cfg(all(test, target_arch = "x86_64"))]
    PortableFma,
}

/// The widest vectors the CPU has (checked once).
fn vectors() -> Vectors {
    #[cfg(target_arch = "x86_64")]
    {
        static VECTORS: std::sync::OnceLock<Vectors> = std::sync::OnceLock::new();
        *VECTORS.get_or_init(|| {
            let avx2 = is_x86_feature_detected!("avx2")
                && is_x86_feature_detected!("fma")
                && is_x86_feature_detected!("f16c");
            match (avx2, is_x86_feature_detected!("avx512f")) {
                (true, true) => Vectors::Avx512,
                (true, false) => Vectors::Avx2,
                _ => Vectors::Narrow,
            }
        })
    }
    #[cfg(not(target_arch = "x86_64"))]
    Vectors::Narrow
}

/// The variants this CPU has, the widest last (for tests that compare them).
#[cfg(test)]
fn every_vectors() -> Vec<Vectors> {
    let mut all = vec![Vectors::Narrow];
    #[cfg(target_arch = "x86_64")]
    {
        if matches!(vectors(), Vectors::Avx2 | Vectors::Avx512) {
            all.push(Vectors::Avx2);
        }
        if matches!(vectors(), Vectors::Avx512) {
            all.push(Vectors::Avx512);
        }
    }
    all
}

/// `a * b + c`, fused into one instruction where the caller is compiled for FMA (elsewhere
/// `mul_add` would be a slow library call).
#[inline(always)]
fn multiply_add<const FUSED: bool>(a: f32, b: f32, c: f32) -> f32 {
    if FUSED { a.mul_add(b, c) } else { a * b + c }
}

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
fn softmax_rows(scores: &mut [f32], padded: usize, seen: usize) {
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
fn exp(x: f32) -> f32 {
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
