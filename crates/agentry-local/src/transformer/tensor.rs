//! Weights as stored in a GGUF file: quantized matrices kept in their file format (GGML's
//! blocks, never expanded to `f32`; `Q4_K` and `Q6_K` repacked, at the same size, for the
//! AVX512-VNNI kernels where the CPU has them), and the small `f32` vectors of norms and
//! biases.

#[cfg(target_arch = "x86_64")]
use super::{
    kernel_x86,
    kernel_x86::QK_K,
    packed_x86,
    packed_x86::{TileQ4K, TileQ6K},
};
use candle_core::quantized::GgmlDType;
use candle_core::quantized::gguf_file::{Content, TensorInfo};
use candle_core::quantized::k_quants::{
    BlockQ2K, BlockQ3K, BlockQ4_0, BlockQ4_1, BlockQ4K, BlockQ5_0, BlockQ5_1, BlockQ5K, BlockQ6K,
    BlockQ8_0, GgmlType,
};
use half::f16;
use std::io::{self, Read, Seek, SeekFrom};

/// A matrix's blocks in one of the formats GGUF files use.
pub(crate) enum Blocks {
    F32(Vec<f32>),
    F16(Vec<f16>),
    Q4_0(Vec<BlockQ4_0>),
    Q4_1(Vec<BlockQ4_1>),
    Q5_0(Vec<BlockQ5_0>),
    Q5_1(Vec<BlockQ5_1>),
    Q8_0(Vec<BlockQ8_0>),
    Q2K(Vec<BlockQ2K>),
    Q3K(Vec<BlockQ3K>),
    Q4K(Vec<BlockQ4K>),
    Q5K(Vec<BlockQ5K>),
    Q6K(Vec<BlockQ6K>),
}

/// Runs `$body` with `$blocks` bound to the typed block slice of `$matrix`, whatever its format.
macro_rules! with_blocks {
    ($matrix:expr, $blocks:ident => $body:expr) => {
        match &$matrix {
            $crate::transformer::tensor::Blocks::F32($blocks) => $body,
            $crate::transformer::tensor::Blocks::F16($blocks) => $body,
            $crate::transformer::tensor::Blocks::Q4_0($blocks) => $body,
            $crate::transformer::tensor::Blocks::Q4_1($blocks) => $body,
            $crate::transformer::tensor::Blocks::Q5_0($blocks) => $body,
            $crate::transformer::tensor::Blocks::Q5_1($blocks) => $body,
            $crate::transformer::tensor::Blocks::Q8_0($blocks) => $body,
            $crate::transformer::tensor::Blocks::Q2K($blocks) => $body,
            $crate::transformer::tensor::Blocks::Q3K($blocks) => $body,
            $crate::transformer::tensor::Blocks::Q4K($blocks) => $body,
            $crate::transformer::tensor::Blocks::Q5K($blocks) => $body,
            $crate::transformer::tensor::Blocks::Q6K($blocks) => $body,
        }
    };
}
pub(crate) use with_blocks;

/// A weight matrix of `rows` × `cols`.
pub(crate) struct Matrix {
    pub(crate) rows: usize,
    pub(crate) cols: usize,
    pub(crate) storage: Storage,
}

/// How a matrix's weights are laid out in memory.
pub(crate) enum Storage {
    /// As in the file: each row `cols / block size` consecutive blocks.
    Gguf(Blocks),
    /// `Q4_K` or `Q6_K` rows repacked sixteen at a time for the AVX512-VNNI kernels.
    #[cfg(target_arch = "x86_64")]
    Tiles(Tiles),
}

/// Repacked `Q4_K` or `Q6_K` weights, tiles ordered `[row tile][block]`.
#[cfg(target_arch = "x86_64")]
pub(crate) enum Tiles {
    Q4K(Vec<TileQ4K>),
    Q6K(Vec<TileQ6K>),
}

impl Matrix {
    /// Writes row `row` as `f32` into `out` (`cols` long): an embedding lookup.
    pub(crate) fn row_into(&self, row: usize, out: &mut [f32]) {
        match &self.storage {
            Storage::Gguf(blocks) => with_blocks!(blocks, blocks => {
                let per_row = self.cols / block_size_of(blocks);
                GgmlType::to_float(&blocks[row * per_row..(row + 1) * per_row], out);
            }),
            #[cfg(target_arch = "x86_64")]
            Storage::Tiles(tiles) => {
                let per_row = self.cols / QK_K;
                match tiles {
                    Tiles::Q4K(tiles) => {
                        let mut blocks = vec![BlockQ4K::zeros(); per_row];
                        packed_x86::unpack_row_q4k(tiles, per_row, row, cast_mut(&mut blocks));
                        BlockQ4K::to_float(&blocks, out);
                    }
                    Tiles::Q6K(tiles) => {
                        let mut blocks = vec![BlockQ6K::zeros(); per_row];
                        packed_x86::unpack_row_q6k(tiles, per_row, row, cast_mut(&mut blocks));
                        BlockQ6K::to_float(&blocks, out);
                    }
                }
            }
        }
    }

    /// The matrix with `Q4_K` and `Q6_K` weights repacked for this CPU's kernels, when it
    /// has them and the rows come in whole tiles; as it is otherwise.
    pub(crate) fn packed(self) -> Matrix {
        #[cfg(target_arch = "x86_64")]
        if kernel_x86::available() {
            let per_row = self.cols / QK_K;
            let tiles = match &self.storage {
                Storage::Gguf(Blocks::Q4K(blocks)) => {
                    packed_x86::pack_q4k(cast(blocks), per_row).map(Tiles::Q4K)
                }
                Storage::Gguf(Blocks::Q6K(blocks)) => {
                    packed_x86::pack_q6k(cast(blocks), per_row).map(Tiles::Q6K)
                }
                _ => None,
            };
            if let Some(tiles) = tiles {
                return Matrix {
                    storage: Storage::Tiles(tiles),
                    ..self
                };
            }
        }
        self
    }
}

/// The same blocks seen as another type with GGML's layout (candle's block types and the
/// kernels' mirrors of them, `repr(C)` both).
pub(crate) fn cast<T, U>(blocks: &[T]) -> &[U] {
    const {
        assert!(std::mem::size_of::<T>() == std::mem::size_of::<U>());
        assert!(std::mem::align_of::<T>() >= std::mem::align_of::<U>());
    }
    // SAFETY: both types are `repr(C)` plain data of the same size (checked above) mirroring
    // one GGML block layout, any bit pattern valid, and `T`'s alignment satisfies `U`'s.
    unsafe { std::slice::from_raw_parts(blocks.as_ptr().cast::<U>(), blocks.len()) }
}

/// [`cast`], for writing.
#[cfg(target_arch = "x86_64")]
pub(crate) fn cast_mut<T, U>(blocks: &mut [T]) -> &mut [U] {
    const {
        assert!(std::mem::size_of::<T>() == std::mem::size_of::<U>());
        assert!(std::mem::align_of::<T>() >= std::mem::align_of::<U>());
    }
    // SAFETY: as for `cast`; the slice is borrowed exclusively for the result's lifetime.
    unsafe { std::slice::from_raw_parts_mut(blocks.as_mut_ptr().cast::<U>(), blocks.len()) }
}

/// The number of values in one block of `blocks`' type.
pub(crate) fn block_size_of<T: GgmlType>(_: &[T]) -> usize {
    T::BLCK_SIZE
}

/// Reads the tensors of a GGUF file by name, in any order.
pub(crate) struct TensorReader<'a, R> {
    content: &'a Content,
    reader: &'a mut R,
}

impl<'a, R: Read + Seek> TensorReader<'a, R> {
    /// A reader over the tensors `content` lists, read from `reader`.
    pub(crate) fn new(content: &'a Content, reader: &'a mut R) -> Self {
        TensorReader { content, reader }
    }

    /// Whether the file has a tensor called `name`.
    pub(crate) fn has(&self, name: &str) -> bool {
        self.content.tensor_infos.contains_key(name)
    }

    fn info(&self, name: &str) -> Result<&'a TensorInfo, String> {
        self.content
            .tensor_infos
            .get(name)
            .ok_or_else(|| format!("it has no tensor `{name}`"))
    }

    /// The matrix `name`, expected to be `rows` × `cols`.
    pub(crate) fn matrix(
        &mut self,
        name: &str,
        rows: usize,
        cols: usize,
    ) -> Result<Matrix, String> {
        let info = self.info(name)?;
        let dims = info.shape.dims();
        if dims != [rows, cols] {
            return Err(format!(
                "its tensor `{name}` is {dims:?}, where the model's shape needs [{rows}, {cols}]"
            ));
        }
        let dtype = info.ggml_dtype;
        if !cols.is_multiple_of(dtype.block_size()) {
            return Err(format!(
                "its tensor `{name}` has rows of {cols} values, not a whole number of {dtype:?} \
                 blocks"
            ));
        }
        let count = rows * cols / dtype.block_size();
        self.seek(info)?;
        let reader = &mut *self.reader;
        let read = |e: io::Error| format!("its tensor `{name}` cannot be read ({e})");
        let blocks = match dtype {
            GgmlDType::F32 => Blocks::F32(read_blocks(reader, count).map_err(read)?),
            GgmlDType::F16 => Blocks::F16(read_blocks(reader, count).map_err(read)?),
            GgmlDType::Q4_0 => Blocks::Q4_0(read_blocks(reader, count).map_err(read)?),
            GgmlDType::Q4_1 => Blocks::Q4_1(read_blocks(reader, count).map_err(read)?),
            GgmlDType::Q5_0 => Blocks::Q5_0(read_blocks(reader, count).map_err(read)?),
            GgmlDType::Q5_1 => Blocks::Q5_1(read_blocks(reader, count).map_err(read)?),
            GgmlDType::Q8_0 => Blocks::Q8_0(read_blocks(reader, count).map_err(read)?),
            GgmlDType::Q2K => Blocks::Q2K(read_blocks(reader, count).map_err(read)?),
            GgmlDType::Q3K => Blocks::Q3K(read_blocks(reader, count).map_err(read)?),
            GgmlDType::Q4K => Blocks::Q4K(read_blocks(reader, count).map_err(read)?),
            GgmlDType::Q5K => Blocks::Q5K(read_blocks(reader, count).map_err(read)?),
            GgmlDType::Q6K => Blocks::Q6K(read_blocks(reader, count).map_err(read)?),
            other => {
                return Err(format!(
                    "its tensor `{name}` is stored as {other:?}, which is not supported"
                ));
            }
        };
        Ok(Matrix {
            rows,
            cols,
            storage: Storage::Gguf(blocks),
        }
        .packed())
    }

    /// The vector `name` (a norm's weights or a bias), `len` long, as `f32`.
    pub(crate) fn vector(&mut self, name: &str, len: usize) -> Result<Vec<f32>, String> {
        let info = self.info(name)?;
        let dims = info.shape.dims();
        if dims != [len] {
            return Err(format!(
                "its tensor `{name}` is {dims:?}, where the model's shape needs [{len}]"
            ));
        }
        self.seek(info)?;
        let read = |e: io::Error| format!("its tensor `{name}` cannot be read ({e})");
        match info.ggml_dtype {
            GgmlDType::F32 => read_blocks(self.reader, len).map_err(read),
            GgmlDType::F16 => {
                let halves: Vec<f16> = read_blocks(self.reader, len).map_err(read)?;
                Ok(halves.into_iter().map(f32::from).collect())
            }
            other => Err(format!(
                "its vector `{name}` is stored as {other:?}; only F32 and F16 are supported"
            )),
        }
    }

    fn seek(&mut self, info: &TensorInfo) -> Result<(), String> {
        let at = self.content.tensor_data_offset + info.offset;
        // Relative seeks within the buffer keep a buffered reader's buffer.
        let here = self
            .reader
            .stream_position()
            .map_err(|e| format!("it cannot be read ({e})"))?;
        self.reader
            .seek(SeekFrom::Current(at as i64 - here as i64))
            .map_err(|e| format!("it cannot be read ({e})"))?;
        Ok(())
    }
}

/// Reads `count` blocks of type `T`, stored as GGML lays them out, straight into their vector.
fn read_blocks<T: GgmlType>(reader: &mut impl Read, count: usize) -> io::Result<Vec<T>> {
    let mut blocks: Vec<T> = Vec::with_capacity(count);
    let bytes = count * std::mem::size_of::<T>();
    // SAFETY: GGML block types are `repr(C)` plain data (integers, floats and byte arrays, any
    // bit pattern valid), so their storage may be filled byte by byte; the capacity holds
    // `count` of them, and the length is set only once every byte has been written.
    unsafe {
        let raw = std::slice::from_raw_parts_mut(blocks.as_mut_ptr().cast::<u8>(), bytes);
        reader.read_exact(raw)?;
        blocks.set_len(count);
    }
    Ok(blocks)
}
