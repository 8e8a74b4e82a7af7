//! A GGUF file opened: its architecture, its weights on the CPU, and the metadata the tokenizer
//! and chat template are built from.

use crate::Error;
use candle_core::quantized::gguf_file;
use candle_core::{Device, Tensor};
use candle_transformers::models::{quantized_llama, quantized_qwen2};
use std::fs::File;
use std::io::{self, BufReader, Read, Seek, SeekFrom};
use std::path::Path;

/// How far loading has got: bytes of the file read so far.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LoadProgress {
    /// Bytes read.
    pub bytes: u64,
    /// The size of the file.
    pub total: u64,
}

/// The transformer of a supported architecture.
pub(crate) enum Weights {
    /// `llama` (SmolLM2, Llama, Mistral-style models).
    Llama(quantized_llama::ModelWeights),
    /// `qwen2` (Qwen2 and Qwen2.5).
    Qwen2(quantized_qwen2::ModelWeights),
}

impl Weights {
    /// Runs `tokens` (shape `[1, n]`) at position `pos`; the logits of the last one.
    pub(crate) fn forward(&mut self, tokens: &Tensor, pos: usize) -> candle_core::Result<Tensor> {
        match self {
            Weights::Llama(m) => m.forward(tokens, pos),
            Weights::Qwen2(m) => m.forward(tokens, pos),
        }
    }

    /// Forgets every cached key and value.
    pub(crate) fn clear_cache(&mut self) {
        match self {
            Weights::Llama(m) => m.clear_kv_cache(),
            Weights::Qwen2(m) => m.clear_kv_cache(),
        }
    }
}

/// A GGUF file, loaded.
pub(crate) struct Gguf {
    /// The architecture named in the file (`general.architecture`).
    pub(crate) architecture: String,
    /// The transformer.
    pub(crate) weights: Weights,
    /// The most positions the model (as run here) can attend to.
    pub(crate) context_length: usize,
    /// The file's metadata.
    pub(crate) metadata: std::collections::HashMap<String, gguf_file::Value>,
}

/// Loads the GGUF file at `path` onto the CPU, reporting progress as its bytes are read.
pub(crate) fn load(path: &Path, progress: &mut dyn FnMut(LoadProgress)) -> Result<Gguf, Error> {
    let fail = |reason: String| Error::Load {
        path: path.to_owned(),
        reason,
    };
    let file = File::open(path).map_err(|e| Error::io("cannot open", path, e))?;
    let total = file
        .metadata()
        .map_err(|e| Error::io("cannot read", path, e))?
        .len();
    let mut reader = ProgressReader {
        inner: BufReader::with_capacity(1 << 20, file),
        read: 0,
        total,
        reported: 0,
        progress,
    };
    let content = gguf_file::Content::read(&mut reader)
        .map_err(|e| fail(format!("it is not a readable GGUF file ({e})")))?;
    let metadata = content.metadata.clone();
    let architecture = metadata
        .get("general.architecture")
        .and_then(|v| v.to_string().ok())
        .cloned()
        .ok_or_else(|| fail("its metadata names no architecture".into()))?;
    let declared = metadata
        .get(&format!("{architecture}.context_length"))
        .and_then(|v| v.to_u32().ok())
        .map_or(4096, |n| n as usize);
    let device = Device::Cpu;
    let (weights, context_length) = match architecture.as_str() {
        "llama" => {
            let w = quantized_llama::ModelWeights::from_gguf(content, &mut reader, &device);
            let limit = declared.min(quantized_llama::MAX_SEQ_LEN);
            (w.map(Weights::Llama), limit)
        }
        "qwen2" => {
            let w = quantized_qwen2::ModelWeights::from_gguf(content, &mut reader, &device);
            (w.map(Weights::Qwen2), declared)
        }
        other => {
            return Err(fail(format!(
                "its architecture `{other}` is not supported (supported: llama, qwen2)"
            )));
        }
    };
    let weights = weights.map_err(|e| fail(format!("its weights cannot be read ({e})")))?;
    (reader.progress)(LoadProgress {
        bytes: total,
        total,
    });
    Ok(Gguf {
        architecture,
        weights,
        context_length,
        metadata,
    })
}

/// A reader that reports how many bytes it has read.
struct ProgressReader<'a, R> {
    inner: R,
    read: u64,
    total: u64,
    reported: u64,
    progress: &'a mut dyn FnMut(LoadProgress),
}

impl<R: Read> Read for ProgressReader<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read += n as u64;
        // Report at most every 1% (or 8 MiB) of progress.
        if self.read >= self.reported + (self.total / 100).max(8 << 20) {
            self.reported = self.read;
            (self.progress)(LoadProgress {
                bytes: self.read.min(self.total),
                total: self.total,
            });
        }
        Ok(n)
    }
}

impl<R: Seek> Seek for ProgressReader<'_, R> {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        self.inner.seek(to)
    }

    // Not the default (a seek): asking a `BufReader` where it is must not drop its buffer.
    fn stream_position(&mut self) -> io::Result<u64> {
        self.inner.stream_position()
    }
}
