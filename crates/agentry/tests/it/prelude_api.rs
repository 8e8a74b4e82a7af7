//! The API a hook or tool author writes against, with nothing but the prelude: async hooks that
//! fail with `?` or `Err("..".into())` and no turbofish, state shared with an async hook taken
//! once (`on::with`), tools that fail with a message as easily as with an error and answer with
//! plain values, one name per event on the builder, `on::`, `on_sync::` and the `Hook` trait, and
//! the types hook authors name (limits, finish reasons, approval and compaction events, specs,
//! statuses).

use agentry::prelude::*;
use agentry::{
    AgentBuilder, FinishReason, Limit, PendingApproval, RunStatus, Tool, ToolSpec,
    hooks::{
        AfterCompact, ApprovalRequested, ApprovalResolved, BeforeCompact, BoxError, CompactFailed,
        EventKind, Events, Hook, HookError, HookFailure, HookRegistration, HookResult, Stop,
        StoppedByHuman, on_sync,
    },
};
use std::sync::{Arc, Mutex};

#[derive(Deserialize, JsonSchema)]
struct Divide {
    a: u32,
    b: u32,
}

/// Divides, failing with a message when `b` is 0, and with a parse error (through `?`) when
/// `a` is 7.
fn divide() -> impl Tool {
    tool(
        "divide",
        "Divides a by b.",
        |d: Divide, _ctx: ToolCtx| async move {
            if d.b == 0 {
                return Err("b must not be 0".into());
            }
            if d.a == 7 {
                let _: u32 = "seven".parse()?;
            }
            Ok(d.a / d.b)
        },
    )
}

fn results_sent(model: &ScriptedModel) -> Vec<(String, bool)> {
    model
        .requests()
        .iter()
        .filter_map(|r| r.messages.last().and_then(|m| m.tool_result().cloned()))
        .map(|r| (r.content.text().into_owned(), r.is_error))
        .collect()
}

#[tokio::test]
async fn a_tool_fails_with_a_message_or_an_error_and_answers_with_a_number() {
    let model = ScriptedModel::new()
        .tool_call("divide", json!({"a": 6, "b": 3}))
        .tool_call("divide", json!({"a": 6, "b": 0}))
        .tool_call("divide", json!({"a": 7, "b": 1}))
        .text("done");
    let agent = Agent::builder("calc")
        .model(model.clone())
        .tool(divide())
        .build()
        .unwrap();

    Runtime::new().run(&agent, "Divide.").await.unwrap();

    let sent = results_sent(&model);
    assert_eq!(sent[0], ("2".to_string(), false));
    assert_eq!(sent[1], ("b must not be 0".to_string(), true));
    assert!(sent[2].1 && sent[2].0.contains("invalid digit"), "{sent:?}");
}

#[tokio::test]
async fn an_async_hook_fails_with_a_message_without_a_turbofish() {
    let agent = Agent::builder("calc")
        .model(ScriptedModel::new().tool_call("divide", json!({"a": 1, "b": 1})))
        .tool(divide())
        .before_tool(|ev, _ctx| async move {
            if ev.name() == "divide" {
                return Err(format!("no dividing in step {}", 1).into());
            }
            let _: u32 = "1".parse()?;
            Ok(ev)
        })
        .build()
        .unwrap();

    let err = Runtime::new().run(&agent, "Go.").await.unwrap_err();

    let Error::Hook(HookError { failure, event, .. }) = &err else {
        panic!("a hook error, not {err:?}")
    };
    assert_eq!(*event, EventKind::BeforeTool);
    assert_eq!(*failure, HookFailure::Error("no dividing in step 1".into()));
}

#[tokio::test]
async fn state_is_shared_with_an_async_hook_by_taking_it_once() {
    let seen = Arc::new(Mutex::new(Vec::<String>::new()));
    let agent = Agent::builder("calc")
        .model(
            ScriptedModel::new()
                .tool_call("divide", json!({"a": 4, "b": 2}))
                .text("done"),
        )
        .tool(divide())
        .with(
            on::with(seen.clone()).after_tool(|seen, ev, _ctx| async move {
                seen.lock().unwrap().push(ev.content.text().into_owned());
                Ok(ev)
            }),
        )
        .build()
        .unwrap();

    Runtime::new().run(&agent, "Go.").await.unwrap();

    assert_eq!(*seen.lock().unwrap(), ["2"]);
}

/// A plugin: the `Hook` trait method for Stop has the same name as `on::stop`, `on_sync::stop`
/// and the builder's `stop`.
struct CountStops(Arc<Mutex<u32>>);

impl Hook for CountStops {
    fn wants(&self) -> Events {
        Events::STOP
    }
    async fn stop(&self, ev: Stop, _ctx: &HookCtx) -> HookResult<Stop> {
        *self.0.lock().unwrap() += 1;
        Ok(ev)
    }
}

#[tokio::test]
async fn one_name_per_event_on_the_builder_the_on_functions_and_the_hook_trait() {
    let count = Arc::new(Mutex::new(0));
    let (c1, c2, c3) = (count.clone(), count.clone(), count.clone());
    let agent = Agent::builder("a")
        .model(ScriptedModel::new().text("hi"))
        .stop(move |ev, _ctx| {
            *c1.lock().unwrap() += 1;
            async move { Ok(ev) }
        })
        .with(on::stop(move |ev, _ctx| {
            *c2.lock().unwrap() += 1;
            async move { Ok(ev) }
        }))
        .with(on_sync::stop(move |_ev, _ctx| {
            *c3.lock().unwrap() += 1;
            Ok(())
        }))
        .with(CountStops(count.clone()))
        .build()
        .unwrap();

    Runtime::new().run(&agent, "Hi").await.unwrap();

    assert_eq!(*count.lock().unwrap(), 4);
}

#[test]
fn the_prelude_names_what_hook_authors_use() {
    // Each of these is named through the prelude alone; the test fails to compile otherwise.
    let _limit = Limit::Steps { used: 1, limit: 1 };
    let _finish = FinishReason::Stop;
    let _status = RunStatus::Running;
    let _decision = Decision::approve("c1");
    let _spec = ToolSpec {
        name: "t".into(),
        description: "d".into(),
        parameters: json!({}),
    };
    let _registration: HookRegistration = on::run_end(|ev, _ctx| async move { Ok(ev) }).named("x");
    let _failure = HookFailure::Error("e".into());
    let _builder: AgentBuilder<(), String> = Agent::builder("a");
    fn _events(_: &ApprovalRequested, _: &ApprovalResolved, _: &BeforeCompact, _: &AfterCompact) {}
    fn _more(_: &CompactFailed, _: &StoppedByHuman, _: &PendingApproval, _: Option<BoxError>) {}
}
