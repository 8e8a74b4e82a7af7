//! Event streams that reconnect, or connect late, get every event exactly once.

use crate::common::*;
use serde_json::json;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_reconnects_with_last_event_id_gets_every_event_exactly_once() {
    let (store, _dir, _) = sqlite().await;
    let server = TestServer::start(server_on(store, Duration::from_secs(30))).await;
    let run_id = server
        .start_run(json!({"agent": "slow", "input": "go"}))
        .await;
    let url = server.at(&format!("/v1/runs/{run_id}/events"));

    // A client that drops the connection after every third event and reconnects with the last
    // id it saw, over and over, until the run ends.
    let mut pieced = Vec::new();
    let mut last: Option<String> = None;
    let mut connections = 0;
    loop {
        connections += 1;
        let mut n = 0;
        let part = read_events(&url, last.as_deref(), |_| {
            n += 1;
            n == 3
        })
        .await;
        let ended = part.last().is_some_and(|e| e.kind == "run_finished");
        last = part.last().map(|e| e.id.clone()).or(last);
        pieced.extend(part);
        if ended {
            break;
        }
        assert!(connections < 200, "the run never ended");
    }
    assert!(
        connections > 3,
        "the run ended before the client reconnected"
    );

    // One client that stayed connected from the start (a late one: it reads the same).
    let whole = all_events(&url, None).await;
    let ids = |events: &[Sse]| events.iter().map(|e| e.id.clone()).collect::<Vec<_>>();
    // No event twice, in order.
    let mut sorted = ids(&pieced);
    sorted.dedup();
    assert_eq!(sorted, ids(&pieced), "an event came twice");
    // Every recorded event once, as the uninterrupted stream has them.
    assert_eq!(recorded(&pieced), recorded(&whole));
    // The run was live while the client reconnected: the streamed text came through too.
    let text: String = pieced
        .iter()
        .filter(|e| e.kind == "text_delta")
        .map(|e| e.data["text"].as_str().unwrap())
        .collect();
    assert_eq!(text, "waiting 1waiting 2waiting 3done");
    server.shut_down().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_clients_on_one_run_each_get_the_whole_stream() {
    let (store, _dir, _) = sqlite().await;
    let server = TestServer::start(server_on(store, Duration::from_secs(30))).await;
    let run_id = server
        .start_run(json!({"agent": "slow", "input": "go"}))
        .await;
    let url = server.at(&format!("/v1/runs/{run_id}/events"));
    let clients = (0..50).map(|_| {
        let url = url.clone();
        tokio::spawn(async move { all_events(&url, None).await })
    });
    let streams = futures::future::try_join_all(clients).await.unwrap();
    let first: Vec<String> = streams[0].iter().map(|e| e.id.clone()).collect();
    assert!(streams[0].last().is_some_and(|e| e.kind == "run_finished"));
    for s in &streams {
        let recorded: Vec<&String> = s
            .iter()
            .map(|e| &e.id)
            .filter(|id| !id.contains('.'))
            .collect();
        let expected: Vec<&String> = first.iter().filter(|id| !id.contains('.')).collect();
        assert_eq!(recorded, expected);
    }
    server.shut_down().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_last_event_id_is_a_bad_request() {
    let (store, _dir, _) = sqlite().await;
    let server = TestServer::start(server_on(store, Duration::from_secs(30))).await;
    let run_id = server.start_run(json!({"input": "hi"})).await;
    let response = reqwest::Client::new()
        .get(server.at(&format!("/v1/runs/{run_id}/events")))
        .header("Last-Event-ID", "seven")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 400);
    let body: serde_json::Value = response.json().await.unwrap();
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("`seven` is not an event id"),
        "{body}"
    );
    server.shut_down().await;
}

/// Draws once (a tool that answers with text and a PNG), then says it is done.
fn painter() -> agentry::Agent<(), String> {
    let model = agentry::ScriptedModel::from_fn(|_, req| {
        match req.messages.iter().any(|m| m.tool_result().is_some()) {
            false => agentry::ScriptedTurn::new().with_tool_call("draw", json!({})),
            true => agentry::ScriptedTurn::text("drawn"),
        }
    });
    agentry::Agent::builder("painter")
        .model(model)
        .tool(agentry::tool(
            "draw",
            "Draws.",
            |_: serde_json::Value, _ctx: agentry::ToolCtx| async move {
                let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
                png.resize(3_000, 0x42);
                Ok::<_, agentry::ToolFailure>(agentry::Content::from([
                    agentry::Part::text("a drawing:"),
                    agentry::Part::image(png, "image/png"),
                ]))
            },
        ))
        .build()
        .unwrap()
}

/// A tool's image goes out by reference through every door's stream (never its bytes: 0x42
/// is `QkJC` in base64), as text where the protocol wants text.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_doors_stream_carries_media_by_reference() {
    let (store, _dir, _) = sqlite().await;
    let server = TestServer::start(
        builder_on(store, Duration::from_secs(30))
            .agent(painter())
            .build()
            .unwrap(),
    )
    .await;
    let post = |path: &str, body: serde_json::Value| {
        let url = server.at(path);
        async move {
            let r = reqwest::Client::new()
                .post(url)
                .json(&body)
                .send()
                .await
                .unwrap();
            assert!(r.status().is_success(), "{}", r.status());
            r.text().await.unwrap()
        }
    };
    let ui = post(
        "/v1/ui/painter",
        json!({"id": "c1", "messages": [{"id": "m1", "role": "user", "parts": [{"type": "text", "text": "draw"}]}]}),
    )
    .await;
    let ag_ui = post(
        "/v1/ag-ui/painter",
        json!({"threadId": "t1", "runId": "r1", "messages": [{"id": "m1", "role": "user", "content": "draw"}]}),
    )
    .await;
    let run = server
        .start_run(json!({"agent": "painter", "input": "draw"}))
        .await;
    let events = all_events(&server.at(&format!("/v1/runs/{run}/events")), None).await;
    let api: String = events.iter().map(|e| e.data.to_string()).collect();
    for (door, body) in [("AI SDK", &ui), ("AG-UI", &ag_ui), ("run API", &api)] {
        assert!(
            !body.contains("QkJCQkJC"),
            "{door} streamed the bytes: {body}"
        );
        assert!(body.contains("drawn"), "{door} ran to the end: {body}");
    }
    assert!(
        ui.contains("\"sha256\""),
        "the AI SDK's tool output names the image: {ui}"
    );
    let result = ag_ui
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|e| e["type"] == "TOOL_CALL_RESULT")
        .expect("a tool result");
    assert_eq!(result["content"], "a drawing:\n[image image/png, 3.0 KB]");
    server.shut_down().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_history_longer_than_a_page_streams_whole_from_the_store_a_page_at_a_time() {
    let (store, _dir, path) = sqlite().await;
    // One server drives the runs; another, reading two events at a time, streams them from
    // the store (late, and while they run).
    let driver = TestServer::start(server_on(store, Duration::from_secs(30))).await;
    let reader = TestServer::start(
        builder_on(
            agentry_store::SqliteStore::open(&path).await.unwrap(),
            Duration::from_secs(30),
        )
        .events_page(2)
        .build()
        .unwrap(),
    )
    .await;
    let run_id = driver
        .start_run(json!({"agent": "slow", "input": "go"}))
        .await;
    let live = all_events(&reader.at(&format!("/v1/runs/{run_id}/events")), None).await;
    let late = all_events(&reader.at(&format!("/v1/runs/{run_id}/events")), None).await;
    let whole = all_events(&driver.at(&format!("/v1/runs/{run_id}/events")), None).await;
    assert!(recorded(&whole).len() > 6, "longer than a few pages");
    assert_eq!(recorded(&live), recorded(&whole));
    assert_eq!(recorded(&late), recorded(&whole));
    assert_eq!(late.last().unwrap().kind, "run_finished");
    driver.shut_down().await;
    reader.shut_down().await;
}

/// Asks its `slow` sub-agent twice, one call after the other, then answers.
fn manager() -> agentry::Agent<(), String> {
    use agentry::ScriptedTurn;
    use agentry::prelude::*;
    let model = ScriptedModel::from_fn(|_, req| {
        let asked = req
            .messages
            .iter()
            .filter(|m| matches!(m, agentry::Message::Tool(_)))
            .count();
        if asked < 2 {
            ScriptedTurn::new()
                .with_tool_call("slow", json!({"input": format!("job {}", asked + 1)}))
        } else {
            ScriptedTurn::new().with_text_deltas(["both ", "done"])
        }
    });
    Agent::builder("manager")
        .model(model)
        .sub_agent(&slow(2, 100))
        .build()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sub_agents_events_are_in_the_runs_history_for_clients_that_reconnect_or_come_later() {
    let (store, _dir, path) = sqlite().await;
    let driver = TestServer::start(
        builder_on(store, Duration::from_secs(30))
            .agent(manager())
            .build()
            .unwrap(),
    )
    .await;
    // Another server on the same store: it has no hub of the run, only the store.
    let reader = TestServer::start(server_on(
        agentry_store::SqliteStore::open(&path).await.unwrap(),
        Duration::from_secs(30),
    ))
    .await;
    let run_id = driver
        .start_run(json!({"agent": "manager", "input": "go"}))
        .await;
    let url = driver.at(&format!("/v1/runs/{run_id}/events"));

    // A client that reconnects after every fourth event, in the middle of the sub-agents' runs.
    let mut pieced = Vec::new();
    let mut last: Option<String> = None;
    for connections in 1.. {
        let mut n = 0;
        let part = read_events(&url, last.as_deref(), |_| {
            n += 1;
            n == 4
        })
        .await;
        let ended = part
            .last()
            .is_some_and(|e| e.kind == "run_finished" && e.data["agent_path"] == "manager");
        last = part.last().map(|e| e.id.clone()).or(last);
        pieced.extend(part);
        if ended {
            break;
        }
        assert!(connections < 300, "the run never ended");
    }
    let whole = all_events(&url, None).await;
    let late = all_events(&reader.at(&format!("/v1/runs/{run_id}/events")), None).await;

    // The sub-agents' events are recorded, numbered in the run's history: reconnecting clients
    // and a server that only has the store get each of them once, in place.
    let sub_agent_runs = |events: &[Sse]| {
        events
            .iter()
            .filter(|e| !e.id.contains('.') && e.kind == "run_started")
            .map(|e| e.data["agent_path"].as_str().unwrap().to_owned())
            .collect::<Vec<_>>()
    };
    assert_eq!(
        sub_agent_runs(&late),
        ["manager", "manager/slow", "manager/slow"]
    );
    assert_eq!(recorded(&pieced), recorded(&whole));
    assert_eq!(recorded(&late), recorded(&whole));
    let sub_agent_tools = late
        .iter()
        .filter(|e| e.kind == "tool_finished" && e.data["agent_path"] == "manager/slow")
        .count();
    assert_eq!(sub_agent_tools, 4, "two waits in each of the two calls");
    // The stream ends at the run's own end, not at a sub-agent's.
    assert_eq!(late.last().unwrap().data["agent_path"], "manager");
    assert_eq!(late.last().unwrap().kind, "run_finished");
    driver.shut_down().await;
    reader.shut_down().await;
}
