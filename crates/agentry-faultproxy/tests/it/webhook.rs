//! A webhook receiver behind the fault proxy: a signed PreToolUse webhook (agentry-external's
//! `Webhook`) guarding a `bash` tool, the receiver (Python, verifying each delivery with the
//! `standardwebhooks` package) denying the call when it gets it. What must happen comes from
//! docs/src/webhooks.md: a non-2xx status, a body that is not JSON, a connection error or a
//! timeout fails the webhook open by default (a `HookFailed` naming its URL and the event; the
//! run goes on, deciding nothing), and fails the run with `failClosed`; a deciding event is
//! delivered once; an event that decides nothing is retried.

use crate::support::receiver::{Receiver, SECRET};
use agentry::prelude::*;
use agentry::{ToolFailure, ToolResult};
use agentry_external::{CommandHooks, EventName, Webhook};
use agentry_faultproxy::{Fault, FaultProxy, Plan};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The environment variable the deliveries' secret is read from.
const SECRET_VAR: &str = "FAULTPROXY_WEBHOOK_SECRET";

/// The `bash` tool's input (presented to hooks as Claude Code's `Bash`, `command`).
#[derive(Deserialize, JsonSchema)]
struct Cmd {
    /// The command.
    cmd: String,
}

type Log = Arc<Mutex<Vec<String>>>;

/// A directory of its own for the hooks' transcripts, removed when dropped.
struct StateDir(PathBuf);

impl StateDir {
    fn new() -> StateDir {
        let dir = std::env::temp_dir().join(format!(
            "agentry-faultproxy-hooks-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        StateDir(dir)
    }
}

impl Drop for StateDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// How one run went.
struct Outcome {
    result: Result<RunOutput<(), String>, Error>,
    /// The commands the tool ran.
    ran: Vec<String>,
    /// `HookFailed` reports, as `hook | error`.
    failed: Vec<String>,
    /// The result of the `ls` call the model was sent, if the run got that far.
    sent: Option<ToolResult>,
    elapsed: Duration,
}

/// Runs `ls`, then "Done.", with `webhook` (pointed at the proxy) registered on the runtime.
async fn run(webhook: Webhook) -> Outcome {
    let state = StateDir::new();
    let hooks: CommandHooks = webhook
        .project_dir(&state.0)
        .into_hooks()
        .unwrap()
        .state_dir(state.0.join("state"));
    let (ran, failed): (Log, Log) = Default::default();
    let model = ScriptedModel::new()
        .tool_call("bash", json!({"cmd": "ls"}))
        .text("Done.");
    let log = ran.clone();
    let agent = Agent::builder("coder")
        .model(model.clone())
        .tool(tool(
            "bash",
            "Run a command",
            move |a: Cmd, _ctx: ToolCtx| {
                let log = log.clone();
                async move {
                    log.lock().unwrap().push(a.cmd.clone());
                    Ok::<_, ToolFailure>(format!("ran {}", a.cmd))
                }
            },
        ))
        .build()
        .unwrap();
    let reports = failed.clone();
    let runtime = Runtime::new()
        .with(hooks)
        .with(agentry::hooks::on_sync::hook_failed(move |ev, _ctx| {
            reports
                .lock()
                .unwrap()
                .push(format!("{} | {}", ev.hook(), ev.error()));
            Ok(())
        }));
    let started = Instant::now();
    let result = runtime.run(&agent, "go").await;
    let elapsed = started.elapsed();
    let sent = model.requests().get(1).and_then(|r| {
        r.messages
            .iter()
            .rev()
            .find_map(|m| m.tool_result().cloned())
    });
    let ran = ran.lock().unwrap().clone();
    let failed = failed.lock().unwrap().clone();
    Outcome {
        result,
        ran,
        failed,
        sent,
        elapsed,
    }
}

/// A PreToolUse webhook on `Bash` to `url`, signed, with a 1 s time limit.
fn guard(url: &str) -> Webhook {
    Webhook::new(EventName::PreToolUse, url)
        .matcher("Bash")
        .secret(format!("${{{SECRET_VAR}}}"))
        .timeout(Duration::from_secs(1))
}

#[tokio::test]
async fn a_webhook_behind_faults_fails_per_its_policy_naming_itself_and_its_event() {
    let Some(receiver) =
        Receiver::start("a_webhook_behind_faults_fails_per_its_policy_naming_itself_and_its_event")
            .await
    else {
        return;
    };
    // SAFETY: set before any hook of this test (the only test of its process) reads it.
    unsafe { std::env::set_var(SECRET_VAR, SECRET) };

    // Healthy: the receiver verifies the delivery and denies the call.
    let proxy = FaultProxy::start(receiver.addr(), Plan::pass())
        .await
        .unwrap();
    let o = run(guard(&format!("{}/deny", proxy.url()))).await;
    let out = o.result.as_ref().unwrap();
    assert_eq!(out.output.as_deref(), Some("Done."));
    assert!(o.ran.is_empty(), "the receiver's deny blocked the call");
    assert_eq!(
        o.sent.as_ref().unwrap().content.text(),
        "denied by the receiver"
    );
    assert!(o.failed.is_empty(), "{:?}", o.failed);
    let delivered = receiver.deliveries();
    assert_eq!(delivered.len(), 1);
    assert_eq!(delivered[0]["verified"], true, "signed through the proxy");

    // Faults fail the webhook open: the call goes on undecided, HookFailed names the webhook,
    // its event and what went wrong, and the deciding event is never delivered twice.
    for (fault, says) in [
        (
            Fault::status(500),
            "answered HTTP 500 Internal Server Error",
        ),
        (Fault::Garbage(64), "invalid HTTP version parsed"),
        (Fault::Stall, "timed out after 1s"),
        (Fault::Reset, "Connection reset by peer"),
    ] {
        let case = fault.to_string();
        let before = receiver.deliveries().len();
        let proxy = FaultProxy::start(receiver.addr(), Plan::first([fault.clone()]))
            .await
            .unwrap();
        let url = format!("{}/deny", proxy.url());
        let o = run(guard(&url)).await;
        let out = o
            .result
            .as_ref()
            .unwrap_or_else(|e| panic!("{case}: fails open: {e}"));
        assert_eq!(out.output.as_deref(), Some("Done."), "{case}");
        assert_eq!(o.ran, ["ls"], "{case}: the call went on");
        assert_eq!(
            o.sent.as_ref().unwrap().content.text(),
            "ran ls",
            "{case}: the model got the tool's result"
        );
        assert_eq!(o.failed.len(), 1, "{case}: {:?}", o.failed);
        let failure = &o.failed[0];
        println!("{case}: {failure}");
        assert!(
            failure.contains(&format!("webhook `{url}` on PreToolUse")) && failure.contains(says),
            "{case}: {failure}"
        );
        assert_eq!(proxy.faults(), std::slice::from_ref(&fault), "{case}");
        assert_eq!(
            proxy.connections(),
            1,
            "{case}: delivered once, never retried"
        );
        assert_eq!(
            receiver.deliveries().len(),
            before,
            "{case}: nothing reached the receiver"
        );
        if fault == Fault::Stall {
            assert!(
                o.elapsed >= Duration::from_secs(1) && o.elapsed < Duration::from_secs(4),
                "stall: {:?}",
                o.elapsed
            );
        }
    }

    // Fail-closed: the webhook's failure fails the run, naming it and its event; the tool
    // never ran.
    let proxy = FaultProxy::start(receiver.addr(), Plan::always(Fault::status(500)))
        .await
        .unwrap();
    let url = format!("{}/deny", proxy.url());
    let o = run(guard(&url).fail_closed()).await;
    let error = o
        .result
        .as_ref()
        .expect_err("a fail-closed webhook fails the run");
    let text = error.to_string();
    println!("fail closed: {text}");
    assert!(
        text.contains(&format!("webhook `{url}` on PreToolUse")) && text.contains("HTTP 500"),
        "{text}"
    );
    assert!(o.ran.is_empty(), "the tool did not run");

    // An event that decides nothing is retried: a reset and a 503, then delivered, once.
    let before = receiver.deliveries().len();
    let proxy = FaultProxy::start(
        receiver.addr(),
        Plan::first([Fault::Reset, Fault::status(503)]),
    )
    .await
    .unwrap();
    let o = run(Webhook::new(
        EventName::Agentry(agentry::hooks::EventKind::RunEnd),
        format!("{}/empty", proxy.url()),
    )
    .secret(format!("${{{SECRET_VAR}}}"))
    .timeout(Duration::from_secs(1))
    .retries(3))
    .await;
    assert_eq!(o.result.as_ref().unwrap().output.as_deref(), Some("Done."));
    assert!(o.failed.is_empty(), "delivered in the end: {:?}", o.failed);
    assert_eq!(proxy.faults(), [Fault::Reset, Fault::status(503)]);
    let delivered = &receiver.deliveries()[before..];
    assert_eq!(delivered.len(), 1, "{delivered:?}");
    assert_eq!(delivered[0]["verified"], true);
    let body: serde_json::Value =
        serde_json::from_str(delivered[0]["body"].as_str().unwrap()).unwrap();
    assert_eq!(body["hook_event_name"], "RunEnd");
}
