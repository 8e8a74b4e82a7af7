//! Tool-call ids from a provider that omits them, over real HTTP: every call of a run gets an id
//! of its own, so the idempotency keys tools see differ, and a resumed run issues its calls with
//! the ids it checkpointed.

use crate::transcript_server::{Reply, TranscriptServer};
use agentry::prelude::*;
use agentry::{MemoryStore, RunStore};
use agentry::{OpenAi, RunOptions};
use serde_json::Value;
use std::sync::{Arc, Mutex};
use std::time::Duration;

fn data(value: &Value) -> String {
    format!("data: {value}\n\n")
}

fn chunk(delta: Value, finish_reason: Option<&str>) -> Value {
    json!({
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1_700_000_000,
        "model": "gpt-test",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
    })
}

/// A turn that calls `note` once per text, with no call ids (as some local servers stream them).
fn calls_without_ids(texts: &[&str]) -> Reply {
    let mut chunks = vec![data(&chunk(json!({"role": "assistant"}), None))];
    for (index, text) in texts.iter().enumerate() {
        let arguments = json!({"text": text}).to_string();
        chunks.push(data(&chunk(
            json!({"tool_calls": [{"index": index, "type": "function",
                   "function": {"name": "note", "arguments": arguments}}]}),
            None,
        )));
    }
    chunks.push(data(&chunk(json!({}), Some("tool_calls"))));
    chunks.push("data: [DONE]\n\n".to_owned());
    Reply::sse(chunks)
}

fn answer(text: &str) -> Reply {
    Reply::sse([
        data(&chunk(json!({"role": "assistant", "content": text}), None)),
        data(&chunk(json!({}), Some("stop"))),
        "data: [DONE]\n\n".to_owned(),
    ])
}

#[derive(Deserialize, JsonSchema)]
struct Note {
    text: String,
}

type Keys = Arc<Mutex<Vec<(String, String)>>>;

/// An agent on `server` whose `note` tool records (text, idempotency key); the call of `stop_at`
/// cancels the run.
fn agent(server: &TranscriptServer, keys: Keys, stop_at: Option<&'static str>) -> Agent {
    let model = OpenAi::builder("gpt-test")
        .base_url(server.openai_base())
        .read_timeout(Duration::from_secs(10))
        .build()
        .unwrap();
    let note = tool("note", "Notes a text.", move |a: Note, ctx: ToolCtx| {
        let keys = keys.clone();
        async move {
            keys.lock()
                .unwrap()
                .push((a.text.clone(), ctx.idempotency_key()));
            if Some(a.text.as_str()) == stop_at {
                ctx.run().cancellation().cancel();
            }
            Ok("noted")
        }
    });
    Agent::builder("noter")
        .model(model)
        .tool(note)
        .parallel_tool_calls(false)
        .build()
        .unwrap()
}

#[tokio::test]
async fn calls_without_ids_get_keys_of_their_own_that_a_resume_keeps() {
    // Turn 1: two calls; turn 2: one call (its index 0 again); then the answer.
    let server = TranscriptServer::start(vec![
        calls_without_ids(&["a", "b"]),
        calls_without_ids(&["c"]),
        answer("done"),
    ])
    .await;
    let keys: Keys = Arc::default();
    let store = MemoryStore::new();
    let runtime = Runtime::new().store(store.clone());
    // The run is cancelled in turn 2's call, after it ran: it is re-issued on resume.
    let out = runtime
        .run(&agent(&server, keys.clone(), Some("c")), "Take notes.")
        .with(RunOptions::new().run_id("r1"))
        .await
        .unwrap();
    assert_eq!(out.stop, StopReason::Cancelled);
    let pending = store.load("r1").await.unwrap().unwrap().snapshot;
    assert_eq!(pending.pending_tool_calls.len(), 1, "{pending:?}");

    let out = runtime
        .resume(&agent(&server, keys.clone(), None), "r1")
        .await
        .unwrap();
    assert_eq!(out.output.as_deref(), Some("done"));

    let keys = keys.lock().unwrap().clone();
    let texts: Vec<&str> = keys.iter().map(|(t, _)| t.as_str()).collect();
    assert_eq!(texts, ["a", "b", "c", "c"]);
    // Three calls, three keys; the re-issued call has the key it had.
    assert_ne!(keys[0].1, keys[1].1);
    assert_ne!(keys[0].1, keys[2].1);
    assert_ne!(keys[1].1, keys[2].1);
    assert_eq!(keys[2].1, keys[3].1);
    for (_, key) in &keys {
        assert!(key.starts_with("r1:"), "{key}");
    }
}
