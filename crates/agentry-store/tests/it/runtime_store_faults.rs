//! A store that fails a checkpoint never leaves a run unreadable, on real stores (SQLite files,
//! and Postgres when the test server is reachable): another process holding SQLite's write lock
//! past the busy timeout, a commit failed inside the database (a trigger raising an error, from
//! the checkpoint at a chosen revision on), a full disk under a large checkpoint, a process that
//! dies right after a failed commit. Each time the run fails with the store's error, then loads
//! and resumes to exactly the end an uninterrupted run reaches. And a cancelled run with a
//! 64 MB checkpoint can be resumed at once: no lease renewal racing its last save takes the run
//! back.
//!
//! The child process is this test binary run again with `child_role` and a role in
//! `AGENTRY_TEST_CHILD`.

use crate::support;

use crate::support::{Backend, Step, TempDir, results_in};
use agentry::prelude::*;
use agentry::{RunOptions, ScriptedTurn};
use agentry::{RunStatus, RunStore, StoreError};
use agentry_store::{PostgresStore, SqliteStore};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long a write waits for another process's lock here, on SQLite (its busy timeout) and
/// Postgres (its lock timeout): the default 5 s would only make each case slower.
pub(crate) const BUSY: Duration = Duration::from_millis(300);

/// The runs' leases: a run whose failed driver could not release it is claimable this long
/// after its last save.
pub(crate) const LEASE: Duration = Duration::from_secs(1);

const ROLE: &str = "AGENTRY_TEST_CHILD";
const STORE: &str = "AGENTRY_TEST_CHILD_STORE";
const RUN: &str = "AGENTRY_TEST_CHILD_RUN";

/// Where a fault is injected: in the model's turn (from 1) or the tool's call of step n.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Point {
    Model(usize),
    Tool(u32),
}

/// A fault that fires once, when the run reaches its point.
#[derive(Default)]
pub(crate) struct Fault {
    at: Option<Point>,
    fire: Mutex<Option<Box<dyn FnOnce() + Send>>>,
}

impl Fault {
    pub(crate) fn none() -> Arc<Fault> {
        Arc::new(Fault::default())
    }

    pub(crate) fn at(point: Point, fire: impl FnOnce() + Send + 'static) -> Arc<Fault> {
        Arc::new(Fault {
            at: Some(point),
            fire: Mutex::new(Some(Box::new(fire))),
        })
    }

    fn reached(&self, point: Point) {
        if self.at == Some(point)
            && let Some(fire) = self.fire.lock().unwrap().take()
        {
            fire();
        }
    }
}

/// Three steps of one tool call each, then the answer. The tool's result of step `big_at` is
/// `big` bytes long.
pub(crate) fn agent(fault: Arc<Fault>, big: Option<(u32, usize)>) -> Agent {
    let model_fault = fault.clone();
    let model = ScriptedModel::from_fn(move |_, req| {
        let done = results_in(req);
        model_fault.reached(Point::Model(done + 1));
        match done {
            k @ 0..3 => ScriptedTurn::new().with_tool_call_id(
                format!("c{}", k + 1),
                "work",
                json!({"n": k + 1}),
            ),
            _ => ScriptedTurn::text("all 3 steps done"),
        }
    });
    let work = tool("work", "Does one step.", move |a: Step, _ctx: ToolCtx| {
        let fault = fault.clone();
        async move {
            fault.reached(Point::Tool(a.n));
            Ok(match big {
                Some((at, size)) if at == a.n => format!("step {} done: {}", a.n, "x".repeat(size)),
                _ => format!("step {} done", a.n),
            })
        }
    });
    Agent::builder("worker")
        .model(model)
        .tool(work)
        .build()
        .unwrap()
}

/// The messages and output of the same run, uninterrupted.
async fn uninterrupted(big: Option<(u32, usize)>) -> RunOutput<(), String> {
    Runtime::new()
        .run(&agent(Fault::none(), big), "Do 3 steps.")
        .await
        .unwrap()
}

/// The store of `backend`, opened as a new process would (its writes wait [`BUSY`] for other
/// processes' locks).
async fn open(backend: &Backend) -> Arc<dyn RunStore> {
    match backend {
        Backend::Sqlite(dir) => Arc::new(
            SqliteStore::options(dir.path().join("runs.db"))
                .busy_timeout(BUSY)
                .open()
                .await
                .unwrap(),
        ),
        Backend::Postgres(db) => Arc::new(
            PostgresStore::options(&db.url())
                .lock_timeout(BUSY)
                .connect()
                .await
                .unwrap(),
        ),
    }
}

/// Loads the run (which must load: its stored record is whole, `status` says where it stands)
/// and resumes it; checks it ends as the uninterrupted run did. A failed run's driver released
/// it, so it resumes at once; a run left running (its failure could not be recorded) once the
/// failed driver's lease lapses.
pub(crate) async fn resumes_to_the_same_end(
    store: Arc<dyn RunStore>,
    run_id: &str,
    status: RunStatus,
    big: Option<(u32, usize)>,
    case: &str,
) {
    let stored = store
        .load(run_id)
        .await
        .unwrap_or_else(|e| panic!("{case}: the run does not load after the failure: {e}"))
        .unwrap_or_else(|| panic!("{case}: the run is not stored"));
    assert_eq!(stored.snapshot.status(), status, "{case}");
    let runtime = Runtime::new().store(store.clone()).lease_ttl(LEASE);
    let agent = agent(Fault::none(), big);
    let start = Instant::now();
    let resumed = loop {
        match runtime.resume(&agent, run_id).await {
            Err(Error::Store(StoreError::Leased { .. }))
                if status == RunStatus::Running && start.elapsed() < LEASE * 10 =>
            {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            other => {
                break other.unwrap_or_else(|e| panic!("{case}: the run does not resume: {e}"));
            }
        }
    };
    let expected = uninterrupted(big).await;
    assert_eq!(resumed.output, expected.output, "{case}");
    assert_eq!(
        resumed.messages.to_vec(),
        expected.messages.to_vec(),
        "{case}"
    );
    let stored = store.load(run_id).await.unwrap().unwrap();
    assert_eq!(stored.snapshot.status(), RunStatus::Finished, "{case}");
    let seqs: Vec<u64> = store
        .events(run_id)
        .await
        .unwrap()
        .iter()
        .map(|e| e.seq)
        .collect();
    assert_eq!(
        seqs,
        (1..=seqs.len() as u64).collect::<Vec<_>>(),
        "{case}: events"
    );
}

/// Where another process takes the store's write lock: SQLite's file, or the Postgres database.
#[derive(Clone)]
enum LockTarget {
    Sqlite(PathBuf),
    Postgres(String),
}

impl LockTarget {
    fn of(backend: &Backend) -> LockTarget {
        match backend {
            Backend::Sqlite(dir) => LockTarget::Sqlite(dir.path().join("runs.db")),
            Backend::Postgres(db) => LockTarget::Postgres(db.url()),
        }
    }
}

/// Takes the store's write lock from another connection, as another process writing would
/// (SQLite's write lock; the `runs` table locked against writes on Postgres), and holds it for
/// `hold`; returns once it is taken, with a handle that ends when it is released.
fn hold_write_lock(target: LockTarget, hold: Duration) -> std::thread::JoinHandle<()> {
    let (taken, is_taken) = std::sync::mpsc::channel();
    let holder = std::thread::spawn(move || match target {
        LockTarget::Sqlite(path) => {
            let conn = rusqlite::Connection::open(path).unwrap();
            conn.execute_batch("BEGIN IMMEDIATE").unwrap();
            taken.send(()).unwrap();
            std::thread::sleep(hold);
            conn.execute_batch("COMMIT").unwrap();
        }
        LockTarget::Postgres(url) => {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async {
                use sqlx::Connection;
                let mut conn = sqlx::PgConnection::connect(&url).await.unwrap();
                let mut tx = conn.begin().await.unwrap();
                sqlx::query("LOCK TABLE runs IN EXCLUSIVE MODE")
                    .execute(&mut *tx)
                    .await
                    .unwrap();
                taken.send(()).unwrap();
                tokio::time::sleep(hold).await;
                tx.commit().await.unwrap();
            });
        }
    });
    is_taken.recv().unwrap();
    holder
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_foreign_write_lock_past_the_lock_timeout_leaves_a_run_that_resumes_to_the_same_end() {
    for backend in Backend::all().await {
        // At a tool call (the end-of-step checkpoint, handed over without waiting, fails, and
        // the next turn's checkpoint was built on it), and in a model turn (the turn's
        // checkpoint, or the final one, fails).
        for point in [
            Point::Tool(1),
            Point::Tool(2),
            Point::Model(2),
            Point::Model(4),
        ] {
            // Held for less than two lock timeouts, the run's failure is recorded after the
            // failed checkpoint (its save waits a lock timeout too), and the lease released;
            // held for longer, the run is left as its last written checkpoint left it, running.
            for (hold, status) in [
                (BUSY * 3 / 2, RunStatus::Failed),
                (BUSY * 4, RunStatus::Running),
            ] {
                let case = format!("{}: lock held {hold:?} from {point:?}", backend.name());
                let run_id = format!("r-{point:?}-{}", hold.as_millis());
                let store = open(&backend).await;
                let holder = Arc::new(Mutex::new(None));
                let fault = {
                    let (holder, target) = (holder.clone(), LockTarget::of(&backend));
                    Fault::at(point, move || {
                        *holder.lock().unwrap() = Some(hold_write_lock(target, hold));
                    })
                };
                let err = Runtime::new()
                    .store(store.clone())
                    .lease_ttl(LEASE)
                    .run(&agent(fault, None), "Do 3 steps.")
                    .with(RunOptions::new().run_id(run_id.clone()))
                    .await
                    .expect_err(&case)
                    .to_string();
                assert!(
                    err.contains("database is locked") || err.contains("lock timeout"),
                    "{case}: {err}"
                );
                let holder = holder.lock().unwrap().take().expect("the fault fired");
                holder.join().unwrap();
                resumes_to_the_same_end(store, &run_id, status, None, &case).await;
            }
        }
    }
}

/// Makes every checkpoint of the backend's runs that would move a run to revision `from` or
/// later fail inside the database, as a failing commit would (`installed` false removes it).
async fn fail_checkpoints_from(backend: &Backend, from: u64, installed: bool) {
    match backend {
        Backend::Sqlite(dir) => {
            let conn = rusqlite::Connection::open(dir.path().join("runs.db")).unwrap();
            conn.busy_timeout(Duration::from_secs(10)).unwrap();
            let sql = if installed {
                format!(
                    "CREATE TRIGGER fail_checkpoints BEFORE UPDATE ON runs \
                     WHEN NEW.revision >= {from} AND NEW.revision <> OLD.revision \
                     BEGIN SELECT RAISE(ABORT, 'injected commit failure'); END;"
                )
            } else {
                "DROP TRIGGER fail_checkpoints".to_string()
            };
            conn.execute_batch(&sql).unwrap();
        }
        Backend::Postgres(db) => {
            let pool = db.pool().await;
            let statements = if installed {
                vec![
                    "CREATE OR REPLACE FUNCTION fail_checkpoint() RETURNS trigger LANGUAGE plpgsql \
                     AS $$ BEGIN RAISE EXCEPTION 'injected commit failure'; END $$"
                        .to_string(),
                    format!(
                        "CREATE TRIGGER fail_checkpoints BEFORE UPDATE ON runs FOR EACH ROW \
                         WHEN (NEW.revision >= {from} AND NEW.revision <> OLD.revision) \
                         EXECUTE FUNCTION fail_checkpoint()"
                    ),
                ]
            } else {
                vec!["DROP TRIGGER fail_checkpoints ON runs".to_string()]
            };
            for sql in statements {
                sqlx::query(sqlx::AssertSqlSafe(sql))
                    .execute(&pool)
                    .await
                    .unwrap();
            }
            pool.close().await;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commit_failed_by_the_database_at_any_checkpoint_leaves_a_run_that_resumes() {
    // The run writes about eight checkpoints: its start, each tool turn, each step's end, the
    // outcome. From each of them on, the database refuses to commit (so the run's failure
    // cannot be recorded either) until the fault is removed.
    for backend in Backend::all().await {
        for written in 1..=8 {
            let case = format!(
                "{}: commits fail after {written} checkpoints",
                backend.name()
            );
            let store = open(&backend).await;
            let run_id = format!("r{written}");
            // Each run is alone in the store while the fault is on.
            fail_checkpoints_from(&backend, written + 1, true).await;
            let outcome = Runtime::new()
                .store(store.clone())
                .lease_ttl(LEASE)
                .run(&agent(Fault::none(), None), "Do 3 steps.")
                .with(RunOptions::new().run_id(run_id.clone()))
                .await;
            fail_checkpoints_from(&backend, written + 1, false).await;
            match outcome {
                Err(e) => assert!(
                    e.to_string().contains("injected commit failure"),
                    "{case}: {e}"
                ),
                // Fewer checkpoints than that: nothing failed.
                Ok(out) => {
                    assert_eq!(out.output.as_deref(), Some("all 3 steps done"), "{case}");
                    continue;
                }
            }
            let stored = store.load(&run_id).await.unwrap().unwrap();
            assert!(stored.revision <= written, "{case}: {}", stored.revision);
            resumes_to_the_same_end(store, &run_id, RunStatus::Running, None, &case).await;
        }
    }
}

/// A tmpfs of `size` mounted at `dir` (unmounted when dropped), or `None` where this process may
/// not mount one (said on stderr; under CI=true that fails the test).
pub(crate) struct Tmpfs(PathBuf);

impl Tmpfs {
    pub(crate) fn mount(dir: &Path, size: &str) -> Option<Tmpfs> {
        let status = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir)
            .stderr(Stdio::piped())
            .output();
        match status {
            Ok(out) if out.status.success() => Some(Tmpfs(dir.to_path_buf())),
            other => {
                assert!(
                    std::env::var("CI").as_deref() != Ok("true"),
                    "cannot mount a tmpfs for the disk tests (run CI as root): {other:?}"
                );
                eprintln!("skipping: cannot mount a tmpfs here (needs root): {other:?}");
                None
            }
        }
    }

    /// Makes the disk read-only (nothing may hold a file on it open for writing; a store just
    /// dropped may still be closing its files, so this tries again for a while).
    pub(crate) fn read_only(&self) {
        let start = Instant::now();
        loop {
            let out = Command::new("mount")
                .args(["-o", "remount,ro"])
                .arg(&self.0)
                .output()
                .unwrap();
            if out.status.success() {
                return;
            }
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "cannot remount read-only: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn resize(&self, size: &str) {
        let status = Command::new("mount")
            .args(["-o", &format!("remount,size={size}")])
            .arg(&self.0)
            .status()
            .unwrap();
        assert!(status.success());
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_under_a_large_checkpoint_leaves_a_run_that_resumes_once_there_is_room() {
    let dir = TempDir::new();
    let mount = dir.path().join("disk");
    std::fs::create_dir(&mount).unwrap();
    let Some(disk) = Tmpfs::mount(&mount, "2m") else {
        return;
    };
    let store: Arc<dyn RunStore> = Arc::new(
        SqliteStore::options(mount.join("runs.db"))
            .busy_timeout(BUSY)
            .open()
            .await
            .unwrap(),
    );
    // Step 2's result (4 MB) does not fit on the disk.
    let big = Some((2, 4 << 20));
    let err = Runtime::new()
        .store(store.clone())
        .lease_ttl(LEASE)
        .run(&agent(Fault::none(), big), "Do 3 steps.")
        .with(RunOptions::new().run_id("r1"))
        .await
        .expect_err("the disk is full")
        .to_string();
    assert!(
        err.contains("full") || err.contains("disk I/O error"),
        "{err}"
    );
    // Room again: the run loads and resumes (step 2 runs again: its end was never written).
    disk.resize("64m");
    // (The run's failure could not be recorded either: the same message would not fit.)
    resumes_to_the_same_end(store.clone(), "r1", RunStatus::Running, big, "full disk").await;
    drop(store);
    drop(disk);
}

/// The entry point of the child process; does nothing in the test run itself.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn child_role() {
    let Ok(role) = std::env::var(ROLE) else {
        return;
    };
    let spec = std::env::var(STORE).unwrap();
    let store = match spec.strip_prefix("sqlite:") {
        Some(path) => Arc::new(
            SqliteStore::options(path)
                .busy_timeout(BUSY)
                .open()
                .await
                .unwrap(),
        ) as Arc<dyn RunStore>,
        None => support::open_spec(&spec).await,
    };
    let run_id = std::env::var(RUN).unwrap();
    match role.as_str() {
        // Runs the agent until a checkpoint fails, and dies at once (in a RunFailed hook: after
        // the failed commit, before anything else is written).
        "crash" => {
            let runtime = Runtime::new()
                .store(store)
                .lease_ttl(LEASE)
                .with(on::run_failed(|_ev, _ctx| async move {
                    println!("CRASHING");
                    std::process::abort();
                    #[allow(unreachable_code)]
                    Ok(_ev)
                }));
            let out = runtime
                .run(&agent(Fault::none(), None), "Do 3 steps.")
                .with(RunOptions::new().run_id(run_id))
                .await;
            panic!("the run was to fail and the process to die, but it ended: {out:?}");
        }
        other => panic!("unknown child role {other}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_process_that_dies_right_after_a_failed_commit_leaves_a_run_that_resumes() {
    for backend in Backend::all().await {
        // Failures inside the run's body, where RunFailed hooks run: at a step's end (handed over
        // without waiting), and at a turn's tool calls.
        for from in [2, 3, 5] {
            let case = format!("{}: died after checkpoint {from} failed", backend.name());
            let run_id = format!("crashed-{from}");
            let spec = backend.spec();
            // The schema is there before the fault goes in.
            let store = open(&backend).await;
            fail_checkpoints_from(&backend, from + 1, true).await;
            let child = Command::new(std::env::current_exe().unwrap())
                .args([
                    "runtime_store_faults::child_role",
                    "--exact",
                    "--nocapture",
                    "--test-threads=1",
                ])
                .env(ROLE, "crash")
                .env(STORE, &spec)
                .env(RUN, &run_id)
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .output()
                .unwrap();
            fail_checkpoints_from(&backend, from + 1, false).await;
            let stdout = String::from_utf8_lossy(&child.stdout);
            assert!(!child.status.success(), "{case}: {stdout}");
            assert!(stdout.contains("CRASHING"), "{case}: {stdout}");
            let stored = store.load(&run_id).await.unwrap().unwrap();
            // (SQLite writes two checkpoints handed over together in one update.)
            assert!(
                (from - 1..=from).contains(&stored.revision),
                "{case}: {}",
                stored.revision
            );
            resumes_to_the_same_end(store, &run_id, RunStatus::Running, None, &case).await;
        }
    }
}

/// Step 1 sets the run's state to `size` bytes, so every later checkpoint writes that much; step
/// 2's tool says it started, then waits to be cancelled.
fn heavy(size: usize, started: Arc<tokio::sync::Notify>, calls: Arc<AtomicU32>) -> Agent<String> {
    let model = ScriptedModel::from_fn(|_, req| match results_in(req) {
        k @ 0..2 => ScriptedTurn::new().with_tool_call_id(
            format!("c{}", k + 1),
            "work",
            json!({"n": k + 1}),
        ),
        _ => ScriptedTurn::text("done"),
    });
    let work = tool("work", "Does one step.", move |a: Step, ctx: ToolCtx| {
        let (started, calls) = (started.clone(), calls.clone());
        async move {
            let call = calls.fetch_add(1, Ordering::SeqCst);
            if a.n == 1 {
                ctx.update_state(|s: &mut String| *s = "x".repeat(size))?;
            } else if call == 1 {
                started.notify_one();
                std::future::pending::<()>().await;
            }
            Ok(format!("step {} done", a.n))
        }
    });
    Agent::builder("heavy")
        .model(model)
        .tool(work)
        .state(String::new())
        .build()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_run_with_a_64_mb_checkpoint_can_be_resumed_at_once() {
    for backend in Backend::all().await {
        let case = backend.name();
        let store = open(&backend).await;
        let started = Arc::new(tokio::sync::Notify::new());
        let calls = Arc::new(AtomicU32::new(0));
        let agent = heavy(64 << 20, started.clone(), calls.clone());
        // Renewed every 100 ms: renewals are under way while each 64 MB save is written, the
        // releasing ones included.
        let runtime = Runtime::new()
            .store(store.clone())
            .lease_ttl(Duration::from_millis(300));
        let handle = runtime
            .run(&agent, "Go.")
            .with(RunOptions::new().run_id("heavy"))
            .start();
        started.notified().await;
        tokio::time::sleep(Duration::from_millis(300)).await;
        handle.cancel();
        let out = handle.result().await.unwrap();
        assert_eq!(out.stop, StopReason::Cancelled, "{case}");
        // At once (before the 64 MB record could even be loaded): a renewal that raced the
        // releasing save, which the store took before this claim, must not have taken the run
        // back. (Held for no time: the resume below claims it again.)
        let claimed = store
            .claim("heavy", 0, RunStatus::Cancelled, Duration::ZERO)
            .await;
        assert!(
            matches!(claimed, Ok(1)),
            "{case}: the cancelled run is not free at once: {claimed:?}"
        );
        let resumed = runtime
            .resume(&agent, "heavy")
            .await
            .unwrap_or_else(|e| panic!("{case}: the cancelled run is not resumable at once: {e}"));
        assert_eq!(resumed.output.as_deref(), Some("done"), "{case}");
        assert_eq!(resumed.state.len(), 64 << 20, "{case}");
    }
}
