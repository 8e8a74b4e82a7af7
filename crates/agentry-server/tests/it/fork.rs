//! `POST /v1/runs/{id}/fork`: a new run from the end of a stored run's step.

use crate::common::*;
use agentry::RunStore;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fork_over_http_starts_from_a_steps_history_and_state() {
    let (store, _dir, _path) = sqlite().await;
    forks_on(Arc::new(store)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fork_over_http_on_postgres_starts_from_a_steps_history_and_state() {
    let Some(db) = PostgresDb::create().await else {
        return;
    };
    forks_on(Arc::new(db.store().await)).await;
    db.drop_db().await;
}

/// Forks of a run of the notes agent on `store`: from a step with another state, from the start
/// with another input, and what cannot be forked.
async fn forks_on(store: Arc<dyn RunStore>) {
    let server = TestServer::start(server_on(store.clone(), Duration::from_secs(30))).await;
    let noted = server
        .start_run(json!({"agent": "notes", "input": "note"}))
        .await;
    server.wait_status(&noted, "finished").await;
    let original = store.load(&noted).await.unwrap().unwrap();
    assert_eq!(original.snapshot.state["items"], json!(["milk", "eggs"]));

    // From step 1 (milk noted), with another state: the fork notes eggs onto it.
    let (status, fork) = server
        .post(
            &format!("/v1/runs/{noted}/fork"),
            json!({"step": 1, "state": {"items": ["bread"]}}),
        )
        .await;
    assert_eq!(status, 202, "{fork}");
    let forked = fork["run_id"].as_str().unwrap().to_owned();
    assert_ne!(forked, noted);
    assert_eq!(fork["step"], 1);
    assert_eq!(fork["metadata"]["forked_from"], noted.as_str());
    assert_eq!(fork["metadata"]["forked_at_step"], 1);
    let events = all_events(&server.at(&format!("/v1/runs/{forked}/events")), None).await;
    let steps: Vec<&Value> = events
        .iter()
        .filter(|e| e.kind == "step_started")
        .map(|e| &e.data["step"])
        .collect();
    assert_eq!(steps, [2, 3]);
    let done = server.wait_status(&forked, "finished").await;
    assert_eq!(done["text"], "noted both");
    assert_eq!(done["metadata"]["forked_from"], noted.as_str());
    let stored = store.load(&forked).await.unwrap().unwrap();
    assert_eq!(stored.snapshot.state["items"], json!(["bread", "eggs"]));
    let (_, messages) = server.get(&format!("/v1/runs/{forked}/messages")).await;
    let (_, then) = server.get(&format!("/v1/runs/{noted}/messages")).await;
    let roles = |m: &Value| -> Vec<Value> {
        m["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["role"].clone())
            .collect()
    };
    assert_eq!(roles(&messages), roles(&then));
    // The history up to step 1 is the original's, as it was.
    assert_eq!(messages["messages"][1], then["messages"][1]);

    // From the start with another input, waiting for its end: the state as it began.
    let (status, fork) = server
        .post(
            &format!("/v1/runs/{noted}/fork"),
            json!({"step": 0, "input": "note again", "wait": true}),
        )
        .await;
    assert_eq!(status, 200, "{fork}");
    assert_eq!(fork["status"], "finished");
    let again = fork["run_id"].as_str().unwrap();
    let (_, messages) = server.get(&format!("/v1/runs/{again}/messages")).await;
    assert_eq!(messages["messages"][0]["content"], "note again");
    let stored = store.load(again).await.unwrap().unwrap();
    assert_eq!(stored.snapshot.state["items"], json!(["milk", "eggs"]));

    // What cannot be forked says why, and starts nothing.
    let runs = || async {
        server.get("/v1/runs").await.1["runs"]
            .as_array()
            .unwrap()
            .len()
    };
    let before = runs().await;
    let (status, err) = server
        .post(&format!("/v1/runs/{noted}/fork"), json!({"step": 7}))
        .await;
    assert_eq!(
        (status, err["code"].as_str()),
        (409, Some("no_such_step")),
        "{err}"
    );
    assert!(
        err["message"]
            .as_str()
            .unwrap()
            .contains("finished 3 step(s)"),
        "{err}"
    );
    let (status, err) = server
        .post(&format!("/v1/runs/{noted}/fork"), json!({"step": 3}))
        .await;
    assert_eq!(status, 409, "{err}");
    assert!(
        err["message"]
            .as_str()
            .unwrap()
            .contains("give the fork an input"),
        "{err}"
    );
    let (status, err) = server.post("/v1/runs/nope/fork", json!({"step": 0})).await;
    assert_eq!(
        (status, err["code"].as_str()),
        (404, Some("not_found")),
        "{err}"
    );
    let (status, err) = server
        .post(&format!("/v1/runs/{noted}/fork"), json!({"step": "one"}))
        .await;
    assert_eq!(status, 400, "{err}");
    assert_eq!(runs().await, before);

    // The operation is in the OpenAPI document.
    let (_, doc) = server.get("/openapi.json").await;
    assert!(doc["paths"]["/v1/runs/{run_id}/fork"]["post"].is_object());
    server.shut_down().await;
}
