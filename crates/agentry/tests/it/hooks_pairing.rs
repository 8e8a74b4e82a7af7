//! Pairs close: every BeforeTool is followed by exactly one AfterTool or ToolFailed for its call,
//! whatever happens to the call (it runs, fails, panics, has arguments that fail its schema, is
//! blocked, mocked, or rejected by an approval hook), and nothing closes a call that was not
//! opened. Checked as a property over random scripted runs.

use crate::common::*;
use agentry::hooks::*;
use agentry::prelude::*;
use agentry::{Decision, ScriptedTurn};
use agentry::{Model, ModelRequest, Tool, ToolFailure};
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
            push(&after, format!("After {}", ev.call_id()));
            Ok(())
        }))
        .with(on_sync::tool_failed(move |ev, _| {
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
                push(&after, format!("After {}", ev.call_id()));
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

/// A log of the tool and sub-agent pairs of every run: `Before <id>`, `After <id>`,
/// `Error <id>` for tools; `SubBefore <agent>`, `SubAfter <agent>`, `SubError <agent>: <error>`.
fn pair_logger(log: &Log) -> Vec<HookRegistration> {
    let (b, a, e) = (log.clone(), log.clone(), log.clone());
    let (sb, sa, se) = (log.clone(), log.clone(), log.clone());
    vec![
        on_sync::before_tool(move |ev, ctx| {
            push(&b, format!("Before {}/{}", ctx.agent_path(), ev.call_id()));
            Ok(())
        })
        .into_hook(),
        on_sync::after_tool(move |ev, ctx| {
            push(&a, format!("After {}/{}", ctx.agent_path(), ev.call_id()));
            Ok(())
        })
        .into_hook(),
        on_sync::tool_failed(move |ev, ctx| {
            push(
                &e,
                format!(
                    "Error {}/{}: {}",
                    ctx.agent_path(),
                    ev.call_id(),
                    ev.error()
                ),
            );
            Ok(())
        })
        .into_hook(),
        on_sync::before_sub_agent(move |ev, _| {
            push(&sb, format!("SubBefore {}", ev.agent()));
            Ok(())
        })
        .into_hook(),
        on_sync::after_sub_agent(move |ev, _| {
            push(&sa, format!("SubAfter {}", ev.agent()));
            Ok(())
        })
        .into_hook(),
        on_sync::sub_agent_failed(move |ev, _| {
            push(&se, format!("SubError {}: {}", ev.agent(), ev.error()));
            Ok(())
        })
        .into_hook(),
    ]
}

/// A tool that never returns.
fn hangs(name: &'static str) -> impl Tool {
    tool(name, "Hangs.", |_: Order, _ctx: ToolCtx| async move {
        futures::future::pending::<()>().await;
        Ok("never")
    })
}

fn with_pairs(runtime: Runtime, log: &Log) -> Runtime {
    pair_logger(log).into_iter().fold(runtime, Runtime::with)
}

/// Checks the tool pairs of `log` (the sub-agent lines aside).
fn check_tool_pairs(log: &[String]) {
    let tools: Vec<String> = log
        .iter()
        .filter(|l| !l.starts_with("Sub"))
        .map(|l| l.split(':').next().unwrap().to_string())
        .collect();
    check_pairs(&tools).unwrap();
}

#[tokio::test]
async fn a_run_cancelled_mid_call_closes_every_call_under_way_with_tool_error() {
    let log = new_log();
    let model = ScriptedModel::new().turn(
        ScriptedTurn::new()
            .with_tool_call("hang", json!({"mode": "a"}))
            .with_tool_call("hang", json!({"mode": "b"})),
    );
    let agent = Agent::builder("a")
        .model(model)
        .tool(hangs("hang"))
        .build()
        .unwrap();
    let handle = with_pairs(Runtime::new(), &log).run(&agent, "Go.").start();
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    handle.cancel();
    let out = handle.result().await.unwrap();
    assert_eq!(out.stop, StopReason::Cancelled);

    let log = entries(&log);
    assert_eq!(log.iter().filter(|l| l.starts_with("Before")).count(), 2);
    let errors: Vec<&String> = log.iter().filter(|l| l.starts_with("Error")).collect();
    assert_eq!(errors.len(), 2, "{log:?}");
    assert!(errors[0].contains("the run was cancelled"), "{log:?}");
    check_tool_pairs(&log);
}

#[tokio::test]
async fn a_run_stopped_by_its_wall_time_mid_call_closes_the_call_with_tool_error() {
    let log = new_log();
    let agent = Agent::builder("a")
        .model(ScriptedModel::new().tool_call("hang", json!({"mode": "a"})))
        .tool(hangs("hang"))
        .build()
        .unwrap();
    let runtime = with_pairs(Runtime::new(), &log).with(
        agentry::builtins::Guards::none().max_wall_time(std::time::Duration::from_millis(100)),
    );

    let out = runtime.run(&agent, "Go.").await.unwrap();

    assert!(
        matches!(out.stop, StopReason::Limit { .. }),
        "{:?}",
        out.stop
    );
    let log = entries(&log);
    assert_eq!(log.len(), 2, "{log:?}");
    assert!(log[1].contains("the run stopped"), "{log:?}");
    check_tool_pairs(&log);
}

#[tokio::test]
async fn a_sub_agent_under_way_when_its_parent_is_cancelled_closes_every_pair_at_both_levels() {
    let log = new_log();
    let child = Agent::builder("child")
        .description("Hangs.")
        .model(ScriptedModel::new().tool_call("hang", json!({"mode": "c"})))
        .tool(hangs("hang"))
        .build()
        .unwrap();
    let parent = Agent::builder("parent")
        .model(ScriptedModel::new().tool_call("child", json!({"input": "go"})))
        .sub_agent(&child)
        .build()
        .unwrap();
    let handle = with_pairs(Runtime::new(), &log).run(&parent, "Go.").start();
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    handle.cancel();
    let out = handle.result().await.unwrap();
    assert_eq!(out.stop, StopReason::Cancelled);
    // The child ends on its own task; give it the moment it needs.
    for _ in 0..100 {
        if entries(&log).len() >= 6 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }

    let log = entries(&log);
    // Parent: Before (the child call), SubBefore, then SubError and Error; child: Before (its
    // tool call), then Error.
    assert_eq!(
        log.iter().filter(|l| l.starts_with("SubBefore")).count(),
        1,
        "{log:?}"
    );
    assert_eq!(
        log.iter().filter(|l| l.starts_with("SubError")).count(),
        1,
        "{log:?}"
    );
    check_tool_pairs(&log);
}

#[tokio::test]
async fn a_blocked_sub_agent_is_closed_with_sub_agent_error_which_may_answer_for_it() {
    let log = new_log();
    let child = Agent::builder("child")
        .description("Answers.")
        .model(ScriptedModel::new().text("child answer"))
        .build()
        .unwrap();
    let model = ScriptedModel::new()
        .tool_call("child", json!({"input": "go"}))
        .text("done");
    let parent = Agent::builder("parent")
        .model(model.clone())
        .sub_agent(&child)
        .with(on_sync::before_sub_agent(|ev, _| {
            ev.block("not now");
            Ok(())
        }))
        .with(on_sync::sub_agent_failed(|ev, _| {
            ev.recover(format!("(answered for {}: {})", ev.agent(), ev.error()));
            Ok(())
        }))
        .build()
        .unwrap();

    let out = with_pairs(Runtime::new(), &log)
        .run(&parent, "Go.")
        .await
        .unwrap();

    assert_eq!(out.output.as_deref(), Some("done"));
    let log = entries(&log);
    assert!(
        log.contains(&"SubError child: not now".to_string()),
        "{log:?}"
    );
    assert!(!log.iter().any(|l| l.starts_with("SubAfter")), "{log:?}");
    let sent = model.requests()[1]
        .messages
        .last()
        .unwrap()
        .tool_result()
        .cloned()
        .unwrap();
    assert_eq!(sent.content, "(answered for child: not now)");
    check_tool_pairs(&log);
}

/// A model whose stream never sends anything.
struct Silent;

impl Model for Silent {
    fn name(&self) -> &str {
        "silent"
    }
    fn stream<'a>(&'a self, _: &'a ModelRequest) -> agentry::ModelStream<'a> {
        futures::stream::pending().boxed()
    }
}

#[tokio::test]
async fn a_run_cancelled_mid_model_turn_closes_before_model_with_an_aborted_after_model() {
    let log = new_log();
    let (b, a) = (log.clone(), log.clone());
    let agent = Agent::builder("a")
        .model(Silent)
        .with(on_sync::before_model(move |_ev, _| {
            push(&b, "BeforeModel");
            Ok(())
        }))
        .with(on_sync::after_model(move |ev, _| {
            push(&a, format!("AfterModel {:?}", ev.response.finish_reason));
            Ok(())
        }))
        .build()
        .unwrap();
    let handle = Runtime::new().run(&agent, "Hi").start();
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    handle.cancel();
    assert_eq!(handle.result().await.unwrap().stop, StopReason::Cancelled);
    assert_eq!(
        entries(&log),
        [
            "BeforeModel",
            r#"AfterModel Aborted("the run was cancelled")"#
        ]
    );
}

#[tokio::test]
async fn a_hook_under_way_when_the_run_is_cancelled_is_reported_failed() {
    let log = new_log();
    let (started, finished, failed) = (log.clone(), log.clone(), log.clone());
    let agent = Agent::builder("a")
        .model(ScriptedModel::new().tool_call("hang", json!({"mode": "a"})))
        .tool(hangs("hang"))
        .with(
            on::before_tool(|ev, _ctx| async move {
                futures::future::pending::<()>().await;
                Ok(ev)
            })
            .named("stuck"),
        )
        .build()
        .unwrap();
    let runtime = Runtime::new()
        .with(on_sync::hook_started(move |ev, _| {
            push(&started, format!("started {} on {}", ev.hook(), ev.event()));
            Ok(())
        }))
        .with(on_sync::hook_finished(move |ev, _| {
            push(&finished, format!("finished {}", ev.hook()));
            Ok(())
        }))
        .with(on_sync::hook_failed(move |ev, _| {
            push(
                &failed,
                format!("failed {} on {}: {}", ev.hook(), ev.event(), ev.error()),
            );
            Ok(())
        }));
    let handle = runtime.run(&agent, "Go.").start();
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    handle.cancel();
    assert_eq!(handle.result().await.unwrap().stop, StopReason::Cancelled);

    let stuck: Vec<String> = entries(&log)
        .into_iter()
        .filter(|l| l.contains("stuck"))
        .collect();
    assert_eq!(
        stuck,
        [
            "started stuck on BeforeTool",
            "failed stuck on BeforeTool: interrupted: the run was cancelled"
        ]
    );
}
