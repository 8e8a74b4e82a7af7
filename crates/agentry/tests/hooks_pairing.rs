//! Pairs close: every BeforeTool is followed by exactly one AfterTool or ToolError for its call,
//! whatever happens to the call (it runs, fails, panics, has arguments that fail its schema, is
//! blocked, mocked, or rejected by an approval hook), and nothing closes a call that was not
//! opened. Checked as a property over random scripted runs.

mod common;

use agentry::hooks::*;
use agentry::prelude::*;
use agentry::{Decision, ScriptedTurn};
use common::*;
use proptest::prelude::*;
use std::collections::HashMap;

/// What happens to one call.
#[derive(Clone, Copy, Debug)]
enum Fate {
    Runs,
    Fails,
    Panics,
    FailsItsSchema,
    NotJson,
    UnknownTool,
    Blocked,
    Mocked,
    RejectedByHook,
}

fn fate() -> impl Strategy<Value = Fate> {
    prop_oneof![
        Just(Fate::Runs),
        Just(Fate::Fails),
        Just(Fate::Panics),
        Just(Fate::FailsItsSchema),
        Just(Fate::NotJson),
        Just(Fate::UnknownTool),
        Just(Fate::Blocked),
        Just(Fate::Mocked),
        Just(Fate::RejectedByHook),
    ]
}

#[derive(Deserialize, JsonSchema)]
struct Order {
    mode: String,
}

/// The call a fate makes the model send.
fn call(turn: ScriptedTurn, fate: Fate) -> ScriptedTurn {
    let order = |mode: &str| json!({"mode": mode});
    match fate {
        Fate::Runs => turn.with_tool_call("work", order("ok")),
        Fate::Fails => turn.with_tool_call("work", order("fail")),
        Fate::Panics => turn.with_tool_call("work", order("panic")),
        Fate::FailsItsSchema => turn.with_tool_call("work", json!({"mode": 5})),
        Fate::NotJson => turn.with_raw_tool_call("work", "{not json"),
        Fate::UnknownTool => turn.with_tool_call("nowhere", order("ok")),
        Fate::Blocked => turn.with_tool_call("work", order("block")),
        Fate::Mocked => turn.with_tool_call("work", order("mock")),
        Fate::RejectedByHook => turn.with_tool_call("guarded", order("ok")),
    }
}

/// Runs an agent whose model makes the calls of `turns`, then answers; returns the log of
/// tool events, as `Before <id>`, `After <id>` and `Error <id>`.
async fn run(turns: &[Vec<Fate>], parallel: bool) -> Vec<String> {
    let mut model = ScriptedModel::new();
    for fates in turns {
        let turn = fates.iter().fold(ScriptedTurn::new(), |t, f| call(t, *f));
        model = model.turn(turn);
    }
    model = model.text("done");
    let work = tool("work", "Works.", |o: Order, _ctx: ToolCtx| async move {
        match o.mode.as_str() {
            "fail" => Err(ToolFailure::new("it failed")),
            "panic" => panic!("it panicked"),
            _ => Ok("worked"),
        }
    });
    let guarded = tool(
        "guarded",
        "Needs approval.",
        |_: Order, _ctx: ToolCtx| async move { Ok("ran") },
    )
    .needs_approval();
    let log = new_log();
    let (before, after, error) = (log.clone(), log.clone(), log.clone());
    let agent = Agent::builder("pairs")
        .model(model)
        .tool(work)
        .tool(guarded)
        .parallel_tool_calls(parallel)
        .with(on_sync::before_tool(move |ev, _| {
            push(&before, format!("Before {}", ev.call_id()));
            match ev.input["mode"].as_str() {
                Some("block") => ev.block("blocked"),
                Some("mock") => ev.mock("mocked"),
                _ => {}
            }
            Ok(())
        }))
        .with(on_sync::approval_requested(|ev, _| {
            ev.reject("not today");
            Ok(())
        }))
        .with(on_sync::after_tool(move |ev, _| {
            push(&after, format!("After {}", ev.result.call_id));
            Ok(())
        }))
        .with(on_sync::tool_error(move |ev, _| {
            push(&error, format!("Error {}", ev.call_id()));
            Ok(())
        }))
        .build()
        .unwrap();
    let out = Runtime::new().run(&agent, "Go.").await.unwrap();
    assert_eq!(out.output.as_deref(), Some("done"));
    entries(&log)
}

/// Checks that each call's events are one Before then exactly one After or Error, and that a
/// call without a Before has neither.
fn check_pairs(log: &[String]) -> Result<(), String> {
    let mut state: HashMap<&str, u8> = HashMap::new();
    for line in log {
        let (kind, id) = line.split_once(' ').expect("`kind id`");
        let s = state.entry(id).or_default();
        match (kind, *s) {
            ("Before", 0) => *s = 1,
            ("After" | "Error", 1) => *s = 2,
            _ => return Err(format!("`{line}` out of order in {log:?}")),
        }
    }
    match state.iter().find(|(_, s)| **s != 2) {
        Some((id, _)) => Err(format!("call {id} has no After or Error in {log:?}")),
        None => Ok(()),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn every_before_tool_is_closed_exactly_once(
        turns in prop::collection::vec(prop::collection::vec(fate(), 1..4), 1..4),
        parallel in any::<bool>(),
    ) {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let log = runtime.block_on(run(&turns, parallel));
        let opened = turns
            .iter()
            .flatten()
            .filter(|f| !matches!(f, Fate::NotJson | Fate::UnknownTool))
            .count();
        prop_assert_eq!(log.iter().filter(|l| l.starts_with("Before")).count(), opened);
        if let Err(problem) = check_pairs(&log) {
            return Err(TestCaseError::fail(problem));
        }
    }
}

#[test]
fn the_pairing_check_catches_an_unclosed_call() {
    let log = ["Before c1".to_string()];
    assert!(check_pairs(&log).is_err());
    let log = ["After c1".to_string()];
    assert!(check_pairs(&log).is_err());
}

#[tokio::test]
async fn a_call_a_person_rejects_is_closed_when_the_run_resumes() {
    for stops in [false, true] {
        let log = new_log();
        let (before, after) = (log.clone(), log.clone());
        let model = ScriptedModel::new()
            .tool_call("guarded", json!({"mode": "ok"}))
            .text("done");
        let guarded = tool(
            "guarded",
            "Needs approval.",
            |_: Order, _ctx: ToolCtx| async move { Ok("ran") },
        )
        .needs_approval();
        let agent = Agent::builder("pairs")
            .model(model)
            .tool(guarded)
            .with(on_sync::before_tool(move |ev, _| {
                push(&before, format!("Before {}", ev.call_id()));
                Ok(())
            }))
            .with(on_sync::after_tool(move |ev, _| {
                push(&after, format!("After {}", ev.result.call_id));
                Ok(())
            }))
            .build()
            .unwrap();
        let runtime = Runtime::new().store(agentry::MemoryStore::new());
        let paused = runtime.run(&agent, "Go.").await.unwrap();
        assert!(paused.stop.is_paused(), "{:?}", paused.stop);
        let call_id = match &paused.stop {
            StopReason::AwaitingApproval { pending } => pending[0].call_id.clone(),
            other => panic!("paused, not {other:?}"),
        };
        assert_eq!(entries(&log), [format!("Before {call_id}")]);

        runtime
            .decide(
                &agent,
                &paused.run_id,
                [if stops {
                    Decision::reject_and_stop(call_id.as_str(), "no")
                } else {
                    Decision::reject(call_id.as_str(), "no")
                }],
            )
            .await
            .unwrap();

        assert_eq!(
            entries(&log),
            [format!("Before {call_id}"), format!("After {call_id}")]
        );
        check_pairs(&entries(&log)).unwrap();
    }
}
