//! The key/value cache: its layout, its writes, and attention over it, one parallel task per
//! key/value head and position.

use super::group::{Group, Room};
use super::stored::Stored;
use super::vectors::{Vectors, vectors};
use crate::CachePrecision;
use rayon::prelude::*;

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
    pub(super) unsafe fn attend_on(
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

/// Positions whose scores are computed together (one 16-lane or two 8-lane vectors per query
/// head).
pub(in crate::transformer) const BLOCK: usize = 16;
