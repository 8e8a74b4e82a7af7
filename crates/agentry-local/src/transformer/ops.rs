//! The element-wise parts of a transformer block: RMS norm, rotary embeddings, SiLU gating.

use super::config::RopeStyle;

/// `out = x / sqrt(mean(x²) + eps) * weight`, row by row (`weight.len()` wide).
pub(crate) fn rms_norm(x: &[f32], weight: &[f32], eps: f32, out: &mut [f32]) {
    let width = weight.len();
    for (row, out) in x.chunks_exact(width).zip(out.chunks_exact_mut(width)) {
        let mean = row.iter().map(|v| v * v).sum::<f32>() / width as f32;
        let scale = 1.0 / (mean + eps).sqrt();
        for ((o, v), w) in out.iter_mut().zip(row).zip(weight) {
            *o = v * scale * w;
        }
    }
}

/// `x += y`.
pub(crate) fn add(x: &mut [f32], y: &[f32]) {
    for (a, b) in x.iter_mut().zip(y) {
        *a += b;
    }
}

/// Adds `bias` to every row of `x`.
pub(crate) fn add_bias(x: &mut [f32], bias: &[f32]) {
    for row in x.chunks_exact_mut(bias.len()) {
        add(row, bias);
    }
}

/// `gate = silu(gate) * up`.
pub(crate) fn silu_gate(gate: &mut [f32], up: &[f32]) {
    for (g, u) in gate.iter_mut().zip(up) {
        *g = *g / (1.0 + (-*g).exp()) * u;
    }
}

/// The cosines and sines of rotary embeddings for a run of positions.
pub(crate) struct Rotary {
    style: RopeStyle,
    /// `1 / base^(2i / head_dim)` for each pair `i`.
    frequencies: Vec<f32>,
    /// `[position][pair]` for the positions of the current forward pass.
    cos: Vec<f32>,
    sin: Vec<f32>,
}

impl Rotary {
    /// Rotations for heads `head_dim` wide.
    pub(crate) fn new(style: RopeStyle, head_dim: usize, base: f32) -> Self {
        let frequencies = (0..head_dim)
            .step_by(2)
            .map(|i| 1.0 / base.powf(i as f32 / head_dim as f32))
            .collect();
        Rotary {
            style,
            frequencies,
            cos: Vec::new(),
            sin: Vec::new(),
        }
    }

    /// Prepares the angles of positions `start .. start + count`.
    pub(crate) fn positions(&mut self, start: usize, count: usize) {
        let pairs = self.frequencies.len();
        self.cos.resize(count * pairs, 0.0);
        self.sin.resize(count * pairs, 0.0);
        for t in 0..count {
            let position = (start + t) as f32;
            for (i, f) in self.frequencies.iter().enumerate() {
                let (sin, cos) = (position * f).sin_cos();
                self.cos[t * pairs + i] = cos;
                self.sin[t * pairs + i] = sin;
            }
        }
    }

    /// Rotates every head of every row of `x` (row `t` is the `t`-th prepared position).
    pub(crate) fn apply(&self, x: &mut [f32], heads: usize) {
        let pairs = self.frequencies.len();
        let head_dim = 2 * pairs;
        for (t, row) in x.chunks_exact_mut(heads * head_dim).enumerate() {
            let cos = &self.cos[t * pairs..(t + 1) * pairs];
            let sin = &self.sin[t * pairs..(t + 1) * pairs];
            for head in row.chunks_exact_mut(head_dim) {
                match self.style {
                    RopeStyle::Halves => {
                        let (a, b) = head.split_at_mut(pairs);
                        for i in 0..pairs {
                            let (x0, x1) = (a[i], b[i]);
                            a[i] = x0 * cos[i] - x1 * sin[i];
                            b[i] = x0 * sin[i] + x1 * cos[i];
                        }
                    }
                    RopeStyle::Interleaved => {
                        for (i, pair) in head.chunks_exact_mut(2).enumerate() {
                            let (x0, x1) = (pair[0], pair[1]);
                            pair[0] = x0 * cos[i] - x1 * sin[i];
                            pair[1] = x0 * sin[i] + x1 * cos[i];
                        }
                    }
                }
            }
        }
    }
}
