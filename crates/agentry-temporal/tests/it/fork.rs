//! A fork of a run on Temporal (`Client::fork`): from the end of a step with another state, from
//! the start with another input, and a fork of a fork, each as the in-process fork of the same
//! run gives; what cannot be forked says why and starts nothing.

use crate::support::DevServer;
use crate::support::agents::Log;
use agentry::prelude::*;
use agentry::{Fork, ForkError, Message, RunOptions, RunOutput, ScriptedTurn};
use agentry_temporal::{TemporalError, Worker};
use futures::StreamExt;

/// What was noted.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
struct Notes {
    items: Vec<String>,
}

#[derive(Deserialize, JsonSchema)]
struct Text {
    text: String,
}

/// Notes "milk" (step 1) and "eggs" (step 2) in its state, then answers (step 3); told
/// anything after its answer, it answers again.
fn notes() -> Agent<Notes, String> {
    let model = ScriptedModel::from_fn(|_, req| {
        let noted = req
            .messages
            .iter()
            .filter(|m| matches!(m, Message::Tool(_)))
            .count();
        match noted {
            0 => ScriptedTurn::new().with_tool_call("note", json!({"text": "milk"})),
            1 => ScriptedTurn::new().with_tool_call("note", json!({"text": "eggs"})),
            _ => {
                let last = req.messages.last().map(|m| m.text().to_string());
                ScriptedTurn::text(format!("noted both; last: {}", last.unwrap_or_default()))
            }
        }
    });
    Agent::builder("notes")
        .model(model)
        .state(Notes::default())
        .tool(tool(
            "note",
            "Notes a thing.",
            |a: Text, ctx: ToolCtx| async move {
                ctx.update_state(|s: &mut Notes| s.items.push(a.text.clone()))?;
                Ok("noted")
            },
        ))
        .build()
        .unwrap()
}

/// A runtime whose hooks log each run's start and each step, with the step a fork began at.
fn logging(log: &Log) -> Runtime {
    let (starts, steps) = (log.clone(), log.clone());
    Runtime::new()
        .with(on::run_start(move |ev, _ctx| {
            let log = starts.clone();
            async move {
                log.lock().unwrap().push(format!("RunStart {}", ev.input));
                Ok(ev)
            }
        }))
        .with(on::before_step(move |ev, ctx| {
            let log = steps.clone();
            async move {
                let at = ctx.metadata().get("forked_at_step").cloned();
                log.lock()
                    .unwrap()
                    .push(format!("BeforeStep {} forked at {at:?}", ev.step()));
                Ok(ev)
            }
        }))
}

/// A run's history as roles and texts.
fn talk(out: &RunOutput<Notes, String>) -> Vec<String> {
    out.messages
        .iter()
        .map(|m| format!("{:?}: {}", m.role(), m.text()))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fork_on_temporal_goes_on_from_a_step_as_an_in_process_fork_does() {
    let Some(dev) = DevServer::start("fork").await else {
        return;
    };
    let agent = notes();
    let bread = || Fork::at(1).state(json!({"items": ["bread"]}));
    let again = || Fork::at(0).input("note again");

    // In-process, on a store: the run, a fork from step 1 with another state, one from the
    // start with another input, and a fork of the first fork from its last step.
    let local_log = Log::default();
    let runtime = logging(&local_log).store(MemoryStore::new());
    let first = runtime.run(&agent, "note").await.unwrap();
    let local_bread = runtime.fork(&agent, &first.run_id, bread()).await.unwrap();
    let local_again = runtime.fork(&agent, &first.run_id, again()).await.unwrap();
    let local_more = runtime
        .fork(&agent, &local_bread.run_id, Fork::at(3).input("and butter"))
        .await
        .unwrap();
    assert_eq!(local_bread.state.items, ["bread", "eggs"]);

    // On Temporal.
    let log = Log::default();
    let worker = Worker::new(dev.server("fork"), logging(&log))
        .agent(&agent)
        .spawn()
        .unwrap();
    let client = dev.client("fork").await;
    let original = client.run("notes", "note").start().await.unwrap();
    let out: RunOutput<Notes, String> = original.result().await.unwrap();
    assert_eq!(out.state.items, ["milk", "eggs"]);

    let forked = client
        .fork(original.run_id(), bread())
        .start()
        .await
        .unwrap();
    assert_ne!(forked.run_id(), original.run_id());
    // Its events begin at the step after the fork's, its start state recorded first.
    let events: Vec<RunEvent> = forked.events().map(|e| e.unwrap()).collect().await;
    let steps: Vec<u32> = events
        .iter()
        .filter_map(|e| match e {
            RunEvent::StepStarted { step, .. } => Some(*step),
            _ => None,
        })
        .collect();
    assert_eq!(steps, [2, 3]);
    assert!(
        events.iter().any(|e| e.whole_state().is_some()),
        "{events:#?}"
    );
    let bread_out: RunOutput<Notes, String> = forked.result().await.unwrap();
    assert_eq!(bread_out.state, local_bread.state);
    assert_eq!(bread_out.output, local_bread.output);
    assert_eq!(bread_out.steps, 3);
    assert_eq!(talk(&bread_out), talk(&local_bread));
    // The history up to step 1 is the original's, as it was.
    assert_eq!(bread_out.messages.len(), out.messages.len());
    assert_eq!(
        bread_out.messages.get(1).map(|m| m.text().to_string()),
        out.messages.get(1).map(|m| m.text().to_string())
    );

    let again_out: RunOutput<Notes, String> = client
        .fork(original.run_id(), again())
        .typed()
        .await
        .unwrap();
    assert_eq!(again_out.messages.first().unwrap().text(), "note again");
    assert_eq!(again_out.state, local_again.state);
    assert_eq!(talk(&again_out), talk(&local_again));

    // A fork of the fork, from its own last step: the history it came with and its own.
    let more: RunOutput<Notes, String> = client
        .fork(forked.run_id(), Fork::at(3).input("and butter"))
        .typed()
        .await
        .unwrap();
    assert_eq!(talk(&more), talk(&local_more));
    assert_eq!(more.output.as_deref(), Some("noted both; last: and butter"));

    // The hooks saw the same on both runtimes: RunStart for the original only (a fork's
    // history is the original's), each fork's steps from the one after its step on, and the
    // step it was forked at.
    let local_lines = local_log.lock().unwrap().clone();
    assert_eq!(*log.lock().unwrap(), local_lines);
    assert_eq!(
        local_lines
            .iter()
            .filter(|l| l.starts_with("RunStart"))
            .count(),
        1,
        "{local_lines:#?}"
    );
    assert!(
        local_lines.contains(&"BeforeStep 2 forked at Some(Number(1))".to_string()),
        "{local_lines:#?}"
    );

    // What cannot be forked says why, and starts nothing.
    let refused = |e: TemporalError| match e {
        TemporalError::Fork(e) => e,
        other => panic!("not a fork error: {other}"),
    };
    let e = refused(
        client
            .fork(original.run_id(), Fork::at(7))
            .start()
            .await
            .unwrap_err(),
    );
    assert!(
        matches!(e, ForkError::NoSuchStep { finished: 3, .. }),
        "{e}"
    );
    let e = refused(
        client
            .fork(original.run_id(), Fork::at(3))
            .start()
            .await
            .unwrap_err(),
    );
    assert!(matches!(e, ForkError::NothingToDo { step: 3, .. }), "{e}");
    assert!(e.to_string().contains("give the fork an input"), "{e}");
    let e = refused(
        client
            .fork("no-such-run", Fork::at(0))
            .start()
            .await
            .unwrap_err(),
    );
    assert!(matches!(e, ForkError::NoSuchRun { .. }), "{e}");
    // A fork of the fork from before the step it began at names the run to fork instead.
    let e = refused(
        client
            .fork(forked.run_id(), Fork::at(0))
            .start()
            .await
            .unwrap_err(),
    );
    assert!(e.to_string().contains("began at step 2"), "{e}");
    let e = client
        .fork(original.run_id(), Fork::at(1).input("x"))
        .with(RunOptions::new().tag("mine"))
        .start()
        .await
        .unwrap_err();
    assert!(e.to_string().contains("run id only"), "{e}");
    assert_eq!(*log.lock().unwrap(), local_lines, "nothing else ran");
    worker.stop().unwrap();
}
