//! The built-in guards in real runs: each stops at exactly its limit with a typed reason, the
//! highest-priority stop wins, sub-agents' tokens count when asked, and the bundle's defaults.

use agentry::ScriptedTurn;
use agentry::builtins::{Guards, Price, PriceTable};
use agentry::hooks::{HookExt, HookRegistration, IntoHook};
use agentry::prelude::*;
use agentry::{FinishReason, Limit};
use std::time::Duration;

#[derive(Deserialize, JsonSchema)]
struct Echo {
    text: String,
}

/// A model that calls `echo` forever, each turn using `input` + `output` tokens.
fn runaway(input: u64, output: u64) -> ScriptedModel {
    ScriptedModel::from_fn(move |n, _| {
        ScriptedTurn::new()
            .with_tool_call("echo", json!({"text": format!("ping {n}")}))
            .with_usage(input, output)
    })
    .named("runaway")
}

fn agent(model: ScriptedModel, pause: Duration, guards: Vec<HookRegistration>) -> Agent {
    let echo = tool(
        "echo",
        "Echoes.",
        move |a: Echo, _ctx: ToolCtx| async move {
            tokio::time::sleep(pause).await;
            Ok(a.text)
        },
    );
    let mut b = Agent::builder("looper")
        .model(model)
        .tool(echo)
        .max_steps(500);
    for g in guards {
        b = b.with(g);
    }
    b.build().unwrap()
}

fn limit_of(stop: &StopReason) -> (&str, &Limit) {
    match stop {
        StopReason::Limit { guard, limit } => (guard.as_str(), limit),
        other => panic!("expected a guard's stop, got {other:?}"),
    }
}

#[tokio::test]
async fn the_step_guard_stops_at_exactly_its_limit() {
    let a = agent(
        runaway(10, 1),
        Duration::ZERO,
        vec![Guards::none().max_steps(3).into_hook()],
    );
    let out = Runtime::new().run(&a, "go").await.unwrap();
    assert_eq!(out.steps, 3);
    assert_eq!(out.model_calls, 3);
    let (guard, limit) = limit_of(&out.stop);
    assert_eq!(guard, "guards");
    assert_eq!(*limit, Limit::Steps { used: 3, limit: 3 });
    assert_eq!(out.stop.to_string(), "step limit reached: 3/3");
}

#[tokio::test]
async fn the_token_guard_counts_input_and_output() {
    let a = agent(
        runaway(100, 10),
        Duration::ZERO,
        vec![Guards::none().max_tokens(300).into_hook()],
    );
    let out = Runtime::new().run(&a, "go").await.unwrap();
    // 110 tokens a step: 220 after two steps goes on, 330 after three stops.
    assert_eq!(out.steps, 3);
    assert_eq!(
        *limit_of(&out.stop).1,
        Limit::Tokens {
            used: 330,
            limit: 300
        }
    );
    assert_eq!(out.stop.to_string(), "token limit reached: 330/300");
}

#[tokio::test]
async fn the_cost_guard_prices_each_call_by_model() {
    let prices = PriceTable::new().model(
        "runaway",
        Price {
            input: 1.0,
            cached_input: 0.1,
            output: 2.0,
        },
    );
    // 100,000 in and 50,000 out: 0.1 + 0.1 = 0.2 a call.
    let a = agent(
        runaway(100_000, 50_000),
        Duration::ZERO,
        vec![Guards::none().max_cost(0.5, prices).into_hook()],
    );
    let out = Runtime::new().run(&a, "go").await.unwrap();
    assert_eq!(out.steps, 3);
    match limit_of(&out.stop).1 {
        Limit::Cost { spent, limit } => {
            assert!((spent - 0.6).abs() < 1e-9, "{spent}");
            assert_eq!(*limit, 0.5);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(out.stop.to_string(), "cost limit reached: 0.6000/0.5000");
}

#[tokio::test]
async fn the_time_guard_measures_from_the_start_of_the_run() {
    let a = agent(
        runaway(1, 1),
        Duration::from_millis(60),
        vec![
            Guards::none()
                .max_wall_time(Duration::from_millis(100))
                .into_hook(),
        ],
    );
    let out = Runtime::new().run(&a, "go").await.unwrap();
    // 60 ms a step: 60 ms after one step goes on, 120 ms after two stops.
    assert_eq!(out.steps, 2);
    match limit_of(&out.stop).1 {
        Limit::WallTime {
            elapsed_ms,
            limit_ms,
        } => {
            assert_eq!(*limit_ms, 100);
            assert!(*elapsed_ms >= 100, "{elapsed_ms}");
        }
        other => panic!("{other:?}"),
    }
    assert!(
        out.stop.to_string().starts_with("time limit reached: "),
        "{}",
        out.stop
    );
}

#[tokio::test]
async fn a_finish_reason_in_the_set_stops_the_run_after_its_step() {
    let model = ScriptedModel::from_fn(|n, _| {
        let turn = ScriptedTurn::new().with_tool_call("echo", json!({"text": "x"}));
        if n == 2 {
            turn.with_finish(FinishReason::ContentFilter)
        } else {
            turn
        }
    });
    let a = agent(
        model,
        Duration::ZERO,
        vec![
            Guards::none()
                .stop_on_finish([FinishReason::ContentFilter, FinishReason::Length])
                .into_hook(),
        ],
    );
    let out = Runtime::new().run(&a, "go").await.unwrap();
    assert_eq!(out.steps, 2);
    assert_eq!(
        *limit_of(&out.stop).1,
        Limit::FinishReason {
            reason: "content_filter".into()
        }
    );
}

#[tokio::test]
async fn when_two_guards_fire_the_higher_priority_one_is_the_stop_reason() {
    // After two steps of 110 tokens, both the step limit (2) and the token limit (200) are
    // reached before step 3.
    let steps = || Guards::none().max_steps(2).named("steps");
    let tokens = || Guards::none().max_tokens(200).named("tokens");

    let a = agent(
        runaway(100, 10),
        Duration::ZERO,
        vec![steps().priority(200), tokens().priority(250)],
    );
    let out = Runtime::new().run(&a, "go").await.unwrap();
    assert_eq!(limit_of(&out.stop).0, "tokens");

    let a = agent(
        runaway(100, 10),
        Duration::ZERO,
        vec![steps().priority(250), tokens().priority(200)],
    );
    let out = Runtime::new().run(&a, "go").await.unwrap();
    assert_eq!(limit_of(&out.stop).0, "steps");
    assert_eq!(out.steps, 2);
}

#[tokio::test]
async fn sub_agent_tokens_count_for_the_parent_when_asked() {
    let child = || {
        Agent::builder("child")
            .description("Answers.")
            .model(ScriptedModel::from_fn(|_, _| {
                ScriptedTurn::new().with_text("ok").with_usage(500, 100)
            }))
            .build()
            .unwrap()
    };
    let parent_model = || {
        ScriptedModel::from_fn(|_, _| {
            ScriptedTurn::new()
                .with_tool_call("child", json!({"input": "help"}))
                .with_usage(10, 10)
        })
    };
    let run = |count: bool| {
        let child = child();
        let parent = Agent::builder("parent")
            .model(parent_model())
            .sub_agent(&child)
            .max_steps(5)
            .build()
            .unwrap();
        async move {
            Runtime::new()
                .with(Guards::none().max_tokens(1000).count_sub_agents(count))
                .run(&parent, "go")
                .await
                .unwrap()
        }
    };
    // Counting the child's 600 tokens a step, the parent passes 1,000 after two steps.
    let counted = run(true).await;
    assert_eq!(counted.steps, 2);
    assert_eq!(
        *limit_of(&counted.stop).1,
        Limit::Tokens {
            used: 1240,
            limit: 1000
        }
    );
    // On its own 20 tokens a step, it runs into its step limit first.
    let own = run(false).await;
    assert_eq!(own.stop, StopReason::MaxSteps { limit: 5 });
}

#[tokio::test]
async fn the_bundle_stops_a_runaway_at_twenty_steps() {
    let a = agent(
        runaway(10, 10),
        Duration::ZERO,
        vec![Guards::new().into_hook()],
    );
    let out = Runtime::new().run(&a, "go").await.unwrap();
    assert_eq!(out.steps, 20);
    assert_eq!(out.stop.to_string(), "step limit reached: 20/20");
}

#[tokio::test]
async fn a_resumed_run_is_still_guarded() {
    // The first call waits for approval; the run is then continued by `decide` (no RunStart), and
    // the step limit still stops it, counting the steps it took before the pause.
    let echo = tool("echo", "Echoes.", |a: Echo, _ctx: ToolCtx| async move {
        Ok(a.text)
    })
    .needs_approval();
    let model = ScriptedModel::from_fn(|n, _| {
        ScriptedTurn::new().with_tool_call_id(format!("c{n}"), "echo", json!({"text": "ping"}))
    });
    let agent = Agent::builder("looper")
        .model(model)
        .tool(echo)
        .max_steps(500)
        .build()
        .unwrap();
    // After the first approval, a hook approves every later call.
    let runtime = Runtime::new()
        .store(MemoryStore::new())
        .with(Guards::none().max_steps(3))
        .with(on::approval_requested(
            |mut ev: agentry::hooks::ApprovalRequested, _ctx| async move {
                if ev.pending().call_id != "c1" {
                    ev.approve();
                }
                Ok(ev)
            },
        ));
    let out = runtime.run(&agent, "go").await.unwrap();
    assert!(out.stop.is_paused(), "{:?}", out.stop);
    let out = runtime
        .decide(&agent, &out.run_id, [agentry::Decision::approve("c1")])
        .await
        .unwrap();
    assert_eq!(out.stop.to_string(), "step limit reached: 3/3");
    assert_eq!(out.steps, 3);
}

#[tokio::test]
async fn identical_calls_past_the_limit_are_blocked_and_the_model_is_told_why() {
    // The same call three times, then a different one, then the same again, then an answer.
    let model = || {
        let turns = ["same", "same", "same", "other", "same"];
        ScriptedModel::from_fn(move |n, _| match turns.get(n as usize - 1) {
            Some(text) => ScriptedTurn::new().with_tool_call("echo", json!({ "text": text })),
            None => ScriptedTurn::text("giving up"),
        })
    };
    let a = agent(
        model(),
        Duration::ZERO,
        vec![Guards::none().max_repeated_calls(2).into_hook()],
    );
    let out = Runtime::new().run(&a, "go").await.unwrap();
    assert_eq!(out.text, "giving up", "the run goes on");
    let results: Vec<(bool, String)> = out
        .messages
        .iter()
        .filter_map(|m| m.tool_result())
        .map(|r| (r.is_error, r.content.text().into_owned()))
        .collect();
    let blocked = |i: usize| results[i].0 && results[i].1.contains("already made 2 times");
    assert_eq!(results[0], (false, "same".to_owned()));
    assert_eq!(results[1], (false, "same".to_owned()));
    assert!(blocked(2), "the third identical call: {:?}", results[2]);
    assert_eq!(
        results[3],
        (false, "other".to_owned()),
        "a different input runs"
    );
    assert!(blocked(4), "{:?}", results[4]);
    // Without the limit, every call runs.
    let a = agent(model(), Duration::ZERO, vec![Guards::none().into_hook()]);
    let out = Runtime::new().run(&a, "go").await.unwrap();
    let results: Vec<_> = out
        .messages
        .iter()
        .filter_map(|m| m.tool_result())
        .collect();
    assert_eq!(results.len(), 5);
    assert!(results.iter().all(|r| !r.is_error), "{results:?}");
}
