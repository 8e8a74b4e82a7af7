//! The number format of the key/value cache.

use std::fmt;
use std::str::FromStr;

/// How the key/value cache stores each key and value: every earlier position's are read again
/// at each generated token, so their size sets both the cache's memory and how much slower a
/// token gets as the context grows.
///
/// ```no_run
/// use agentry_local::{CachePrecision, LocalModel, QWEN25_CODER_1_5B};
/// # fn demo() -> Result<(), agentry_local::Error> {
/// // Half the cache's memory and reading, for long contexts.
/// let model = LocalModel::cached(&QWEN25_CODER_1_5B)?
///     .cache_precision(CachePrecision::F16)
///     .load()?;
/// # Ok(()) }
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum CachePrecision {
    /// 32-bit floats, exactly as computed (the default): the outputs are the reference
    /// implementation's, bit for bit. 56 KiB a position for Qwen2.5-Coder-1.5B.
    #[default]
    F32,
    /// 16-bit floats (IEEE half precision, as llama.cpp's default cache), rounded to nearest
    /// when written: half the memory and half the reading per token. The outputs' last bits
    /// change, and with them, now and then, a greedy choice between two near-equal tokens
    /// (on the pinned prompt, the default model's 48 greedy tokens hold; SmolLM2-135M's
    /// take another turn in their third sentence).
    F16,
}

impl CachePrecision {
    /// Its name: `f32` or `f16`.
    pub fn as_str(self) -> &'static str {
        match self {
            CachePrecision::F32 => "f32",
            CachePrecision::F16 => "f16",
        }
    }
}

impl fmt::Display for CachePrecision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A name that is neither `f32` nor `f16`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "`{0}` is not a cache precision: use `f32` (the default, exact) or `f16` (half the memory)"
)]
pub struct UnknownPrecision(pub String);

impl FromStr for CachePrecision {
    type Err = UnknownPrecision;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        match name.trim().to_ascii_lowercase().as_str() {
            "f32" => Ok(CachePrecision::F32),
            "f16" => Ok(CachePrecision::F16),
            _ => Err(UnknownPrecision(name.to_owned())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_read_back_and_unknown_ones_say_what_to_use() {
        for precision in [CachePrecision::F32, CachePrecision::F16] {
            assert_eq!(precision.to_string().parse(), Ok(precision));
        }
        assert_eq!(" F16 ".parse(), Ok(CachePrecision::F16));
        let error = "q8".parse::<CachePrecision>().unwrap_err().to_string();
        assert!(error.contains("`q8`") && error.contains("`f16`"), "{error}");
    }
}
