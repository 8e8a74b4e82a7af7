//! `agentry models bench`: load time, prompt and decode speed and peak memory of a local model.

use crate::cli::{BenchArgs, Cli};
use crate::commands::{Failure, failed};
use crate::exit::Exit;
use agentry::{History, Message, Model, ModelEvent, ModelRequest};
use agentry_local::{CatalogModel, DEFAULT_MODEL, LocalModel, ModelCache};
use futures::StreamExt;
use serde_json::{Value, json};
use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

/// Loads the model `args` names, warms it up, then times a prompt of about
/// `args.prompt_tokens` tokens and the generation of `args.tokens` tokens after it. The figures
/// are printed as they are measured (with the generated text), or with `--json` as one object
/// at the end.
pub(super) async fn bench(
    cli: &Cli,
    args: &BenchArgs,
    cache: &ModelCache,
) -> Result<Exit, Failure> {
    let report = Report { json: cli.json };
    let mut builder = match args.model.as_deref() {
        Some(name) if is_file(name) => LocalModel::builder(name),
        name => {
            let model = match name {
                Some(id) => CatalogModel::find(id).map_err(|e| (Exit::Usage, e.to_string()))?,
                None => DEFAULT_MODEL,
            };
            LocalModel::in_cache(cache, &model).map_err(|e| failed(e.to_string()))?
        }
    };
    if let Some(threads) = args.threads {
        builder = builder.threads(threads);
    }
    builder = builder.cache_precision(args.precision);
    let started = Instant::now();
    let model = builder
        .load_async()
        .await
        .map_err(|e| failed(e.to_string()))?;
    let load = started.elapsed().as_secs_f64();
    report.line(format_args!(
        "model:   {} ({}, context {})",
        model.name(),
        model.architecture(),
        model.context_limit()
    ));
    report.line(format_args!("load:    {load:.2} s"));
    report.line(format_args!("threads: {}", model.threads()));
    report.line(format_args!("cache:   {}", args.precision));

    // Warm up (first-touch allocations), so that the figures below are steady-state.
    let mut warm = ModelRequest::new(History::new());
    warm.messages.push(Message::user("Hi"));
    warm.params.max_tokens = Some(1);
    run(&model, &warm, false).await?;

    let mut request = prompt_of(&model, args.prompt_tokens)?;
    // Prompt speed: a turn of one token is almost all prompt processing.
    request.params.max_tokens = Some(1);
    let first = run(&model, &request, false).await?;
    let prompt = first.total.as_secs_f64();
    let prompt_rate = first.input_tokens as f64 / prompt;
    report.line(format_args!(
        "prompt:  {} tokens in {prompt:.2} s = {prompt_rate:.1} tok/s",
        first.input_tokens,
    ));

    // Decode speed: the same prompt again (processed anew: its last token's logits are not
    // kept), timed from the first token's text to the last token.
    request.params.max_tokens = Some(args.tokens);
    let turn = run(&model, &request, !cli.json).await?;
    report.line(format_args!(""));
    let decoding = (turn.total - turn.first_text.unwrap_or(turn.total)).as_secs_f64();
    let decoded = turn.output_tokens.saturating_sub(1);
    let decode_rate = decoded as f64 / decoding.max(f64::EPSILON);
    report.line(format_args!(
        "decode:  {decoded} tokens in {decoding:.2} s = {decode_rate:.1} tok/s (after {} tokens of prompt)",
        turn.input_tokens
    ));
    let peak = peak_resident_bytes();
    match peak {
        Some(bytes) => report.line(format_args!(
            "memory:  {:.2} GiB peak resident",
            bytes as f64 / 1073741824.0
        )),
        None => report.line(format_args!(
            "memory:  peak resident size not available on this system"
        )),
    }
    if cli.json {
        outln!(
            "{}",
            json!({
                "model": model.name(),
                "path": model.path(),
                "architecture": model.architecture(),
                "context_limit": model.context_limit(),
                "load_seconds": load,
                "threads": model.threads(),
                "cache": args.precision.as_str(),
                "prompt": {
                    "tokens": first.input_tokens,
                    "seconds": prompt,
                    "tokens_per_second": prompt_rate,
                },
                "decode": {
                    "tokens": decoded,
                    "seconds": decoding,
                    "tokens_per_second": decode_rate,
                    "prompt_tokens": turn.input_tokens,
                },
                "peak_resident_bytes": peak.map_or(Value::Null, Value::from),
            })
        );
    }
    Ok(Exit::Ok)
}

/// Whether the model named on the command line is a GGUF file rather than a catalog id.
fn is_file(name: &str) -> bool {
    name.ends_with(".gguf") || Path::new(name).components().count() > 1
}

/// Where the figures go: printed line by line, or (with `--json`) only in the final object.
struct Report {
    json: bool,
}

impl Report {
    /// Prints one line of the text report.
    fn line(&self, line: std::fmt::Arguments<'_>) {
        if !self.json {
            outln!("{line}");
        }
    }
}

/// Prints a piece of generated text as it comes.
fn print_text(text: &str) {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .ok();
}

/// A request whose rendered prompt is about `tokens` long: numbered notes about a lighthouse,
/// then a request for a story (so the answer runs long).
fn prompt_of(model: &LocalModel, tokens: usize) -> Result<ModelRequest, Failure> {
    const NOTES: [&str; 4] = [
        "the tide rose before dawn and the keeper logged the wind from the north-east",
        "a fishing boat passed the reef at noon, its red sail patched twice",
        "fog rolled in from the sea and the horn sounded every thirty seconds",
        "the lamp's brass was polished and the oil store counted, three barrels left",
    ];
    let request = |notes: usize| {
        let mut text = String::from("Here are the keeper's notes:\n");
        for i in 0..notes {
            text.push_str(&format!("Note {}: {}.\n", i + 1, NOTES[i % NOTES.len()]));
        }
        text.push_str(
            "Write a long story about this lighthouse keeper, the sea, the weather and a \
             message in a bottle that the tide brings in.",
        );
        let mut history = History::new();
        history.push(Message::user(text));
        ModelRequest::new(history)
    };
    let length = |notes: usize| -> Result<usize, Failure> {
        let prompt = model
            .render_prompt(&request(notes))
            .map_err(|e| failed(e.to_string()))?;
        Ok(model.count_tokens(&prompt))
    };
    let mut notes = 0;
    while length(notes)? < tokens {
        notes += 1;
    }
    Ok(request(notes))
}

/// The most memory this process has had resident, from `/proc/self/status` (Linux).
fn peak_resident_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// What one turn took.
struct Turn {
    input_tokens: u64,
    output_tokens: u64,
    /// From the start to the first piece of text (the prompt and the first token).
    first_text: Option<Duration>,
    /// From the start to the end.
    total: Duration,
}

/// Runs one turn, printing its text when `print`.
async fn run(model: &LocalModel, request: &ModelRequest, print: bool) -> Result<Turn, Failure> {
    let started = Instant::now();
    let mut stream = model.stream(request);
    let mut turn = Turn {
        input_tokens: 0,
        output_tokens: 0,
        first_text: None,
        total: Duration::ZERO,
    };
    while let Some(event) = stream.next().await {
        match event.map_err(|e| failed(e.to_string()))? {
            ModelEvent::TextDelta(t) => {
                turn.first_text.get_or_insert_with(|| started.elapsed());
                if print {
                    print_text(&t);
                }
            }
            ModelEvent::Usage(u) => {
                (turn.input_tokens, turn.output_tokens) = (u.input_tokens, u.output_tokens)
            }
            _ => {}
        }
    }
    turn.total = started.elapsed();
    Ok(turn)
}
