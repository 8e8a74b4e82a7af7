//! Which vectors the CPU has, for attention's loops.

/// The widest vectors the CPU has, for attention's loops.
#[derive(Clone, Copy, Debug)]
pub(super) enum Vectors {
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
pub(super) fn vectors() -> Vectors {
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
pub(super) fn every_vectors() -> Vec<Vectors> {
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
