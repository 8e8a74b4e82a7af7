//! What the soak checks once every run has ended: each run finished whole (every step's call
//! and result once, then the answer) or failed with a named cause; every tool side effect
//! belongs to a call the history holds, and a call done twice was done again by another
//! process (a call in flight when its worker was killed, issued again with its idempotency
//! key); the API key is in no artefact: the store, the logs, the side-effect log, what the
//! command hooks read; the redacted secret of the tool results is in no log and no event; the
//! command hooks ran, and their failures (garbage, a crash, a hang) were reported while every
//! run went on; no hook process is left.

use agentry::{Message, RunQuery, RunStatus};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::path::{Path, PathBuf};

/// The store's kind, for the report.
pub(crate) fn store_kind(spec: &str) -> &'static str {
    if spec.starts_with("sqlite:") {
        "SQLite"
    } else if spec.starts_with("temporal:") {
        "Temporal"
    } else {
        "Postgres"
    }
}

/// What the check found.
#[derive(Default)]
pub(crate) struct Report {
    runs: usize,
    by_status: BTreeMap<String, usize>,
    failure_causes: BTreeMap<String, usize>,
    effects: usize,
    repeated_calls: usize,
    hook_deliveries: usize,
    hook_failures: usize,
    problems: Vec<String>,
}

impl Report {
    /// True when nothing was wrong.
    pub(crate) fn ok(&self) -> bool {
        self.problems.is_empty() && self.runs > 0
    }

    /// `n` runs never ended, even after the drain.
    #[cfg(feature = "temporal")]
    pub(crate) fn left_running(&mut self, n: usize) {
        self.problem(format!("{n} runs had not ended when the drain gave up"));
    }

    fn problem(&mut self, p: String) {
        if self.problems.len() < 20 {
            self.problems.push(p);
        } else if self.problems.len() == 20 {
            self.problems.push("(more left out)".into());
        }
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "runs: {} {:?}; failed runs' causes: {:?}",
            self.runs, self.by_status, self.failure_causes
        )?;
        write!(
            f,
            "tool side effects: {} lines, {} calls done again (in-process: by another process, after a kill), each with its one key",
            self.effects, self.repeated_calls
        )?;
        writeln!(f)?;
        write!(
            f,
            "command hooks: {} payloads read; {} failures (garbage, crash, timeout) reported, each run going on",
            self.hook_deliveries, self.hook_failures
        )?;
        if self.problems.is_empty() {
            write!(
                f,
                "\nchecks: every run whole or failed with its cause; no side effect unaccounted; the key in no artefact; the redacted secret in no log or event; no hook process left"
            )
        } else {
            for p in &self.problems {
                write!(f, "\nFAILED: {p}")?;
            }
            Ok(())
        }
    }
}

/// One run as the check sees it: how it ended, its history, its error, its recorded events (as
/// JSON text).
pub(crate) struct RunRecord {
    pub(crate) run_id: String,
    pub(crate) status: RunStatus,
    pub(crate) messages: Vec<Message>,
    pub(crate) error: Option<String>,
    pub(crate) events: Vec<String>,
}

/// Checks a soak whose runs are in the store `store_spec`.
pub(crate) async fn check(
    store_spec: &str,
    out: &Path,
    elsewhere: &[PathBuf],
    key: &str,
    steps: usize,
) -> Report {
    let store = crate::open_store(store_spec).await;
    let mut checker = Checker::new(steps);
    let mut before: Option<String> = None;
    loop {
        let mut query = RunQuery::all().limit(500);
        if let Some(b) = &before {
            query = query.before(b.clone());
        }
        let page = store.list(&query).await.expect("listing the soak's runs");
        let Some(last) = page.last() else { break };
        before = Some(last.run_id.clone());
        for summary in &page {
            let run = store
                .load(&summary.run_id)
                .await
                .expect("loading a soak run")
                .expect("a listed run loads");
            let events = store
                .events(&summary.run_id)
                .await
                .expect("reading a soak run's events")
                .iter()
                .map(|e| serde_json::to_string(&e.event).unwrap_or_default())
                .collect();
            checker.run(RunRecord {
                run_id: summary.run_id.clone(),
                status: summary.status,
                messages: run.snapshot.messages.to_vec(),
                error: run.snapshot.error.clone(),
                events,
            });
        }
    }
    let mut artefacts = artefacts(store_spec, out).await;
    artefacts.extend(files_at(elsewhere));
    checker.finish(out, key, artefacts, true).await
}

/// What the check gathers run by run, then judges with the side effects and the artefacts.
pub(crate) struct Checker {
    steps: usize,
    /// A process may do a call again itself (Temporal retries an activity whose heartbeat came
    /// late, on whichever worker polls first); in-process, only another process may.
    repeats_in_one_process: bool,
    report: Report,
    /// (run, call) of every call a history holds.
    calls_in_histories: HashSet<(String, String)>,
}

impl Checker {
    pub(crate) fn new(steps: usize) -> Checker {
        Checker {
            steps,
            repeats_in_one_process: false,
            report: Report::default(),
            calls_in_histories: HashSet::new(),
        }
    }

    /// Lets a process do a call again itself (with the same key), as Temporal's at-least-once
    /// activities may.
    #[cfg(feature = "temporal")]
    pub(crate) fn allow_repeats_in_one_process(mut self) -> Checker {
        self.repeats_in_one_process = true;
        self
    }

    /// Checks one run: whole, or failed with a cause; its events without the secret.
    pub(crate) fn run(&mut self, run: RunRecord) {
        let (steps, report) = (self.steps, &mut self.report);
        report.runs += 1;
        *report
            .by_status
            .entry(run.status.as_str().to_owned())
            .or_default() += 1;
        // The runs' events: their tool results' secret masked, the hooks' failures reported.
        for text in &run.events {
            if has_secret(text) {
                report.problem(format!(
                    "run {}: an event holds the unmasked secret: {}",
                    run.run_id,
                    text.chars().take(200).collect::<String>()
                ));
            }
            if text.contains("\"hook_failed\"") {
                report.hook_failures += 1;
            }
            // A call an event names was the run's, whether or not its history is at hand.
            for (at, _) in text.match_indices("\"call_id\":\"") {
                let id = &text[at + 11..];
                if let Some(end) = id.find('"') {
                    self.calls_in_histories
                        .insert((run.run_id.clone(), id[..end].to_owned()));
                }
            }
        }
        let messages = &run.messages;
        let mut ids = Vec::new();
        for m in messages.iter() {
            if let Some(r) = m.tool_result() {
                ids.push(r.call_id.clone());
            }
        }
        let unique: HashSet<&String> = ids.iter().collect();
        if unique.len() != ids.len() {
            report.problem(format!(
                "run {}: a tool result is in its history twice",
                run.run_id
            ));
        }
        let called: Vec<&str> = messages
            .iter()
            .flat_map(|m| m.tool_calls().iter().map(|c| c.id.as_str()))
            .collect();
        if called.len() != unique.len() && run.status == RunStatus::Finished {
            report.problem(format!(
                "run {}: {} calls but {} results",
                run.run_id,
                called.len(),
                unique.len()
            ));
        }
        self.calls_in_histories
            .extend(called.iter().map(|c| (run.run_id.clone(), c.to_string())));
        match run.status {
            RunStatus::Finished => {
                let answer = messages.last().map(Message::text).unwrap_or_default();
                if ids.len() != steps || answer != "done" {
                    report.problem(format!(
                        "run {} finished with {} of {steps} results and answer {answer:?}",
                        run.run_id,
                        ids.len()
                    ));
                }
            }
            RunStatus::Failed => {
                let cause = run.error.clone().unwrap_or_default();
                if cause.trim().is_empty() {
                    report.problem(format!("run {} failed without a cause", run.run_id));
                }
                *report.failure_causes.entry(cause_kind(&cause)).or_default() += 1;
            }
            other => report.problem(format!(
                "run {} is left {other} after the drain",
                run.run_id
            )),
        }
    }

    /// Judges the side effects, the hooks and the artefacts (name, text) once every run was
    /// checked; `store_read` says the artefacts hold the runs' store, whose inputs must be found.
    pub(crate) async fn finish(
        self,
        out: &Path,
        key: &str,
        artefacts: Vec<(String, String)>,
        store_read: bool,
    ) -> Report {
        let Checker {
            mut report,
            calls_in_histories,
            repeats_in_one_process,
            ..
        } = self;
        // Every side effect belongs to a call a history holds; a call done twice was done by
        // two processes (issued again after its worker was killed), with the same key.
        let effects = std::fs::read_to_string(out.join("effects.log")).unwrap_or_default();
        let mut by_call: HashMap<(&str, &str), Vec<(&str, &str)>> = HashMap::new();
        for line in effects.lines() {
            report.effects += 1;
            let f: Vec<&str> = line.split('\t').collect();
            let [run, call, key, pid] = f[..] else {
                report.problem(format!("a side-effect line is torn: {line:?}"));
                continue;
            };
            by_call.entry((run, call)).or_default().push((key, pid));
        }
        for (&(run, call), done) in &by_call {
            if !calls_in_histories.contains(&(run.to_owned(), call.to_owned())) {
                report.problem(format!(
                    "call {call} had a side effect but no run's history holds it"
                ));
            }
            if done.len() > 1 {
                report.repeated_calls += 1;
                let pids: HashSet<&str> = done.iter().map(|d| d.1).collect();
                let keys: HashSet<&str> = done.iter().map(|d| d.0).collect();
                if pids.len() != done.len() && !repeats_in_one_process {
                    report.problem(format!("call {call} was done twice by one process"));
                }
                if keys.len() != 1 {
                    report.problem(format!("call {call} was done again with another key"));
                }
            }
        }
        // The command hooks read every tool call's payload, before and after.
        let hook_log = std::fs::read_to_string(out.join("hook-stdin.log")).unwrap_or_default();
        report.hook_deliveries = hook_log.lines().count();
        for event in ["PreToolUse", "PostToolUse"] {
            if !hook_log.contains(event) {
                report.problem(format!("no {event} command hook read its payload"));
            }
        }
        if report.hook_failures == 0 {
            report.problem(
                "no command hook failure was reported (the hook script fails 3 times in 20)".into(),
            );
        }
        // The redacted secret is in no log (the workers log at debug level).
        if let Ok(dir) = std::fs::read_dir(out) {
            for entry in dir.flatten() {
                let name = entry.file_name().to_string_lossy().into_owned();
                if name.starts_with("worker-") {
                    let log = std::fs::read_to_string(entry.path()).unwrap_or_default();
                    if has_secret(&log) {
                        report.problem(format!("the unmasked secret is in {name}"));
                    }
                }
            }
        }
        // No hook process outlives the soak for long (a killed worker's hooks end on their own).
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let script = out.join("hook.sh").display().to_string();
        loop {
            let left = processes_running(&script);
            if left == 0 {
                break;
            }
            if std::time::Instant::now() > deadline {
                report.problem(format!(
                    "{left} hook processes still run 10 s after the soak"
                ));
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        }
        // The key is nowhere: not in the store, the logs, the side effects, what hooks read.
        // (The runs' inputs are in the store: when they are not found, it was not read.)
        if store_read && !artefacts.iter().any(|(_, text)| text.contains("soak run ")) {
            report.problem("the store's contents could not be read to look for the key".into());
        }
        for (place, text) in &artefacts {
            if text.contains(key) {
                report.problem(format!("the API key is in {place}"));
            }
        }
        report
    }
}

/// Whether `text` holds a secret of the soak's pattern (`ACCT-` and eight digits) unmasked.
fn has_secret(text: &str) -> bool {
    text.match_indices("ACCT-").any(|(at, _)| {
        let digits = text[at + 5..]
            .bytes()
            .take_while(u8::is_ascii_digit)
            .count();
        digits >= 8
    })
}

/// How many processes have `needle` in their command line.
fn processes_running(needle: &str) -> usize {
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return 0;
    };
    procs
        .flatten()
        .filter(|p| {
            std::fs::read(p.path().join("cmdline"))
                .map(|c| String::from_utf8_lossy(&c).contains(needle))
                .unwrap_or(false)
        })
        .count()
}

/// A failure message reduced to its kind, for counting.
fn cause_kind(cause: &str) -> String {
    let cause = cause.split(':').take(2).collect::<Vec<_>>().join(":");
    cause.chars().take(80).collect()
}

/// The files of `out` as text (the logs, the side effects, what the hooks read).
pub(crate) fn files_of(out: &Path) -> Vec<(String, String)> {
    let files: Vec<PathBuf> = std::fs::read_dir(out)
        .map(|dir| dir.flatten().map(|entry| entry.path()).collect())
        .unwrap_or_default();
    files_at(&files)
}

/// `files` as text.
pub(crate) fn files_at(files: &[PathBuf]) -> Vec<(String, String)> {
    files
        .iter()
        .map(|file| {
            let bytes = std::fs::read(file).unwrap_or_default();
            (
                file.display().to_string(),
                String::from_utf8_lossy(&bytes).into_owned(),
            )
        })
        .collect()
}

/// Every artefact of the soak as text: the logs and files of `out`, and what the store holds.
async fn artefacts(store_spec: &str, out: &Path) -> Vec<(String, String)> {
    let mut found = files_of(out);
    if let Some(path) = store_spec.strip_prefix("sqlite:") {
        for suffix in ["", "-wal", "-shm"] {
            let file = format!("{path}{suffix}");
            let bytes = std::fs::read(&file).unwrap_or_default();
            found.push((file, String::from_utf8_lossy(&bytes).into_owned()));
        }
    } else {
        use sqlx::Connection;
        let mut conn = sqlx::PgConnection::connect(store_spec)
            .await
            .expect("connecting to read the soak's store");
        let tables: Vec<String> = sqlx::query_scalar(
            "SELECT table_name::text FROM information_schema.tables WHERE table_schema = 'public'",
        )
        .fetch_all(&mut conn)
        .await
        .unwrap_or_default();
        for table in tables {
            let text: Option<String> = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
                "SELECT string_agg(t::text, E'\\n') FROM \"{table}\" t"
            )))
            .fetch_one(&mut conn)
            .await
            .unwrap_or_default();
            found.push((
                format!("the store's table {table}"),
                text.unwrap_or_default(),
            ));
        }
    }
    found
}
