//! What a model or a tool sends is bounded before the run keeps it: a tool call's arguments
//! (over the limit: not parsed or run, the model told), a tool result's text (cut, the model
//! told), the tool calls of one turn (those past the limit answered with an error). Each message
//! names the limit and its setting, and the run goes on.

use agentry::prelude::*;
use agentry::{Message, ModelRequest, ScriptedTurn, Tool};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

#[derive(Deserialize, JsonSchema)]
struct Echo {
    text: String,
}

/// An `echo` tool that counts its calls and returns its text `times` times.
fn echo(calls: &Arc<AtomicUsize>, times: usize) -> impl Tool + use<> {
    let calls = Arc::clone(calls);
    tool("echo", "Echoes text.", move |a: Echo, _c: ToolCtx| {
        calls.fetch_add(1, Ordering::SeqCst);
        async move { Ok(a.text.repeat(times)) }
    })
}

/// An agent of `model` with an `echo` tool that returns its text once.
fn echo_agent(model: &ScriptedModel, calls: &Arc<AtomicUsize>) -> Agent {
    Agent::builder("a")
        .model(model.clone())
        .tool(echo(calls, 1))
        .build()
        .unwrap()
}

/// The tool results the model saw in its last request, in call order.
fn results(req: &ModelRequest) -> Vec<(String, bool)> {
    req.messages
        .iter()
        .filter_map(Message::tool_result)
        .map(|r| (r.content.text().into_owned(), r.is_error))
        .collect()
}

#[tokio::test]
async fn arguments_over_the_limit_are_not_parsed_or_run_and_the_model_is_told() {
    let calls = Arc::new(AtomicUsize::new(0));
    let model = ScriptedModel::new()
        .record_requests(true)
        .tool_calls([
            ("echo", json!({"text": "x".repeat(2_000)})),
            ("echo", json!({"text": "small"})),
        ])
        .text("done");
    let agent = echo_agent(&model, &calls);
    let out = Runtime::new()
        .max_tool_input_bytes(1_000)
        .run(&agent, "go")
        .await
        .unwrap();
    assert_eq!(out.text, "done");
    assert_eq!(calls.load(Ordering::SeqCst), 1, "only the small call ran");
    let seen = results(&model.requests()[1]);
    let (refused, is_error) = &seen[0];
    assert!(*is_error);
    for words in [
        "2011 bytes",
        "limit of 1000",
        "max_tool_input_bytes",
        "not called",
    ] {
        assert!(refused.contains(words), "{words:?} in {refused}");
    }
    assert_eq!(seen[1], ("small".to_owned(), false));
}

#[tokio::test]
async fn a_result_over_the_limit_is_cut_before_hooks_and_history_see_it() {
    let calls = Arc::new(AtomicUsize::new(0));
    let model = ScriptedModel::new()
        .record_requests(true)
        .tool_call("echo", json!({"text": "é"}))
        .text("done");
    let seen_by_hook = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&seen_by_hook);
    let agent = Agent::builder("a")
        .model(model.clone())
        .tool(echo(&calls, 5_000))
        .after_tool(move |ev, _ctx| {
            seen.store(ev.content.text_len(), Ordering::SeqCst);
            async move { Ok(ev) }
        })
        .build()
        .unwrap();
    let out = Runtime::new()
        .max_tool_result_bytes(1_001)
        .run(&agent, "go")
        .await
        .unwrap();
    let kept = out
        .messages
        .iter()
        .find_map(Message::tool_result)
        .unwrap()
        .content
        .clone();
    let text = kept.text();
    // Cut at a character boundary: 500 two-byte characters, then the note.
    assert!(text.starts_with(&"é".repeat(500)), "{text}");
    assert!(!text.starts_with(&"é".repeat(501)));
    for words in ["10000 bytes", "cut at 1001", "max_tool_result_bytes"] {
        assert!(text.contains(words), "{words:?} in the note");
    }
    assert!(
        seen_by_hook.load(Ordering::SeqCst) < 1_200,
        "the hook saw the cut result"
    );
    assert_eq!(results(&model.requests()[1])[0].0, text);
}

#[tokio::test]
async fn calls_past_the_per_turn_limit_are_answered_with_an_error_and_not_run() {
    let calls = Arc::new(AtomicUsize::new(0));
    let model = ScriptedModel::from_fn(|_, req| match results(req).len() {
        0 => (0..5).fold(ScriptedTurn::new(), |turn, i| {
            turn.with_tool_call("echo", json!({"text": format!("call {i}")}))
        }),
        _ => ScriptedTurn::text("done"),
    })
    .record_requests(true);
    let agent = echo_agent(&model, &calls);
    let out = Runtime::new()
        .max_tool_calls_per_turn(3)
        .run(&agent, "go")
        .await
        .unwrap();
    assert_eq!(out.text, "done");
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    let seen = results(&model.requests()[1]);
    assert_eq!(seen.len(), 5, "every call has a result");
    for (i, (text, is_error)) in seen.iter().enumerate() {
        if i < 3 {
            assert_eq!(
                (text.as_str(), *is_error),
                (format!("call {i}").as_str(), false)
            );
        } else {
            assert!(*is_error);
            for words in ["5 tool calls", "at most 3", "max_tool_calls_per_turn"] {
                assert!(text.contains(words), "{words:?} in {text}");
            }
        }
    }
}
