//! `Read`: a file's lines, numbered like `cat -n`; an image or a PDF as a part the model sees.

use crate::blocking::blocking;
use crate::{Error, Workspace, files};
use agentry_core::content::{Part, media_type_of};
use agentry_core::{Content, StructTool, ToolCtx, ToolFailure};
use schemars::JsonSchema;
use serde::Deserialize;
use std::io::{BufRead, BufReader};

/// The input of [`Read`], with Claude Code's field names.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
pub struct ReadInput {
    /// The file to read: a path relative to the workspace root, or absolute inside it.
    pub file_path: String,
    /// The line to start at (1 is the first line). Give it with `limit` to read a large file
    /// in parts.
    #[serde(default)]
    pub offset: Option<u64>,
    /// How many lines to read.
    #[serde(default)]
    pub limit: Option<u64>,
}

/// Reads a file of the workspace, its lines numbered as `cat -n` does (the number right-aligned
/// in six columns, a tab, the line), as Claude Code's `Read` does.
///
/// Caps: lines per call (default 2,000), characters per line (default 2,000; longer lines are
/// cut with a marker), and bytes (default 256 KiB: a larger file must be read in parts with
/// `offset` and `limit`, and no call returns more).
///
/// An image (PNG, JPEG, GIF, WebP) or a PDF, told by its bytes, comes back as an image or a
/// document part the model sees (as Claude Code's `Read` does), up to
/// [`max_media_bytes`](Self::max_media_bytes) (default 20 MiB). Other binary files are refused.
#[derive(Clone, Debug)]
pub struct Read {
    ws: Workspace,
    caps: Caps,
    approval: bool,
}

/// The limits of one read.
#[derive(Clone, Copy, Debug)]
struct Caps {
    lines: u64,
    line_chars: usize,
    bytes: u64,
    media_bytes: u64,
}

impl Read {
    /// The default line limit of one call.
    pub const DEFAULT_MAX_LINES: u64 = 2000;
    /// The default character limit of one line.
    pub const DEFAULT_MAX_LINE_CHARS: usize = 2000;
    /// The default byte limit of one call.
    pub const DEFAULT_MAX_BYTES: u64 = 256 * 1024;
    /// The default size limit of an image or a PDF returned as a part.
    pub const DEFAULT_MAX_MEDIA_BYTES: u64 = 20 * 1024 * 1024;

    /// `Read` confined to `workspace`, with the default caps.
    pub fn new(workspace: &Workspace) -> Self {
        Read {
            ws: workspace.clone(),
            caps: Caps {
                lines: Self::DEFAULT_MAX_LINES,
                line_chars: Self::DEFAULT_MAX_LINE_CHARS,
                bytes: Self::DEFAULT_MAX_BYTES,
                media_bytes: Self::DEFAULT_MAX_MEDIA_BYTES,
            },
            approval: false,
        }
    }

    /// The most lines one call returns (also when `limit` asks for more).
    pub fn max_lines(mut self, lines: u64) -> Self {
        self.caps.lines = lines.max(1);
        self
    }

    /// The most characters shown of one line; the rest is cut with a marker.
    pub fn max_line_chars(mut self, chars: usize) -> Self {
        self.caps.line_chars = chars.max(1);
        self
    }

    /// The most bytes one call returns; a larger file must be read in parts.
    pub fn max_bytes(mut self, bytes: u64) -> Self {
        self.caps.bytes = bytes.max(1);
        self
    }

    /// The largest image or PDF returned as a part; a larger one is refused with its size.
    pub fn max_media_bytes(mut self, bytes: u64) -> Self {
        self.caps.media_bytes = bytes.max(1);
        self
    }

    /// Whether each call waits for a person's approval (default: no).
    pub fn approval(mut self, needed: bool) -> Self {
        self.approval = needed;
        self
    }
}

impl StructTool for Read {
    type Input = ReadInput;
    type Output = Content;
    const NAME: &'static str = "Read";
    const DESCRIPTION: &'static str = "Reads a file in the workspace. Lines of a text file come \
        numbered (line number, a tab, the line). Reads up to the line limit from the start; for \
        a large file give `offset` (the first line, 1-based) and `limit` (how many lines). An \
        image (PNG, JPEG, GIF, WebP) or a PDF is shown to you as it is. Paths are relative to \
        the workspace root or absolute inside it.";

    async fn run(&self, input: ReadInput, _ctx: ToolCtx) -> Result<Content, ToolFailure> {
        let ws = self.ws.clone();
        let caps = self.caps;
        blocking(move |_| read(&ws, &input, caps)).await
    }

    fn needs_approval(&self) -> bool {
        self.approval
    }
}

/// Reads the lines `input` asks for, or the image or PDF the file is.
fn read(ws: &Workspace, input: &ReadInput, caps: Caps) -> Result<Content, Error> {
    let (file, path) = files::open_read(ws, &input.file_path)?;
    let size = file
        .metadata()
        .map_err(|e| Error::io("read", &path, e))?
        .len();
    let whole = input.offset.is_none() && input.limit.is_none();
    let first = input.offset.unwrap_or(1).max(1);
    let count = input.limit.unwrap_or(caps.lines).clamp(1, caps.lines);
    let mut reader = BufReader::new(file);
    let head = reader.fill_buf().map_err(|e| Error::io("read", &path, e))?;
    let media_type = media_type_of(head, None);
    if matches!(
        media_type,
        "image/png" | "image/jpeg" | "image/gif" | "image/webp" | "application/pdf"
    ) {
        if size > caps.media_bytes {
            return Err(Error::Input(format!(
                "`{}` is a {media_type} file of {size} bytes, more than the {} bytes Read attaches",
                ws.show(&path),
                caps.media_bytes
            )));
        }
        let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
        std::io::Read::read_to_end(&mut reader, &mut bytes)
            .map_err(|e| Error::io("read", &path, e))?;
        return Ok(Part::from_file_bytes(bytes, &ws.show(&path)).into());
    }
    if whole && size > caps.bytes {
        return Err(Error::Input(format!(
            "`{}` is {size} bytes, more than the {} bytes Read returns at once; read a part with `offset` and `limit`, or search it with Grep",
            ws.show(&path),
            caps.bytes
        )));
    }
    // A NUL byte in the first block says binary, as grep and git judge it.
    if head.contains(&0) {
        return Err(Error::Input(format!(
            "`{}` is a binary file; Read shows text files, images (PNG, JPEG, GIF, WebP) and PDFs",
            ws.show(&path)
        )));
    }
    let mut out = String::new();
    let mut line = Vec::new();
    let mut number = 0u64;
    let mut more = false;
    let mut cut_bytes = false;
    loop {
        line.clear();
        let n = reader
            .read_until(b'\n', &mut line)
            .map_err(|e| Error::io("read", &path, e))?;
        if n == 0 {
            break;
        }
        number += 1;
        if number < first {
            continue;
        }
        if number >= first + count {
            more = true;
            number -= 1;
            break;
        }
        let text = String::from_utf8_lossy(&line);
        let text = text.trim_end_matches(['\n', '\r']);
        let shown = cut_line(text, caps.line_chars);
        let entry = format!("{number:>6}\t{shown}\n");
        if (out.len() + entry.len()) as u64 > caps.bytes {
            more = true;
            cut_bytes = true;
            number -= 1;
            break;
        }
        out.push_str(&entry);
    }
    if number == 0 {
        return Ok(format!("(`{}` is empty)", ws.show(&path)).into());
    }
    if number < first {
        return Err(Error::Input(format!(
            "`{}` has {number} lines; offset {first} is past its end",
            ws.show(&path)
        )));
    }
    if more {
        let why = if cut_bytes {
            format!("the {}-byte limit of one read", caps.bytes)
        } else {
            "the line limit".to_string()
        };
        out.push_str(&format!(
            "[stopped at line {number} ({why}); more lines follow: read on with offset={}]\n",
            number + 1
        ));
    }
    Ok(out.into())
}

/// `line`, cut to `max` characters with a marker saying how many were left out.
pub(crate) fn cut_line(line: &str, max: usize) -> std::borrow::Cow<'_, str> {
    match line.char_indices().nth(max) {
        None => line.into(),
        Some((at, _)) => {
            let left = line[at..].chars().count();
            format!("{}… [{left} more characters cut]", &line[..at]).into()
        }
    }
}
