//! A worker runtime's redactor masks what a run on Temporal reports, as in-process: the `Message`
//! event of a tool result the workflow adds, and streamed text, carry the secret masked; the
//! history the model works with keeps it. The events the workflow records itself (a pause for a
//! person with the calls' inputs, a failure with its error) are masked too, and a failure's
//! error is not kept in the server's database.

use crate::support::DevServer;
use agentry::builtins::Redactor;
use agentry::prelude::*;
use agentry::{Decision, Message, RunOutput, ScriptedTurn, StopReason};
use agentry_temporal::{TemporalError, Worker};
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

const INPUT_SECRET: &str = "ACCT-11112222";
const HOOK_SECRET: &str = "ACCT-33334444";

#[derive(Deserialize, JsonSchema)]
struct Transfer {
    to: String,
}

/// Asks to pay an account, a call that waits for a person.
fn payer() -> Agent {
    let model = ScriptedModel::from_fn(|_, req| {
        if req.messages.iter().any(|m| matches!(m, Message::Tool(_))) {
            ScriptedTurn::text("Paid.")
        } else {
            ScriptedTurn::new().with_tool_call_id("p1", "transfer", json!({"to": INPUT_SECRET}))
        }
    });
    let transfer = tool(
        "transfer",
        "Pays an account.",
        |a: Transfer, _ctx: ToolCtx| async move { Ok(format!("sent to {}", a.to.len())) },
    )
    .needs_approval();
    Agent::builder("payer")
        .model(model)
        .tool(transfer)
        .build()
        .unwrap()
}

/// The runtime of [`runtime`] with a hook that fails the keeper's tool calls, naming the secret.
fn refusing() -> Runtime {
    runtime().with(on::before_tool(|ev, ctx| {
        std::future::ready(match ctx.agent_path() {
            "keeper" => Err(format!("the account {HOOK_SECRET} is frozen").into()),
            _ => Ok(ev),
        })
    }))
}

fn joined(events: &[RunEvent]) -> String {
    events
        .iter()
        .map(|e| serde_json::to_string(e).unwrap())
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every file under `dir`, read whole, as text (lossy).
fn files_under(dir: &std::path::Path) -> String {
    let mut all = String::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_file() {
            all.push_str(&String::from_utf8_lossy(&std::fs::read(&path).unwrap()));
        }
    }
    all
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pause_and_a_failure_on_temporal_report_masked_as_in_process() {
    let Some(dev) = DevServer::start("redaction-ends").await else {
        return;
    };
    // In-process: the pause's events show the call's input masked; the caller has it whole.
    let mut local = runtime().run(&payer(), "Pay.").start();
    let local_paused: Vec<RunEvent> = local.events().collect().await;
    let out = local.result().await.unwrap();
    assert!(
        matches!(&out.stop, StopReason::AwaitingApproval { pending } if pending[0].input["to"] == INPUT_SECRET)
    );
    let local_failed: Vec<RunEvent> = refusing()
        .run(&agent(), "Look ada up.")
        .start()
        .events()
        .collect()
        .await;

    let worker = Worker::new(dev.server("redaction-ends"), refusing())
        .agent(&payer())
        .agent(&agent())
        .spawn()
        .unwrap();
    let client = dev.client("redaction-ends").await;
    let handle = client.run("payer", "Pay.").start().await.unwrap();
    let mut pending = Vec::new();
    for _ in 0..300 {
        pending = handle.pending().await.unwrap();
        if !pending.is_empty() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    // The person deciding sees the call as the model made it.
    assert_eq!(pending[0].input, json!({"to": INPUT_SECRET}));
    handle
        .decide([Decision::Reject {
            call_id: "p1".into(),
            reason: format!("not to {INPUT_SECRET}"),
        }])
        .await
        .unwrap();
    let _: RunOutput<(), String> = handle.result().await.unwrap();
    let paused: Vec<RunEvent> = handle.events().map(|e| e.unwrap()).collect().await;

    let failing = client.run("keeper", "Look ada up.").start().await.unwrap();
    let failure = failing.result::<(), String>().await.unwrap_err();
    let failed: Vec<RunEvent> = failing.events().map(|e| e.unwrap()).collect().await;
    worker.stop().unwrap();

    for (runtime, events, secret) in [
        ("in-process", &local_paused, INPUT_SECRET),
        ("Temporal", &paused, INPUT_SECRET),
        ("in-process", &local_failed, HOOK_SECRET),
        ("Temporal", &failed, HOOK_SECRET),
    ] {
        let all = joined(events);
        assert!(
            !all.contains(secret),
            "{runtime}: {secret} in the events: {all}"
        );
    }
    let kinds = |events: &[RunEvent]| events.iter().map(RunEvent::kind).collect::<Vec<_>>();
    for kind in ["awaiting_approval", "run_finished", "approval_resolved"] {
        assert!(
            kinds(&paused).contains(&kind),
            "{kind}: {:?}",
            kinds(&paused)
        );
    }
    assert!(
        kinds(&failed).contains(&"run_failed"),
        "{:?}",
        kinds(&failed)
    );
    assert!(joined(&failed).contains("is frozen"), "{}", joined(&failed));
    // The failure's error, as the caller gets it and the server keeps it, is masked.
    assert!(
        matches!(&failure, TemporalError::RunFailed { error, .. }
            if error.contains("is frozen") && !error.contains(HOOK_SECRET)),
        "{failure}"
    );
    let database = files_under(dev.dir());
    assert!(
        database.contains("is frozen"),
        "the server's files hold the failure"
    );
    assert!(
        !database.contains(HOOK_SECRET),
        "the server's files hold the secret"
    );
}
