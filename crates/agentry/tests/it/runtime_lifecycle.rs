//! The life of a run through the in-process runtime: cancellation (from the handle, a tool or a
//! hook), typed state updates and their sources, and the event stream of a started run.

use agentry::prelude::*;
use agentry::{MemoryStore, RunStore, StateError};
use agentry::{Message, RunHandle, RunOptions, ScriptedTurn, StateSource, Tool};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const PATIENCE: Duration = Duration::from_secs(10);

#[derive(Deserialize, JsonSchema)]
struct NoArgs {}

#[derive(Deserialize, JsonSchema)]
struct Text {
    text: String,
}

type Shared<T> = Arc<Mutex<Vec<T>>>;

fn shared<T>() -> Shared<T> {
    Arc::new(Mutex::new(Vec::new()))
}

fn take<T: Clone>(s: &Shared<T>) -> Vec<T> {
    s.lock().unwrap().clone()
}

/// Reads events until one matches `stop_at` (which is kept), failing after [`PATIENCE`].
async fn events_until<S, O>(
    handle: &mut RunHandle<S, O>,
    stop_at: impl Fn(&RunEvent) -> bool,
) -> Vec<RunEvent> {
    let mut seen = Vec::new();
    loop {
        let ev = tokio::time::timeout(PATIENCE, handle.events().next())
            .await
            .expect("no event in time")
            .unwrap_or_else(|| panic!("the stream ended before the awaited event: {seen:#?}"));
        let done = stop_at(&ev);
        seen.push(ev);
        if done {
            return seen;
        }
    }
}

/// Reads the rest of the stream (it ends when the run does).
/// An agent with one tool whose RunEnd stop reasons go to `ends`.
fn recording_run_ends(
    name: &str,
    model: &ScriptedModel,
    tool: impl Tool,
    ends: &Shared<StopReason>,
) -> Agent {
    let ends = ends.clone();
    Agent::builder(name)
        .model(model.clone())
        .tool(tool)
        .run_end(move |ev, _ctx| {
            ends.lock().unwrap().push(ev.stop().clone());
            async move { Ok(ev) }
        })
        .build()
        .unwrap()
}

async fn rest_of_stream<S, O>(handle: &mut RunHandle<S, O>) -> Vec<RunEvent> {
    tokio::time::timeout(PATIENCE, handle.events().collect::<Vec<_>>())
        .await
        .expect("the event stream did not end")
}

// ---------------------------------------------------------------------------------------------
// Cancellation
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn cancel_through_the_handle_while_a_tool_runs() {
    let ends: Shared<StopReason> = shared();
    let slow = tool(
        "slow",
        "Sleeps for an hour",
        |_: NoArgs, _ctx: ToolCtx| async move {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            Ok("woke up")
        },
    );
    let model = ScriptedModel::new()
        .tool_call("slow", json!({}))
        .text("never reached");
    let agent = recording_run_ends("sleeper", &model, slow, &ends);
    let store = MemoryStore::new();
    let mut handle = Runtime::new()
        .store(store.clone())
        .run(&agent, "go")
        .start();
    let run_id = handle.run_id().to_string();

    let before = events_until(&mut handle, |e| matches!(e, RunEvent::ToolStarted { .. })).await;
    assert!(matches!(before[0], RunEvent::RunStarted { .. }));
    let t0 = Instant::now();
    handle.cancel();
    let after = rest_of_stream(&mut handle).await;
    let out = tokio::time::timeout(PATIENCE, handle.result())
        .await
        .expect("the cancelled run did not end")
        .unwrap();
    assert!(
        t0.elapsed() < Duration::from_secs(2),
        "cancellation took {:?}",
        t0.elapsed()
    );

    assert_eq!(out.stop, StopReason::Cancelled);
    assert_eq!(out.output, None);
    assert_eq!(out.run_id, run_id);
    assert_eq!(model.calls(), 1, "no model call after the cancellation");
    assert_eq!(
        take(&ends),
        [StopReason::Cancelled],
        "RunEnd sees the reason"
    );
    assert!(
        !after
            .iter()
            .any(|e| matches!(e, RunEvent::ToolFinished { .. })),
        "the tool never finished: {after:#?}"
    );
    match after.last() {
        Some(RunEvent::RunFinished {
            stop, run_id: id, ..
        }) => {
            assert_eq!(*stop, StopReason::Cancelled);
            assert_eq!(*id, run_id);
        }
        other => panic!("the stream should end with RunFinished, got {other:?}"),
    }
    // The state is checkpointed, marked cancelled.
    let snap = store
        .load(&run_id)
        .await
        .unwrap()
        .expect("a checkpoint")
        .snapshot;
    assert_eq!(snap.stop, Some(StopReason::Cancelled));
    assert_eq!(snap.messages[0].text(), "go");
}

#[tokio::test]
async fn cancelling_before_the_tool_returns_drops_its_work() {
    // A tool that cancels its own run and then goes on working (awaits): the run ends at that
    // await point, and the rest of the tool never runs.
    let reached = Arc::new(Mutex::new(false));
    let reached2 = reached.clone();
    let quitter = tool("quit", "Cancels the run", move |_: NoArgs, ctx: ToolCtx| {
        let reached = reached2.clone();
        async move {
            ctx.cancellation().cancel();
            tokio::time::sleep(Duration::from_millis(50)).await;
            *reached.lock().unwrap() = true;
            Ok("still here")
        }
    });
    let model = ScriptedModel::new()
        .tool_call("quit", json!({}))
        .text("never reached");
    let agent = Agent::builder("quitter")
        .model(model.clone())
        .tool(quitter)
        .build()
        .unwrap();
    let out = tokio::time::timeout(PATIENCE, Runtime::new().run(&agent, "go"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(out.stop, StopReason::Cancelled);
    assert_eq!(out.output, None);
    assert_eq!(model.calls(), 1);
    assert!(!*reached.lock().unwrap());
}

#[tokio::test]
async fn a_tool_that_cancels_its_run_and_returns_stops_the_run() {
    let ends: Shared<StopReason> = shared();
    let quitter = tool(
        "quit",
        "Cancels the run",
        |_: NoArgs, ctx: ToolCtx| async move {
            ctx.cancellation().cancel();
            Ok("cancelled the run")
        },
    );
    let model = ScriptedModel::new()
        .tool_call("quit", json!({}))
        .text("should not be reached");
    let agent = recording_run_ends("quitter", &model, quitter, &ends);
    let out = tokio::time::timeout(PATIENCE, Runtime::new().run(&agent, "go"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(out.stop, StopReason::Cancelled, "output: {:?}", out.output);
    assert_eq!(out.output, None);
    assert_eq!(model.calls(), 1, "no model call after the cancellation");
    assert_eq!(take(&ends), [StopReason::Cancelled]);
}

#[tokio::test]
async fn a_hook_that_cancels_the_run_stops_it() {
    let model = ScriptedModel::new()
        .tool_call("quit", json!({}))
        .text("should not be reached");
    let noop = tool(
        "quit",
        "Does nothing",
        |_: NoArgs, _ctx: ToolCtx| async move { Ok("ok") },
    );
    let agent = Agent::builder("quitter")
        .model(model.clone())
        .tool(noop)
        .after_tool(|ev, ctx| async move {
            ctx.cancellation().cancel();
            Ok(ev)
        })
        .build()
        .unwrap();
    let out = tokio::time::timeout(PATIENCE, Runtime::new().run(&agent, "go"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(out.stop, StopReason::Cancelled, "output: {:?}", out.output);
    assert_eq!(model.calls(), 1);
}

#[tokio::test]
async fn cancelling_a_started_run_before_it_starts_ends_it_cancelled() {
    let model = ScriptedModel::new().text("hello");
    let agent = Agent::builder("a").model(model.clone()).build().unwrap();
    let handle = Runtime::new().run(&agent, "go").start();
    handle.cancel();
    let out = tokio::time::timeout(PATIENCE, handle.result())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(out.stop, StopReason::Cancelled);
    assert_eq!(out.output, None);
    assert_eq!(model.calls(), 0);
}

// ---------------------------------------------------------------------------------------------
// State
// ---------------------------------------------------------------------------------------------

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
struct Notes {
    items: Vec<String>,
    hook_edits: u32,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
struct Other(u32);

type Change = (StateSource, Value, Value);

/// `note` adds its text to the state; the AfterTool hook `h` counts its own edits; a StateChange
/// hook records every change.
fn notes_agent(model: &ScriptedModel, changes: &Shared<Change>) -> Agent<Notes> {
    let note = tool("note", "Notes text", |a: Text, ctx: ToolCtx| async move {
        ctx.update_state(|s: &mut Notes| s.items.push(a.text.clone()))?;
        Ok("noted")
    });
    let changes = changes.clone();
    Agent::builder("notes")
        .model(model.clone())
        .tool(note)
        .state(Notes::default())
        .with(
            on::after_tool(|ev, ctx| async move {
                ctx.update_state(|s: &mut Notes| s.hook_edits += 1)?;
                Ok(ev)
            })
            .named("h"),
        )
        .state_change(move |ev, _ctx| {
            changes.lock().unwrap().push((
                ev.source().clone(),
                ev.previous().clone(),
                ev.current().clone(),
            ));
            async move { Ok(ev) }
        })
        .build()
        .unwrap()
}

fn notes_model() -> ScriptedModel {
    ScriptedModel::new()
        .tool_call("note", json!({"text": "x"}))
        .text("done")
}

#[tokio::test]
async fn state_updates_from_a_tool_and_a_hook_carry_their_sources() {
    let changes: Shared<Change> = shared();
    let model = notes_model();
    let out = Runtime::new()
        .run(&notes_agent(&model, &changes), "go")
        .await
        .unwrap();
    assert_eq!(
        out.state,
        Notes {
            items: vec!["x".into()],
            hook_edits: 1
        }
    );
    assert_eq!(
        take(&changes),
        [
            (
                StateSource::Tool("note".into()),
                json!({"items": [], "hook_edits": 0}),
                json!({"items": ["x"], "hook_edits": 0}),
            ),
            (
                StateSource::Hook("h".into()),
                json!({"items": ["x"], "hook_edits": 0}),
                json!({"items": ["x"], "hook_edits": 1}),
            ),
        ]
    );
}

#[tokio::test]
async fn state_changes_stream_as_json_patches() {
    let changes: Shared<Change> = shared();
    let model = notes_model();
    let agent = notes_agent(&model, &changes);
    let mut handle = Runtime::new().run(&agent, "go").start();
    let events = rest_of_stream(&mut handle).await;
    let out = handle.result().await.unwrap();
    assert_eq!(out.state.items, ["x"]);
    assert_eq!(out.state.hook_edits, 1);

    let patches: Vec<(Value, StateSource)> = events
        .iter()
        .filter_map(|e| match e {
            RunEvent::StatePatch { patch, source, .. } => {
                Some((serde_json::to_value(patch).unwrap(), source.clone()))
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        patches,
        [
            (
                json!([{"op": "add", "path": "/items/0", "value": "x"}]),
                StateSource::Tool("note".into())
            ),
            (
                json!([{"op": "replace", "path": "/hook_edits", "value": 1}]),
                StateSource::Hook("h".into())
            ),
        ]
    );
    // Each patch sits between the tool's start and the end of its call.
    let pos = |f: &dyn Fn(&RunEvent) -> bool| events.iter().position(f).unwrap();
    let started = pos(&|e| matches!(e, RunEvent::ToolStarted { .. }));
    let patched = pos(&|e| matches!(e, RunEvent::StatePatch { .. }));
    let finished = pos(&|e| matches!(e, RunEvent::ToolFinished { .. }));
    assert!(started < patched && patched < finished, "{events:#?}");
}

#[tokio::test]
async fn the_state_is_streamed_without_state_change_hooks() {
    // Only the event stream observes the state here.
    let note = tool("note", "Notes text", |a: Text, ctx: ToolCtx| async move {
        ctx.update_state(|s: &mut Notes| s.items.push(a.text.clone()))?;
        Ok("noted")
    });
    let agent = Agent::builder("notes")
        .model(notes_model())
        .tool(note)
        .state(Notes::default())
        .build()
        .unwrap();
    let mut handle = Runtime::new().run(&agent, "go").start();
    let events = rest_of_stream(&mut handle).await;
    handle.result().await.unwrap();
    let n = events
        .iter()
        .filter(|e| matches!(e, RunEvent::StatePatch { .. }))
        .count();
    assert_eq!(n, 1);
}

#[tokio::test]
async fn an_update_that_changes_nothing_is_not_reported() {
    let changes: Shared<Change> = shared();
    let changes2 = changes.clone();
    let same = tool(
        "same",
        "No-op update",
        |_: NoArgs, ctx: ToolCtx| async move {
            ctx.update_state(|s: &mut Notes| s.items.clear())?;
            Ok("ok")
        },
    );
    let agent = Agent::builder("notes")
        .model(
            ScriptedModel::new()
                .tool_call("same", json!({}))
                .text("done"),
        )
        .tool(same)
        .state(Notes::default())
        .state_change(move |ev, _ctx| {
            changes2.lock().unwrap().push((
                ev.source().clone(),
                ev.previous().clone(),
                ev.current().clone(),
            ));
            async move { Ok(ev) }
        })
        .build()
        .unwrap();
    Runtime::new().run(&agent, "go").await.unwrap();
    assert!(take(&changes).is_empty());
}

#[tokio::test]
async fn a_state_type_mismatch_is_an_error() {
    let errors: Shared<StateError> = shared();
    let errors2 = errors.clone();
    let wrong = tool(
        "wrong",
        "Wrong state type",
        move |_: NoArgs, ctx: ToolCtx| {
            let errors = errors2.clone();
            async move {
                let err = ctx.update_state(|s: &mut Other| s.0 += 1).unwrap_err();
                errors.lock().unwrap().push(err);
                let err = ctx.state::<Other>().unwrap_err();
                errors.lock().unwrap().push(err);
                // And through `?`: the model sees the error.
                ctx.update_state(|s: &mut Other| s.0 += 1)?;
                Ok("unreachable")
            }
        },
    );
    let model = ScriptedModel::new()
        .tool_call("wrong", json!({}))
        .text("done");
    let agent = Agent::builder("notes")
        .model(model.clone())
        .tool(wrong)
        .state(Notes::default())
        .build()
        .unwrap();
    let out = Runtime::new().run(&agent, "go").await.unwrap();
    let errors = take(&errors);
    assert_eq!(errors.len(), 2);
    for err in &errors {
        match err {
            StateError::TypeMismatch { asked, actual } => {
                assert!(asked.ends_with("Other"), "{asked}");
                assert!(actual.ends_with("Notes"), "{actual}");
            }
            other => panic!("expected TypeMismatch, got {other:?}"),
        }
        assert!(err.to_string().contains("state type mismatch"), "{err}");
    }
    let result = out.messages[2].tool_result().unwrap();
    assert!(result.is_error);
    assert!(
        result.content.contains("state type mismatch"),
        "{}",
        result.content
    );
    assert_eq!(out.state, Notes::default(), "the state is unchanged");
}

// ---------------------------------------------------------------------------------------------
// The event stream
// ---------------------------------------------------------------------------------------------

#[derive(Clone, Debug, PartialEq)]
struct SeenOptions {
    run_id: String,
    agent_path: String,
    session: Option<String>,
    user: Option<String>,
    tags: Vec<String>,
    metadata: serde_json::Map<String, Value>,
}

#[tokio::test]
async fn the_event_stream_reports_the_whole_run_in_order() {
    let customs: Shared<(String, Value)> = shared();
    let customs2 = customs.clone();
    let options_seen: Shared<SeenOptions> = shared();
    let options_seen2 = options_seen.clone();

    let work = tool("work", "Works", |a: Text, ctx: ToolCtx| async move {
        ctx.emit("progress", json!({"pct": 50, "on": a.text}));
        Ok(format!("worked on {}", a.text))
    });
    let model = ScriptedModel::new()
        .turn(
            ScriptedTurn::new()
                .with_thinking("let me ")
                .with_thinking("think")
                .with_tool_call("work", json!({"text": "w"})),
        )
        .turn(ScriptedTurn::new().with_text_deltas(["Hel", "lo"]));
    let agent = Agent::builder("streamer")
        .model(model)
        .tool(work)
        .custom(move |ev, _ctx| {
            customs2
                .lock()
                .unwrap()
                .push((ev.name().to_string(), ev.data().clone()));
            async move { Ok(ev) }
        })
        .before_tool(move |ev, ctx| {
            options_seen2.lock().unwrap().push(SeenOptions {
                run_id: ctx.run_id().to_string(),
                agent_path: ctx.agent_path().to_string(),
                session: ctx.session_id().map(str::to_string),
                user: ctx.user_id().map(str::to_string),
                tags: ctx.tags().to_vec(),
                metadata: ctx.metadata().clone(),
            });
            async move { Ok(ev) }
        })
        .build()
        .unwrap();
    let options = RunOptions::new()
        .run_id("run-42")
        .session("s-1")
        .user("u-7")
        .tag("beta")
        .tag("nightly")
        .metadata("tenant", "acme");
    let mut handle = Runtime::new().run(&agent, "start").with(options).start();
    assert_eq!(handle.run_id(), "run-42");
    let events = rest_of_stream(&mut handle).await;
    let out = handle.result().await.unwrap();
    assert_eq!(out.output.as_deref(), Some("Hello"));
    assert_eq!(out.run_id, "run-42");

    // First and last.
    match events.first() {
        Some(RunEvent::RunStarted { run_id, agent_path }) => {
            assert_eq!(run_id, "run-42");
            assert_eq!(&**agent_path, "streamer");
        }
        other => panic!("first event: {other:?}"),
    }
    match events.last() {
        Some(RunEvent::RunFinished { run_id, stop, .. }) => {
            assert_eq!(run_id, "run-42");
            assert_eq!(*stop, StopReason::FinalAnswer);
        }
        other => panic!("last event: {other:?}"),
    }
    assert!(events.iter().all(|e| e.agent_path() == "streamer"));
    assert_eq!(
        events
            .iter()
            .filter(|e| matches!(
                e,
                RunEvent::RunStarted { .. } | RunEvent::RunFinished { .. }
            ))
            .count(),
        2
    );

    // Streamed text and reasoning, in order.
    let texts: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            RunEvent::TextDelta { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(texts, ["Hel", "lo"]);
    let thoughts: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            RunEvent::ThinkingDelta { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(thoughts, ["let me ", "think"]);

    // Steps.
    let steps: Vec<(bool, u32)> = events
        .iter()
        .filter_map(|e| match e {
            RunEvent::StepStarted { step, .. } => Some((true, *step)),
            RunEvent::StepFinished { step, .. } => Some((false, *step)),
            _ => None,
        })
        .collect();
    assert_eq!(steps, [(true, 1), (false, 1), (true, 2), (false, 2)]);

    // The tool call: started, its custom event, finished.
    let pos = |f: &dyn Fn(&RunEvent) -> bool| {
        events
            .iter()
            .position(f)
            .unwrap_or_else(|| panic!("missing event in {events:#?}"))
    };
    let started = pos(&|e| {
        matches!(e, RunEvent::ToolStarted { name, input, call_id, .. }
            if name == "work" && *input == json!({"text": "w"}) && call_id == "call_1_1")
    });
    let custom = pos(&|e| {
        matches!(e, RunEvent::Custom { name, data, .. }
            if name == "progress" && *data == json!({"pct": 50, "on": "w"}))
    });
    let finished = pos(&|e| {
        matches!(e, RunEvent::ToolFinished { result, .. }
            if result.content == "worked on w" && !result.is_error && result.call_id == "call_1_1")
    });
    let first_text = pos(&|e| matches!(e, RunEvent::TextDelta { .. }));
    let last_thought = events
        .iter()
        .rposition(|e| matches!(e, RunEvent::ThinkingDelta { .. }))
        .unwrap();
    assert!(last_thought < started);
    assert!(started < custom && custom < finished && finished < first_text);

    // Every message of the history, in order.
    let messages: Vec<Message> = events
        .iter()
        .filter_map(|e| match e {
            RunEvent::Message { message, .. } => Some((**message).clone()),
            _ => None,
        })
        .collect();
    assert_eq!(messages, out.messages.to_vec());
    assert_eq!(messages.len(), 4);
    assert_eq!(messages[0], Message::user("start"));
    match &messages[1] {
        Message::Assistant {
            thinking,
            tool_calls,
            ..
        } => {
            assert_eq!(thinking.as_ref().unwrap().text, "let me think");
            assert_eq!(tool_calls[0].name, "work");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(messages[2].tool_result_text(), Some("worked on w"));
    assert_eq!(messages[3], Message::assistant("Hello"));

    // Hooks saw the custom event and the run's options.
    assert_eq!(
        take(&customs),
        [("progress".to_string(), json!({"pct": 50, "on": "w"}))]
    );
    let mut metadata = serde_json::Map::new();
    metadata.insert("tenant".into(), json!("acme"));
    assert_eq!(
        take(&options_seen),
        [SeenOptions {
            run_id: "run-42".into(),
            agent_path: "streamer".into(),
            session: Some("s-1".into()),
            user: Some("u-7".into()),
            tags: vec!["beta".into(), "nightly".into()],
            metadata,
        }]
    );
}

#[tokio::test]
async fn custom_events_from_hooks_reach_the_stream_and_custom_hooks() {
    let customs: Shared<String> = shared();
    let customs2 = customs.clone();
    let agent = Agent::builder("a")
        .model(ScriptedModel::new().text("hi"))
        .run_start(|ev, ctx| async move {
            ctx.emit("audit", json!("started"));
            Ok(ev)
        })
        .custom(move |ev, ctx| {
            customs2.lock().unwrap().push(format!(
                "{}={} by {}",
                ev.name(),
                ev.data(),
                ctx.hook_name()
            ));
            async move { Ok(ev) }
        })
        .build()
        .unwrap();
    let mut handle = Runtime::new().run(&agent, "go").start();
    let events = rest_of_stream(&mut handle).await;
    handle.result().await.unwrap();
    assert_eq!(take(&customs), ["audit=\"started\" by Custom"]);
    assert!(
        events
            .iter()
            .any(|e| matches!(e, RunEvent::Custom { name, data, .. }
        if name == "audit" && *data == json!("started")))
    );
}

#[tokio::test]
async fn run_options_reach_every_hook_of_a_plain_run() {
    let seen: Shared<String> = shared();
    let seen2 = seen.clone();
    let seen3 = seen.clone();
    let agent = Agent::builder("a")
        .model(ScriptedModel::new().text("hi"))
        .build()
        .unwrap();
    let options = RunOptions::new()
        .session("s")
        .user("u")
        .tag("t")
        .metadata("k", 1)
        .with(on::run_start(move |ev, ctx| {
            seen2.lock().unwrap().push(format!(
                "start {:?} {:?} {:?} {:?}",
                ctx.session_id(),
                ctx.user_id(),
                ctx.tags(),
                ctx.metadata().get("k")
            ));
            async move { Ok(ev) }
        }))
        .with(on::run_end(move |ev, ctx| {
            seen3
                .lock()
                .unwrap()
                .push(format!("end {:?} {}", ctx.session_id(), ev.stop()));
            async move { Ok(ev) }
        }));
    Runtime::new()
        .run(&agent, "go")
        .with(options)
        .await
        .unwrap();
    assert_eq!(
        take(&seen),
        [
            "start Some(\"s\") Some(\"u\") [\"t\"] Some(Number(1))",
            "end Some(\"s\") final answer"
        ]
    );
}
