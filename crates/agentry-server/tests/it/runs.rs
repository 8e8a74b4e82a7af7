//! Starting, reading and listing runs.

use crate::common::*;
use futures::future::BoxFuture;
use serde_json::json;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_started_run_streams_its_events_and_reads_back_finished() {
    let (store, _dir, _) = sqlite().await;
    let server = TestServer::start(server_on(store.clone(), Duration::from_secs(30))).await;
    let (status, run) = server
        .post("/v1/runs", json!({"input": "hello", "tags": ["t1"]}))
        .await;
    assert_eq!(status, 202, "{run}");
    assert_eq!(run["status"], "running");
    assert_eq!(run["agent"], "echo");
    let run_id = run["run_id"].as_str().unwrap();
    let events_url = server.at(run["events_url"].as_str().unwrap());
    let events = all_events(&events_url, None).await;
    let kinds = kinds(&events);
    assert_eq!(kinds.first(), Some(&"run_started"));
    assert_eq!(kinds.last(), Some(&"run_finished"));
    let text: String = events
        .iter()
        .filter(|e| e.kind == "text_delta")
        .map(|e| e.data["text"].as_str().unwrap())
        .collect();
    assert_eq!(text, "echo: hello (turn 1)");
    // Each event's data is its one JSON form, its type the SSE event name.
    assert!(events.iter().all(|e| e.data["type"] == e.kind));

    // The ids of recorded events are their numbers in the stored history; the others sit
    // after them.
    let stored = agentry::RunStore::events(&store, run_id).await.unwrap();
    let recorded: Vec<(String, String)> = events
        .iter()
        .filter(|e| !e.id.contains('.'))
        .map(|e| (e.id.clone(), e.kind.clone()))
        .collect();
    let expected: Vec<(String, String)> = stored
        .iter()
        .map(|e| (e.seq.to_string(), e.event.kind.clone()))
        .collect();
    assert_eq!(recorded, expected);
    assert!(
        events.iter().any(|e| e.id.contains('.')),
        "text deltas have sub-ids"
    );

    let (status, view) = server.get(&format!("/v1/runs/{run_id}")).await;
    assert_eq!(status, 200);
    assert_eq!(view["status"], "finished");
    assert_eq!(view["output"], "echo: hello (turn 1)");
    assert_eq!(view["text"], "echo: hello (turn 1)");
    assert_eq!(view["stop"], json!({"kind": "final_answer"}));

    let (status, messages) = server.get(&format!("/v1/runs/{run_id}/messages")).await;
    assert_eq!(status, 200);
    let roles: Vec<&str> = messages["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(roles, ["user", "assistant"], "{messages}");

    // A stream opened after the end replays the recorded events and ends.
    let late = all_events(&events_url, None).await;
    assert_eq!(kinds_of_recorded(&late), kinds_of_recorded(&events));
    server.shut_down().await;
}

fn kinds_of_recorded(events: &[Sse]) -> Vec<String> {
    events
        .iter()
        .filter(|e| !e.id.contains('.'))
        .map(|e| e.kind.clone())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_starts_on_images_and_files_and_refuses_parts_it_cannot_take() {
    let (store, _dir, _) = sqlite().await;
    let server = TestServer::start(server_on(store, Duration::from_secs(30))).await;
    let png = json!({"type": "image", "media_type": "image/png", "data": "iVBORw0KGgo="});
    let (status, run) = server
        .post(
            "/v1/runs",
            json!({"input": "what is this?", "parts": [png], "wait": true}),
        )
        .await;
    assert_eq!(status, 200, "{run}");
    assert_eq!(
        run["text"], "echo: [image image/png, 8 B]\nwhat is this? (turn 1)",
        "the model got the image and the text, in order"
    );
    let (_, messages) = server
        .get(&format!(
            "/v1/runs/{}/messages",
            run["run_id"].as_str().unwrap()
        ))
        .await;
    let content = &messages["messages"][0]["content"];
    assert_eq!(content[0], png, "{messages}");
    assert_eq!(content[1], json!({"type": "text", "text": "what is this?"}));
    // Its recorded event holds the image by reference; the bytes are read by their digest.
    let run_id = run["run_id"].as_str().unwrap();
    let events = all_events(&server.at(&format!("/v1/runs/{run_id}/events")), None).await;
    let message = events.iter().find(|e| e.kind == "message").unwrap();
    let part = &message.data["message"]["content"][0];
    assert_eq!(part["size"], 8, "{part}");
    assert!(part.get("data").is_none(), "{part}");
    let media = reqwest::get(server.at(&format!("/v1/media/{}", part["sha256"].as_str().unwrap())))
        .await
        .unwrap();
    assert_eq!(media.status(), 200);
    assert_eq!(media.headers()["content-type"], "image/png");
    assert_eq!(&media.bytes().await.unwrap()[..], b"\x89PNG\r\n\x1a\n");
    let (status, _) = server.get(&format!("/v1/media/{}", "0".repeat(64))).await;
    assert_eq!(status, 404);
    let (status, _) = server.get("/v1/media/not-a-digest").await;
    assert_eq!(status, 400);
    // Parts alone make an input; a part the server cannot read back is refused, named.
    let (status, _) = server
        .post("/v1/runs", json!({"parts": [png], "wait": true}))
        .await;
    assert_eq!(status, 200);
    let by_hash =
        json!({"type": "image", "media_type": "image/png", "sha256": "ab".repeat(32), "size": 8});
    for (body, says) in [
        (
            json!({"input": "x", "parts": [by_hash]}),
            "part 0 (image) is given by `sha256`",
        ),
        (
            json!({"input": "x", "parts": [{"type": "image", "data": "%%"}]}),
            "not base64",
        ),
        (
            json!({"input": "x", "parts": [{"type": "video", "url": "u"}]}),
            "unknown part type `video`",
        ),
        (json!({"input": "", "parts": []}), "`input` is empty"),
    ] {
        let (status, error) = server.post("/v1/runs", body).await;
        assert_eq!(status, 400, "{error}");
        assert!(error.to_string().contains(says), "`{says}` in {error}");
    }
    server.shut_down().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wait_answers_with_the_ended_run() {
    let (store, _dir, _) = sqlite().await;
    let server = TestServer::start(server_on(store, Duration::from_secs(30))).await;
    let (status, run) = server
        .post(
            "/v1/runs",
            json!({"agent": "slow", "input": "go", "wait": true}),
        )
        .await;
    assert_eq!(status, 200, "{run}");
    assert_eq!(run["status"], "finished");
    assert_eq!(run["text"], "done");
    assert_eq!(run["step"], 4);
    server.shut_down().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_are_listed_newest_first_by_filter_a_page_at_a_time() {
    let (store, _dir, _) = sqlite().await;
    let server = TestServer::start(server_on(store, Duration::from_secs(30))).await;
    let mut ids = Vec::new();
    for i in 0..5 {
        let (status, run) = server
            .post(
                "/v1/runs",
                json!({"input": format!("n{i}"), "session_id": if i % 2 == 0 { "even" } else { "odd" }, "wait": true}),
            )
            .await;
        assert_eq!(status, 200);
        ids.push(run["run_id"].as_str().unwrap().to_owned());
    }
    let (_, paused) = server
        .post(
            "/v1/runs",
            json!({"agent": "ops", "input": "restart", "wait": true}),
        )
        .await;
    assert_eq!(paused["status"], "awaiting_approval");

    let (status, page) = server.get("/v1/runs?limit=4").await;
    assert_eq!(status, 200);
    let listed: Vec<&str> = page["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["run_id"].as_str().unwrap())
        .collect();
    let newest_first: Vec<&str> = std::iter::once(paused["run_id"].as_str().unwrap())
        .chain(ids.iter().rev().map(String::as_str))
        .collect();
    assert_eq!(listed, newest_first[..4]);
    let next = page["next_before"].as_str().unwrap();
    let (_, page2) = server.get(&format!("/v1/runs?limit=4&before={next}")).await;
    let listed2: Vec<&str> = page2["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["run_id"].as_str().unwrap())
        .collect();
    assert_eq!(listed2, newest_first[4..]);
    assert!(page2.get("next_before").is_none(), "{page2}");

    let (_, waiting) = server.get("/v1/runs?status=awaiting_approval").await;
    assert_eq!(waiting["runs"].as_array().unwrap().len(), 1);
    let (_, odd) = server.get("/v1/runs?session_id=odd&agent=echo").await;
    assert_eq!(odd["runs"].as_array().unwrap().len(), 2);

    let (status, bad) = server.get("/v1/runs?status=sleeping").await;
    assert_eq!(status, 400);
    assert_eq!(bad["code"], "bad_request");
    assert!(
        bad["message"]
            .as_str()
            .unwrap()
            .contains("unknown status `sleeping`"),
        "{bad}"
    );
    server.shut_down().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_agents_and_runs_are_json_errors_that_say_what_exists() {
    let (store, _dir, _) = sqlite().await;
    let server = TestServer::start(server_on(store, Duration::from_secs(30))).await;
    let (status, err) = server
        .post("/v1/runs", json!({"agent": "nobody", "input": "hi"}))
        .await;
    assert_eq!(status, 404);
    assert_eq!(err["code"], "not_found");
    assert_eq!(
        err["message"],
        "no agent `nobody` is served here; the agents are echo, notes, ops, slow, team"
    );
    let (status, err) = server.get("/v1/runs/no-such-run").await;
    assert_eq!((status, err["code"].as_str()), (404, Some("not_found")));
    let resp = reqwest::get(server.at("/v1/runs/no-such-run/events"))
        .await
        .unwrap();
    assert_eq!(resp.status(), 404);
    let (status, err) = server.post("/v1/runs", json!({"input": "  "})).await;
    assert_eq!((status, err["code"].as_str()), (400, Some("bad_request")));
    let (status, err) = server.post("/v1/runs", json!({"inptu": "typo"})).await;
    assert_eq!(status, 400);
    assert!(err["message"].as_str().unwrap().contains("inptu"), "{err}");

    let (status, agents) = server.get("/v1/agents").await;
    assert_eq!(status, 200);
    assert_eq!(agents[0]["name"], "echo");
    assert_eq!(agents[0]["description"], "Says back what it is told.");
    assert_eq!(agents[0]["default"], true);
    server.shut_down().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_openapi_document_is_generated_from_the_handlers() {
    let (store, _dir, _) = sqlite().await;
    let server = TestServer::start(server_on(store, Duration::from_secs(30))).await;
    let (status, doc) = server.get("/openapi.json").await;
    assert_eq!(status, 200);
    assert!(
        doc["openapi"].as_str().unwrap().starts_with("3.1"),
        "{}",
        doc["openapi"]
    );
    for (path, method) in [
        ("/v1/runs", "post"),
        ("/v1/runs", "get"),
        ("/v1/runs/{run_id}", "get"),
        ("/v1/runs/{run_id}/events", "get"),
        ("/v1/runs/{run_id}/approvals", "post"),
        ("/v1/runs/{run_id}/cancel", "post"),
        ("/v1/runs/{run_id}/resume", "post"),
        ("/v1/sessions", "get"),
        ("/v1/sessions/{session_id}/runs", "post"),
    ] {
        assert!(
            doc["paths"][path][method].is_object(),
            "{method} {path} missing"
        );
    }
    assert!(doc["components"]["schemas"]["StartRun"]["properties"]["input"].is_object());
    assert!(doc["components"]["schemas"]["ErrorBody"].is_object());
    assert_eq!(
        doc["components"]["securitySchemes"]["bearer"]["scheme"],
        "bearer"
    );
    server.shut_down().await;
}

/// A memory store whose first save of each run takes `delay`: a run that has started and is
/// not yet in the store.
#[derive(Clone)]
struct SlowFirstSave {
    inner: agentry::MemoryStore,
    delay: Duration,
}

impl agentry::RunStore for SlowFirstSave {
    fn name(&self) -> &str {
        "slow-first-save"
    }
    fn save<'a>(
        &'a self,
        checkpoint: agentry::Checkpoint<'a>,
    ) -> BoxFuture<'a, Result<(), agentry::StoreError>> {
        Box::pin(async move {
            if checkpoint.lease == 0
                && self
                    .inner
                    .load(&checkpoint.snapshot.run_id)
                    .await?
                    .is_none()
            {
                tokio::time::sleep(self.delay).await;
            }
            self.inner.save(checkpoint).await
        })
    }
    fn load<'a>(
        &'a self,
        run_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<agentry::StoredRun>, agentry::StoreError>> {
        self.inner.load(run_id)
    }
    fn claim<'a>(
        &'a self,
        run_id: &'a str,
        lease: u64,
        status: agentry::RunStatus,
        hold: Duration,
    ) -> BoxFuture<'a, Result<u64, agentry::StoreError>> {
        self.inner.claim(run_id, lease, status, hold)
    }
    fn renew<'a>(
        &'a self,
        run_id: &'a str,
        lease: u64,
        hold: Duration,
    ) -> BoxFuture<'a, Result<agentry::Renewal, agentry::StoreError>> {
        self.inner.renew(run_id, lease, hold)
    }
    fn list<'a>(
        &'a self,
        query: &'a agentry::RunQuery,
    ) -> BoxFuture<'a, Result<Vec<agentry::RunSummary>, agentry::StoreError>> {
        self.inner.list(query)
    }
    fn events<'a>(
        &'a self,
        run_id: &'a str,
    ) -> BoxFuture<'a, Result<Vec<agentry::StoredEvent>, agentry::StoreError>> {
        self.inner.events(run_id)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_is_there_as_soon_as_its_start_is_answered() {
    // Each run reaches the store 300 ms after it started: reading it, or cancelling it, right
    // after the start's answer waits for it instead of answering 404.
    let store = SlowFirstSave {
        inner: agentry::MemoryStore::new(),
        delay: Duration::from_millis(300),
    };
    let server = TestServer::start(server_on(store, Duration::from_secs(30))).await;
    for i in 0..3 {
        let run = server
            .start_run(json!({"agent": "slow", "input": format!("go {i}")}))
            .await;
        let (status, view) = server.get(&format!("/v1/runs/{run}")).await;
        assert_eq!(status, 200, "{view}");
        assert_eq!(view["run_id"], run.as_str());
        let (status, cancelled) = server
            .post(&format!("/v1/runs/{run}/cancel"), json!({}))
            .await;
        assert_eq!(status, 202, "{cancelled}");
    }
    server.shut_down().await;
}
