//! The run inspector in real headless Chromium (Debian's `chromium`, driven by playwright-core
//! from `tests/clients/inspector.mjs`): the page is served embedded, lists runs live, shows a
//! run's timeline (sub-agents, hook decisions, state diffs) and acts on runs (approve, reject
//! with a reason, chat). Screenshots of each page go to `AGENTRY_SCREENSHOTS` (by default a
//! directory under Cargo's target directory).

use crate::clients::node_package;
use crate::common::*;
use agentry::prelude::*;
use agentry::{Message, RunStore, ScriptedTurn};
use agentry_server::Server;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Debian's Chromium (or `AGENTRY_CHROMIUM`), or `None` (said on stderr; under `CI=true` a
/// failure).
fn chromium() -> Option<PathBuf> {
    let path = std::env::var_os("AGENTRY_CHROMIUM")
        .map_or_else(|| PathBuf::from("/usr/bin/chromium"), PathBuf::from);
    if path.is_file() {
        return Some(path);
    }
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "CI=true but there is no Chromium at {} (.ci/run installs Debian's chromium)",
        path.display()
    );
    eprintln!("skipping: no Chromium at {}", path.display());
    None
}

fn screenshots() -> PathBuf {
    let dir = std::env::var_os("AGENTRY_SCREENSHOTS").map_or_else(
        || PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("inspector-screenshots"),
        PathBuf::from,
    );
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_follows_and_acts_on_runs_in_the_inspector() {
    let Some(playwright) = node_package("playwright-core", "1.64.1") else {
        return;
    };
    let Some(chromium) = chromium() else {
        return;
    };
    let (store, _dir, path) = sqlite().await;
    let server = TestServer::start(with_long_runs(store, false)).await;
    // The same runs, served with today's hooks: a guard that blocks notes.
    let today = TestServer::start(with_long_runs(
        agentry_store::SqliteStore::open(&path).await.unwrap(),
        true,
    ))
    .await;
    let (guarded_store, _guarded_dir, _) = sqlite().await;
    let guarded = TestServer::start(
        Server::builder(Runtime::new().store(guarded_store))
            .agent(echo())
            .token("open-sesame")
            .build()
            .unwrap(),
    )
    .await;
    let (code, _) = reqwest::Client::new()
        .post(guarded.at("/v1/runs"))
        .bearer_auth("open-sesame")
        .json(&json!({"input": "hello", "wait": true}))
        .send()
        .await
        .map(|r| (r.status().as_u16(), ()))
        .unwrap();
    assert_eq!(code, 200);

    // First, so its sub-agents' runs are older than the runs the list is looked at for.
    let t0 = Instant::now();
    let crowd = server
        .start_run(json!({"agent": "crowd", "input": "ask them all"}))
        .await;
    server
        .wait_status_within(&crowd, "finished", Duration::from_secs(300))
        .await;
    eprintln!("a run of {CROWD} sub-agent calls took {:?}", t0.elapsed());

    let t0 = Instant::now();
    let long = server
        .start_run(json!({"agent": "long", "input": "go on"}))
        .await;
    server
        .wait_status_within(&long, "finished", Duration::from_secs(300))
        .await;
    eprintln!("a run of {LONG} steps took {:?}", t0.elapsed());

    let echo = server
        .start_run(json!({"agent": "echo", "input": "hello"}))
        .await;
    // A 48×48 PNG (a gradient): the run's page shows it, read from the server by its digest.
    let png = "iVBORw0KGgoAAAANSUhEUgAAADAAAAAwCAIAAADYYG7QAAAAwklEQVR42u3O4WaCAQCG0e4rIkZExIg8Y0REjBERqaSSSiqpfCrZkppUUknNp00qmSQz6Wa6i/16zxUci5Wbjaudvwd+HVycnF2c3Pw8cvRw8LJ7YvvMt4+NHzPAZ5DVC8tXFiFmYaYRJlFGcYZJPtL0s/TydIu8lelUaddpGhgtGh1q71R7VAaUhhTHFKbk5mSXZNakTJJfJLbE9kQtCimkkEIKKaSQQgoppJBCCimkkEIKKaSQQgoppJBCCin0f6E7R/fNRDCoo1sAAAAASUVORK5CYII=";
    let picture = server
        .start_run(json!({"agent": "echo", "input": "what is this?",
            "parts": [{"type": "image", "media_type": "image/png", "data": png}]}))
        .await;
    let team = server
        .start_run(json!({"agent": "team", "input": "go"}))
        .await;
    let notes = server
        .start_run(json!({"agent": "notes", "input": "note"}))
        .await;
    let tidy = server
        .start_run(json!({"agent": "tidy", "input": "clean up"}))
        .await;
    let pair = server
        .start_run(json!({"agent": "pair", "input": "ask both"}))
        .await;
    let ops = server
        .start_run(json!({"agent": "ops", "input": "restart"}))
        .await;
    for id in [&echo, &team, &notes, &picture, &tidy, &pair] {
        server.wait_status(id, "finished").await;
    }
    server.wait_status(&ops, "awaiting_approval").await;
    let ops2 = server
        .start_run(json!({"agent": "ops", "input": "restart again"}))
        .await;
    server.wait_status(&ops2, "awaiting_approval").await;

    let shots = screenshots();
    let (url, dir) = (server.url.clone(), shots.clone());
    let node_modules = playwright.parent().unwrap().to_path_buf();
    let runs = json!({
        "echo": echo, "team": team, "notes": notes, "ops": ops, "picture": picture,
        "long": long, "long_steps": LONG + 1,
        "crowd": crowd, "crowd_calls": CROWD, "tidy": tidy, "pair": pair,
    })
    .to_string();
    let (token_url, token) = (guarded.url.clone(), "open-sesame");
    let today_url = today.url.clone();
    let seen: Value = tokio::task::spawn_blocking(move || {
        let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/clients/inspector.mjs");
        let out = std::process::Command::new("node")
            .arg(&script)
            .arg(&url)
            .env("RUNS", runs)
            .env("SCREENSHOTS", &dir)
            .env("CHROMIUM", &chromium)
            .env("NODE_MODULES", &node_modules)
            .env("TOKEN_URL", &token_url)
            .env("TODAY_URL", &today_url)
            .env("TOKEN", token)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "the inspector script failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
    })
    .await
    .unwrap();

    // The list: every run, live (a run started while the page was open appeared), searchable.
    assert!(seen["rows"].as_u64().unwrap() >= 5, "{seen}");
    assert_eq!(seen["ops_status"], "awaiting_approval");
    // The list shows each run's tokens, as the run API lists them.
    let (_, page) = server.get("/v1/runs?limit=100").await;
    let listed = page["runs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["run_id"] == long.as_str())
        .unwrap()["usage"]
        .clone();
    assert!(listed["input_tokens"].as_u64().unwrap() > 0, "{listed}");
    assert_eq!(
        seen["long_tokens"],
        format!(
            "{} in · {} out",
            thousands(listed["input_tokens"].as_u64().unwrap()),
            thousands(listed["output_tokens"].as_u64().unwrap())
        )
    );
    // And what they cost, where the server knows the agent's price.
    let (_, run) = server.get(&format!("/v1/runs/{long}")).await;
    let cost = run["cost_usd"].as_f64().unwrap();
    let (input, output) = (
        listed["input_tokens"].as_u64().unwrap() as f64,
        listed["output_tokens"].as_u64().unwrap() as f64,
    );
    assert!(
        (cost - (input * 3.0 + output * 15.0) / 1e6).abs() < 1e-12,
        "{run}"
    );
    let shown = match cost < 0.01 {
        true => format!("${cost:.5}"),
        false => format!("${cost:.3}"),
    };
    assert_eq!(seen["long_cost"], shown);
    assert_eq!(
        seen["echo_cost"], "—",
        "an agent without a price shows none"
    );
    assert_eq!(seen["late_run_appeared"], true);
    assert_eq!(seen["search_rows"], 1);
    assert_eq!(seen["slash_focuses_search"], true);
    assert_eq!(
        seen["image_width"], 48,
        "the input's image is shown: {seen}"
    );
    assert_eq!(seen["enter_opens_a_run"], true);

    // Approved from the page: the tool ran, the run finished, secrets masked on the page too.
    let pending = seen["pending_input"].as_str().unwrap();
    assert!(pending.contains("systemctl restart api"), "{pending}");
    assert!(!pending.contains("sk-live-0123456789abcdef"), "{pending}");
    assert!(
        seen["ops_result"].as_str().unwrap().starts_with("ran "),
        "{seen}"
    );
    assert!(
        seen["ops_output"]
            .as_str()
            .unwrap()
            .starts_with("result: ran "),
        "{seen}"
    );
    let stored = server.get(&format!("/v1/runs/{ops}")).await.1;
    assert_eq!(stored["status"], "finished");
    let timeline: Vec<&str> = seen["ops_timeline"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    for label in ["Waiting for a person", "Decided", "shell", "Finished"] {
        assert!(timeline.contains(&label), "{label} in {timeline:?}");
    }

    // The sub-agent nested and foldable; the blocked call names its hook and the reason.
    assert!(
        seen["subagent"].as_str().unwrap().contains("researcher"),
        "{seen}"
    );
    assert_eq!(seen["subagent_text"], "found three papers");
    assert_eq!(seen["subagent_folded_when_done"], true);
    assert_eq!(seen["subagent_unfolds"], true);
    let hook = seen["hook_line"].as_str().unwrap();
    assert!(
        hook.contains("block") && hook.contains("no-deletes"),
        "{hook}"
    );
    assert!(hook.contains("deleting is not allowed here"), "{hook}");
    assert!(
        hook.contains(" ms"),
        "the decision shows how long its hook took: {hook}"
    );
    let ran = seen["hooks_ran"].to_string();
    assert!(
        ran.contains("no-deletes") && ran.contains("BeforeTool"),
        "{ran}"
    );
    // The run of it that blocked the call decided; the one that let the sub-agent's call by
    // changed nothing.
    assert_eq!(ran.matches("decided").count(), 1, "{ran}");
    assert!(!ran.contains("changed"), "{ran}");

    // State changes as diffs.
    let diffs = seen["state_diffs"].to_string();
    assert!(diffs.contains("milk") && diffs.contains("eggs"), "{diffs}");

    // Forked from step 1 with another state: a new run, named after its origin, that ran steps
    // 2 and 3 from that state.
    assert_eq!(seen["fork_from"], "1", "{seen}");
    assert_eq!(seen["fork_url_is_new"], true, "{seen}");
    let origin = seen["forked_from"].as_str().unwrap();
    assert!(
        origin.starts_with(&notes[..8]) && origin.ends_with("step 1"),
        "{origin}"
    );
    assert_eq!(seen["fork_steps"], json!(["2", "3"]), "{seen}");
    let diffs = seen["fork_state_diffs"].to_string();
    assert!(diffs.contains("bread") && diffs.contains("eggs"), "{diffs}");
    assert!(!diffs.contains("milk"), "{diffs}");
    assert_eq!(seen["fork_output"], "noted both");
    assert_eq!(seen["fork_back_to_original"], true);

    // The inbox: the second paused run, rejected with a reason the model saw.
    assert_eq!(seen["inbox_count"], 1);
    let rejected = server.wait_status(&ops2, "finished").await;
    assert!(
        rejected["text"]
            .as_str()
            .unwrap()
            .contains("not during business hours"),
        "{rejected}"
    );

    // Chat keeps one session across turns.
    assert_eq!(seen["chat_answer"], "echo: hi there (turn 1)");
    assert_eq!(seen["chat_second"], "echo: again (turn 2)");

    // Dark, and a narrow window without sideways scrolling.
    assert_eq!(seen["theme"], "dark");
    assert_ne!(seen["dark_background"], "rgb(247, 247, 245)");
    assert!(seen["narrow_overflow"].as_i64().unwrap() <= 0, "{seen}");
    assert_eq!(seen["errors"], json!([]), "the page logged errors");

    // Replayed with today's hooks: the unchanged run is the same; the notes run differs where
    // the new guard blocks its calls, side by side.
    assert_eq!(
        seen["replay_same"], "Replay: the same with today's hooks",
        "{seen}"
    );
    let heading = seen["replay_heading"].as_str().unwrap();
    assert!(heading.starts_with("Replay: "), "{heading}");
    assert!(heading.contains("difference"), "{heading}");
    let rows = seen["replay_rows"].as_array().unwrap();
    assert_eq!(rows.len(), 3, "two calls and the end: {rows:?}");
    let first = rows[0].as_str().unwrap();
    assert!(
        first.contains("note") && first.contains("differs"),
        "{first}"
    );
    assert!(
        first.contains("blocked") && first.contains("no notes today"),
        "{first}"
    );

    // With a token: asked once, kept in the tab, never a cookie.
    assert_eq!(seen["token_rows"], 1);
    assert_eq!(seen["token_kept_in"], "session");

    // The long run's page: every step, loaded and scrolled to the end within the budget.
    assert_eq!(seen["long_steps_shown"], LONG + 1);
    // Listed from the run's steps: all but the last 20 are folded rows whose events are
    // fetched when opened, so the page holds the tool calls of those 20 only.
    assert_eq!(seen["long_steps_listed"], LONG + 1 - 20, "{seen}");
    assert_eq!(seen["long_tools_in_page"], 19, "{seen}");
    // Step 2, opened from the keyboard: its call and result fetched then, its line as listed.
    assert_eq!(seen["long_step2_open"], true, "{seen}");
    assert_eq!(seen["long_step2_tool"], "tick", "{seen}");
    let text = seen["long_step2_text"].as_str().unwrap();
    assert!(
        text.contains("\"n\": 2") && text.contains("tick 2"),
        "{text}"
    );
    let meta2 = seen["long_step2_meta"].as_str().unwrap();
    assert!(
        meta2.contains("1 tool call") && meta2.contains("120 in · 7 out"),
        "{meta2}"
    );
    // Each step shows its tokens and, the agent being priced, their cost ($3 and $15 per
    // million: 120 in and 7 out cost $0.000465).
    let meta = seen["long_step_meta"].as_str().unwrap();
    assert!(
        meta.contains("120 in · 7 out") && meta.contains("$0.0004"),
        "{meta}"
    );
    let (load, scroll) = (
        seen["long_load_ms"].as_u64().unwrap(),
        seen["long_scroll_ms"].as_u64().unwrap(),
    );
    eprintln!(
        "the {LONG}-step run's page: loaded in {load} ms, scrolled to its end in {scroll} ms"
    );
    assert!(
        load < 30_000,
        "the page of a {LONG}-step run loaded in {load} ms"
    );
    assert!(scroll < 5_000, "scrolling it took {scroll} ms");

    // A call a hook rewrote: what the model asked, what ran, and what the hook changed.
    assert!(
        seen["tidy_asked"].as_str().unwrap().contains("\"/\""),
        "{seen}"
    );
    assert!(
        seen["tidy_input"]
            .as_str()
            .unwrap()
            .contains("/tmp/scratch"),
        "{seen}"
    );
    let changed = seen["tidy_changed"].to_string();
    assert!(changed.contains("changed tool_input"), "{changed}");

    // Two calls of one sub-agent at once: two runs, each in the call that started it.
    assert_eq!(seen["pair_agents"], 2, "{seen}");
    assert_eq!(seen["pair_in_calls"], json!([1, 1]), "{seen}");
    let texts = seen["pair_texts"].to_string();
    assert!(
        texts.contains("echo: left") && texts.contains("echo: right"),
        "{texts}"
    );

    // The run of a thousand sub-agent calls, read from the store: each call's run nested in
    // its own step, loaded and scrolled within the budget.
    // Every step listed; the events of the last 20 (19 sub-agents' runs, and the answer) in
    // the page.
    assert_eq!(seen["crowd_steps_shown"], CROWD + 1);
    assert_eq!(seen["crowd_agents_shown"], 19, "{seen}");
    // The first step, opened: its sub-agent's run fetched then, nested in its call.
    assert_eq!(seen["crowd_first_nested"], 1, "{seen}");
    let first = seen["crowd_first_answer"].as_str().unwrap();
    assert!(
        first.contains("answer 1") && !first.contains("answer 10"),
        "{first}"
    );
    let last = seen["crowd_last_answer"].as_str().unwrap();
    assert!(last.contains(&format!("answer {CROWD}")), "{last}");
    let (load, scroll) = (
        seen["crowd_load_ms"].as_u64().unwrap(),
        seen["crowd_scroll_ms"].as_u64().unwrap(),
    );
    eprintln!(
        "the page of a run of {CROWD} sub-agent calls: loaded in {load} ms, scrolled in {scroll} ms"
    );
    assert!(load < 30_000, "loaded in {load} ms");
    assert!(scroll < 5_000, "scrolled in {scroll} ms");
    // The list shows runs of their own unless asked: not one of the thousand sub-agents' runs.
    assert_eq!(seen["sub_agent_rows"], 0, "{seen}");
    assert!(
        seen["sub_agent_rows_asked"].as_u64().unwrap() >= 50,
        "{seen}"
    );

    for name in [
        "run-crowd",
        "run-rewritten",
        "runs",
        "run-waiting",
        "run-approved",
        "run-subagent",
        "approvals",
        "chat",
        "run-dark",
        "runs-narrow",
        "token",
        "replay",
        "run-long-end",
    ] {
        let png = std::fs::read(shots.join(format!("{name}.png"))).unwrap();
        assert!(
            png.starts_with(b"\x89PNG") && png.len() > 5_000,
            "{name}.png"
        );
    }
    guarded.shut_down().await;
    today.shut_down().await;
    server.shut_down().await;
}

/// Steps in the long run.
const LONG: u64 = 10_000;

#[derive(Deserialize, JsonSchema)]
struct Target {
    path: String,
}

/// Asks to delete `/`; its `scratch-only` hook sends the call to `/tmp/scratch` instead.
fn tidy() -> Agent<(), String> {
    let model = ScriptedModel::from_fn(|_, req| {
        match req.messages.iter().rev().find_map(|m| m.tool_result()) {
            Some(result) => ScriptedTurn::text(format!("tidied: {}", result.content)),
            None => ScriptedTurn::new().with_tool_call("delete", json!({"path": "/"})),
        }
    });
    Agent::builder("tidy")
        .model(model)
        .tool(tool(
            "delete",
            "Deletes a path.",
            |a: Target, _c: ToolCtx| async move { Ok(format!("deleted {}", a.path)) },
        ))
        .with(
            on::before_tool(|mut ev, _ctx| async move {
                if ev.input["path"] == "/" {
                    ev.input = json!({"path": "/tmp/scratch"});
                }
                Ok(ev)
            })
            .named("scratch-only"),
        )
        .build()
        .unwrap()
}

/// Calls its `echoer` sub-agent twice in one turn (the calls run at once), then answers.
fn pair() -> Agent<(), String> {
    let echoer = Agent::builder("echoer")
        .description("Says its task back.")
        .model(ScriptedModel::from_fn(|_, req| {
            let task = req.messages[0].text().into_owned();
            ScriptedTurn::new().with_text_deltas(["echo: ".to_owned(), task])
        }))
        .build()
        .unwrap();
    let model = ScriptedModel::from_fn(|_, req| {
        if req.messages.iter().any(|m| matches!(m, Message::Tool(_))) {
            ScriptedTurn::text("both echoed")
        } else {
            ScriptedTurn::new()
                .with_tool_call("echoer", json!({"input": "left"}))
                .with_tool_call("echoer", json!({"input": "right"}))
        }
    });
    Agent::builder("pair")
        .model(model)
        .sub_agent(&echoer)
        .build()
        .unwrap()
}

/// Sub-agent calls in the crowd run.
const CROWD: u64 = 1_000;

/// Asks its `helper` sub-agent [`CROWD`] times, one call a step, then answers.
fn crowd() -> Agent<(), String> {
    let helper = Agent::builder("helper")
        .description("Answers a question.")
        .model(ScriptedModel::from_fn(|_, req| {
            let asked = req.messages.first().map(|m| m.text().into_owned());
            ScriptedTurn::text(asked.unwrap_or_default().replace("question", "answer"))
        }))
        .build()
        .unwrap();
    let model = ScriptedModel::from_fn(|_, req| {
        let done = req
            .messages
            .iter()
            .filter(|m| matches!(m, Message::Tool(_)))
            .count() as u64;
        if done < CROWD {
            ScriptedTurn::new()
                .with_tool_call("helper", json!({"input": format!("question {}", done + 1)}))
        } else {
            ScriptedTurn::text("all asked")
        }
    });
    Agent::builder("crowd")
        .model(model)
        .sub_agent(&helper)
        .max_steps(CROWD as u32 + 10)
        .build()
        .unwrap()
}

/// Calls `tick` [`LONG`] times, then answers.
fn long() -> Agent<(), String> {
    let model = ScriptedModel::from_fn(|_, req| {
        let done = req
            .messages
            .iter()
            .rev()
            .take_while(|m| !matches!(m, Message::User { .. }))
            .filter(|m| matches!(m, Message::Tool(_)))
            .count() as u64;
        // A turn's tokens, so the run's total grows into the thousands.
        if done < LONG {
            ScriptedTurn::new()
                .with_tool_call("tick", json!({"n": done + 1}))
                .with_usage(120, 7)
        } else {
            ScriptedTurn::text("ticked").with_usage(120, 3)
        }
    });
    Agent::builder("long")
        .model(model)
        .tool(tool("tick", "Ticks.", |a: Tick, _c: ToolCtx| async move {
            Ok(format!("tick {}", a.n))
        }))
        .max_steps(LONG as u32 + 10)
        .build()
        .unwrap()
}

#[derive(Deserialize, JsonSchema)]
struct Tick {
    n: u64,
}

/// The common agents and the long one, on `store`; with `guard_notes`, a runtime guard blocks
/// the `note` tool.
fn with_long_runs(store: impl RunStore, guard_notes: bool) -> Server {
    let mut runtime = redacting(store);
    if guard_notes {
        runtime = runtime.with(no_notes());
    }
    with_agents(Server::builder(runtime))
        .agent(long())
        .agent(crowd())
        .agent(tidy())
        .agent(pair())
        .price("long", agentry::Price::per_million(3.0, 15.0))
        .build()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_is_served_embedded_and_public_while_data_needs_the_token() {
    let (store, _dir, _) = sqlite().await;
    let runtime = Runtime::new().store(store);
    let server = Server::builder(runtime)
        .agent(echo())
        .token("s3cret-token")
        .build()
        .unwrap();
    let server = TestServer::start(server).await;
    for (path, kind) in [
        ("/", "text/html"),
        ("/inspector/app.js", "text/javascript"),
        ("/inspector/app.css", "text/css"),
    ] {
        let r = reqwest::get(server.at(path)).await.unwrap();
        assert_eq!(r.status(), 200, "{path}");
        let headers = r.headers().clone();
        assert!(
            headers["content-type"].to_str().unwrap().starts_with(kind),
            "{path}"
        );
        let policy = headers["content-security-policy"].to_str().unwrap();
        assert!(policy.contains("frame-ancestors 'none'"), "{policy}");
        assert!(policy.contains("connect-src 'self'"), "{policy}");
        assert_eq!(headers["x-content-type-options"], "nosniff");
        let body = r.text().await.unwrap();
        assert!(!body.is_empty());
    }
    let html = reqwest::get(server.at("/"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(html.contains("/inspector/app.js"), "{html}");
    // Everything with data still needs the token.
    assert_eq!(server.get("/v1/runs").await.0, 401);
    assert_eq!(server.get("/v1/agents").await.0, 401);
    server.shut_down().await;
}

/// `n` with commas between thousands, as the page's locale (en-US) writes it.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}
