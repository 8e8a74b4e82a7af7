//! The number formats the cache stores.

use half::f16;
use half::slice::{HalfBitsSliceExt, HalfFloatSliceExt};

/// A number format the cache stores: `f32`, or an `f16` kept as its bits (a `u16`, whose
/// zeroed reservation the system maps only as it is written, like `f32`'s).
pub(in crate::transformer) trait Stored:
    Copy + Send + Sync + 'static
{
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
