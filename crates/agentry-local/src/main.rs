//! `agentry-local`: fetch, list and measure the local models.
//!
//! ```text
//! agentry-local fetch [MODEL] [--dir DIR] [--force]   download and verify a catalog model
//! agentry-local list [--dir DIR]                      the catalog, and what the cache holds
//! agentry-local bench [MODEL | --file PATH]           load time, prompt and decode speed
//! ```

use agentry_core::{History, Message, Model, ModelEvent, ModelRequest};
use agentry_local::{
    CATALOG, CatalogModel, DEFAULT_MODEL, FetchProgress, Fetcher, LocalModel, ModelCache,
    ProgressLine,
};
use clap::{Parser, Subcommand};
use futures::StreamExt;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

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
    /// Measure load time, prompt and decode tokens per second.
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
        #[arg(long, default_value_t = 64)]
        tokens: u32,
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
        } => bench(&model, file, &cache(dir), tokens).await,
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

async fn bench(
    id: &str,
    file: Option<PathBuf>,
    cache: &ModelCache,
    tokens: u32,
) -> Result<(), Box<dyn std::error::Error>> {
    let builder = match file {
        Some(path) => LocalModel::builder(path),
        None => LocalModel::in_cache(cache, &CatalogModel::find(id)?)?,
    };
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

    // Warm up (first-touch allocations), so that the figures below are steady-state.
    let mut warm = ModelRequest::new(History::new());
    warm.messages.push(Message::user("Hi"));
    warm.params.max_tokens = Some(1);
    run(&model, &warm, false).await?;

    let mut history = History::new();
    history.push(Message::user(
        "Write a short story about a lighthouse keeper who finds a message in a bottle. \
         Describe the sea, the weather, the keeper's daily routine and the message itself.",
    ));
    let mut request = ModelRequest::new(history);
    request.params.max_tokens = Some(tokens);
    // Prompt speed: a turn of one token is almost all prompt processing.
    let mut first = request.clone();
    first.params.max_tokens = Some(1);
    let started = Instant::now();
    let usage = run(&model, &first, false).await?;
    let prompt = started.elapsed().as_secs_f64();
    println!(
        "prompt:  {} tokens in {:.2} s = {:.1} tok/s",
        usage.0,
        prompt,
        usage.0 as f64 / prompt
    );

    // Decode speed: the same prompt again (processed anew: its last token's logits are not
    // kept), with the prompt time taken off.
    let started = Instant::now();
    let usage = run(&model, &request, true).await?;
    let total = started.elapsed().as_secs_f64();
    println!();
    let decode = (total - prompt).max(f64::EPSILON);
    println!(
        "decode:  {} tokens in {:.2} s = {:.1} tok/s",
        usage.1,
        decode,
        usage.1 as f64 / decode
    );
    Ok(())
}

/// Runs one turn; (input, output) tokens.
async fn run(
    model: &LocalModel,
    request: &ModelRequest,
    print: bool,
) -> Result<(u64, u64), Box<dyn std::error::Error>> {
    let mut stream = model.stream(request);
    let mut usage = (0, 0);
    while let Some(event) = stream.next().await {
        match event? {
            ModelEvent::TextDelta(t) if print => {
                print!("{t}");
                std::io::stdout().flush().ok();
            }
            ModelEvent::Usage(u) => usage = (u.input_tokens, u.output_tokens),
            _ => {}
        }
    }
    Ok(usage)
}
