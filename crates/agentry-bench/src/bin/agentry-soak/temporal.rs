//! The soak on Temporal (`--store temporal:http://127.0.0.1:7233`): the worker processes are
//! Temporal workers hosting the soak's agent (its command hooks and redactor in their runtime),
//! SIGKILLed at random as on the stores; the soak's own process starts the runs through a
//! client and keeps them under way. Temporal gives a killed worker's activities to the others
//! once their heartbeat limit passes; there is nothing to resume by hand. Each run's outcome is
//! what its client call returned; the events of the failed runs and of a sample of the others
//! are read back from their workflows.

use crate::check::{Checker, RunRecord};
use crate::worker::{WorkerArgs, agent, log_to_stderr, runtime};
use agentry::{RunOutput, RunStatus};
use agentry_temporal::{Client, Limits, Server, TemporalError, Worker, WorkerStop};
use futures::StreamExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The task queue of the soak's workers and runs.
const QUEUE: &str = "agentry-soak";

/// How many finished runs' events are read back (every failed run's are).
const EVENT_SAMPLE: usize = 100;

/// The server a `temporal:<address>` spec names.
fn server(spec: &str) -> Server {
    let target = spec.strip_prefix("temporal:").unwrap_or(spec);
    Server::new(target).task_queue(QUEUE)
}

/// The limits of the soak's runs: a killed worker's activities are given to another after 3 s
/// without a heartbeat.
fn limits() -> Limits {
    Limits {
        heartbeat: Duration::from_secs(3),
        ..Limits::default()
    }
}

/// Runs a Temporal worker process until it is killed.
pub(crate) async fn worker(args: WorkerArgs) {
    log_to_stderr();
    let key = std::env::var("SOAK_API_KEY").expect("SOAK_API_KEY");
    let agent = agent(&args.provider, &key, &args.out);
    let worker = Worker::new(server(&args.store), runtime(&args.out)).agent(&agent);
    if let Err(e) = worker.run(WorkerStop::new()).await {
        eprintln!("the soak's Temporal worker stopped: {e}");
        std::process::exit(1);
    }
}

/// What happened to a run, as its client call said.
enum Ended {
    Finished(Box<RunOutput<(), String>>),
    Failed(String),
}

/// The runs the soak keeps under way on Temporal, and how each ended.
pub(crate) struct Runs {
    client: Client,
    ended: Arc<Mutex<Vec<(String, Ended)>>>,
    in_flight: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
    feeder: tokio::task::JoinHandle<()>,
}

impl Runs {
    /// Connects, and keeps `concurrency` runs under way until [`Runs::stop_starting`].
    pub(crate) async fn start(spec: &str, concurrency: usize) -> Runs {
        let client = Client::connect(server(spec))
            .await
            .expect("connecting to the soak's Temporal server")
            .limits(limits())
            // No run of the soak waits for approval: no client-side check for pauses.
            .pause_check(Duration::from_secs(3600));
        let ended = Arc::new(Mutex::new(Vec::new()));
        let in_flight = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let feeder = tokio::spawn(feed(
            client.clone(),
            concurrency,
            ended.clone(),
            in_flight.clone(),
            stop.clone(),
        ));
        Runs {
            client,
            ended,
            in_flight,
            stop,
            feeder,
        }
    }

    /// Starts no more runs.
    pub(crate) fn stop_starting(&self) {
        self.stop.store(true, Ordering::SeqCst);
    }

    /// Waits up to `limit` for every run under way to end; how many are left.
    pub(crate) async fn drain(&self, limit: Duration) -> usize {
        let deadline = tokio::time::Instant::now() + limit;
        while self.in_flight.load(Ordering::SeqCst) > 0 && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        self.in_flight.load(Ordering::SeqCst)
    }

    /// Checks every run that ended (reading events back from their workflows, which takes a
    /// worker), with `left` runs that never did.
    pub(crate) async fn check(
        self,
        out: &Path,
        elsewhere: &[PathBuf],
        key: &str,
        steps: usize,
        left: usize,
    ) -> crate::check::Report {
        self.feeder.abort();
        let ended = std::mem::take(&mut *self.ended.lock().expect("not poisoned"));
        let mut checker = Checker::new(steps).allow_repeats_in_one_process();
        let mut sampled = 0;
        for (run_id, how) in ended {
            let wanted = matches!(how, Ended::Failed(_)) || sampled < EVENT_SAMPLE;
            let events = if wanted {
                sampled += usize::from(matches!(how, Ended::Finished(_)));
                self.events(&run_id).await
            } else {
                Vec::new()
            };
            checker.run(match how {
                Ended::Finished(out) => RunRecord {
                    run_id,
                    status: RunStatus::Finished,
                    messages: out.messages.to_vec(),
                    error: None,
                    events,
                },
                Ended::Failed(error) => RunRecord {
                    run_id,
                    status: RunStatus::Failed,
                    messages: Vec::new(),
                    error: Some(error),
                    events,
                },
            });
        }
        let mut artefacts = crate::check::files_of(out);
        artefacts.extend(crate::check::files_at(elsewhere));
        let mut report = checker
            .finish(out, key, artefacts, !elsewhere.is_empty())
            .await;
        if left > 0 {
            report.left_running(left);
        }
        report
    }

    /// A run's recorded events, as JSON text.
    async fn events(&self, run_id: &str) -> Vec<String> {
        let handle = self.client.handle(run_id);
        let events = handle.events();
        let read = tokio::time::timeout(Duration::from_secs(30), events.collect::<Vec<_>>()).await;
        read.unwrap_or_default()
            .into_iter()
            .filter_map(Result::ok)
            .map(|e| serde_json::to_string(&e).unwrap_or_default())
            .collect()
    }
}

/// Keeps `concurrency` runs under way until told to stop.
async fn feed(
    client: Client,
    concurrency: usize,
    ended: Arc<Mutex<Vec<(String, Ended)>>>,
    in_flight: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
) {
    while !stop.load(Ordering::SeqCst) {
        while in_flight.load(Ordering::SeqCst) < concurrency && !stop.load(Ordering::SeqCst) {
            in_flight.fetch_add(1, Ordering::SeqCst);
            let (client, ended, in_flight) = (client.clone(), ended.clone(), in_flight.clone());
            tokio::spawn(async move {
                let input = format!("soak run {}", uuid::Uuid::new_v4().simple());
                let outcome = match client.run("soak", input).start().await {
                    Ok(handle) => {
                        let run_id = handle.run_id().to_owned();
                        let how = match handle.result::<(), String>().await {
                            Ok(out) => Ended::Finished(Box::new(out)),
                            Err(TemporalError::RunFailed { error, .. }) => Ended::Failed(error),
                            Err(other) => Ended::Failed(other.to_string()),
                        };
                        Some((run_id, how))
                    }
                    // Not started (no worker seen in time while all were being replaced):
                    // nothing ran, nothing to check.
                    Err(e) => {
                        eprintln!("a soak run did not start: {e}");
                        None
                    }
                };
                if let Some(outcome) = outcome {
                    ended.lock().expect("not poisoned").push(outcome);
                }
                in_flight.fetch_sub(1, Ordering::SeqCst);
            });
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
