//! `Runtime::start_decide` and `Runtime::start_resume` stream a continued run's events like
//! `start` does; `RunEvent::HookDecision` says which hook decided what about a tool call.

use agentry::prelude::*;
use agentry::{Message, RunHandle, ScriptedTurn, hooks::on_sync};
use std::time::Duration;

#[derive(Deserialize, JsonSchema)]
struct Note {
    text: String,
}

fn agent(model: ScriptedModel, approval: bool) -> Agent {
    let mut save = tool(
        "save",
        "Saves a note.",
        |n: Note, _ctx: ToolCtx| async move { Ok(format!("saved {}", n.text)) },
    );
    if approval {
        save = save.needs_approval();
    }
    Agent::builder("notes")
        .model(model)
        .tool(save)
        .build()
        .unwrap()
}

async fn drain(handle: &mut RunHandle<(), String>) -> Vec<RunEvent> {
    let mut events = Vec::new();
    while let Some(e) = handle.events().next().await {
        events.push(e);
    }
    events
}

#[tokio::test]
async fn start_decide_streams_the_continued_run() {
    let model = ScriptedModel::new()
        .tool_call("save", json!({"text": "hi"}))
        .text("Saved.");
    let agent = agent(model, true);
    let runtime = Runtime::new().store(MemoryStore::new());
    let out = runtime.run(&agent, "save hi").await.unwrap();
    let StopReason::AwaitingApproval { pending } = &out.stop else {
        panic!("expected a pause: {}", out.stop);
    };
    let mut handle = runtime
        .decide(
            &agent,
            &out.run_id,
            [Decision::approve(&pending[0].call_id)],
        )
        .start();
    assert_eq!(handle.run_id(), out.run_id);
    let events = drain(&mut handle).await;
    let done = handle.result().await.unwrap();
    assert_eq!(done.output.as_deref(), Some("Saved."));
    assert!(
        events
            .iter()
            .any(|e| matches!(e, RunEvent::ApprovalResolved { by, .. } if by == "person"))
    );
    assert!(events.iter().any(
        |e| matches!(e, RunEvent::ToolFinished { result, .. } if result.content == "saved hi")
    ));
    assert!(matches!(events.last(), Some(RunEvent::RunFinished { .. })));
}

#[tokio::test]
async fn start_decide_with_a_wrong_decision_ends_the_stream_with_the_error() {
    let agent = agent(ScriptedModel::new().text("nothing to do"), true);
    let runtime = Runtime::new().store(MemoryStore::new());
    let out = runtime.run(&agent, "hi").await.unwrap();
    let mut handle = runtime
        .decide(&agent, &out.run_id, [Decision::approve("nope")])
        .start();
    assert!(drain(&mut handle).await.is_empty());
    let err = handle.result().await.unwrap_err().to_string();
    assert!(err.contains("not waiting for approval"), "{err}");
}

#[tokio::test]
async fn start_resume_streams_a_cancelled_run_to_its_end() {
    let slow = tool(
        "slow",
        "Takes a while.",
        |_: Note, _ctx: ToolCtx| async move {
            tokio::time::sleep(Duration::from_millis(300)).await;
            Ok("slow done".to_string())
        },
    );
    let model = ScriptedModel::from_fn(|_, req| {
        if req.messages.iter().any(|m| matches!(m, Message::Tool(_))) {
            ScriptedTurn::text("Finished.")
        } else {
            ScriptedTurn::tool_call("slow", json!({"text": "x"}))
        }
    });
    let agent: Agent = Agent::builder("slow")
        .model(model)
        .tool(slow)
        .build()
        .unwrap();
    let runtime = Runtime::new().store(MemoryStore::new());
    let mut first = runtime.run(&agent, "go").start();
    while let Some(e) = first.events().next().await {
        if matches!(e, RunEvent::ToolStarted { .. }) {
            first.cancel();
        }
    }
    let run_id = first.run_id().to_owned();
    assert_eq!(first.result().await.unwrap().stop, StopReason::Cancelled);

    let mut handle = runtime.resume(&agent, &run_id).start();
    let events = drain(&mut handle).await;
    let done = handle.result().await.unwrap();
    assert_eq!(done.output.as_deref(), Some("Finished."));
    assert!(events.iter().any(
        |e| matches!(e, RunEvent::ToolFinished { result, .. } if result.content == "slow done")
    ));
}

#[tokio::test]
async fn hook_decisions_name_the_hook_and_what_it_did() {
    let model = ScriptedModel::new()
        .tool_calls([
            ("save", json!({"text": "secret"})),
            ("save", json!({"text": "mock me"})),
            ("save", json!({"text": "lower"})),
            ("save", json!({"text": "plain"})),
        ])
        .text("done");
    let agent = Agent::builder("notes")
        .model(model)
        .tool(tool(
            "save",
            "Saves a note.",
            |n: Note, _ctx: ToolCtx| async move { Ok(format!("saved {}", n.text)) },
        ))
        .with(
            on_sync::before_tool(|ev, _| {
                match ev.input["text"].as_str() {
                    Some("secret") => ev.block("no secrets"),
                    Some("mock me") => ev.mock("mocked"),
                    Some("lower") => ev.input = json!({"text": "LOWER"}),
                    _ => {}
                }
                Ok(())
            })
            .named("gate"),
        )
        .with(on_sync::before_tool(|_, _| Ok(())).named("watch"))
        .with(
            on_sync::before_tool(|ev, _| {
                if ev.input["text"] == "LOWER" {
                    ev.input = json!({"text": "LOWER!"});
                }
                Ok(())
            })
            .named("trim")
            .priority(-1),
        )
        .build()
        .unwrap();
    let mut handle = Runtime::new().run(&agent, "save").start();
    let events = drain(&mut handle).await;
    handle.result().await.unwrap();
    let decisions: Vec<(String, String, String)> = events
        .iter()
        .filter_map(|e| match e {
            RunEvent::HookDecision {
                hook,
                decision,
                detail,
                event,
                ..
            } => {
                assert_eq!(*event, agentry::hooks::EventKind::BeforeTool);
                Some((hook.clone(), decision.clone(), detail.clone()))
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        decisions,
        [
            ("gate".into(), "blocked".into(), "no secrets".into()),
            ("gate".into(), "mocked".into(), "mocked".into()),
            // Every hook that changed the input, in the order they ran; `watch` changed nothing.
            (
                "gate, trim".into(),
                "rewrote the input".into(),
                r#"{"text":"LOWER!"}"#.into()
            ),
        ]
    );
}
