//! Webhooks against a real HTTP receiver: a Python server (`tests/receiver/webhook_receiver.py`)
//! that verifies every delivery with the third-party `standardwebhooks` package, records it, and
//! answers as each test needs. The tests find a Python with that package through
//! `AGENTRY_TEST_PYTHON` (CI provides one); without it they print "skipped: ..." and return.

use crate::common::*;
use agentry::RunOptions;
use agentry::prelude::*;
use agentry_external::{CommandHooks, EventName, HookSettings, Webhook};
use base64::Engine;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The Python receiver, killed when dropped.
struct Receiver {
    child: Child,
    port: u16,
    log: PathBuf,
    /// The Standard Webhooks secret it verifies with (`whsec_...`).
    secret: String,
    _dir: tempfile::TempDir,
}

impl Receiver {
    /// Starts a receiver with a fresh secret; `None` (having said so) when no Python with
    /// `standardwebhooks` is configured.
    fn start(test: &str) -> Option<Receiver> {
        let Some(python) = std::env::var_os("AGENTRY_TEST_PYTHON").filter(|p| !p.is_empty()) else {
            // CI provides the receiver's Python (.ci/run): there, a skip would hide the tests.
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "{test}: CI=true but AGENTRY_TEST_PYTHON is not set"
            );
            println!(
                "skipped: {test}: AGENTRY_TEST_PYTHON is not set (a Python with the `standardwebhooks` package; .ci/run makes one)"
            );
            return None;
        };
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("deliveries.jsonl");
        let key: [u8; 24] = std::array::from_fn(|_| fastrand::u8(..));
        let secret = format!(
            "whsec_{}",
            base64::engine::general_purpose::STANDARD.encode(key)
        );
        let script = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/receiver/webhook_receiver.py"
        );
        let stderr = std::fs::File::create(dir.path().join("stderr")).unwrap();
        let mut child = Command::new(&python)
            .arg(script)
            .arg(&secret)
            .arg(&log)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .unwrap_or_else(|e| panic!("AGENTRY_TEST_PYTHON={python:?} does not start: {e}"));
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let Ok(port) = line.trim().parse() else {
            let _ = child.kill();
            let _ = child.wait();
            let err = std::fs::read_to_string(dir.path().join("stderr")).unwrap_or_default();
            panic!("the receiver did not start (is standardwebhooks installed?): {err}");
        };
        Some(Receiver {
            child,
            port,
            log,
            secret,
            _dir: dir,
        })
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// Every delivery so far, in arrival order.
    fn deliveries(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    /// The deliveries to `path`.
    fn to(&self, path: &str) -> Vec<Value> {
        self.deliveries()
            .into_iter()
            .filter(|d| d["path"] == path)
            .collect()
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts the receiver, or returns from the test when none can be.
macro_rules! receiver {
    ($test:expr) => {
        match Receiver::start($test) {
            Some(r) => r,
            None => return,
        }
    };
}

/// Sets an environment variable of this test process (each test uses its own names).
fn set_env(name: &str, value: &str) {
    // SAFETY: the names are unique to one test, and are set before its hooks read them.
    unsafe { std::env::set_var(name, value) }
}

/// A webhook handler for settings: signed with the secret in `secret_var`.
fn http(url: &str, secret_var: &str, extra: Value) -> Value {
    let mut h = json!({"type": "http", "url": url, "secret": format!("${{{secret_var}}}")});
    for (k, v) in extra.as_object().unwrap() {
        h[k] = v.clone();
    }
    h
}

fn settings(event: &str, matcher: &str, handlers: Vec<Value>) -> Value {
    json!({"hooks": {event: [{"matcher": matcher, "hooks": handlers}]}})
}

fn ls_then_done() -> ScriptedModel {
    ScriptedModel::new()
        .tool_call("bash", json!({"cmd": "ls"}))
        .text("Done.")
}

/// Runs `ls` under `hooks`; returns what ran and the HookFailed reports.
async fn run_ls(hooks: agentry_external::CommandHooks) -> (Vec<String>, Vec<String>) {
    let (model, log, failed) = (ls_then_done(), new_log(), new_log());
    let out = Runtime::new()
        .with(hooks)
        .with(failures(&failed))
        .run(&agent(&model, &log), "go")
        .await
        .unwrap();
    assert_eq!(out.text, "Done.");
    (entries(&log), entries(&failed))
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

#[tokio::test]
async fn a_webhook_denies_a_tool_call_with_a_signature_the_reference_library_verifies() {
    let r = receiver!("deny");
    set_env("WH_DENY_SECRET", &r.secret);
    let p = Project::new();
    let hooks = p.hooks(settings(
        "PreToolUse",
        "Bash",
        vec![http(&r.url("/deny"), "WH_DENY_SECRET", json!({}))],
    ));
    let (model, log) = (ls_then_done(), new_log());
    Runtime::new()
        .with(hooks)
        .run(&agent(&model, &log), "go")
        .await
        .unwrap();
    assert!(
        entries(&log).is_empty(),
        "the webhook's deny blocked the call"
    );
    assert_eq!(result_sent(&model, 1).content, "denied by the receiver");

    let d = r.to("/deny");
    assert_eq!(d.len(), 1, "{d:?}");
    let d = &d[0];
    assert_eq!(d["verified"], true, "standardwebhooks verified it: {d}");
    assert_eq!(d["headers"]["content-type"], "application/json");
    assert!(
        d["headers"]["webhook-id"]
            .as_str()
            .unwrap()
            .starts_with("msg_")
    );
    let ts: u64 = d["headers"]["webhook-timestamp"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(now().abs_diff(ts) < 60, "a current unix timestamp: {ts}");
    assert!(
        d["headers"]["webhook-signature"]
            .as_str()
            .unwrap()
            .starts_with("v1,")
    );
    // The body is the payload a command gets on stdin.
    let body: Value = serde_json::from_str(d["body"].as_str().unwrap()).unwrap();
    assert_eq!(body["hook_event_name"], "PreToolUse");
    assert_eq!(body["tool_name"], "Bash");
    assert_eq!(body["tool_input"]["command"], "ls");
    assert!(body["session_id"].is_string() && body["cwd"].is_string());
}

#[tokio::test]
async fn an_empty_200_is_success_without_a_decision_over_one_kept_alive_connection() {
    let r = receiver!("empty");
    set_env("WH_EMPTY_SECRET", &r.secret);
    let p = Project::new();
    let handler = || vec![http(&r.url("/empty"), "WH_EMPTY_SECRET", json!({}))];
    let hooks = p.hooks(json!({"hooks": {
        "PreToolUse": [{"matcher": "Bash", "hooks": handler()}],
        "PostToolUse": [{"matcher": "Bash", "hooks": handler()}],
    }}));
    let (ran, failed) = run_ls(hooks).await;
    assert_eq!(ran, ["bash:ls"]);
    assert!(failed.is_empty(), "{failed:?}");
    let d = r.to("/empty");
    assert_eq!(d.len(), 2, "{d:?}");
    assert!(d.iter().all(|d| d["verified"] == true));
    let events: Vec<_> = d
        .iter()
        .map(|d| {
            serde_json::from_str::<Value>(d["body"].as_str().unwrap()).unwrap()["hook_event_name"]
                .clone()
        })
        .collect();
    assert_eq!(events, [json!("PreToolUse"), json!("PostToolUse")]);
    assert_ne!(d[0]["headers"]["webhook-id"], d[1]["headers"]["webhook-id"]);
    assert_eq!(
        d[0]["peer_port"], d[1]["peer_port"],
        "the second delivery reused the first one's connection"
    );
}

#[tokio::test]
async fn failures_fail_open_naming_the_url_and_the_event_and_are_never_retried_on_a_deciding_event()
{
    let r = receiver!("fail open");
    set_env("WH_OPEN_SECRET", &r.secret);
    let closed_port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let unreachable = format!("http://127.0.0.1:{closed_port}/nobody");
    for (url, says) in [
        (
            r.url("/status/500"),
            "answered HTTP 500 Internal Server Error",
        ),
        (r.url("/status/404"), "answered HTTP 404 Not Found"),
        (
            r.url("/text"),
            "a body that is not a JSON object (`all good`)",
        ),
        (r.url("/slow/3000"), "timed out after 1s"),
        (unreachable.clone(), "could not be reached"),
    ] {
        let p = Project::new();
        // Retries asked for, but PreToolUse decides: one delivery each.
        let hooks = p.hooks(settings(
            "PreToolUse",
            "Bash",
            vec![http(
                &url,
                "WH_OPEN_SECRET",
                json!({"timeout": 1, "retries": 3}),
            )],
        ));
        assert!(
            hooks.settings().warnings()[0].contains("retries: PreToolUse can decide"),
            "{:?}",
            hooks.settings().warnings()
        );
        let started = Instant::now();
        let (ran, failed) = run_ls(hooks).await;
        assert!(started.elapsed() < Duration::from_millis(2900), "{url}");
        assert_eq!(ran, ["bash:ls"], "{url}: the call goes on");
        assert_eq!(failed.len(), 1, "{url}: {failed:?}");
        let f = &failed[0];
        assert!(f.contains(says), "{url}: {f}");
        assert!(
            f.contains(&format!("webhook `{url}` on PreToolUse")),
            "{url}: {f}"
        );
        if url != unreachable {
            let path = url.trim_start_matches(&r.url(""));
            assert_eq!(r.to(path).len(), 1, "{url}: never retried");
        }
    }
}

#[tokio::test]
async fn a_fail_closed_webhook_fails_the_run_after_its_siblings_finish() {
    let r = receiver!("fail closed");
    set_env("WH_CLOSED_SECRET", &r.secret);
    let p = Project::new();
    let url = r.url("/status/500");
    let hooks = p.hooks(settings(
        "PreToolUse",
        "Bash",
        vec![
            http(&url, "WH_CLOSED_SECRET", json!({"failClosed": true})),
            json!({"type": "command", "command": "sleep 1; touch sibling.done"}),
        ],
    ));
    let (model, log) = (ls_then_done(), new_log());
    let started = Instant::now();
    let err = Runtime::new()
        .with(hooks)
        .run(&agent(&model, &log), "go")
        .await
        .unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains(&format!("webhook `{url}` on PreToolUse")) && text.contains("HTTP 500"),
        "{text}"
    );
    assert!(
        p.path("sibling.done").exists(),
        "the sibling command finished before the run failed"
    );
    assert!(started.elapsed() >= Duration::from_secs(1));
    assert!(entries(&log).is_empty(), "the tool did not run");
    assert_eq!(r.to("/status/500").len(), 1);
}

#[tokio::test]
async fn observers_are_retried_with_the_same_id_and_deciding_events_never() {
    let r = receiver!("retries");
    set_env("WH_RETRY_SECRET", &r.secret);
    let p = Project::new();
    // RunEnd decides nothing: its deliveries are retried. PreToolUse decides: never.
    let hooks = p.hooks(json!({"hooks": {
        "RunEnd": [{"hooks": [
            http(&r.url("/status/503"), "WH_RETRY_SECRET", json!({"retries": 2})),
            http(&r.url("/flaky/1"), "WH_RETRY_SECRET", json!({"retries": 3})),
        ]}],
        "PreToolUse": [{"hooks": [
            http(&r.url("/status/502"), "WH_RETRY_SECRET", json!({"retries": 2})),
        ]}],
    }}));
    let (ran, failed) = run_ls(hooks).await;
    assert_eq!(ran, ["bash:ls"]);

    let always = r.to("/status/503");
    assert_eq!(always.len(), 3, "one delivery and two retries: {always:?}");
    let ids: Vec<_> = always.iter().map(|d| &d["headers"]["webhook-id"]).collect();
    assert!(
        ids.iter().all(|id| *id == ids[0]),
        "one delivery, one id: {ids:?}"
    );
    assert!(
        always
            .iter()
            .all(|d| d["verified"] == true && d["headers"]["webhook-timestamp"].is_string())
    );

    let flaky = r.to("/flaky/1");
    assert_eq!(
        flaky
            .iter()
            .map(|d| d["status"].clone())
            .collect::<Vec<_>>(),
        [json!(503), json!(200)],
        "retried once, then delivered"
    );
    assert_eq!(
        flaky[0]["headers"]["webhook-id"],
        flaky[1]["headers"]["webhook-id"]
    );

    assert_eq!(
        r.to("/status/502").len(),
        1,
        "a deciding event is delivered once"
    );

    assert_eq!(failed.len(), 2, "{failed:?}");
    let run_end = failed.iter().find(|f| f.contains("on RunEnd")).unwrap();
    assert!(
        run_end.contains(&r.url("/status/503")) && run_end.contains("(after 3 tries)"),
        "{run_end}"
    );
    assert!(
        failed
            .iter()
            .any(|f| f.contains("on PreToolUse") && !f.contains("tries")),
        "{failed:?}"
    );
}

#[tokio::test]
async fn secrets_are_resolved_at_delivery_and_never_shown() {
    let r = receiver!("secrets");
    let (token_1, token_2) = ("tok-first-9f2c1a", "tok-second-77b0de");
    let p = Project::new();
    let headers = json!({
        "headers": {"Authorization": "Bearer ${WH_SECRETS_TOKEN}", "X-Unlisted": "a$WH_SECRETS_UNLISTED"},
        "allowedEnvVars": ["WH_SECRETS_TOKEN"],
    });
    let mut missing = headers.clone();
    missing["headers"]["X-Other"] = json!("${WH_SECRETS_NOT_SET}");
    missing["allowedEnvVars"] = json!(["WH_SECRETS_TOKEN", "WH_SECRETS_NOT_SET"]);
    let hooks = p.hooks(settings(
        "PreToolUse",
        "Bash",
        vec![
            http(&r.url("/empty"), "WH_SECRETS_SECRET", headers.clone()),
            http(&r.url("/status/500"), "WH_SECRETS_SECRET", headers.clone()),
            http(&r.url("/deny"), "WH_SECRETS_SECRET", missing),
        ],
    ));
    // Read before any variable is set: the settings hold templates only.
    let stored = hooks.settings().to_value().to_string();
    assert!(
        stored.contains("Bearer ${WH_SECRETS_TOKEN}") && stored.contains("${WH_SECRETS_SECRET}"),
        "{stored}"
    );
    assert!(
        hooks.settings().warnings()[0].contains("X-Unlisted: uses $WH_SECRETS_UNLISTED"),
        "{:?}",
        hooks.settings().warnings()
    );

    set_env("WH_SECRETS_SECRET", &r.secret);
    set_env("WH_SECRETS_TOKEN", token_1);
    set_env("WH_SECRETS_UNLISTED", "not-for-headers");
    let (ran, failed_1) = run_ls(hooks).await;
    assert_eq!(
        ran,
        ["bash:ls"],
        "the webhook that cannot be made decides nothing"
    );
    // The same settings again, after the variable changed: resolved again at delivery.
    set_env("WH_SECRETS_TOKEN", token_2);
    let again = CommandHooks::new(
        HookSettings::from_value(&serde_json::from_str(&stored).unwrap()).unwrap(),
    )
    .project_dir(p.root())
    .state_dir(p.path("state"));
    let (_, failed_2) = run_ls(again).await;

    let got: Vec<_> = r
        .to("/empty")
        .iter()
        .map(|d| {
            assert_eq!(d["verified"], true);
            assert_eq!(
                d["headers"]["x-unlisted"], "a",
                "an unlisted variable is empty"
            );
            d["headers"]["authorization"].clone()
        })
        .collect();
    assert_eq!(
        got,
        [
            json!(format!("Bearer {token_1}")),
            json!(format!("Bearer {token_2}"))
        ]
    );
    assert!(r.to("/deny").is_empty(), "no delivery without its variable");

    let failed: Vec<_> = failed_1.iter().chain(&failed_2).collect();
    assert_eq!(failed.len(), 4, "{failed:?}");
    let missing = failed.iter().find(|f| f.contains(&r.url("/deny"))).unwrap();
    assert!(
        missing.contains("on PreToolUse")
            && missing.contains("header `X-Other` needs the environment variable `WH_SECRETS_NOT_SET`, which is not set"),
        "{missing}"
    );
    let secret_key = r.secret.trim_start_matches("whsec_");
    for text in failed.iter().map(|f| f.to_string()).chain([
        stored,
        format!(
            "{:?}",
            HookSettings::from_json(&p.read(".claude/settings.json")).unwrap()
        ),
    ]) {
        for value in [token_1, token_2, secret_key] {
            assert!(!text.contains(value), "`{value}` shows in: {text}");
        }
    }

    // A secret variable that is not set: the delivery is not made, and the error says which.
    let p = Project::new();
    let hooks = p.hooks(settings(
        "PreToolUse",
        "Bash",
        vec![http(&r.url("/empty"), "WH_SECRETS_NO_SECRET", json!({}))],
    ));
    let (_, failed) = run_ls(hooks).await;
    assert!(
        failed[0].contains(
            "the secret needs the environment variable `WH_SECRETS_NO_SECRET`, which is not set"
        ),
        "{failed:?}"
    );
    assert_eq!(r.to("/empty").len(), 2);
}

#[tokio::test]
async fn replays_are_detectable_by_id_and_timestamp() {
    let r = receiver!("replays");
    set_env("WH_REPLAY_SECRET", &r.secret);
    let p = Project::new();
    let hooks = p.hooks(settings(
        "PreToolUse",
        "Bash",
        vec![http(&r.url("/once"), "WH_REPLAY_SECRET", json!({}))],
    ));
    let (ran, failed) = run_ls(hooks).await;
    assert_eq!(ran, ["bash:ls"]);
    assert!(failed.is_empty(), "{failed:?}");
    let original = r.to("/once").remove(0);
    assert_eq!(
        (original["status"].clone(), original["verified"].clone()),
        (json!(200), json!(true))
    );

    // An attacker who captured the delivery sends it again, byte for byte.
    let client = reqwest::Client::new();
    let replay = |path: &str, timestamp: Option<String>| {
        let h = &original["headers"];
        client
            .post(r.url(path))
            .header("content-type", "application/json")
            .header("webhook-id", h["webhook-id"].as_str().unwrap())
            .header(
                "webhook-timestamp",
                timestamp.unwrap_or_else(|| h["webhook-timestamp"].as_str().unwrap().to_string()),
            )
            .header(
                "webhook-signature",
                h["webhook-signature"].as_str().unwrap(),
            )
            .body(original["body"].as_str().unwrap().to_string())
            .send()
    };
    // At once: the signature still verifies, but the id was seen.
    assert_eq!(replay("/once", None).await.unwrap().status(), 409);
    // Later than the library's tolerance (5 minutes): the timestamp is too old.
    let late = replay("/late", None).await.unwrap();
    assert_eq!(late.status(), 401);
    assert_eq!(late.text().await.unwrap(), "Message timestamp too old");
    // With a fresh timestamp put in: the signature no longer matches.
    let ts: u64 = original["headers"]["webhook-timestamp"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    let forged = replay("/empty", Some((ts + 1).to_string())).await.unwrap();
    assert_eq!(forged.status(), 401);
    assert_eq!(forged.text().await.unwrap(), "No matching signature found");
}

#[tokio::test]
async fn a_webhook_built_in_rust_registers_like_any_hook() {
    let r = receiver!("builder");
    set_env("WH_BUILDER_SECRET", &r.secret);
    let p = Project::new();
    let (model, log) = (ls_then_done(), new_log());
    let agent = agent(&model, &log);
    let options = RunOptions::new().with(
        Webhook::new(EventName::PreToolUse, r.url("/deny"))
            .matcher("Bash")
            .secret("${WH_BUILDER_SECRET}")
            .project_dir(p.root())
            .timeout(Duration::from_secs(5)),
    );
    Runtime::new()
        .run(&agent, "go")
        .with(options)
        .start()
        .result()
        .await
        .unwrap();
    assert!(entries(&log).is_empty());
    assert_eq!(result_sent(&model, 1).content, "denied by the receiver");
    assert_eq!(r.to("/deny")[0]["verified"], true);

    // A secret written into the spec itself is refused: it would be stored with the settings.
    let e = Webhook::new(EventName::Stop, r.url("/empty"))
        .secret(r.secret.clone())
        .into_hooks()
        .err()
        .unwrap();
    assert!(
        e.to_string().contains("secret") && !e.to_string().contains(&r.secret),
        "{e}"
    );
}
