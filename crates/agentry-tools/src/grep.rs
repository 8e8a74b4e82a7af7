//! `Grep`: a regular expression searched in the workspace's files with ripgrep's engine.

use crate::blocking::{Cancelled, blocking};
use crate::glob::search_dir;
use crate::read::cut_line;
use crate::walk::{newest_first, walker};
use crate::{Error, Workspace};
use agentry_core::{StructTool, ToolCtx, ToolFailure};
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{
    BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkContextKind, SinkMatch,
};
use ignore::overrides::OverrideBuilder;
use ignore::types::TypesBuilder;
use schemars::JsonSchema;
use serde::Deserialize;
use std::path::{Path, PathBuf};

/// What a [`Grep`] call returns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[schemars(inline)]
pub enum OutputMode {
    /// The matching lines, `path:line:text` (context lines `path-line-text`).
    Content,
    /// The paths of the files with a match, newest first (the default).
    #[default]
    FilesWithMatches,
    /// How many lines match in each file, `path:count`.
    Count,
}

/// The input of [`Grep`], with Claude Code's field names (`-i`, `-n`, `-A`, `-B`, `-C`
/// included).
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
pub struct GrepInput {
    /// The regular expression (Rust regex syntax, as ripgrep's), e.g. `fn\s+main` or `TODO`.
    pub pattern: String,
    /// The file or directory to search (default: the workspace root).
    #[serde(default)]
    pub path: Option<String>,
    /// Only files whose path matches this glob, e.g. `*.rs` or `*.{ts,tsx}`.
    #[serde(default)]
    pub glob: Option<String>,
    /// Only files of this type, as ripgrep's `--type`: `rust`, `py`, `js`, `ts`, `go`, ...
    #[serde(default, rename = "type")]
    pub file_type: Option<String>,
    /// `content` (matching lines), `files_with_matches` (paths; the default) or `count`.
    #[serde(default)]
    pub output_mode: Option<OutputMode>,
    /// Case-insensitive search.
    #[serde(default, rename = "-i")]
    pub case_insensitive: Option<bool>,
    /// Show line numbers (content mode; default true).
    #[serde(default, rename = "-n")]
    pub line_numbers: Option<bool>,
    /// Lines to show after each match (content mode).
    #[serde(default, rename = "-A")]
    pub after: Option<u64>,
    /// Lines to show before each match (content mode).
    #[serde(default, rename = "-B")]
    pub before: Option<u64>,
    /// Lines to show before and after each match (content mode).
    #[serde(default, rename = "-C")]
    pub context: Option<u64>,
    /// Only the first N lines or entries of the result.
    #[serde(default)]
    pub head_limit: Option<usize>,
    /// Let the pattern span lines (`.` matches newlines too).
    #[serde(default)]
    pub multiline: Option<bool>,
}

/// Searches files for a regular expression, as Claude Code's `Grep` does, with ripgrep's own
/// crates: the same regex syntax, `.gitignore` respected, binary files skipped.
///
/// Caps: the result's size (default 30,000 bytes, cut with a marker), and each shown line
/// (2,000 characters).
#[derive(Clone, Debug)]
pub struct Grep {
    ws: Workspace,
    max_output: usize,
    approval: bool,
}

impl Grep {
    /// The default cap on a result's size, in bytes.
    pub const DEFAULT_MAX_OUTPUT: usize = 30_000;

    /// `Grep` confined to `workspace`.
    pub fn new(workspace: &Workspace) -> Self {
        Grep {
            ws: workspace.clone(),
            max_output: Self::DEFAULT_MAX_OUTPUT,
            approval: false,
        }
    }

    /// The most bytes one result holds; longer results are cut with a marker.
    pub fn max_output(mut self, bytes: usize) -> Self {
        self.max_output = bytes.max(1);
        self
    }

    /// Whether each call waits for a person's approval (default: no).
    pub fn approval(mut self, needed: bool) -> Self {
        self.approval = needed;
        self
    }
}

impl StructTool for Grep {
    type Input = GrepInput;
    type Output = String;
    const NAME: &'static str = "Grep";
    const DESCRIPTION: &'static str = "Searches file contents with a regular expression (ripgrep \
        syntax). `output_mode`: `files_with_matches` (default; paths, newest first), `content` \
        (matching lines, with `-n` line numbers, `-A`/`-B`/`-C` context) or `count`. Filter files \
        with `glob` (e.g. `*.rs`) or `type` (e.g. `rust`, `py`); `-i` ignores case; `multiline` \
        lets a match span lines; `head_limit` keeps the first N results. Files ignored by \
        .gitignore are skipped.";

    async fn run(&self, input: GrepInput, _ctx: ToolCtx) -> Result<String, ToolFailure> {
        let ws = self.ws.clone();
        let max = self.max_output;
        blocking(move |cancelled| grep(&ws, &input, max, &cancelled)).await
    }

    fn needs_approval(&self) -> bool {
        self.approval
    }
}

/// The longest line shown.
const LINE_CHARS: usize = 2000;

/// Runs one search.
fn grep(
    ws: &Workspace,
    input: &GrepInput,
    max_output: usize,
    cancelled: &Cancelled,
) -> Result<String, Error> {
    let base = search_dir(ws, input.path.as_deref())?;
    let matcher = matcher(input)?;
    let mode = input.output_mode.unwrap_or_default();
    let multiline = input.multiline.unwrap_or(false);
    let (before, after) = match mode {
        OutputMode::Content => (
            input.before.or(input.context).unwrap_or(0),
            input.after.or(input.context).unwrap_or(0),
        ),
        _ => (0, 0),
    };
    let mut searcher = SearcherBuilder::new()
        .line_number(true)
        .multi_line(multiline)
        .before_context(before as usize)
        .after_context(after as usize)
        .binary_detection(BinaryDetection::quit(0))
        .build();
    let files: Vec<PathBuf> = files(&base, input, cancelled)?
        .into_iter()
        .take_while(|_| !cancelled.is_set())
        .collect();
    let search = Search {
        ws,
        matcher: &matcher,
        limit: input.head_limit.filter(|n| *n > 0).unwrap_or(usize::MAX),
    };
    let mut out = Output::new(max_output);
    let found = match mode {
        OutputMode::FilesWithMatches => search.files_with_matches(&mut searcher, files, &mut out),
        OutputMode::Count => search.count(&mut searcher, files, &mut out),
        OutputMode::Content => {
            let numbers = input.line_numbers.unwrap_or(true);
            let context = before > 0 || after > 0;
            search.content(&mut searcher, files, numbers, context, &mut out)
        }
    };
    if !found {
        return Ok(no_match(input, &base));
    }
    Ok(out.finish())
}

/// One search's settings, shared by the output modes.
struct Search<'a> {
    ws: &'a Workspace,
    matcher: &'a RegexMatcher,
    /// `head_limit`: the most lines or entries shown.
    limit: usize,
}

impl Search<'_> {
    /// The files with a match, newest first. False when there is none.
    fn files_with_matches(&self, s: &mut Searcher, files: Vec<PathBuf>, out: &mut Output) -> bool {
        let mut found = Vec::new();
        for path in files {
            let mut sink = Counter {
                lines: 0,
                first_only: true,
            };
            if s.search_path(self.matcher, &path, &mut sink).is_ok() && sink.lines > 0 {
                found.push(path);
            }
        }
        if found.is_empty() {
            return false;
        }
        let total = found.len();
        let shown = total.min(self.limit);
        out.line(format!("Found {total} files"));
        for path in newest_first(found).iter().take(shown) {
            out.line(self.ws.show(path));
        }
        if shown < total {
            out.line(format!(
                "[{} more files not shown (head_limit)]",
                total - shown
            ));
        }
        true
    }

    /// `path:count` for each file with a match, and the totals. False when there is none.
    fn count(&self, s: &mut Searcher, files: Vec<PathBuf>, out: &mut Output) -> bool {
        let (mut files_found, mut total) = (0u64, 0u64);
        let mut entries = Vec::new();
        for path in files {
            let mut sink = Counter {
                lines: 0,
                first_only: false,
            };
            if s.search_path(self.matcher, &path, &mut sink).is_ok() && sink.lines > 0 {
                files_found += 1;
                total += sink.lines;
                entries.push(format!("{}:{}", self.ws.show(&path), sink.lines));
            }
        }
        if entries.is_empty() {
            return false;
        }
        let n = entries.len();
        for entry in entries.into_iter().take(self.limit) {
            out.line(entry);
        }
        if n > self.limit {
            out.line(format!(
                "[{} more files not shown (head_limit)]",
                n - self.limit
            ));
        }
        out.line(format!(
            "Found {total} matching lines in {files_found} files"
        ));
        true
    }

    /// The matching lines (and context), file after file. False when there is none.
    fn content(
        &self,
        s: &mut Searcher,
        files: Vec<PathBuf>,
        numbers: bool,
        context: bool,
        out: &mut Output,
    ) -> bool {
        let limit = self.limit;
        let mut lines = Vec::new();
        for path in files {
            if lines.len() > limit {
                break;
            }
            let mut sink = Lines {
                path: self.ws.show(&path),
                numbers,
                lines: Vec::new(),
                // One more than shown, to know that more follow.
                limit: limit.saturating_sub(lines.len()).saturating_add(1),
            };
            if s.search_path(self.matcher, &path, &mut sink).is_ok() && !sink.lines.is_empty() {
                if !lines.is_empty() && context {
                    lines.push("--".to_string());
                }
                lines.extend(sink.lines);
            }
        }
        if lines.is_empty() {
            return false;
        }
        let more = lines.len() > limit;
        for line in lines.into_iter().take(limit) {
            out.line(line);
        }
        if more {
            out.line(format!(
                "[stopped at head_limit = {limit} lines; more matches follow]"
            ));
        }
        true
    }
}

/// The regex matcher `input` asks for.
fn matcher(input: &GrepInput) -> Result<RegexMatcher, Error> {
    let mut b = RegexMatcherBuilder::new();
    b.case_insensitive(input.case_insensitive.unwrap_or(false));
    if input.multiline.unwrap_or(false) {
        b.multi_line(true).dot_matches_new_line(true);
    } else {
        b.line_terminator(Some(b'\n'));
    }
    b.build(&input.pattern).map_err(|e| Error::Pattern {
        pattern: input.pattern.clone(),
        message: format!("{e}; escape regex characters such as `(`, `{{` or `.` with `\\`"),
    })
}

/// The files to search: `base` itself when it is a file, else the files under it that pass
/// `.gitignore` and the `glob` and `type` filters, in path order.
fn files(base: &Path, input: &GrepInput, cancelled: &Cancelled) -> Result<Vec<PathBuf>, Error> {
    if base.is_file() {
        return Ok(vec![base.to_path_buf()]);
    }
    let mut w = walker(base);
    w.sort_by_file_path(|a, b| a.cmp(b));
    if let Some(glob) = input.glob.as_deref().filter(|g| !g.is_empty()) {
        let mut o = OverrideBuilder::new(base);
        let bad = |e: ignore::Error| Error::Pattern {
            pattern: glob.to_string(),
            message: e.to_string(),
        };
        o.add(glob).map_err(bad)?;
        w.overrides(o.build().map_err(bad)?);
    }
    if let Some(kind) = input.file_type.as_deref().filter(|t| !t.is_empty()) {
        let mut t = TypesBuilder::new();
        t.add_defaults().select(kind);
        let types = t.build().map_err(|e| {
            Error::Input(format!(
                "`type` {kind:?} is not a known file type ({e}); use one such as rust, py, js, ts, go, java, c, cpp, md, json, or filter with `glob`"
            ))
        })?;
        w.types(types);
    }
    Ok(w.build()
        .take_while(|_| !cancelled.is_set())
        .flatten()
        .filter(|e| e.file_type().is_some_and(|t| t.is_file()))
        .map(|e| e.into_path())
        .collect())
}

/// What a search without a match returns.
fn no_match(input: &GrepInput, base: &Path) -> String {
    format!("No matches for `{}` in `{}`", input.pattern, base.display())
}

/// A result built line by line, cut at a size.
struct Output {
    text: String,
    max: usize,
    cut_lines: usize,
}

impl Output {
    fn new(max: usize) -> Self {
        Output {
            text: String::new(),
            max,
            cut_lines: 0,
        }
    }

    fn line(&mut self, line: String) {
        if self.cut_lines > 0 || self.text.len() + line.len() + 1 > self.max {
            self.cut_lines += 1;
            return;
        }
        self.text.push_str(&line);
        self.text.push('\n');
    }

    fn finish(mut self) -> String {
        if self.cut_lines > 0 {
            self.text.push_str(&format!(
                "[{} more lines cut: the result is capped at {} bytes; narrow the search with `path`, `glob`, `type` or `head_limit`]\n",
                self.cut_lines, self.max
            ));
        }
        self.text
    }
}

/// Counts matching lines; with `first_only`, stops at the first.
struct Counter {
    lines: u64,
    first_only: bool,
}

impl Sink for Counter {
    type Error = std::io::Error;

    fn matched(&mut self, _: &Searcher, mat: &SinkMatch<'_>) -> Result<bool, Self::Error> {
        self.lines += mat.lines().count().max(1) as u64;
        Ok(!self.first_only)
    }
}

/// Collects matching and context lines as `path:n:text` / `path-n-text`.
struct Lines {
    path: String,
    numbers: bool,
    lines: Vec<String>,
    limit: usize,
}

impl Lines {
    fn push(&mut self, number: Option<u64>, sep: char, bytes: &[u8]) {
        let text = String::from_utf8_lossy(bytes);
        let text = cut_line(text.trim_end_matches(['\n', '\r']), LINE_CHARS);
        let line = match number.filter(|_| self.numbers) {
            Some(n) => format!("{}{sep}{n}{sep}{text}", self.path),
            None => format!("{}{sep}{text}", self.path),
        };
        self.lines.push(line);
    }

    fn room(&self) -> bool {
        self.lines.len() < self.limit
    }
}

impl Sink for Lines {
    type Error = std::io::Error;

    fn matched(&mut self, _: &Searcher, mat: &SinkMatch<'_>) -> Result<bool, Self::Error> {
        let first = mat.line_number();
        for (i, line) in mat.lines().enumerate() {
            self.push(first.map(|n| n + i as u64), ':', line);
        }
        Ok(self.room())
    }

    fn context(&mut self, _: &Searcher, ctx: &SinkContext<'_>) -> Result<bool, Self::Error> {
        if matches!(ctx.kind(), SinkContextKind::Before | SinkContextKind::After) {
            self.push(ctx.line_number(), '-', ctx.bytes());
        }
        Ok(self.room())
    }

    fn context_break(&mut self, _: &Searcher) -> Result<bool, Self::Error> {
        self.lines.push("--".to_string());
        Ok(self.room())
    }
}
