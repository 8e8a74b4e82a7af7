//! `Hooks::dispatch_traced`: each hook's step (time, decision, read-only view, failure and the
//! event as it left it) in the order the hooks ran, with the same outcome as a dispatch.

use agentry::hooks::{AfterTool, BeforeTool, HookExt, Hooks, ToolDecision, on, on_sync};
use agentry::{RunContext, RunContextSpec, ToolResult};
use serde_json::json;
use std::time::Duration;

fn context() -> RunContext {
    RunContext::detached(RunContextSpec {
        step: 1,
        ..RunContextSpec::new("run-1", "a")
    })
}

fn chain() -> Hooks {
    let mut hooks = Hooks::new();
    hooks.add(
        on_sync::before_tool(|ev, _| {
            ev.input = json!({"command": "ls -la"});
            Ok(())
        })
        .named("rewriter")
        .priority(10),
    );
    hooks.add(
        on::before_tool(|mut ev, _| async move {
            tokio::time::sleep(Duration::from_millis(20)).await;
            ev.block("no listing");
            Ok(ev)
        })
        .named("blocker"),
    );
    hooks.add(
        on_sync::before_tool(|ev, _| {
            ev.mock("ignored");
            Ok(())
        })
        .named("late")
        .priority(-5),
    );
    hooks
}

#[tokio::test]
async fn each_hook_s_step_is_recorded_in_the_order_they_ran() {
    let hooks = chain();
    let ev = BeforeTool::new("c1", "Bash", json!({"command": "ls"}));
    let traced = hooks.dispatch_traced(ev, &context()).await;
    let names: Vec<&str> = traced.steps.iter().map(|s| s.hook.as_ref()).collect();
    assert_eq!(names, ["rewriter", "blocker", "late"]);

    let [rewriter, blocker, late] = &traced.steps[..] else {
        panic!("three steps")
    };
    assert!(!rewriter.decided && !rewriter.read_only);
    assert_eq!(rewriter.after.input, json!({"command": "ls -la"}));
    assert!(rewriter.after.decision().is_none());

    assert!(blocker.decided && !blocker.read_only);
    assert!(
        blocker.took >= Duration::from_millis(20),
        "{:?}",
        blocker.took
    );
    assert_eq!(
        blocker.after.decision(),
        Some(&ToolDecision::Block("no listing".into()))
    );

    // The late hook saw the decided event read-only: its mock was dropped.
    assert!(late.read_only && !late.decided);
    assert!(late.after.is_blocked());

    let (ev, by) = traced.outcome.expect("no hook failed");
    assert_eq!(by.as_deref(), Some("blocker"));
    assert_eq!(ev.input, json!({"command": "ls -la"}));
}

#[tokio::test]
async fn the_outcome_is_the_same_as_an_untraced_dispatch() {
    let hooks = chain();
    let ev = BeforeTool::new("c1", "Bash", json!({"command": "ls"}));
    let (plain, plain_by) = hooks
        .dispatch_decided(ev.clone(), &context())
        .await
        .unwrap();
    let (traced, traced_by) = hooks.dispatch_traced(ev, &context()).await.outcome.unwrap();
    assert_eq!(plain_by, traced_by);
    assert_eq!(plain.input, traced.input);
    assert_eq!(plain.decision(), traced.decision());
}

#[tokio::test]
async fn an_advisory_failure_is_noted_and_the_chain_goes_on_with_the_event_before_it() {
    let mut hooks = Hooks::new();
    hooks.add(
        on_sync::after_tool(|ev, _| {
            ev.content = "half-written".into();
            Err("disk full".into())
        })
        .named("audit")
        .advisory(),
    );
    let result = ToolResult::ok("c1", "Read", "contents");
    let traced = hooks
        .dispatch_traced(AfterTool::new(json!({}), result), &context())
        .await;
    let [audit] = &traced.steps[..] else {
        panic!("one step")
    };
    assert!(audit.advisory);
    assert!(audit.failure.as_deref().unwrap().contains("disk full"));
    assert_eq!(audit.after.content, "contents");
    assert_eq!(traced.outcome.unwrap().0.content, "contents");
}

#[tokio::test]
async fn a_failing_hook_ends_the_trace_with_its_step_and_the_error() {
    let mut hooks = Hooks::new();
    hooks.add(
        on_sync::before_tool(|_, _| Err("policy file missing".into()))
            .named("policy")
            .priority(5),
    );
    hooks.add(on_sync::before_tool(|_, _| Ok(())).named("never"));
    let ev = BeforeTool::new("c1", "Bash", json!({}));
    let traced = hooks.dispatch_traced(ev, &context()).await;
    assert_eq!(traced.steps.len(), 1);
    assert!(traced.steps[0].failure.is_some());
    let err = traced.outcome.unwrap_err();
    assert_eq!(err.hook, "policy");
    assert!(err.to_string().contains("policy file missing"), "{err}");
}

#[tokio::test]
async fn a_failing_asynchronous_hook_still_has_its_step() {
    let mut hooks = Hooks::new();
    hooks.add(
        on::before_tool(|_ev, _| async move { Err("the script crashed".into()) }).named("script"),
    );
    let ev = BeforeTool::new("c1", "Bash", json!({"command": "ls"}));
    let traced = hooks.dispatch_traced(ev, &context()).await;
    let [script] = &traced.steps[..] else {
        panic!("one step")
    };
    assert!(script.failure.as_deref().unwrap().contains("crashed"));
    assert_eq!(script.after.input, json!({"command": "ls"}));
    assert_eq!(traced.outcome.unwrap_err().hook, "script");
}
