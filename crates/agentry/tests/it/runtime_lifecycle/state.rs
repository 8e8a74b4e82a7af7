//! Typed state: updates from tools and hooks, StateChange, the final state.

use super::*;
use agentry::StateError;
use agentry::StateSource;

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
struct Notes {
    items: Vec<String>,
    hook_edits: u32,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
struct Other(u32);

type Change = (StateSource, Value, Value);

/// `note` adds its text to the state; the AfterTool hook `h` counts its own edits; a StateChange
/// hook records every change.
fn notes_agent(model: &ScriptedModel, changes: &Shared<Change>) -> Agent<Notes> {
    let note = tool("note", "Notes text", |a: Text, ctx: ToolCtx| async move {
        ctx.update_state(|s: &mut Notes| s.items.push(a.text.clone()))?;
        Ok("noted")
    });
    let changes = changes.clone();
    Agent::builder("notes")
        .model(model.clone())
        .tool(note)
        .state(Notes::default())
        .with(
            on::after_tool(|ev, ctx| async move {
                ctx.update_state(|s: &mut Notes| s.hook_edits += 1)?;
                Ok(ev)
            })
            .named("h"),
        )
        .state_change(move |ev, _ctx| {
            changes.lock().unwrap().push((
                ev.source().clone(),
                ev.previous().clone(),
                ev.current().clone(),
            ));
            async move { Ok(ev) }
        })
        .build()
        .unwrap()
}

fn notes_model() -> ScriptedModel {
    ScriptedModel::new()
        .tool_call("note", json!({"text": "x"}))
        .text("done")
}

#[tokio::test]
async fn state_updates_from_a_tool_and_a_hook_carry_their_sources() {
    let changes: Shared<Change> = shared();
    let model = notes_model();
    let out = Runtime::new()
        .run(&notes_agent(&model, &changes), "go")
        .await
        .unwrap();
    assert_eq!(
        out.state,
        Notes {
            items: vec!["x".into()],
            hook_edits: 1
        }
    );
    assert_eq!(
        take(&changes),
        [
            (
                StateSource::Tool("note".into()),
                json!({"items": [], "hook_edits": 0}),
                json!({"items": ["x"], "hook_edits": 0}),
            ),
            (
                StateSource::Hook("h".into()),
                json!({"items": ["x"], "hook_edits": 0}),
                json!({"items": ["x"], "hook_edits": 1}),
            ),
        ]
    );
}

#[tokio::test]
async fn state_changes_stream_as_json_patches() {
    let changes: Shared<Change> = shared();
    let model = notes_model();
    let agent = notes_agent(&model, &changes);
    let mut handle = Runtime::new().run(&agent, "go").start();
    let events = rest_of_stream(&mut handle).await;
    let out = handle.result().await.unwrap();
    assert_eq!(out.state.items, ["x"]);
    assert_eq!(out.state.hook_edits, 1);

    let patches: Vec<(Value, StateSource)> = events
        .iter()
        .filter_map(|e| match e {
            RunEvent::StatePatch { patch, source, .. } => {
                Some((serde_json::to_value(patch).unwrap(), source.clone()))
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        patches,
        [
            // The state the run starts with, from nothing, before anything changes it.
            (
                json!([{"op": "replace", "path": "", "value": {"items": [], "hook_edits": 0}}]),
                StateSource::System
            ),
            (
                json!([{"op": "add", "path": "/items/0", "value": "x"}]),
                StateSource::Tool("note".into())
            ),
            (
                json!([{"op": "replace", "path": "/hook_edits", "value": 1}]),
                StateSource::Hook("h".into())
            ),
        ]
    );
    // Each patch sits between the tool's start and the end of its call.
    let pos = |f: &dyn Fn(&RunEvent) -> bool| events.iter().position(f).unwrap();
    let started = pos(&|e| matches!(e, RunEvent::ToolStarted { .. }));
    let patched = pos(
        &|e| matches!(e, RunEvent::StatePatch { source, .. } if *source != StateSource::System),
    );
    let finished = pos(&|e| matches!(e, RunEvent::ToolFinished { .. }));
    assert!(started < patched && patched < finished, "{events:#?}");
}

#[tokio::test]
async fn the_state_is_streamed_without_state_change_hooks() {
    // Only the event stream observes the state here.
    let note = tool("note", "Notes text", |a: Text, ctx: ToolCtx| async move {
        ctx.update_state(|s: &mut Notes| s.items.push(a.text.clone()))?;
        Ok("noted")
    });
    let agent = Agent::builder("notes")
        .model(notes_model())
        .tool(note)
        .state(Notes::default())
        .build()
        .unwrap();
    let mut handle = Runtime::new().run(&agent, "go").start();
    let events = rest_of_stream(&mut handle).await;
    handle.result().await.unwrap();
    let n = events
        .iter()
        .filter(|e| matches!(e, RunEvent::StatePatch { .. }))
        .count();
    assert_eq!(n, 2, "the state it started with, and the tool's change");
}

#[tokio::test]
async fn an_update_that_changes_nothing_is_not_reported() {
    let changes: Shared<Change> = shared();
    let changes2 = changes.clone();
    let same = tool(
        "same",
        "No-op update",
        |_: NoArgs, ctx: ToolCtx| async move {
            ctx.update_state(|s: &mut Notes| s.items.clear())?;
            Ok("ok")
        },
    );
    let agent = Agent::builder("notes")
        .model(
            ScriptedModel::new()
                .tool_call("same", json!({}))
                .text("done"),
        )
        .tool(same)
        .state(Notes::default())
        .state_change(move |ev, _ctx| {
            changes2.lock().unwrap().push((
                ev.source().clone(),
                ev.previous().clone(),
                ev.current().clone(),
            ));
            async move { Ok(ev) }
        })
        .build()
        .unwrap();
    Runtime::new().run(&agent, "go").await.unwrap();
    assert!(take(&changes).is_empty());
}

#[tokio::test]
async fn a_state_type_mismatch_is_an_error() {
    let errors: Shared<StateError> = shared();
    let errors2 = errors.clone();
    let wrong = tool(
        "wrong",
        "Wrong state type",
        move |_: NoArgs, ctx: ToolCtx| {
            let errors = errors2.clone();
            async move {
                let err = ctx.update_state(|s: &mut Other| s.0 += 1).unwrap_err();
                errors.lock().unwrap().push(err);
                let err = ctx.state::<Other>().unwrap_err();
                errors.lock().unwrap().push(err);
                // And through `?`: the model sees the error.
                ctx.update_state(|s: &mut Other| s.0 += 1)?;
                Ok("unreachable")
            }
        },
    );
    let model = ScriptedModel::new()
        .tool_call("wrong", json!({}))
        .text("done");
    let agent = Agent::builder("notes")
        .model(model.clone())
        .tool(wrong)
        .state(Notes::default())
        .build()
        .unwrap();
    let out = Runtime::new().run(&agent, "go").await.unwrap();
    let errors = take(&errors);
    assert_eq!(errors.len(), 2);
    for err in &errors {
        match err {
            StateError::TypeMismatch { asked, actual } => {
                assert!(asked.ends_with("Other"), "{asked}");
                assert!(actual.ends_with("Notes"), "{actual}");
            }
            other => panic!("expected TypeMismatch, got {other:?}"),
        }
        assert!(err.to_string().contains("state type mismatch"), "{err}");
    }
    let result = out.messages[2].tool_result().unwrap();
    assert!(result.is_error);
    assert!(
        result.content.text().contains("state type mismatch"),
        "{}",
        result.content
    );
    assert_eq!(out.state, Notes::default(), "the state is unchanged");
}
