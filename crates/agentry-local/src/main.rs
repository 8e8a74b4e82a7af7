//! `agentry-local`: fetch, list and measure the local models.
//!
//! ```text
//! agentry-local fetch [MODEL] [--dir DIR] [--force]   download and verify a catalog model
//! agentry-local list [--dir DIR]                      the catalog, and what the cache holds
//! agentry-local bench [MODEL | --file PATH]           load time, prompt and decode speed, memory
//! ```

use agentry_core::{History, Message, Model, ModelEvent, ModelRequest};
use agentry_local::{
    CATALOG, CachePrecision, CatalogModel, DEFAULT_MODEL, FetchProgress, Fetcher, LocalModel,
    ModelCache, ProgressLine,
};
use clap::{Parser, Subcommand};
use futures::StreamExt;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

#[derive(Parser)]
#[command(
    name = "agentry-local",
    version,
    about = "The local models of agentry: fetch, list, measure"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Download a catalog model into the cache and verify its pinned sha256.
    Fetch {
        /// The catalog id (default: the default model).
        #[arg(default_value = DEFAULT_MODEL.id)]
        model: String,
        /// The cache directory (default: AGENTRY_MODEL_DIR, else ~/.cache/agentry/models).
        #[arg(long)]
        dir: Option<PathBuf>,
        /// Download even when a good copy is cached.
        #[arg(long)]
        force: bool,
    },
    /// List the catalog and what the cache holds.
    List {
        /// The cache directory.
        #[arg(long)]
        dir: Option<PathBuf>,
    },
    /// Measure load time, prompt and decode tokens per second, and peak memory.
    Bench {
        /// The catalog id (default: the default model).
        #[arg(default_value = DEFAULT_MODEL.id)]
        model: String,
        /// A GGUF file instead of a catalog model.
        #[arg(long)]
        file: Option<PathBuf>,
        /// The cache directory.
        #[arg(long)]
        dir: Option<PathBuf>,
        /// Tokens to generate.
        #[arg(long, default_value_t = 128)]
        tokens: u32,
        /// Tokens of prompt to process before generating (at least the chat template's own).
        #[arg(long, default_value_t = 512)]
        prompt_tokens: usize,
        /// Threads to compute on (default: one per core).
        #[arg(long)]
        threads: Option<usize>,
        /// How the key/value cache stores keys and values: `f32` (exact) or `f16` (half the
        /// memory and reading).
        #[arg(long = "cache", default_value_t = CachePrecision::F32)]
        precision: CachePrecision,
    },
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Fetch { model, dir, force } => fetch(&model, cache(dir), force).await,
        Command::List { dir } => list(&cache(dir)),
        Command::Bench {
            model,
            file,
            dir,
            tokens,
            prompt_tokens,
            threads,
            precision,
        } => {
            let settings = BenchSettings {
                tokens,
                prompt_tokens,
                threads,
                precision,
            };
            bench(&model, file, &cache(dir), &settings).await
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn cache(dir: Option<PathBuf>) -> ModelCache {
    dir.map_or_else(ModelCache::from_env, ModelCache::new)
}

async fn fetch(id: &str, cache: ModelCache, force: bool) -> Result<(), Box<dyn std::error::Error>> {
    let model = CatalogModel::find(id)?;
    eprintln!(
        "{} ({:.2} GB) into {}",
        model.title,
        model.size as f64 / 1e9,
        cache.dir().display()
    );
    eprintln!("source: {}", model.provenance);
    let started = Instant::now();
    let mut line = ProgressLine::new("downloading");
    let path = Fetcher::new(cache)
        .force(force)
        .fetch(&model, |p| match p {
            FetchProgress::Downloading { bytes, total, .. } => line.update(bytes, total),
            FetchProgress::Verifying => line.finish(&format!("verifying sha256 {}", model.sha256)),
            FetchProgress::AlreadyPresent { path } => {
                eprintln!("already present and verified: {}", path.display())
            }
            _ => {}
        })
        .await?;
    eprintln!(
        "ready in {:.1} s: {}",
        started.elapsed().as_secs_f64(),
        path.display()
    );
    println!("{}", path.display());
    Ok(())
}

fn list(cache: &ModelCache) -> Result<(), Box<dyn std::error::Error>> {
    println!("cache: {}", cache.dir().display());
    for model in CATALOG {
        let state = match cache.locate(model) {
            Ok(_) => "ready".to_owned(),
            Err(agentry_local::Error::ModelMissing { .. }) => "not fetched".to_owned(),
            Err(e) => format!("unusable: {e}"),
        };
        let default = if model.id == DEFAULT_MODEL.id {
            " (default)"
        } else {
            ""
        };
        println!(
            "{:<20} {:>8.0} MB  {}{default}: {state}",
            model.id,
            model.size as f64 / 1e6,
            model.title
        );
    }
    Ok(())
}

/// What `bench` runs.
struct BenchSettings {
    tokens: u32,
    prompt_tokens: usize,
    threads: Option<usize>,
    precision: CachePrecision,
}

async fn bench(
    id: &str,
    file: Option<PathBuf>,
    cache: &ModelCache,
    settings: &BenchSettings,
) -> Result<(), Box<dyn std::error::Error>> {
    let mut builder = match file {
        Some(path) => LocalModel::builder(path),
        None => LocalModel::in_cache(cache, &CatalogModel::find(id)?)?,
    };
    if let Some(threads) = settings.threads {
        builder = builder.threads(threads);
    }
    builder = builder.cache_precision(settings.precision);
    let started = Instant::now();
    let model = builder.load_async().await?;
    let load = started.elapsed();
    println!(
        "model:   {} ({}, context {})",
        model.name(),
        model.architecture(),
        model.context_limit()
    );
    println!("load:    {:.2} s", load.as_secs_f64());
    println!("threads: {}", model.threads());
    println!("cache:   {}", settings.precision);

    // Warm up (first-touch allocations), so that the figures below are steady-state.
    let mut warm = ModelRequest::new(History::new());
    warm.messages.push(Message::user("Hi"));
    warm.params.max_tokens = Some(1);
    run(&model, &warm, false).await?;

    let mut request = prompt_of(&model, settings.prompt_tokens)?;
    // Prompt speed: a turn of one token is almost all prompt processing.
    request.params.max_tokens = Some(1);
    let first = run(&model, &request, false).await?;
    let prompt = first.total.as_secs_f64();
    println!(
        "prompt:  {} tokens in {prompt:.2} s = {:.1} tok/s",
        first.input_tokens,
        first.input_tokens as f64 / prompt
    );

    // Decode speed: the same prompt again (processed anew: its last token's logits are not
    // kept), timed from the first token's text to the last token.
    request.params.max_tokens = Some(settings.tokens);
    let turn = run(&model, &request, true).await?;
    println!();
    let decoding = turn.total - turn.first_text.unwrap_or(turn.total);
    let decoded = turn.output_tokens.saturating_sub(1);
    println!(
        "decode:  {decoded} tokens in {:.2} s = {:.1} tok/s (after {} tokens of prompt)",
        decoding.as_secs_f64(),
        decoded as f64 / decoding.as_secs_f64().max(f64::EPSILON),
        turn.input_tokens
    );
    match peak_resident_bytes() {
        Some(bytes) => println!(
            "memory:  {:.2} GiB peak resident",
            bytes as f64 / 1073741824.0
        ),
        None => println!("memory:  peak resident size not available on this system"),
    }
    Ok(())
}

/// A request whose rendered prompt is about `tokens` long: numbered notes about a lighthouse,
/// then a request for a story (so the answer runs long).
fn prompt_of(
    model: &LocalModel,
    tokens: usize,
) -> Result<ModelRequest, Box<dyn std::error::Error>> {
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
    let length = |notes: usize| -> Result<usize, Box<dyn std::error::Error>> {
        Ok(model.count_tokens(&model.render_prompt(&request(notes))?))
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
async fn run(
    model: &LocalModel,
    request: &ModelRequest,
    print: bool,
) -> Result<Turn, Box<dyn std::error::Error>> {
    let started = Instant::now();
    let mut stream = model.stream(request);
    let mut turn = Turn {
        input_tokens: 0,
        output_tokens: 0,
        first_text: None,
        total: Duration::ZERO,
    };
    while let Some(event) = stream.next().await {
        match event? {
            ModelEvent::TextDelta(t) => {
                turn.first_text.get_or_insert_with(|| started.elapsed());
                if print {
                    print!("{t}");
                    std::io::stdout().flush().ok();
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
