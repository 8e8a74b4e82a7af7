//! Long and interrupted runs on a real Temporal dev server (started by the test, see
//! `support`): a run that continues as new executions ends as an uninterrupted one does, hooks
//! included; a run survives its server's restart without doing a completed step again; many
//! runs at once all complete.

use crate::support;

use crate::support::DevServer;
use crate::support::agents::{Log, recording_runtime, results_in};
use agentry::RunOutput;
use agentry::prelude::*;
use agentry::{RunOptions, ScriptedTurn};
use agentry_temporal::{Placement, RunState, Worker};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

#[derive(Deserialize, JsonSchema)]
struct Text {
    text: String,
}

/// What ran, by name: model turns by step, tool calls by call id.
type Ran = Arc<Mutex<HashMap<String, usize>>>;

fn count(ran: &Ran, what: String) {
    *ran.lock().unwrap().entry(what).or_default() += 1;
}

/// An agent that calls `echo` once a step for `steps` steps, then answers; `ran` counts its
/// model turns and calls. A call whose text is in `gate`'s list waits until the gate opens.
fn stepper(steps: usize, ran: &Ran, gate: Option<Arc<Gate>>) -> Agent {
    let seen = ran.clone();
    let model = ScriptedModel::from_fn(move |_, req| {
        let done = results_in(req);
        count(&seen, format!("model {done}"));
        if done < steps {
            ScriptedTurn::new()
                .with_tool_call_id(
                    format!("c{done}"),
                    "echo",
                    json!({"text": format!("s{done}")}),
                )
                .with_usage(10, 2)
        } else {
            ScriptedTurn::text(format!("{steps} steps done")).with_usage(10, 3)
        }
    });
    let seen = ran.clone();
    let echo = tool("echo", "Echoes.", move |a: Text, ctx: ToolCtx| {
        count(&seen, format!("call {}", ctx.idempotency_key()));
        let gate = gate.clone();
        async move {
            if let Some(gate) = gate
                && gate.at == a.text
            {
                gate.wait().await;
            }
            Ok(a.text)
        }
    });
    Agent::builder("stepper")
        .instructions("Step.")
        .model(model)
        .tool(echo)
        .max_steps(1_000)
        .build()
        .unwrap()
}

/// A call that waits: `reached` once it started, until `open` is called.
struct Gate {
    at: String,
    reached: tokio::sync::Notify,
    opened: tokio::sync::Semaphore,
}

impl Gate {
    fn new(at: &str) -> Arc<Gate> {
        Arc::new(Gate {
            at: at.into(),
            reached: tokio::sync::Notify::new(),
            opened: tokio::sync::Semaphore::new(0),
        })
    }

    async fn wait(&self) {
        self.reached.notify_one();
        let _ = self.opened.acquire().await.unwrap();
    }

    fn open(&self) {
        self.opened.add_permits(1_000);
    }
}

/// How many executions the workflow `run_id` has had, as the server lists them.
fn executions(dev: &DevServer, run_id: &str) -> usize {
    let cli = support::temporal_cli("executions").unwrap();
    let out = std::process::Command::new(cli)
        .args(["workflow", "count", "--address"])
        .arg(dev.server("any").target.trim_start_matches("http://"))
        .args(["--query", &format!("WorkflowId = '{run_id}'")])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "temporal workflow count: {text}");
    text.split_whitespace()
        .find_map(|w| w.parse().ok())
        .unwrap_or_else(|| panic!("no count in {text:?}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_that_continues_as_new_ends_as_an_uninterrupted_run() {
    let Some(dev) = DevServer::start("continue_as_new").await else {
        return;
    };
    let steps = 12;
    let local_log = Log::default();
    let local = recording_runtime(&local_log)
        .run(&stepper(steps, &Ran::default(), None), "go")
        .await
        .unwrap();

    let log = Log::default();
    let ran = Ran::default();
    let worker = Worker::new(dev.server("can"), recording_runtime(&log))
        .agent(&stepper(steps, &ran, None))
        .spawn()
        .unwrap();
    // A threshold this low continues the run after every step or two.
    let client = dev.client("can").await.continue_as_new_after(20);
    let handle = client
        .run("stepper", "go")
        .with(RunOptions::new().run_id("can-1"))
        .start()
        .await
        .unwrap();
    let out: RunOutput<(), String> = handle.result().await.unwrap();
    worker.stop().unwrap();

    let continued = executions(&dev, "can-1");
    assert!(continued >= 4, "the run continued as new {continued} times");
    assert_eq!(out.run_id, "can-1");
    assert_eq!(out.output.as_deref(), Some("12 steps done"));
    assert_eq!(out.output, local.output);
    assert_eq!(out.messages.to_vec(), local.messages.to_vec());
    assert_eq!(out.usage, local.usage);
    assert_eq!(out.steps, local.steps);
    assert_eq!(out.model_calls, local.model_calls);
    assert_eq!(out.stop, local.stop);
    // Every hook saw what it sees in-process, once: RunStart once, MessageAdded once a message.
    assert_eq!(*log.lock().unwrap(), *local_log.lock().unwrap());
    // No step ran twice across the executions.
    assert!(ran.lock().unwrap().values().all(|&n| n == 1), "{ran:?}");
    let listed = client.list().await.unwrap();
    let mine: Vec<_> = listed.iter().filter(|r| r.run_id == "can-1").collect();
    assert_eq!(mine.len(), 1, "a continued run is listed once: {listed:?}");
    assert_eq!(mine[0].status, RunState::Ended);
}

/// A run's typed state: what its tool and its AfterTool hook wrote.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
struct Tally {
    noted: Vec<String>,
    after_tool: u32,
}

/// `steps` steps of one `note` call each; `note` and an AfterTool hook write the state.
fn tallier(steps: usize) -> Agent<Tally> {
    let model = ScriptedModel::from_fn(move |_, req| {
        let done = results_in(req);
        if done < steps {
            ScriptedTurn::new().with_tool_call_id(
                format!("n{done}"),
                "note",
                json!({"text": format!("t{done}")}),
            )
        } else {
            ScriptedTurn::text(format!("{steps} noted"))
        }
    });
    let note = tool("note", "Notes text.", |a: Text, ctx: ToolCtx| async move {
        ctx.update_state(|s: &mut Tally| s.noted.push(a.text.clone()))?;
        Ok("noted")
    });
    Agent::builder("tallier")
        .model(model)
        .tool(note)
        .state(Tally::default())
        .with(on::after_tool(|ev, ctx| async move {
            ctx.update_state(|s: &mut Tally| s.after_tool += 1)?;
            Ok(ev)
        }))
        .max_steps(100)
        .build()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stateful_run_carries_its_state_across_continue_as_new() {
    let Some(dev) = DevServer::start("continue_as_new_state").await else {
        return;
    };
    let steps = 10;
    let local = Runtime::new().run(&tallier(steps), "go").await.unwrap();
    assert_eq!(local.state.noted.len(), steps);

    let worker = Worker::new(dev.server("can-state"), Runtime::new())
        .agent(&tallier(steps))
        .spawn()
        .unwrap();
    let client = dev.client("can-state").await.continue_as_new_after(20);
    let handle = client
        .run("tallier", "go")
        .with(RunOptions::new().run_id("can-state-1"))
        .start()
        .await
        .unwrap();
    let out: RunOutput<Tally, String> = handle.result().await.unwrap();
    worker.stop().unwrap();

    assert!(executions(&dev, "can-state-1") >= 3);
    assert_eq!(out.state, local.state);
    assert_eq!(out.output, local.output);
    assert_eq!(out.messages.to_vec(), local.messages.to_vec());
    assert_eq!(out.steps, local.steps);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_restart_mid_run_loses_nothing_and_redoes_no_completed_step() {
    let Some(mut dev) = DevServer::start("server_restart").await else {
        return;
    };
    let steps = 6;
    let local = Runtime::new()
        .run(&stepper(steps, &Ran::default(), None), "go")
        .await
        .unwrap();

    let ran = Ran::default();
    let gate = Gate::new("s3");
    let worker = Worker::new(dev.server("restart"), Runtime::new())
        .agent(&stepper(steps, &ran, Some(gate.clone())))
        .spawn()
        .unwrap();
    let client = dev.client("restart").await;
    let handle = client
        .run("stepper", "go")
        .with(RunOptions::new().run_id("restart-1"))
        .start()
        .await
        .unwrap();
    tokio::time::timeout(Duration::from_secs(60), gate.reached.notified())
        .await
        .expect("the run reached step 4's call");
    // The server dies (SIGKILL) while a call is in flight, and comes back on the same database
    // and port; the worker and the client reconnect by themselves.
    dev.restart().await;
    gate.open();
    let out: RunOutput<(), String> = tokio::time::timeout(Duration::from_secs(120), async {
        loop {
            match client.handle("restart-1").result().await {
                Ok(out) => return out,
                // The client's long poll may fail while the server is away.
                Err(e) => {
                    eprintln!("waiting for the result: {e}");
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
            }
        }
    })
    .await
    .expect("the run ended within 120 s of the restart");
    drop(handle);
    worker.stop().unwrap();

    assert_eq!(out.output.as_deref(), Some("6 steps done"));
    assert_eq!(out.messages.to_vec(), local.messages.to_vec());
    assert_eq!(out.steps, local.steps);
    assert_eq!(out.usage, local.usage);
    let ran = ran.lock().unwrap();
    // Every model turn ran once, and every call that completed before the restart ran once;
    // only the call in flight (c3) may have run again, with the same idempotency key.
    for n in 0..=steps {
        assert_eq!(ran.get(&format!("model {n}")), Some(&1), "{ran:?}");
    }
    for n in [0, 1, 2, 4, 5] {
        assert_eq!(
            ran.get(&format!("call restart-1:c{n}")),
            Some(&1),
            "{ran:?}"
        );
    }
    assert!(ran.get("call restart-1:c3").is_some_and(|&n| n >= 1));
}

/// 1,000 runs at once on one worker, all to their answer, their phases scheduled as activities.
/// Run with `--release` (it takes minutes in a debug build): `cargo test --release -p
/// agentry-temporal --test it -- --ignored durability::`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a load test: run it with --release (see its doc comment)"]
async fn a_thousand_concurrent_runs_complete() {
    thousand_runs("thousand", Placement::Scheduled).await;
}

/// 1,000 runs at once on one worker, all to their answer, their phases local activities: fast
/// enough for every test run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_concurrent_runs_with_local_activities_complete() {
    thousand_runs("thousand_local", Placement::Local).await;
}

async fn thousand_runs(queue: &str, placement: Placement) {
    let Some(dev) = DevServer::start(queue).await else {
        return;
    };
    let ran = Ran::default();
    let worker = Worker::new(dev.server(queue), Runtime::new())
        .agent(&stepper(2, &ran, None))
        .spawn()
        .unwrap();
    let client = dev.client(queue).await.placement(placement);
    let start = Instant::now();
    let mut handles = Vec::new();
    for i in 0..1_000 {
        let run_id = format!("{queue}-{i}");
        handles.push(
            client
                .run("stepper", "go")
                .with(RunOptions::new().run_id(run_id))
                .start()
                .await
                .unwrap(),
        );
    }
    for handle in &handles {
        let out: RunOutput<(), String> = handle.result().await.unwrap();
        assert_eq!(out.output.as_deref(), Some("2 steps done"));
        assert_eq!(out.steps, 3);
    }
    let wall = start.elapsed();
    worker.stop().unwrap();
    // Each run's three model turns and two calls ran once.
    let ran = ran.lock().unwrap();
    for n in 0..=2 {
        assert_eq!(ran.get(&format!("model {n}")), Some(&1_000));
    }
    let calls: Vec<usize> = ran
        .iter()
        .filter(|(k, _)| k.starts_with("call "))
        .map(|(_, &n)| n)
        .collect();
    assert_eq!(calls.len(), 2_000);
    assert!(calls.iter().all(|&n| n == 1));
    println!(
        "1,000 runs of 3 steps ({placement:?}): {:.1} s, {:.1} runs/s",
        wall.as_secs_f64(),
        1_000.0 / wall.as_secs_f64()
    );
}

#[derive(Deserialize, JsonSchema)]
struct Nothing {}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopping_worker_does_not_wait_for_a_hung_call_and_another_takes_it_up() {
    let Some(dev) = DevServer::start("grace").await else {
        return;
    };
    // The first attempt at the call hangs; a later one answers. Each notes its key.
    let keys = Arc::new(Mutex::new(Vec::<String>::new()));
    let agent = || {
        let keys = keys.clone();
        let hang = tool("hang", "Hangs once.", move |_: Nothing, ctx: ToolCtx| {
            let keys = keys.clone();
            async move {
                let first = {
                    let mut keys = keys.lock().unwrap();
                    keys.push(ctx.idempotency_key());
                    keys.len() == 1
                };
                if first {
                    tokio::time::sleep(Duration::from_secs(600)).await;
                }
                Ok("answered")
            }
        });
        Agent::builder("hanger")
            .model(ScriptedModel::from_fn(|_, req| match results_in(req) {
                0 => ScriptedTurn::new().with_tool_call_id("h1", "hang", json!({})),
                _ => ScriptedTurn::text("done"),
            }))
            .tool(hang)
            .build()
            .unwrap()
    };
    let first = Worker::new(dev.server("grace"), Runtime::new())
        .agent(&agent())
        .shutdown_grace(Duration::from_secs(1))
        .spawn()
        .unwrap();
    let client = dev.client("grace").await;
    let handle = client
        .run("hanger", "go")
        .with(RunOptions::new().run_id("grace"))
        .start()
        .await
        .unwrap();
    let started = Instant::now();
    while keys.lock().unwrap().is_empty() {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the call never started"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let stopping = Instant::now();
    first.stop().unwrap();
    let took = stopping.elapsed();
    assert!(took < Duration::from_secs(10), "the stop waited {took:?}");
    // Another worker takes the call up at once, with the same key, and the run ends.
    let second = Worker::new(dev.server("grace"), Runtime::new())
        .agent(&agent())
        .spawn()
        .unwrap();
    let out: RunOutput<(), String> = handle.result().await.unwrap();
    second.stop().unwrap();
    assert_eq!(out.output.as_deref(), Some("done"));
    let keys = keys.lock().unwrap().clone();
    assert_eq!(keys.len(), 2, "{keys:?}");
    assert_eq!(keys[0], keys[1]);
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "the call was taken up after {:?}, not at once",
        started.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deadline_carries_across_continue_as_new() {
    let Some(dev) = DevServer::start("deadline-can").await else {
        return;
    };
    // Ten steps of a 300 ms call; the first call's BeforeTool hook gives the run 1.5 s.
    let nap = tool("nap", "Naps.", |_: Nothing, _ctx: ToolCtx| async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        Ok("rested")
    });
    let agent = Agent::builder("napper")
        .model(ScriptedModel::from_fn(|_, req| match results_in(req) {
            n if n < 10 => ScriptedTurn::new().with_tool_call_id(format!("n{n}"), "nap", json!({})),
            _ => ScriptedTurn::text("rested enough"),
        }))
        .tool(nap)
        .build()
        .unwrap();
    let budget = StopReason::Hook {
        hook: "budget".into(),
        reason: "out of time".into(),
    };
    let stop = budget.clone();
    let runtime = Runtime::new().with(on::before_tool(move |ev, ctx| {
        if ev.call_id() == "n0" {
            ctx.stop_at(Instant::now() + Duration::from_millis(1500), stop.clone());
        }
        std::future::ready(Ok(ev))
    }));
    let worker = Worker::new(dev.server("dcan"), runtime)
        .agent(&agent)
        .spawn()
        .unwrap();
    // Continued as a new execution after every step or so.
    let client = dev.client("dcan").await.continue_as_new_after(20);
    let out: RunOutput<(), String> = client
        .run("napper", "nap")
        .with(RunOptions::new().run_id("dcan"))
        .await
        .unwrap();
    worker.stop().unwrap();
    assert!(
        executions(&dev, "dcan") >= 2,
        "the run never continued as new"
    );
    // The deadline the first execution noted stopped the run in a later one.
    assert_eq!(out.stop, budget);
    assert!(out.steps < 10, "{} steps", out.steps);
}
