//! One rule for every event that carries a decision: the highest-priority hook that decides is
//! the one whose decision stands, and every hook sees every event it subscribed to.
//!
//! Forward events run from the highest priority down; the first decision stands and the hooks
//! after it see the decided event read-only. Reverse (onion) events run from the lowest priority
//! up; each outer hook sees the inner hooks' decision and may replace it, and the outermost's
//! stands. Checked for each decision event, in both directions, with several deciders, with
//! synchronous and asynchronous hooks, and through runs: a priority-0 AfterStep stop does not
//! pre-empt the guards', and the token guard counts a response another hook rejected.

use crate::common::*;
use agentry::agent::{CompactPlan, CompactStrategy, OnCompactError};
use agentry::builtins::Guards;
use agentry::hooks::*;
use agentry::prelude::*;
use agentry::{
    FinishReason, Limit, ModelError, ModelErrorKind, PendingApproval, RunContext, RunContextSpec,
    Usage,
};
use agentry::{ModelRequest, ModelResponse, ScriptedTurn};
use std::sync::Arc;
use std::time::Duration;

/// An event with a decision a test hook can take, tagged so the test can tell whose it is.
trait Case: Event + Clone {
    fn make() -> Self;
    fn decide(&mut self, tag: &str);
    /// The tag of the decision the event carries, if any.
    fn decision(&self) -> Option<String>;
}

macro_rules! case {
    ($event:ty, $make:expr, |$d:ident, $tag:ident| $decide:expr, |$r:ident| $read:expr) => {
        impl Case for $event {
            fn make() -> Self {
                $make
            }
            fn decide(&mut self, $tag: &str) {
                let $d = self;
                $decide;
            }
            fn decision(&self) -> Option<String> {
                let $r = self;
                $read
            }
        }
    };
}

fn plan() -> CompactPlan {
    CompactPlan {
        strategy: CompactStrategy::Summarize,
        start: 0,
        end: 1,
    }
}

fn tag_of(debug: impl std::fmt::Debug) -> String {
    let text = format!("{debug:?}");
    ["p10", "p20", "p30"]
        .into_iter()
        .find(|t| text.contains(t))
        .unwrap_or("?")
        .to_string()
}

// Forward events.
case!(BeforeStep, BeforeStep::new(1), |e, t| e.stop(t), |e| e
    .decision()
    .map(tag_of));
case!(
    BeforeModel,
    BeforeModel::new(ModelRequest::new(Default::default())),
    |e, t| e.respond(ModelResponse::text(t)),
    |e| e.response().map(|r| r.text.clone())
);
case!(
    BeforeTool,
    BeforeTool::new("c1", "echo", json!({})),
    |e, t| e.block(t),
    |e| e.decision().map(tag_of)
);
case!(
    BeforeSubAgent,
    BeforeSubAgent::new("child".into(), "c1".into(), "go".into()),
    |e, t| e.block(t),
    |e| e.blocked().map(str::to_string)
);
case!(
    ApprovalRequested,
    ApprovalRequested::new(PendingApproval {
        call_id: "c1".into(),
        tool: "shell".into(),
        input: json!({}),
        reason: "asks".into(),
    }),
    |e, t| e.reject(t),
    |e| e.decision().map(tag_of)
);
case!(
    BeforeCompact,
    BeforeCompact::new(10, 5, Default::default(), plan()),
    |e, t| e.veto(t),
    |e| e.vetoed().map(str::to_string)
);
case!(
    TextDelta,
    TextDelta::new("hi".into()),
    |e, t| e.abort(t),
    |e| e.aborted().map(str::to_string)
);
case!(
    Thinking,
    Thinking::new("hm".into()),
    |e, t| e.abort(t),
    |e| e.aborted().map(str::to_string)
);
case!(
    Stop,
    Stop::new(StopReason::FinalAnswer, 1),
    |e, t| e.veto(t),
    |e| e.vetoed().map(str::to_string)
);
// Reverse events.
case!(
    AfterStep,
    AfterStep::new(1, Usage::default(), 1),
    |e, t| e.stop(t),
    |e| e.stop_decision().map(tag_of)
);
case!(
    AfterModel,
    AfterModel::from_model("m", ModelResponse::text("x")),
    |e, t| e.retry(t),
    |e| e.retry_feedback().map(str::to_string)
);
case!(
    RunFailed,
    RunFailed::new(Arc::new(Error::other("boom"))),
    |e, t| e.recover(t),
    |e| e.recovery().map(tag_of)
);
case!(
    ToolFailed,
    ToolFailed::new("c1", "echo", json!({}), "failed".into()),
    |e, t| e.recover(t),
    |e| e.recovery().map(str::to_string)
);
case!(
    SubAgentFailed,
    SubAgentFailed::new("child".into(), "go".into(), "failed".into()),
    |e, t| e.recover(t),
    |e| e.recovery().map(str::to_string)
);
case!(
    CompactFailed,
    CompactFailed::new(
        ModelError::new("m", ModelErrorKind::Other, "failed"),
        plan(),
        OnCompactError::Continue
    ),
    |e, t| e.recover(t),
    |e| e.recovery().map(str::to_string)
);

fn context() -> RunContext {
    RunContext::detached(RunContextSpec {
        step: 1,
        hook_timeout: Duration::from_secs(10),
        ..RunContextSpec::new("r", "a")
    })
}

/// Registers a hook at `priority`, named `p<priority>`, that records what it saw (its name and
/// the decision the event carried) and, when `decides`, takes a decision tagged with its name.
fn add<E: Case>(hooks: &mut Hooks, log: &Log, priority: i32, decides: bool, sync: bool) {
    let name = format!("p{priority}");
    let (log, tag) = (log.clone(), name.clone());
    let see = move |ev: &mut E| {
        push(&log, format!("{tag} saw {:?}", ev.decision()));
        if decides {
            ev.decide(&tag);
        }
    };
    if sync {
        hooks.add(
            FnSyncHook::new(move |ev: &mut E, _: &HookCtx| {
                see(ev);
                Ok(())
            })
            .named(name)
            .priority(priority),
        );
    } else {
        hooks.add(
            FnHook::new(move |mut ev: E, _: HookCtx| {
                see(&mut ev);
                std::future::ready(Ok(ev))
            })
            .named(name)
            .priority(priority),
        );
    }
}

/// Dispatches `E` to hooks at priorities 30, 20 and 10 (registered low first, so priority, not
/// registration order, decides), the given ones deciding; returns the standing decision, the
/// hook it is credited to, and what each hook saw, in the order they ran.
async fn dispatch<E: Case>(
    deciders: &[i32],
    sync: bool,
) -> (Option<String>, Option<String>, Vec<String>) {
    let log = new_log();
    let mut hooks = Hooks::new();
    for p in [10, 20, 30] {
        add::<E>(&mut hooks, &log, p, deciders.contains(&p), sync);
    }
    let (ev, by) = hooks
        .dispatch_decided(E::make(), &context())
        .await
        .expect("no hook fails");
    (ev.decision(), by.map(|n| n.to_string()), entries(&log))
}

/// Checks the rule for `E` in both hook kinds and with every set of deciders.
async fn check<E: Case>() {
    let kind = E::KIND;
    for sync in [true, false] {
        for deciders in [&[10, 20, 30][..], &[10, 20], &[10], &[20, 30], &[]] {
            let (decision, by, seen) = dispatch::<E>(deciders, sync).await;
            let top = deciders.iter().max().map(|p| format!("p{p}"));
            let at = format!("{kind} sync={sync} deciders={deciders:?}");
            assert_eq!(decision, top, "{at}: the highest-priority decision stands");
            assert_eq!(by, top, "{at}: credited to its hook");
            // Every hook saw the event, in its direction's order, with the decision so far.
            let order: [i32; 3] = if kind.is_reverse() {
                [10, 20, 30]
            } else {
                [30, 20, 10]
            };
            let mut standing: Option<String> = None;
            let expected: Vec<String> = order
                .iter()
                .map(|p| {
                    let line = format!("p{p} saw {standing:?}");
                    let replaces = kind.is_reverse() || standing.is_none();
                    if deciders.contains(p) && replaces {
                        standing = Some(format!("p{p}"));
                    }
                    line
                })
                .collect();
            assert_eq!(seen, expected, "{at}");
        }
    }
}

#[tokio::test]
async fn on_forward_events_the_first_decision_stands_and_later_hooks_see_it_read_only() {
    check::<BeforeStep>().await;
    check::<BeforeModel>().await;
    check::<BeforeTool>().await;
    check::<BeforeSubAgent>().await;
    check::<ApprovalRequested>().await;
    check::<BeforeCompact>().await;
    check::<TextDelta>().await;
    check::<Thinking>().await;
    check::<Stop>().await;
}

#[tokio::test]
async fn on_reverse_events_outer_hooks_see_the_inner_decision_and_the_outermost_stands() {
    check::<AfterStep>().await;
    check::<AfterModel>().await;
    check::<RunFailed>().await;
    check::<ToolFailed>().await;
    check::<SubAgentFailed>().await;
    check::<CompactFailed>().await;
}

#[tokio::test]
async fn a_read_only_view_cannot_change_the_decided_event() {
    let log = new_log();
    let mut hooks = Hooks::new();
    hooks.add(on_sync::before_tool(|ev, _| {
        ev.block("policy");
        Ok(())
    }));
    let l = log.clone();
    hooks.add(
        on::before_tool(move |mut ev, _ctx| {
            push(&l, format!("{:?}", ev.decision()));
            ev.input = json!({"rewritten": true});
            ev.mock("sneaky");
            std::future::ready(Ok(ev))
        })
        .priority(-1),
    );
    let ev = BeforeTool::new("c1", "shell", json!({"command": "ls"}));
    let ev = hooks.dispatch(ev, &context()).await.unwrap();
    assert_eq!(entries(&log), [r#"Some(Block("policy"))"#]);
    assert_eq!(format!("{:?}", ev.decision()), r#"Some(Block("policy"))"#);
    assert_eq!(ev.input, json!({"command": "ls"}));
}

#[tokio::test]
async fn a_low_priority_after_step_stop_does_not_pre_empt_the_guards() {
    // The guards (priority 200) stop at two steps; a priority-0 AfterStep hook stops too.
    let model = ScriptedModel::new()
        .tool_call("get_weather", json!({"city": "Paris"}))
        .tool_call("get_weather", json!({"city": "Rome"}))
        .text("done");
    let agent = Agent::builder("planner")
        .model(model)
        .tool(weather(&new_log(), &Counter::default()))
        .with(
            on_sync::after_step(|ev, _| {
                if ev.step() == 1 {
                    ev.stop("the low hook says stop");
                }
                Ok(())
            })
            .named("low"),
        )
        .build()
        .unwrap();
    let guard = agentry::builtins::GUARD_PRIORITY;
    let runtime = Runtime::new().with(Guards::none().stop_on_finish([FinishReason::ToolCalls]));

    let out = runtime.run(&agent, "Go.").await.unwrap();

    let StopReason::Limit {
        guard: by,
        limit: Limit::FinishReason { .. },
    } = &out.stop
    else {
        panic!(
            "the guards' stop (priority {guard}) stands, not {:?}",
            out.stop
        )
    };
    assert_eq!(by, "guards");
}

#[tokio::test]
async fn the_token_guard_counts_a_response_another_hook_rejected() {
    // The first answer (900 tokens) is rejected by a low-priority AfterModel hook and retried;
    // the guard (priority 200, outermost) still sees it, so the 1,000-token budget is spent
    // before a third call.
    let model = ScriptedModel::new()
        .turn(ScriptedTurn::text("draft").with_usage(800, 100))
        .turn(ScriptedTurn::tool_call("get_weather", json!({"city": "Paris"})).with_usage(100, 50))
        .text("done");
    let agent = Agent::builder("writer")
        .model(model.clone())
        .tool(weather(&new_log(), &Counter::default()))
        .with(on_sync::after_model(|ev, _| {
            if ev.response.text == "draft" {
                ev.retry("not a draft, please");
            }
            Ok(())
        }))
        .build()
        .unwrap();
    let runtime = Runtime::new().with(Guards::none().max_tokens(1_000));

    let out = runtime.run(&agent, "Write.").await.unwrap();

    assert!(
        matches!(
            out.stop,
            StopReason::Limit {
                limit: Limit::Tokens { used: 1_050, .. },
                ..
            }
        ),
        "{:?}",
        out.stop
    );
    assert_eq!(model.calls(), 2, "no third call past the budget");
    // The run's usage counts the rejected response too, and says how much it was.
    assert_eq!(out.usage.total(), 1_050);
    assert_eq!(out.retried_usage, Usage::new(800, 100));
}
