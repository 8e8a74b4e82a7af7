//! A GGUF file opened: its architecture, its weights on the CPU, and the metadata the tokenizer
//! and chat template are built from.

use crate::transformer::Transformer;
use crate::{CachePrecision, Error};
use candle_core::quantized::gguf_file;
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

/// A GGUF file, loaded.
pub(crate) struct Gguf {
    /// The architecture named in the file (`general.architecture`).
    pub(crate) architecture: String,
    /// The transformer.
    pub(crate) transformer: Transformer,
    /// The file's metadata.
    pub(crate) metadata: std::collections::HashMap<String, gguf_file::Value>,
}

/// Loads the GGUF file at `path` onto the CPU, reporting progress as its bytes are read, with
/// room for `context` positions at most (the model's own limit when `None`) stored as
/// `precision` says, computing on `threads` threads.
pub(crate) fn load(
    path: &Path,
    context: Option<usize>,
    precision: CachePrecision,
    threads: usize,
    progress: &mut dyn FnMut(LoadProgress),
) -> Result<Gguf, Error> {
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
    let transformer = Transformer::read(
        &architecture,
        &content,
        &mut reader,
        context,
        precision,
        threads,
    )
    .map_err(fail)?;
    (reader.progress)(LoadProgress {
        bytes: total,
        total,
    });
    Ok(Gguf {
        architecture,
        transformer,
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
