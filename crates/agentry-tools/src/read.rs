//! `Read`: a file's lines, numbered like `cat -n`.

use crate::blocking::blocking;
use crate::{Error, Workspace, files};
use agentry_core::{StructTool, ToolCtx, ToolFailure};
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
/// `offset` and `limit`, and no call returns more). Binary files are refused.
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
}

impl Read {
    /// The default line limit of one call.
    pub const DEFAULT_MAX_LINES: u64 = 2000;
    /// The default character limit of one line.
    pub const DEFAULT_MAX_LINE_CHARS: usize = 2000;
    /// The default byte limit of one call.
    pub const DEFAULT_MAX_BYTES: u64 = 256 * 1024;

    /// `Read` confined to `workspace`, with the default caps.
    pub fn new(workspace: &Workspace) -> Self {
        Read {
            ws: workspace.clone(),
            caps: Caps {
                lines: Self::DEFAULT_MAX_LINES,
                line_chars: Self::DEFAULT_MAX_LINE_CHARS,
                bytes: Self::DEFAULT_MAX_BYTES,
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

    /// Whether each call waits for a person's approval (default: no).
    pub fn approval(mut self, needed: bool) -> Self {
        self.approval = needed;
        self
    }
}

impl StructTool for Read {
    type Input = ReadInput;
    type Output = String;
    const NAME: &'static str = "Read";
    const DESCRIPTION: &'static str = "Reads a text file in the workspace. Lines come numbered \
        (line number, a tab, the line). Reads up to the line limit from the start; for a large \
        file give `offset` (the first line, 1-based) and `limit` (how many lines). Paths are \
        relative to the workspace root or absolute inside it.";

    async fn run(&self, input: ReadInput, _ctx: ToolCtx) -> Result<String, ToolFailure> {
        let ws = self.ws.clone();
        let caps = self.caps;
        blocking(move |_| read(&ws, &input, caps)).await
    }

    fn needs_approval(&self) -> bool {
        self.approval
    }
}

/// Reads the lines `input` asks for.
fn read(ws: &Workspace, input: &ReadInput, caps: Caps) -> Result<String, Error> {
    let (file, path) = files::open_read(ws, &input.file_path)?;
    let size = file
        .metadata()
        .map_err(|e| Error::io("read", &path, e))?
        .len();
    let whole = input.offset.is_none() && input.limit.is_none();
    if whole && size > caps.bytes {
        return Err(Error::Input(format!(
            "`{}` is {size} bytes, more than the {} bytes Read returns at once; read a part with `offset` and `limit`, or search it with Grep",
            ws.show(&path),
            caps.bytes
        )));
    }
    let first = input.offset.unwrap_or(1).max(1);
    let count = input.limit.unwrap_or(caps.lines).clamp(1, caps.lines);
    let mut reader = BufReader::new(file);
    // A NUL byte in the first block says binary, as grep and git judge it.
    let head = reader.fill_buf().map_err(|e| Error::io("read", &path, e))?;
    if head.contains(&0) {
        return Err(Error::Input(format!(
            "`{}` is a binary file; Read shows text files only",
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
        return Ok(format!("(`{}` is empty)", ws.show(&path)));
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
    Ok(out)
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
