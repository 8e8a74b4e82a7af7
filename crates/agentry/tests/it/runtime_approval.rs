//! Approval in one process, with the in-memory store: a started run's event stream announces the
//! pause and its handle returns it; the run is decided on the same runtime; the event history
//! reads back, masked by the runtime's redactor.

use agentry::builtins::Redactor;
use agentry::prelude::*;
use agentry::{Decision, RunStatus, RunStore};
use agentry::{Message, ScriptedTurn};

#[derive(Deserialize, JsonSchema)]
struct Cmd {
    command: String,
}

fn agent() -> Agent {
    let model = ScriptedModel::from_fn(|_, req| {
        if req.messages.iter().any(|m| matches!(m, Message::Tool(_))) {
            ScriptedTurn::text("restarted")
        } else {
            ScriptedTurn::new().with_tool_call_id(
                "s1",
                "shell",
                json!({"command": "systemctl restart api --token sk-live-0123456789abcdefghij"}),
            )
        }
    });
    Agent::builder("ops")
        .model(model)
        .tool(
            tool(
                "shell",
                "Runs a command.",
                |a: Cmd, _c: ToolCtx| async move { Ok(format!("ran: {}", a.command.len())) },
            )
            .needs_approval(),
        )
        .build()
        .unwrap()
}

#[tokio::test]
async fn a_started_run_announces_its_pause_and_is_decided_on_the_same_runtime() {
    let store = MemoryStore::new();
    let runtime = Runtime::new()
        .store(store.clone())
        .redact(Redactor::new().pattern(r"sk-live-\w+").unwrap());
    let mut handle = runtime.run(&agent(), "Restart the API.").start();
    let mut announced = None;
    while let Some(ev) = handle.events().next().await {
        if let RunEvent::AwaitingApproval { pending, .. } = ev {
            announced = Some(pending);
        }
    }
    let out = handle.result().await.unwrap();
    let StopReason::AwaitingApproval { pending } = &out.stop else {
        panic!("{:?}", out.stop)
    };
    // The stream's copy is masked; the run's own is not.
    let announced = announced.expect("an AwaitingApproval event");
    assert_eq!(announced[0].call_id, "s1");
    assert_eq!(
        announced[0].input["command"],
        "systemctl restart api --token [REDACTED]"
    );
    assert!(
        pending[0].input["command"]
            .as_str()
            .unwrap()
            .contains("sk-live-")
    );

    let done = runtime
        .decide(&agent(), &out.run_id, [Decision::approve("s1")])
        .await
        .unwrap();
    assert_eq!(done.output.as_deref(), Some("restarted"));

    // The history reads back, in order, without the secret.
    let events = store.events(&out.run_id).await.unwrap();
    let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, (1..=events.len() as u64).collect::<Vec<_>>());
    let kinds: Vec<&str> = events.iter().map(|e| e.event.kind.as_str()).collect();
    assert_eq!(kinds.first(), Some(&"run_started"));
    assert_eq!(kinds.last(), Some(&"run_finished"));
    assert!(kinds.contains(&"awaiting_approval"), "{kinds:?}");
    let all = serde_json::to_string(&events).unwrap();
    assert!(!all.contains("sk-live-0123"), "{all}");
    assert!(all.contains("[REDACTED]"));
}

#[tokio::test]
async fn without_a_store_a_paused_run_cannot_be_decided_and_says_why() {
    let runtime = Runtime::new();
    let out = runtime.run(&agent(), "Restart the API.").await.unwrap();
    assert!(out.stop.is_paused());
    let err = runtime
        .decide(&agent(), &out.run_id, [Decision::approve("s1")])
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("this runtime has no store"),
        "{err}"
    );
}

/// A parent that delegates to the `ops` sub-agent, then reports what it heard.
fn parent() -> Agent {
    let model = ScriptedModel::from_fn(|_, req| {
        match req
            .messages
            .iter()
            .rev()
            .find(|m| matches!(m, Message::Tool(_)))
        {
            None => ScriptedTurn::new().with_tool_call_id(
                "p1",
                "ops",
                json!({"input": "Restart the API."}),
            ),
            Some(result) => ScriptedTurn::text(format!("heard: {}", result.text())),
        }
    });
    let ops = Agent::builder("ops")
        .description("Runs operations.")
        .model(ScriptedModel::from_fn(|_, req| {
            if req.messages.iter().any(|m| matches!(m, Message::Tool(_))) {
                ScriptedTurn::text("restarted")
            } else {
                ScriptedTurn::new().with_tool_call_id("s1", "shell", json!({"command": "x"}))
            }
        }))
        .tool(tool(
            "shell",
            "Runs a command.",
            |_: Cmd, _c: ToolCtx| async { Ok("ok") },
        ))
        .build()
        .unwrap();
    Agent::builder("lead")
        .model(model)
        .sub_agent(&ops)
        .build()
        .unwrap()
}

#[tokio::test]
async fn a_sub_agent_call_waits_for_approval_when_its_own_call_requires_it() {
    let runtime = Runtime::new().store(MemoryStore::new()).with(
        agentry::builtins::ToolPolicy::allow_by_default()
            .require_approval("ops")
            .build()
            .unwrap(),
    );
    let out = runtime.run(&parent(), "Go.").await.unwrap();
    let StopReason::AwaitingApproval { pending } = &out.stop else {
        panic!("{:?}", out.stop)
    };
    assert_eq!(pending[0].tool, "ops");
    let done = runtime
        .decide(&parent(), &out.run_id, [Decision::approve("p1")])
        .await
        .unwrap();
    assert_eq!(done.output.as_deref(), Some("heard: restarted"));
}

#[tokio::test]
async fn a_call_inside_a_sub_agent_that_needs_approval_stops_the_sub_agent_with_advice() {
    let runtime = Runtime::new().store(MemoryStore::new()).with(
        agentry::builtins::ToolPolicy::allow_by_default()
            .require_approval("shell")
            .build()
            .unwrap(),
    );
    let out = runtime.run(&parent(), "Go.").await.unwrap();
    assert_eq!(out.stop, StopReason::FinalAnswer);
    let heard = out.output.unwrap();
    assert!(
        heard.contains("sub-agent `ops` stopped, awaiting approval of `shell` (s1): calls inside")
            && heard.contains("require approval for the `ops` call itself"),
        "{heard}"
    );
}

#[tokio::test]
async fn a_paused_run_cancelled_is_stored_cancelled_and_asks_again_when_resumed() {
    let store = MemoryStore::new();
    let runtime = Runtime::new().store(store.clone());
    let out = runtime.run(&agent(), "Restart the API.").await.unwrap();
    assert!(matches!(out.stop, StopReason::AwaitingApproval { .. }));
    runtime.cancel_paused(&out.run_id).await.unwrap();
    let stored = store.load(&out.run_id).await.unwrap().unwrap();
    assert_eq!(stored.snapshot.status(), RunStatus::Cancelled);
    // Cancelling it again says where it stands.
    let again = runtime.cancel_paused(&out.run_id).await.unwrap_err();
    assert!(again.to_string().contains("it is cancelled"), "{again}");
    // Resumed, the call that was never approved is asked about again, not run.
    let resumed = runtime.resume(&agent(), &out.run_id).await.unwrap();
    let StopReason::AwaitingApproval { pending } = &resumed.stop else {
        panic!("{:?}", resumed.stop)
    };
    assert_eq!(pending[0].call_id, "s1");
    let done = runtime
        .decide(&agent(), &out.run_id, [Decision::approve("s1")])
        .await
        .unwrap();
    assert_eq!(done.output.as_deref(), Some("restarted"));
    let tool_results = done
        .messages
        .iter()
        .filter(|m| matches!(m, Message::Tool(_)))
        .count();
    assert_eq!(tool_results, 1, "the call ran once");
}
