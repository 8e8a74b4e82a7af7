//! A worker runtime's redactor masks what a run on Temporal reports, as in-process: the `Message`
//! event of a tool result the workflow adds, and streamed text, carry the secret masked; the
//! history the model works with keeps it.

use crate::support::DevServer;
use agentry::builtins::Redactor;
use agentry::prelude::*;
use agentry::{Message, RunOutput, ScriptedTurn};
use agentry_temporal::Worker;
use futures::StreamExt;

const TOOL_SECRET: &str = "ACCT-12345678";
const TEXT_SECRET: &str = "ACCT-87654321";

#[derive(Deserialize, JsonSchema)]
struct Lookup {
    name: String,
}

fn agent() -> Agent {
    let model = ScriptedModel::from_fn(|_, req| {
        if req.messages.iter().any(|m| matches!(m, Message::Tool(_))) {
            // Streamed in pieces that split the secret.
            ScriptedTurn::new().with_text_deltas(["The other account is ACCT-8765", "4321."])
        } else {
            ScriptedTurn::new().with_tool_call_id("c1", "lookup", json!({"name": "ada"}))
        }
    });
    let lookup = tool(
        "lookup",
        "Looks an account up.",
        |a: Lookup, _ctx: ToolCtx| async move { Ok(format!("{} has account {TOOL_SECRET}", a.name)) },
    );
    Agent::builder("keeper")
        .model(model)
        .tool(lookup)
        .build()
        .unwrap()
}

fn runtime() -> Runtime {
    Runtime::new().redact(Redactor::without_defaults().pattern(r"ACCT-\d{8}").unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_a_run_on_temporal_reports_is_masked_as_in_process() {
    let Some(dev) = DevServer::start("redaction").await else {
        return;
    };
    let agent = agent();
    let mut local = runtime().run(&agent, "Look ada up.").start();
    let local_events: Vec<String> = local
        .events()
        .map(|e| serde_json::to_string(&e).unwrap())
        .collect()
        .await;
    let local_out = local.result().await.unwrap();

    let worker = Worker::new(dev.server("redaction"), runtime())
        .agent(&agent)
        .spawn()
        .unwrap();
    let client = dev.client("redaction").await;
    let handle = client.run("keeper", "Look ada up.").start().await.unwrap();
    let events: Vec<String> = handle
        .events()
        .map(|e| serde_json::to_string(&e.unwrap()).unwrap())
        .collect()
        .await;
    let out: RunOutput<(), String> = handle.result().await.unwrap();
    worker.stop().unwrap();

    for (runtime, events) in [("in-process", &local_events), ("Temporal", &events)] {
        let all = events.join("\n");
        assert!(
            all.contains("has account"),
            "{runtime}: the result's event: {all}"
        );
        assert!(
            all.contains("The other account is"),
            "{runtime}: the text: {all}"
        );
        for secret in [TOOL_SECRET, TEXT_SECRET] {
            assert!(
                !all.contains(secret),
                "{runtime}: {secret} in the events: {all}"
            );
        }
    }
    // The history keeps the real values, on both.
    assert_eq!(out.messages.to_vec(), local_out.messages.to_vec());
    let history = serde_json::to_string(&out.messages.to_vec()).unwrap();
    assert!(history.contains(TOOL_SECRET) && history.contains(TEXT_SECRET));
}
