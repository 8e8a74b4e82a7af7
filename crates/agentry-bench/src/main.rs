//! `agentry-bench`: the W1–W6 workloads of agentry's performance suite.
//!
//! ```text
//! agentry-bench --workload w1|w2|w3|w5 [--steps S] [--hooks H] [--runs R] [--inner K]
//!               [--store sqlite|postgres]
//! agentry-bench --workload w4 --kind closure|persistent|spawned|webhook [--events N] [--current-thread]
//! agentry-bench --workload w6 [--events N] [--current-thread]
//! agentry-bench --workload w7 [--runs N] [--clients C] [--peer AI_PACKAGE_DIR]
//! ```
//! Prints one JSON object on its last stdout line.
#![warn(missing_docs, unreachable_pub)]

mod durable;
mod external;
mod mcp;
mod measure;
mod model;
mod server;
mod workloads;

use agentry::{Content, Part, Runtime};
use clap::{Parser, ValueEnum};
use durable::StoreKind;
use serde_json::json;
use workloads::{HookKind, agent, median, sample};

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Workload {
    W1,
    W2,
    W3,
    /// One no-op hook of `--kind` on BeforeTool: the latency of one event, p50 and p99.
    W4,
    /// W1 (one run) or W3 (`--runs` > 1) with a checkpoint to a store after every step.
    W5,
    /// One echo tool called `--events` times through an MCP stdio server and natively: the
    /// latency MCP adds per call, p50 and p99.
    W6,
    /// Agents behind HTTP (`agentry serve`): runs started per second, request to first SSE
    /// event, `--clients` streams on one run and as many runs at once, and the AI SDK UI
    /// message stream beside the AI SDK's own server (`--peer`).
    W7,
}

/// Runs one of the W1–W3 workloads and prints its figures as JSON.
#[derive(Parser, Debug)]
#[command(version, about)]
struct Args {
    /// W1: one long run; W2: W1 plus no-op hooks; W3: many concurrent runs.
    #[arg(long, value_enum)]
    workload: Workload,
    /// Tool steps per run (default 1000 for W1/W2, 10 for W3).
    #[arg(long)]
    steps: Option<u32>,
    /// No-op hooks on each of BeforeModel, AfterModel, BeforeTool, AfterTool (default 10 for W2, 0 otherwise).
    #[arg(long)]
    hooks: Option<u32>,
    /// Concurrent runs (default 1000 for W3, 1 otherwise).
    #[arg(long)]
    runs: Option<u32>,
    /// The kind of no-op hook W2 registers.
    #[arg(long, value_enum, default_value_t = HookKind::Sync)]
    hook_kind: HookKind,
    /// Repeat the timed part K times and report the median.
    #[arg(long, default_value_t = 1)]
    inner: u32,
    /// W5's store: a fresh SQLite file per sample, or the Postgres database at
    /// `$AGENTRY_TEST_POSTGRES_URL`.
    #[arg(long, value_enum, default_value_t = StoreKind::Sqlite)]
    store: StoreKind,
    /// W4's hook: an in-process closure, a persistent hook process, a command spawned per event,
    /// or a signed webhook to a local server.
    #[arg(long, value_enum, default_value_t = external::ExternalKind::Closure)]
    kind: external::ExternalKind,
    /// W4's events (default 10,000; 1,000 for spawned commands), or W6's calls (default 10,000).
    #[arg(long)]
    events: Option<u32>,
    /// W4 or W6 on a current-thread tokio runtime (default: multi-thread).
    #[arg(long)]
    current_thread: bool,
    /// Serves W6's echo tool over MCP on stdin and stdout (W6 starts this binary so).
    #[arg(long, hide = true)]
    serve_mcp_echo: bool,
    /// W7's clients on one run, and runs at once (default 1,000).
    #[arg(long)]
    clients: Option<usize>,
    /// W7: also drive the AI SDK's own Node server (the `ai` package in this directory) with
    /// the same load, and report the ratios.
    #[arg(long)]
    peer: Option<std::path::PathBuf>,
    /// Serves W7's agents over HTTP (W7 starts this binary so).
    #[arg(long, hide = true)]
    serve_http: bool,
    /// W5: the run's input carries an image of this many megabytes (10^6 bytes), to show that
    /// its bytes are written once, not per step (`stored_mb` in the report: the messages,
    /// events and media the SQLite store holds).
    #[arg(long)]
    image_mb: Option<f64>,
    /// With `--serve-http`: on the in-memory store instead of SQLite.
    #[arg(long, hide = true)]
    memory_store: bool,
}

fn main() {
    let args = Args::parse();
    if matches!(args.workload, Workload::W7) {
        let tokio = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .expect("a tokio runtime");
        if args.serve_http {
            tokio.block_on(server::serve_child(args.memory_store));
            return;
        }
        let runs = args.runs.map_or(2_000, |r| r as usize);
        let clients = args.clients.unwrap_or(1_000);
        println!("{}", tokio.block_on(server::run(runs, clients, args.peer)));
        return;
    }
    if matches!(args.workload, Workload::W6) {
        let tokio = match args.current_thread || args.serve_mcp_echo {
            true => tokio::runtime::Builder::new_current_thread(),
            false => tokio::runtime::Builder::new_multi_thread(),
        }
        .enable_all()
        .build()
        .expect("a tokio runtime");
        if args.serve_mcp_echo {
            tokio.block_on(mcp::serve_echo());
            return;
        }
        let calls = args.events.unwrap_or(10_000);
        println!("{}", tokio.block_on(mcp::run(calls, args.current_thread)));
        return;
    }
    if matches!(args.workload, Workload::W4) {
        external::set_secret();
        let events = args.events.unwrap_or(match args.kind {
            external::ExternalKind::Spawned => 1_000,
            _ => 10_000,
        });
        let tokio = match args.current_thread {
            true => tokio::runtime::Builder::new_current_thread(),
            false => tokio::runtime::Builder::new_multi_thread(),
        }
        .enable_all()
        .build()
        .expect("a tokio runtime");
        println!(
            "{}",
            tokio.block_on(external::run(args.kind, events, args.current_thread))
        );
        return;
    }
    let (steps, hooks, runs) = match args.workload {
        Workload::W1 => (args.steps.unwrap_or(1000), args.hooks.unwrap_or(0), 1),
        Workload::W2 => (args.steps.unwrap_or(1000), args.hooks.unwrap_or(10), 1),
        Workload::W3 => (
            args.steps.unwrap_or(10),
            args.hooks.unwrap_or(0),
            args.runs.unwrap_or(1000),
        ),
        Workload::W4 => unreachable!("W4 ran above"),
        Workload::W6 => unreachable!("W6 ran above"),
        Workload::W7 => unreachable!("W7 ran above"),
        Workload::W5 => match args.runs.unwrap_or(1) {
            1 => (args.steps.unwrap_or(1000), args.hooks.unwrap_or(0), 1),
            runs => (args.steps.unwrap_or(3), args.hooks.unwrap_or(0), runs),
        },
    };
    let durable = matches!(args.workload, Workload::W5).then_some(args.store);
    let inner = args.inner.max(1);
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let report = tokio.block_on(async move {
        let fresh = async || match durable {
            Some(store) => store.runtime().await,
            None => (Runtime::new(), None),
        };
        let (runtime, _kept) = fresh().await;
        let kind = args.hook_kind;
        let interleave = runs > 1;
        let bench = agent(steps, hooks, kind, interleave);
        let input: Content = match args.image_mb {
            Some(mb) => {
                let image = Part::image(vec![0x5a; (mb * 1e6) as usize], "image/png");
                Content::from([image, Part::text("go")])
            }
            None => Content::from("go"),
        };
        workloads::run_checked(&runtime, &agent(5, hooks, kind, interleave), 5, &input).await;
        let mut store_bytes = Vec::new();

        let rss_before = measure::rss_kib();
        measure::reset_peak();
        // With hooks, the same agent without them is sampled in between, so both medians see
        // the same machine conditions and their difference is the cost of the hooks.
        let base = (hooks > 0).then(|| agent(steps, 0, kind, interleave));
        let mut walls = Vec::new();
        let mut cpus = Vec::new();
        let mut base_walls = Vec::new();
        for _ in 0..inner {
            // A durable workload starts each sample on an empty store.
            let (runtime, _kept) = match durable {
                Some(_) => fresh().await,
                None => (runtime.clone(), None),
            };
            let s = sample(&runtime, &bench, steps, runs, &input).await;
            walls.push(s.wall);
            cpus.push(s.cpu);
            if let Some(kept) = &_kept {
                store_bytes.push(kept.stored_bytes());
            }
            if let Some(base) = &base {
                base_walls.push(sample(&runtime, base, steps, runs, &input).await.wall);
            }
        }
        let rss_peak = measure::peak_rss_kib();
        let (wall, cpu) = (median(walls), median(cpus));
        let total_steps = f64::from(steps) * f64::from(runs);
        let hook_invocations = u64::from(hooks) * 2 * (2 * u64::from(steps) + 1) * u64::from(runs);
        let mut report = json!({
            "framework": "agentry",
            "workload": format!("{:?}", args.workload).to_lowercase(),
            "steps": steps,
            "hooks": hooks,
            "hook_kind": format!("{kind:?}").to_lowercase(),
            "yield_per_model_call": interleave,
            "runs": runs,
            "store": durable.map(|s| format!("{s:?}").to_lowercase()),
            "inner": inner,
            "hook_invocations": hook_invocations,
            "model_calls": u64::from(steps + 1) * u64::from(runs),
            "us_per_step": wall.as_secs_f64() * 1e6 / total_steps,
            "cpu_us_per_step": cpu.as_secs_f64() * 1e6 / total_steps,
            "wall_s": wall.as_secs_f64(),
            "cpu_s": cpu.as_secs_f64(),
            "rss_before_kib": rss_before,
            "rss_peak_kib": rss_peak,
        });
        if let Some(mb) = args.image_mb {
            report["image_mb"] = json!(mb);
        }
        if !store_bytes.is_empty() {
            store_bytes.sort();
            report["stored_mb"] = json!(store_bytes[store_bytes.len() / 2] as f64 / 1e6);
        }
        if runs > 1 {
            report["kib_per_run"] =
                json!(rss_peak.saturating_sub(rss_before) as f64 / f64::from(runs));
        }
        if hooks > 0 {
            let base_wall = median(base_walls);
            report["baseline_us_per_step"] = json!(base_wall.as_secs_f64() * 1e6 / total_steps);
            report["ns_per_hook"] = json!(
                (wall.as_secs_f64() - base_wall.as_secs_f64()) * 1e9 / hook_invocations as f64
            );
        }
        report
    });
    println!("{report}");
}
