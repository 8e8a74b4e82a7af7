//! Asynchronous in-place hooks (`on_mut`): `async |ev, ctx| { .. }` changes the event through
//! `&mut` and may await; they follow the same semantics as the other hooks — order, decisions,
//! read-only views after a decision, error policy, timeouts, meta events.

use agentry::hooks::*;
use agentry::prelude::*;
use agentry::{Tool, ToolResult};
use std::sync::{Arc, Mutex};
use std::time::Duration;

type Log = Arc<Mutex<Vec<String>>>;

fn lines(log: &Log) -> Vec<String> {
    log.lock().unwrap().clone()
}

#[derive(Deserialize, JsonSchema)]
struct Echo {
    text: String,
}

fn echo() -> impl Tool {
    tool(
        "echo",
        "Returns its text.",
        |a: Echo, _ctx: ToolCtx| async move { Ok(a.text) },
    )
}

/// The content of the tool result the model saw on its second turn.
fn tool_result(model: &ScriptedModel) -> ToolResult {
    model.requests()[1]
        .messages
        .last()
        .unwrap()
        .tool_result()
        .cloned()
        .unwrap()
}

async fn shout(ev: &mut BeforeTool, _ctx: &HookCtx) -> HookResult<()> {
    tokio::task::yield_now().await;
    let text = ev.input["text"].as_str().unwrap_or_default().to_uppercase();
    ev.input["text"] = json!(text);
    Ok(())
}

#[tokio::test]
async fn an_in_place_hook_rewrites_the_input_and_the_result_after_awaiting() {
    let model = ScriptedModel::new()
        .tool_call("echo", json!({"text": "hi"}))
        .text("ok");
    let agent = Agent::builder("a")
        .model(model.clone())
        .tool(echo())
        .with(on_mut::before_tool(shout))
        .with(on_mut::after_tool(async |ev, ctx| {
            tokio::time::sleep(Duration::from_millis(5)).await;
            ev.content = format!("{} (seen by {})", ev.content, ctx.hook_name()).into();
            Ok(())
        }))
        .build()
        .unwrap();
    Runtime::new().run(&agent, "go").await.unwrap();
    assert_eq!(tool_result(&model).content, "HI (seen by AfterTool)");
}

#[tokio::test]
async fn in_place_hooks_interleave_with_the_others_in_priority_order_and_nest_on_after_events() {
    let seen: Log = Arc::default();
    let note = |tag: &'static str| {
        let seen = seen.clone();
        move |_: &mut AfterModel, _: &HookCtx| {
            seen.lock().unwrap().push(tag.to_string());
            Ok(())
        }
    };
    let agent = Agent::builder("a")
        .model(ScriptedModel::new().text("hi"))
        .with(on_sync::after_model(note("sync")))
        .with(
            on_mut::with(seen.clone()).after_model(async |seen, _ev, _ctx| {
                tokio::task::yield_now().await;
                seen.lock().unwrap().push("in place".into());
                Ok(())
            }),
        )
        .with(on::after_model({
            let seen = seen.clone();
            move |ev, _| {
                let seen = seen.clone();
                async move {
                    seen.lock().unwrap().push("by value".into());
                    Ok(ev)
                }
            }
        }))
        .with(on_sync::after_model(note("outermost")).priority(5))
        .build()
        .unwrap();
    Runtime::new().run(&agent, "go").await.unwrap();
    // After* events run in reverse registration order, the highest priority last.
    assert_eq!(lines(&seen), ["by value", "in place", "sync", "outermost"]);
}

#[tokio::test]
async fn an_in_place_block_stands_and_later_hooks_see_the_event_read_only() {
    let later: Log = Arc::default();
    let model = ScriptedModel::new()
        .tool_call("echo", json!({"text": "rm -rf /"}))
        .text("ok");
    let agent = Agent::builder("a")
        .model(model.clone())
        .tool(echo())
        .with(on_mut::before_tool(async |ev, _| {
            if ev.input["text"] == "rm -rf /" {
                ev.block("destructive commands are not allowed");
            }
            Ok(())
        }))
        .with(
            on_mut::with(later.clone()).before_tool(async |later, ev, _| {
                later
                    .lock()
                    .unwrap()
                    .push(format!("saw {:?}", ev.decision()));
                ev.mock("a later mock");
                Ok(())
            }),
        )
        .build()
        .unwrap();
    Runtime::new().run(&agent, "go").await.unwrap();
    assert_eq!(
        lines(&later),
        ["saw Some(Block(\"destructive commands are not allowed\"))"]
    );
    let result = tool_result(&model);
    assert!(result.is_error);
    assert_eq!(result.content, "destructive commands are not allowed");
}

#[tokio::test]
async fn a_failing_in_place_hook_fails_the_run_naming_itself_and_its_failure() {
    const LIMIT: Duration = Duration::from_millis(50);
    let cases: [(HookRegistration, HookFailure); 3] = [
        (
            on_mut::before_step(async |_, _| Err("no".into()))
                .named("guard")
                .into_hook(),
            HookFailure::Error("no".into()),
        ),
        (
            on_mut::before_step(async |_, _| {
                tokio::task::yield_now().await;
                panic!("boom")
            })
            .named("guard")
            .into_hook(),
            HookFailure::Panic("boom".into()),
        ),
        (
            on_mut::before_step(async |_, _| {
                tokio::time::sleep(Duration::from_secs(10)).await;
                Ok(())
            })
            .named("guard")
            .timeout(LIMIT)
            .into_hook(),
            HookFailure::Timeout(LIMIT),
        ),
    ];
    for (hook, failure) in cases {
        let agent = Agent::builder("a")
            .model(ScriptedModel::new().text("hi"))
            .with(hook)
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
async fn an_advisory_in_place_hook_that_fails_half_way_leaves_the_event_as_it_was() {
    let seen: Log = Arc::default();
    let agent = Agent::builder("a")
        .model(ScriptedModel::new().text("hi"))
        .with(
            on_mut::run_start(async |ev, _| {
                ev.input = "tampered".into();
                tokio::task::yield_now().await;
                Err("half done".into())
            })
            .named("flaky")
            .advisory(),
        )
        .with(on_mut::with(seen.clone()).run_start(async |seen, ev, _| {
            seen.lock().unwrap().push(ev.input.text().into_owned());
            Ok(())
        }))
        .build()
        .unwrap();
    Runtime::new().run(&agent, "original").await.unwrap();
    assert_eq!(lines(&seen), ["original"]);
}
