//! Products of quantized weight matrices with a few rows of activations, split across a thread
//! pool by rows of the weights.
//!
//! The activations are quantized once per product into the format the weights' dot product
//! takes (GGML's `Q8_K` for K-quants, `Q8_0`/`Q8_1` for the older formats), then every weight
//! row is dotted with every activation row while it is in cache. On x86-64 CPUs with
//! AVX512-VNNI or AVX2, `Q4_K` and `Q6_K` weights go to this crate's own kernels; every other
//! case to candle's dot products.

#[cfg(target_arch = "x86_64")]
use super::tensor::{Blocks, Tiles, cast, cast_mut};
use super::tensor::{Matrix, Storage, with_blocks};
use candle_core::quantized::k_quants::{BlockQ8_0, BlockQ8_1, BlockQ8K, GgmlType};
use half::f16;
use rayon::prelude::*;

/// Activations (`rows` × `cols`), with their quantized forms made as the weights need them.
#[derive(Default)]
pub(crate) struct Input {
    rows: usize,
    cols: usize,
    values: Vec<f32>,
    q8k: Quantized<BlockQ8K>,
    q8_0: Quantized<BlockQ8_0>,
    q8_1: Quantized<BlockQ8_1>,
    f16: Quantized<f16>,
}

/// One quantized form of the activations, and whether it is of the current values.
struct Quantized<T> {
    blocks: Vec<T>,
    current: bool,
}

impl<T> Default for Quantized<T> {
    fn default() -> Self {
        Quantized {
            blocks: Vec::new(),
            current: false,
        }
    }
}

/// A format activations are quantized into for a weight format's dot product.
pub(crate) trait DotInput: GgmlType {
    /// Where `input` keeps this form.
    fn slot(input: &Input) -> &[Self];
    /// Makes this form of `input`'s values, unless it is current.
    fn prepare(input: &mut Input);
}

macro_rules! dot_input {
    ($t:ty, $field:ident) => {
        dot_input!($t, $field, <$t>::from_float);
    };
    ($t:ty, $field:ident, $quantize:expr) => {
        impl DotInput for $t {
            fn slot(input: &Input) -> &[Self] {
                debug_assert!(input.$field.current);
                &input.$field.blocks
            }
            fn prepare(input: &mut Input) {
                if input.$field.current {
                    return;
                }
                let per_row = input.cols / <$t>::BLCK_SIZE;
                let blocks = &mut input.$field.blocks;
                blocks.clear();
                blocks.resize_with(input.rows * per_row, <$t>::zeros);
                // Row by row on the pool: a prompt's rows are quantized in parallel.
                blocks
                    .par_chunks_mut(per_row)
                    .zip(input.values.par_chunks(input.cols))
                    .for_each(|(blocks, values)| $quantize(values, blocks));
                input.$field.current = true;
            }
        }
    };
}
dot_input!(BlockQ8K, q8k, quantize_q8k);
dot_input!(BlockQ8_0, q8_0);
dot_input!(BlockQ8_1, q8_1);
dot_input!(f16, f16);

/// `Q8_K` activations: on AVX2, this crate's vector code (`quantize_x86.rs`, the same bits);
/// elsewhere, candle's.
fn quantize_q8k(values: &[f32], blocks: &mut [BlockQ8K]) {
    #[cfg(target_arch = "x86_64")]
    if super::quantize_x86::available() {
        // SAFETY: `available` found AVX2.
        return unsafe { super::quantize_x86::quantize_q8k(values, cast_mut(blocks)) };
    }
    BlockQ8K::from_float(values, blocks)
}

impl DotInput for f32 {
    fn slot(input: &Input) -> &[Self] {
        &input.values
    }
    fn prepare(_: &mut Input) {}
}

impl Input {
    /// Takes `rows` rows of `cols` activations.
    pub(crate) fn set(&mut self, values: &[f32], rows: usize, cols: usize) {
        debug_assert_eq!(values.len(), rows * cols);
        self.rows = rows;
        self.cols = cols;
        self.values.clear();
        self.values.extend_from_slice(values);
        self.q8k.current = false;
        self.q8_0.current = false;
        self.q8_1.current = false;
        self.f16.current = false;
    }

    /// Makes the quantized form `matrix`'s dot product takes.
    fn prepare_for(&mut self, matrix: &Matrix) {
        fn prepare<T: GgmlType>(_: &[T], input: &mut Input)
        where
            T::VecDotType: DotInput,
        {
            T::VecDotType::prepare(input)
        }
        match &matrix.storage {
            Storage::Gguf(blocks) => with_blocks!(blocks, blocks => prepare(blocks, self)),
            #[cfg(target_arch = "x86_64")]
            Storage::Tiles(_) => BlockQ8K::prepare(self),
        }
    }
}

/// One product to compute: `out` (`input rows` × `matrix.rows`, row-major) = input · matrixᵀ.
pub(crate) struct Product<'a> {
    pub(crate) matrix: &'a Matrix,
    pub(crate) out: &'a mut [f32],
}

/// A range of one product's weight rows, computed by one task.
#[derive(Clone, Copy)]
struct Job {
    product: usize,
    start: usize,
    end: usize,
}

/// Buffers products reuse from call to call.
#[derive(Default)]
pub(crate) struct Workspace {
    jobs: Vec<Job>,
    /// Per-job results when several activation rows are multiplied (each job's rows together).
    scratch: Vec<f32>,
}

/// A raw pointer to output that tasks write disjoint ranges of.
#[derive(Clone, Copy)]
struct Out(*mut f32);
// SAFETY: tasks write only the disjoint ranges their jobs name (see `multiply`).
unsafe impl Send for Out {}
unsafe impl Sync for Out {}

/// Computes every product of `input` with the matrices of `products` in one parallel section
/// on the current rayon pool.
pub(crate) fn multiply(input: &mut Input, products: &mut [Product<'_>], work: &mut Workspace) {
    let m = input.rows;
    for product in products.iter() {
        debug_assert_eq!(product.matrix.cols, input.cols);
        debug_assert_eq!(product.out.len(), m * product.matrix.rows);
        input.prepare_for(product.matrix);
    }
    let threads = rayon::current_num_threads().max(1);
    work.jobs.clear();
    let mut total_rows = 0;
    for (index, product) in products.iter().enumerate() {
        let rows = product.matrix.rows;
        total_rows += rows;
        let chunk = rows.div_ceil(threads * 4).next_multiple_of(16).max(16);
        let mut start = 0;
        while start < rows {
            let end = (start + chunk).min(rows);
            work.jobs.push(Job {
                product: index,
                start,
                end,
            });
            start = end;
        }
    }
    // One activation row: each job writes its rows of the output directly. Several: each job
    // writes its own block of the scratch (`m` × its rows), gathered into the outputs after.
    let mut bases = [Out(std::ptr::null_mut()); 8];
    let mut offsets = [0usize; 8];
    assert!(
        products.len() <= bases.len(),
        "at most 8 products per section"
    );
    if m == 1 {
        for (base, product) in bases.iter_mut().zip(products.iter_mut()) {
            *base = Out(product.out.as_mut_ptr());
        }
    } else {
        work.scratch.resize(m * total_rows, 0.0);
        let scratch = work.scratch.as_mut_ptr();
        let mut offset = 0;
        for (i, product) in products.iter().enumerate() {
            offsets[i] = offset;
            // SAFETY: `offset` stays within the scratch, sized `m` × all products' rows.
            bases[i] = Out(unsafe { scratch.add(offset) });
            offset += m * product.matrix.rows;
        }
    }
    let input = &*input;
    let mut matrices: [Option<&Matrix>; 8] = [None; 8];
    for (slot, product) in matrices.iter_mut().zip(products.iter()) {
        *slot = Some(product.matrix);
    }
    work.jobs.par_iter().for_each(|job| {
        let base = bases[job.product];
        let rows = job.end - job.start;
        // SAFETY: jobs cover disjoint row ranges of each product, so the ranges below are
        // disjoint: output rows `start..end` with one activation row, or the scratch block
        // `m * start .. m * end` of the product with several; both lie inside their buffers.
        let out = unsafe {
            let at = if m == 1 { job.start } else { m * job.start };
            std::slice::from_raw_parts_mut(base.0.add(at), m * rows)
        };
        if let Some(matrix) = matrices[job.product] {
            rows_of(matrix, job.start..job.end, input, out);
        }
    });
    if m > 1 {
        for (i, product) in products.iter_mut().enumerate() {
            gather(&work.jobs, i, &work.scratch[offsets[i]..], m, product);
        }
    }
}

/// Copies the blocks the jobs of product `index` wrote into its row-major output.
fn gather(jobs: &[Job], index: usize, scratch: &[f32], m: usize, product: &mut Product<'_>) {
    let n = product.matrix.rows;
    for job in jobs.iter().filter(|j| j.product == index) {
        let rows = job.end - job.start;
        let block = &scratch[m * job.start..m * job.end];
        for t in 0..m {
            product.out[t * n + job.start..t * n + job.end]
                .copy_from_slice(&block[t * rows..(t + 1) * rows]);
        }
    }
}

/// `out[t * rows.len() + r]` = activation row `t` · weight row `rows.start + r`.
fn rows_of(matrix: &Matrix, rows: std::ops::Range<usize>, input: &Input, out: &mut [f32]) {
    let blocks = match &matrix.storage {
        Storage::Gguf(blocks) => blocks,
        #[cfg(target_arch = "x86_64")]
        Storage::Tiles(tiles) => return tiles_of(tiles, matrix.cols, rows, input, out),
    };
    #[cfg(target_arch = "x86_64")]
    if let Some(kernels) = KQuantKernels::here() {
        use super::kernel_x86::QK_K;
        let per_row = matrix.cols / QK_K;
        let weights = rows.start * per_row..rows.end * per_row;
        match blocks {
            Blocks::Q4K(w) => {
                let (w, x) = (cast(&w[weights]), cast(BlockQ8K::slot(input)));
                // SAFETY: `here` found the kernels' features on this CPU.
                return unsafe { (kernels.q4k)(w, x, per_row, out, rows.len()) };
            }
            Blocks::Q6K(w) => {
                let (w, x) = (cast(&w[weights]), cast(BlockQ8K::slot(input)));
                // SAFETY: as above.
                return unsafe { (kernels.q6k)(w, x, per_row, out, rows.len()) };
            }
            _ => {}
        }
    }
    with_blocks!(blocks, blocks => dot_rows(blocks, matrix.cols, rows, input, out))
}

/// The `Q4_K` and `Q6_K` kernels for this CPU: AVX-512 VNNI, else AVX2.
#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy)]
struct KQuantKernels {
    q4k: KQuantProduct<super::kernel_x86::BlockQ4K>,
    q6k: KQuantProduct<super::kernel_x86::BlockQ6K>,
}

/// A kernel's matrix product (see [`super::kernel_x86::gemm_q4k`]).
#[cfg(target_arch = "x86_64")]
type KQuantProduct<W> = unsafe fn(&[W], &[super::kernel_x86::BlockQ8K], usize, &mut [f32], usize);

#[cfg(target_arch = "x86_64")]
impl KQuantKernels {
    /// The widest kernels this CPU has, if any (checked once).
    fn here() -> Option<KQuantKernels> {
        use super::{kernel_avx2, kernel_x86};
        static HERE: std::sync::OnceLock<Option<KQuantKernels>> = std::sync::OnceLock::new();
        *HERE.get_or_init(|| {
            if kernel_x86::available() {
                Some(KQuantKernels {
                    q4k: kernel_x86::gemm_q4k,
                    q6k: kernel_x86::gemm_q6k,
                })
            } else if kernel_avx2::available() {
                Some(KQuantKernels {
                    q4k: kernel_avx2::gemm_q4k,
                    q6k: kernel_avx2::gemm_q6k,
                })
            } else {
                None
            }
        })
    }
}

/// [`rows_of`] for repacked weights (`rows` start and end on whole tiles).
#[cfg(target_arch = "x86_64")]
fn tiles_of(
    tiles: &Tiles,
    cols: usize,
    rows: std::ops::Range<usize>,
    input: &Input,
    out: &mut [f32],
) {
    use super::kernel_x86::QK_K;
    use super::packed_x86::{TILE_ROWS, gemm_packed_q4k, gemm_packed_q6k};
    let per_row = cols / QK_K;
    let span = rows.start / TILE_ROWS * per_row..rows.end.div_ceil(TILE_ROWS) * per_row;
    let x = cast(BlockQ8K::slot(input));
    match tiles {
        // SAFETY: tiles exist only where the kernels are available (`Matrix::packed`).
        Tiles::Q4K(t) => unsafe { gemm_packed_q4k(&t[span], x, per_row, out, rows.len()) },
        // SAFETY: as above.
        Tiles::Q6K(t) => unsafe { gemm_packed_q6k(&t[span], x, per_row, out, rows.len()) },
    }
}

/// The portable path: candle's dot product of each weight row with each activation row.
fn dot_rows<T: GgmlType>(
    weights: &[T],
    cols: usize,
    rows: std::ops::Range<usize>,
    input: &Input,
    out: &mut [f32],
) where
    T::VecDotType: DotInput,
{
    let per_row = cols / T::BLCK_SIZE;
    let x = T::VecDotType::slot(input);
    let n = rows.len();
    let m = x.len() / per_row;
    for (r, row) in rows.enumerate() {
        let w = &weights[row * per_row..(row + 1) * per_row];
        for t in 0..m {
            out[t * n + r] = T::vec_dot(cols, w, &x[t * per_row..(t + 1) * per_row]);
        }
    }
}
