//! Causal self-attention over a key/value cache written in place, with grouped-query heads read
//! where they are (the query heads that share a key/value head read it together; nothing is
//! copied or expanded).
//!
//! - [`KvCache`] (`cache.rs`): the cache's layout, writes, and the parallel section that
//!   attends each key/value head's group of query heads;
//! - `stored.rs`: the number formats it stores (`f32`, or `f16` kept as bits);
//! - `group.rs`: one group's attention, on the portable loops or the x86 kernels;
//! - `softmax.rs`: the scores turned into weights, with its vector-friendly exponential;
//! - `vectors.rs`: which vectors the CPU has, checked once.

mod cache;
mod group;
mod softmax;
mod stored;
#[cfg(test)]
mod tests;
mod vectors;

pub(super) use cache::{BLOCK, KvCache};
pub(super) use stored::Stored;
