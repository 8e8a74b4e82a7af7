//! `agentry-soak`: many runs at once for minutes on a real store, against a real HTTP provider
//! that injects faults, with worker processes SIGKILLed at random and their runs resumed by
//! the others; then every run is checked (finished whole, or failed with a named cause), every
//! tool side effect is accounted for, the API key is looked for in every artefact, and the
//! memory and file descriptors of a worker that was never killed are compared over time.
//!
//! ```text
//! agentry-soak --store sqlite:/tmp/soak/runs.db --duration 120 --out /tmp/soak
//! agentry-soak --store postgres://postgres@127.0.0.1/soak --duration 120 --out /tmp/soak-pg
//! ```
//!
//! Exits 1 when a check fails, printing what failed.

mod check;
mod provider;
mod sample;
#[cfg(feature = "temporal")]
mod temporal;
mod worker;

use clap::Parser;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(Parser)]
#[command(about = "Soaks agentry: concurrent runs, provider faults, killed workers, then checks")]
struct Cli {
    /// The store: `sqlite:<file>` or a `postgres://` URL; or `temporal:<address>` for the runs
    /// on a Temporal server (built with the `temporal` feature).
    #[arg(long)]
    store: String,
    /// Where logs, the side-effect log and the report go (created).
    #[arg(long)]
    out: PathBuf,
    /// Seconds of soak before the drain.
    #[arg(long, default_value_t = 120)]
    duration: u64,
    /// Worker processes at once (one of them is never killed).
    #[arg(long, default_value_t = 3)]
    workers: usize,
    /// Runs each worker keeps under way.
    #[arg(long, default_value_t = 8)]
    concurrency: usize,
    /// Tool steps of every run.
    #[arg(long, default_value_t = 6)]
    steps: usize,
    /// Mean seconds between two kills.
    #[arg(long, default_value_t = 3.0)]
    kill_every: f64,
    /// The seed of the provider's faults and the kills.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// A file the soak's runs leave elsewhere (a Temporal server's database), searched for the
    /// key with the rest; the runs' inputs must be found in it.
    #[arg(long)]
    artefact: Vec<PathBuf>,
    /// Internal: run as a worker against this provider base URL.
    #[arg(long, hide = true)]
    worker: Option<String>,
    /// Internal: the worker only finishes what is left.
    #[arg(long, hide = true)]
    drain: bool,
}

/// Opens the store a `--store` names.
pub(crate) async fn open_store(spec: &str) -> Arc<dyn agentry::RunStore> {
    if let Some(path) = spec.strip_prefix("sqlite:") {
        Arc::new(
            agentry_store::SqliteStore::open(path)
                .await
                .expect("opening the soak's SQLite store"),
        )
    } else {
        Arc::new(
            agentry_store::PostgresStore::connect(spec)
                .await
                .expect("connecting to the soak's Postgres store"),
        )
    }
}

#[tokio::main]
async fn main() {
    let cli = Cli::parse();
    if cli.store.starts_with("temporal:") && cfg!(not(feature = "temporal")) {
        eprintln!(
            "agentry-soak was built without Temporal: `cargo build --release -p agentry-bench --features temporal`"
        );
        std::process::exit(2);
    }
    if let Some(provider) = cli.worker {
        let args = worker::WorkerArgs {
            store: cli.store,
            provider,
            out: cli.out,
            concurrency: cli.concurrency,
            drain: cli.drain,
        };
        #[cfg(feature = "temporal")]
        if args.store.starts_with("temporal:") {
            temporal::worker(args).await;
            return;
        }
        worker::run(args).await;
        return;
    }
    std::process::exit(soak(cli).await);
}

/// A fresh key per soak, so that finding it anywhere is a leak.
fn fresh_key() -> String {
    format!("sk-soak-{}", uuid::Uuid::new_v4().simple())
}

struct Worker {
    child: Child,
    steady: bool,
}

fn spawn(cli: &Cli, provider: &str, key: &str, n: usize, drain: bool) -> Child {
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(cli.out.join(format!("worker-{n}.log")))
        .expect("a worker log");
    let mut cmd = Command::new(std::env::current_exe().expect("the soak binary"));
    cmd.args(["--store", &cli.store, "--out"])
        .arg(&cli.out)
        .args(["--worker", provider])
        .args(["--concurrency", &cli.concurrency.to_string()])
        .env("SOAK_API_KEY", key)
        .env("SOAK_OUT", &cli.out)
        .env("RUST_LOG", "info")
        .stdin(Stdio::null())
        .stdout(log.try_clone().expect("a worker log"))
        .stderr(log);
    if drain {
        cmd.arg("--drain");
    }
    cmd.spawn().expect("starting a soak worker")
}

async fn soak(cli: Cli) -> i32 {
    std::fs::create_dir_all(&cli.out).expect("the soak's output directory");
    let on_temporal = cli.store.starts_with("temporal:");
    if !on_temporal {
        // Opening it once creates the schema before the workers race to.
        drop(open_store(&cli.store).await);
    }
    std::fs::write(cli.out.join("hook.sh"), worker::HOOK_SCRIPT).expect("the soak's hook script");
    let key = fresh_key();
    let (provider, faults) = provider::serve(&key, cli.steps, cli.seed).await;
    let mut rng = cli.seed.max(1);
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let mut workers: Vec<Worker> = (0..cli.workers)
        .map(|n| Worker {
            child: spawn(&cli, &provider, &key, n, false),
            steady: n == 0,
        })
        .collect();
    // On Temporal the runs are started here, through a client; on a store, by the workers.
    #[cfg(feature = "temporal")]
    let runs = match on_temporal {
        true => Some(temporal::Runs::start(&cli.store, cli.workers * cli.concurrency).await),
        false => None,
    };
    let mut spawned = cli.workers;
    let mut kills = 0;
    let mut samples = sample::Samples::default();
    let started = Instant::now();
    let end = started + Duration::from_secs(cli.duration);
    let mut next_kill = started + jitter(cli.kill_every, next());
    while Instant::now() < end {
        tokio::time::sleep(Duration::from_millis(250)).await;
        if let Some(steady) = workers.iter().find(|w| w.steady) {
            samples.take(steady.child.id(), started.elapsed());
        }
        if Instant::now() >= next_kill {
            let killable: Vec<usize> = (0..workers.len()).filter(|&i| !workers[i].steady).collect();
            if !killable.is_empty() {
                let i = killable[(next() as usize) % killable.len()];
                let w = &mut workers[i];
                let _ = w.child.kill();
                let _ = w.child.wait();
                kills += 1;
                w.child = spawn(&cli, &provider, &key, spawned, false);
                spawned += 1;
            }
            next_kill = Instant::now() + jitter(cli.kill_every, next());
        }
    }
    #[cfg(feature = "temporal")]
    if let Some(runs) = &runs {
        runs.stop_starting();
    }
    // Stop every worker at once (as a crash would), then let one drain worker finish the rest.
    for w in &mut workers {
        let _ = w.child.kill();
        let _ = w.child.wait();
    }
    let drain_started = Instant::now();
    let mut drain = spawn(&cli, &provider, &key, spawned, true);
    #[cfg(feature = "temporal")]
    let report = match runs {
        Some(runs) => {
            // The drain worker runs what is left, and replays workflows for the check's reads.
            let left = runs.drain(Duration::from_secs(300)).await;
            let report = runs
                .check(&cli.out, &cli.artefact, &key, cli.steps, left)
                .await;
            let _ = drain.kill();
            let _ = drain.wait();
            Some(report)
        }
        None => None,
    };
    #[cfg(not(feature = "temporal"))]
    let report = None;
    let report = match report {
        Some(report) => report,
        None => {
            let _ = drain.wait();
            check::check(&cli.store, &cli.out, &cli.artefact, &key, cli.steps).await
        }
    };
    let soaked = started.elapsed();
    let (fired, requests) = faults.report();
    let memory = samples.verdict();
    println!(
        "soak on {}: {:.0} s ({:.0} s of drain), {} worker processes, {} SIGKILLed",
        check::store_kind(&cli.store),
        soaked.as_secs_f64(),
        drain_started.elapsed().as_secs_f64(),
        spawned + 1,
        kills
    );
    println!("provider: {requests} requests; faults injected: {fired:?}");
    println!("{report}");
    println!("{memory}");
    let failed = !report.ok() || !memory.ok() || kills == 0;
    if kills == 0 {
        println!("FAILED: no worker was killed (raise --duration or lower --kill-every)");
    }
    if failed { 1 } else { 0 }
}

/// `mean` seconds, times a factor in 0.5..1.5 from `roll`.
fn jitter(mean: f64, roll: u64) -> Duration {
    Duration::from_secs_f64(mean * (0.5 + (roll % 1000) as f64 / 1000.0))
}
