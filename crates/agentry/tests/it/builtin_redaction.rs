//! Redaction in real runs: a secret in the input, a tool's arguments, a tool's result, the
//! model's answer and an error never appears in the streamed events, the recorder or the exported
//! spans, while the run itself works with the real values (unless asked to mask those too).

use agentry::Redact;
use agentry::builtins::{Recorder, Redactor, Telemetry};
use agentry::prelude::*;
use agentry::{ModelErrorKind, Tool, hooks::AfterModel};
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider};
use std::sync::{Arc, Mutex};
use tracing_subscriber::layer::SubscriberExt;

/// An OpenAI-shaped key (a default pattern) and a value only the redactor's `secret` knows.
const API_KEY: &str = "sk-proj-9fQ2xLr8TzKw4VbN7mJc1HsD";
const DB_PASSWORD: &str = "correct-horse-battery";

#[derive(Deserialize, JsonSchema)]
struct Connect {
    dsn: String,
}

/// A tool that records what it received and answers with a secret of its own.
fn connect(seen: Arc<Mutex<Vec<String>>>) -> impl Tool {
    tool("connect", "Connects.", move |a: Connect, _ctx: ToolCtx| {
        let seen = seen.clone();
        async move {
            seen.lock().unwrap().push(a.dsn.clone());
            Ok(format!("connected; session token {API_KEY}"))
        }
    })
}

fn model() -> ScriptedModel {
    ScriptedModel::new()
        .tool_call(
            "connect",
            json!({"dsn": format!("postgres://app:{DB_PASSWORD}@db/prod")}),
        )
        .text(format!("Done. Your key {API_KEY} works."))
        .record_requests(true)
}

fn redactor() -> Redactor {
    Redactor::new().secret(DB_PASSWORD)
}

fn contains_secret(text: &str) -> bool {
    text.contains(API_KEY) || text.contains(DB_PASSWORD)
}

#[tokio::test]
async fn a_secret_never_appears_in_events_records_or_spans_but_the_run_uses_the_real_values() {
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    let subscriber = tracing_subscriber::registry()
        .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("redaction-test")));
    let _guard = tracing::subscriber::set_default(subscriber);

    let seen = Arc::new(Mutex::new(Vec::new()));
    let recorder = Recorder::new();
    let agent = Agent::builder("ops")
        .model(model())
        .tool(connect(seen.clone()))
        .build()
        .unwrap();
    let runtime = Runtime::new()
        .redact(redactor())
        .with(Telemetry::new())
        .with(recorder.clone());
    let mut handle = runtime
        .run(&agent, format!("Connect with password {DB_PASSWORD}"))
        .start();
    let mut events = Vec::new();
    while let Some(ev) = handle.events().next().await {
        events.push(ev);
    }
    let out = handle.result().await.unwrap();

    // The events: every one of them, in full, is free of both secrets, and masked where they were.
    assert!(events.len() > 5);
    for ev in &events {
        let text = format!("{ev:?}");
        assert!(!contains_secret(&text), "a secret leaked into {text}");
    }
    let debug = format!("{events:?}");
    assert!(
        debug.contains("postgres://app:[REDACTED]@db/prod"),
        "{debug}"
    );
    assert!(debug.contains("session token [REDACTED]"), "{debug}");
    assert!(debug.contains("Your key [REDACTED] works"), "{debug}");

    // The recorder.
    for r in recorder.events() {
        assert!(!contains_secret(&r.detail.to_string()), "{r:?}");
    }
    assert_eq!(
        recorder.tool_calls()[0].1,
        json!({"dsn": "postgres://app:[REDACTED]@db/prod"})
    );

    // The exported spans.
    provider.force_flush().unwrap();
    let spans = exporter.get_finished_spans().unwrap();
    assert!(!spans.is_empty());
    for span in &spans {
        assert!(!contains_secret(&format!("{span:?}")), "{span:?}");
    }

    // The run itself: the tool got the real password, the history keeps the real values.
    assert_eq!(
        seen.lock().unwrap().as_slice(),
        [format!("postgres://app:{DB_PASSWORD}@db/prod")]
    );
    assert!(out.output.unwrap().contains(API_KEY));
    assert!(
        out.messages
            .iter()
            .any(|m| m.text().contains(&format!("session token {API_KEY}")))
    );
}

#[tokio::test]
async fn asked_to_the_redactor_masks_what_tools_receive_and_what_the_model_sees_of_results() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let model = model();
    let redactor = redactor().mask_tool_inputs(true).mask_tool_results(true);
    let agent = Agent::builder("ops")
        .model(model.clone())
        .tool(connect(seen.clone()))
        .with(redactor.clone())
        .build()
        .unwrap();
    Runtime::new()
        .redact(redactor)
        .run(&agent, "Connect.")
        .await
        .unwrap();
    assert_eq!(
        seen.lock().unwrap().as_slice(),
        ["postgres://app:[REDACTED]@db/prod"]
    );
    let second = &model.requests()[1];
    let result = second.messages.last().unwrap().text().to_string();
    assert_eq!(result, "connected; session token [REDACTED]");
}

#[tokio::test]
async fn a_failed_runs_error_is_masked_in_its_event() {
    let agent = Agent::builder("ops")
        .model(
            ScriptedModel::new().error(ModelErrorKind::Auth, format!("key {API_KEY} was rejected")),
        )
        .build()
        .unwrap();
    let mut handle = Runtime::new().redact(redactor()).run(&agent, "hi").start();
    let mut failed = None;
    while let Some(ev) = handle.events().next().await {
        if let RunEvent::RunFailed { error, .. } = ev {
            failed = Some(error);
        }
    }
    let error = failed.expect("a RunFailed event");
    assert!(error.contains("key [REDACTED] was rejected"), "{error}");
    // The error returned to the caller is the real one: it is the caller's own.
    assert!(
        handle
            .result()
            .await
            .unwrap_err()
            .to_string()
            .contains(API_KEY)
    );
}

#[test]
fn the_default_patterns_catch_common_key_shapes() {
    let r = Redactor::new();
    let cases = [
        (
            "OPENAI_API_KEY=sk-abcdefghijklmnopqrstuvwxyz012345",
            "OPENAI_API_KEY=[REDACTED]",
        ),
        (
            "anthropic sk-ant-api03-AbCdEfGhIjKlMnOpQrStUv",
            "anthropic [REDACTED]",
        ),
        ("aws AKIAIOSFODNN7EXAMPLE here", "aws [REDACTED] here"),
        (
            "gh ghp_0123456789abcdefghijABCDEFGHIJ012345",
            "gh [REDACTED]",
        ),
        ("slack xoxb-1234567890-abcdefghij", "slack [REDACTED]"),
        (
            "google AIzaSyA1234567890abcdefghijklmnopqrstuv",
            "google [REDACTED]",
        ),
        ("stripe sk_live_0123456789abcdefABCD", "stripe [REDACTED]"),
        (
            "jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
            "jwt [REDACTED]",
        ),
        (
            "Authorization: Bearer abcdef0123456789ABCDEF",
            "Authorization: Bearer [REDACTED]",
        ),
        ("password = \"s3cr3t-value\"", "password = \"[REDACTED]\""),
        (
            "{\"api_key\": \"abc123def456\"}",
            "{\"api_key\": \"[REDACTED]\"}",
        ),
        (
            "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----",
            "[REDACTED]",
        ),
    ];
    for (input, expected) in cases {
        assert_eq!(r.redact(input), expected, "for {input}");
    }
    // Ordinary text is left alone, and not copied.
    for plain in [
        "the sky is blue",
        "skip-this-step",
        "token budget: 500",
        "AKIA",
    ] {
        assert!(
            matches!(r.redact(plain), std::borrow::Cow::Borrowed(_)),
            "{plain}"
        );
    }
}

#[test]
fn patterns_of_your_own_with_a_kept_group_and_a_custom_mask() {
    let r = Redactor::without_defaults()
        .pattern(r"(?P<keep>acct-)\d{6,}")
        .unwrap()
        .mask("***");
    assert_eq!(
        r.redact("acct-12345678 and sk-proj-notmaskedwithoutdefaults"),
        "acct-*** and sk-proj-notmaskedwithoutdefaults"
    );
    let err = Redactor::new().pattern("(unclosed").unwrap_err();
    assert!(err.to_string().contains("`(unclosed`"), "{err}");
    // Short values would mask ordinary words: they are ignored.
    assert_eq!(
        Redactor::without_defaults().secret("abc").redact("abc"),
        "abc"
    );
    assert!(!format!("{:?}", Redactor::new().secret(DB_PASSWORD)).contains(DB_PASSWORD));
}

/// A log sink for one test.
#[derive(Clone, Default)]
struct Logs(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Logs {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn the_runtimes_own_logs_are_masked() {
    let logs = Logs::default();
    let sink = logs.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || sink.clone())
        .with_ansi(false)
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);

    let agent = Agent::builder("ops")
        .model(ScriptedModel::new().text("ok"))
        .with(
            on::after_model(|_ev: AfterModel, _ctx| async move {
                Err(format!("audit sink refused key {API_KEY}").into())
            })
            .named("audit")
            .advisory(),
        )
        .build()
        .unwrap();
    Runtime::new()
        .redact(redactor())
        .run(&agent, "hi")
        .await
        .unwrap();
    let text = String::from_utf8(logs.0.lock().unwrap().clone()).unwrap();
    assert!(text.contains("advisory hook failed"), "{text}");
    assert!(text.contains("audit sink refused key [REDACTED]"), "{text}");
    assert!(!contains_secret(&text), "{text}");
}
