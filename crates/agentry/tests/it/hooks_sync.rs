//! Synchronous hooks (`on_sync`): they follow the same semantics as async ones — order, decisions,
//! error policy, meta events — while running in place without a future.

use agentry::hooks::*;
use agentry::prelude::*;
use agentry::{ScriptedTurn, Tool};
use std::sync::{Arc, Mutex};
use std::time::Duration;

type Log = Arc<Mutex<Vec<String>>>;

fn log() -> Log {
    Arc::default()
}

fn lines(log: &Log) -> Vec<String> {
    log.lock().unwrap().clone()
}

#[derive(Deserialize, JsonSchema)]
struct Echo {
    text: String,
}

fn echo(ran: &Log) -> impl Tool + use<> {
    let ran = ran.clone();
    tool(
        "echo",
        "Returns its text.",
        move |a: Echo, _ctx: ToolCtx| {
            let ran = ran.clone();
            async move {
                ran.lock().unwrap().push(a.text.clone());
                Ok(a.text)
            }
        },
    )
}

fn marker(
    log: &Log,
    tag: &'static str,
) -> impl Fn(&mut BeforeModel, &HookCtx) -> HookResult<()> + use<> {
    let log = log.clone();
    move |_, ctx| {
        log.lock()
            .unwrap()
            .push(format!("{tag}@{}", ctx.hook_name()));
        Ok(())
    }
}

#[tokio::test]
async fn sync_and_async_hooks_interleave_in_priority_and_registration_order() {
    let seen = log();
    let (a, c) = (seen.clone(), seen.clone());
    let agent = Agent::builder("a")
        .model(ScriptedModel::new().text("hi"))
        .with(on_sync::before_model(marker(&seen, "s1")).named("s1"))
        .with(
            on::before_model(move |ev, _| {
                let a = a.clone();
                async move {
                    a.lock().unwrap().push("async".into());
                    Ok(ev)
                }
            })
            .named("async"),
        )
        .with(on_sync::before_model(marker(&seen, "s2")).named("s2"))
        .with(
            on_sync::before_model(marker(&seen, "first"))
                .named("first")
                .priority(5),
        )
        .with(on_sync::after_model(move |_, _| {
            c.lock().unwrap().push("after".into());
            Ok(())
        }))
        .build()
        .unwrap();
    let out = Runtime::new().run(&agent, "go").await.unwrap();
    assert_eq!(out.output.as_deref(), Some("hi"));
    assert_eq!(
        lines(&seen),
        ["first@first", "s1@s1", "async", "s2@s2", "after"]
    );
}

#[tokio::test]
async fn a_sync_hook_blocks_a_tool_and_later_hooks_see_it_read_only() {
    let ran = log();
    let later = log();
    let l = later.clone();
    let model = ScriptedModel::new()
        .tool_call("echo", json!({"text": "rm -rf /"}))
        .text("ok");
    let agent = Agent::builder("a")
        .model(model.clone())
        .tool(echo(&ran))
        .with(on_sync::before_tool(|ev, _| {
            if ev.input["text"]
                .as_str()
                .is_some_and(|t| t.contains("rm -rf"))
            {
                ev.block("destructive commands are not allowed");
            }
            Ok(())
        }))
        .with(on_sync::before_tool(move |ev, _| {
            // It sees the blocked call read-only: its changes are dropped.
            l.lock().unwrap().push(format!("saw {:?}", ev.decision()));
            ev.mock("a later mock");
            Ok(())
        }))
        .build()
        .unwrap();
    Runtime::new().run(&agent, "go").await.unwrap();
    assert!(lines(&ran).is_empty(), "the blocked tool ran");
    assert_eq!(
        lines(&later),
        ["saw Some(Block(\"destructive commands are not allowed\"))"],
        "a hook after the decision sees the decided event"
    );
    let result = model.requests()[1]
        .messages
        .last()
        .unwrap()
        .tool_result()
        .cloned()
        .unwrap();
    assert!(result.is_error);
    assert_eq!(result.content, "destructive commands are not allowed");
}

#[tokio::test]
async fn a_failing_sync_hook_fails_the_run_naming_itself_and_the_event() {
    for (panics, failure) in [
        (false, HookFailure::Error("no".into())),
        (true, HookFailure::Panic("boom".into())),
    ] {
        let agent = Agent::builder("a")
            .model(ScriptedModel::new().text("hi"))
            .with(
                on_sync::before_step(move |_, _| {
                    if panics {
                        panic!("boom");
                    }
                    Err("no".into())
                })
                .named("guard"),
            )
            .build()
            .unwrap();
        match Runtime::new().run(&agent, "go").await {
            Err(Error::Hook(e)) => assert_eq!(
                e,
                HookError {
                    hook: "guard".into(),
                    event: EventKind::BeforeStep,
                    failure,
                }
            ),
            other => panic!("expected a hook error, got {:?}", other.map(|o| o.stop)),
        }
    }
}

#[tokio::test]
async fn an_advisory_sync_hook_that_fails_leaves_the_event_as_it_was() {
    let seen = log();
    let s = seen.clone();
    let agent = Agent::builder("a")
        .model(ScriptedModel::new().text("hi"))
        .with(
            on_sync::run_start(|ev, _| {
                ev.input = "tampered".into();
                panic!("half done");
            })
            .named("flaky")
            .advisory(),
        )
        .with(on_sync::run_start(move |ev, _| {
            s.lock().unwrap().push(ev.input.text().into_owned());
            Ok(())
        }))
        .with(on_sync::hook_failed({
            let s = seen.clone();
            move |ev, _| {
                s.lock().unwrap().push(format!(
                    "failed {} {} advisory={}",
                    ev.hook(),
                    ev.event(),
                    ev.advisory()
                ));
                Ok(())
            }
        }))
        .build()
        .unwrap();
    let out = Runtime::new().run(&agent, "original").await.unwrap();
    assert_eq!(out.output.as_deref(), Some("hi"));
    assert_eq!(
        lines(&seen),
        ["failed flaky RunStart advisory=true", "original"]
    );
}

#[tokio::test]
async fn meta_events_observe_sync_hooks_with_durations() {
    let seen = log();
    let s = seen.clone();
    let agent = Agent::builder("a")
        .model(ScriptedModel::new().text("hi"))
        .with(
            on_sync::before_step(|_, _| {
                std::thread::sleep(Duration::from_millis(2));
                Ok(())
            })
            .named("slow"),
        )
        .with(on_sync::hook_finished(move |ev, _| {
            s.lock().unwrap().push(format!(
                "{} {} {}",
                ev.hook(),
                ev.event(),
                ev.duration() >= Duration::from_millis(2)
            ));
            Ok(())
        }))
        .build()
        .unwrap();
    Runtime::new().run(&agent, "go").await.unwrap();
    assert_eq!(lines(&seen), ["slow BeforeStep true"]);
}

#[tokio::test]
async fn a_text_delta_hook_redacts_what_is_recorded_and_streamed() {
    let model = ScriptedModel::new().turn(ScriptedTurn::new().with_text_deltas([
        "the key is ",
        "sk-123",
        " ok",
    ]));
    let agent = Agent::builder("a")
        .model(model)
        .with(on_sync::text_delta(|ev, _| {
            if ev.text.starts_with("sk-") {
                ev.text = "[redacted]".into();
            }
            Ok(())
        }))
        .build()
        .unwrap();
    let mut run = Runtime::new().run(&agent, "go").start();
    let mut streamed = String::new();
    while let Some(ev) = run.events().next().await {
        if let RunEvent::TextDelta { text, .. } = ev {
            streamed.push_str(&text);
        }
    }
    let out = run.result().await.unwrap();
    assert_eq!(streamed, "the key is [redacted] ok");
    assert_eq!(out.output.as_deref(), Some("the key is [redacted] ok"));
}

#[tokio::test]
async fn a_context_cloned_by_a_sync_hook_outlives_the_run_and_its_hooks() {
    // The synchronous path lends each hook a context without counting references to the run
    // or to the hook's name; a clone a hook keeps must take references of its own.
    let kept: Arc<Mutex<Vec<HookCtx>>> = Arc::default();
    let k = kept.clone();
    let mut agent = Agent::builder("keeper").model(ScriptedModel::new().text("hi"));
    for name in ["first", "second", "third"] {
        let k = k.clone();
        agent = agent.with(
            on_sync::before_model(move |_, ctx| {
                k.lock().unwrap().push(ctx.clone());
                Ok(())
            })
            .named(format!("keep-{name}")),
        );
    }
    let agent = agent.build().unwrap();
    let runtime = Runtime::new();
    runtime.run(&agent, "go").await.unwrap();
    // The hooks (and their names) and the run are gone; the clones still read well.
    drop(agent);
    drop(runtime);
    let kept = std::mem::take(&mut *kept.lock().unwrap());
    let names: Vec<&str> = kept.iter().map(|c| c.hook_name()).collect();
    assert_eq!(names, ["keep-first", "keep-second", "keep-third"]);
    assert!(kept.iter().all(|c| c.run().agent_path() == "keeper"));
}
