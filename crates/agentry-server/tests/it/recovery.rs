//! Runs started over HTTP outlive their server.

use crate::common::*;
use serde_json::json;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_under_way_at_shutdown_are_resumed_by_the_next_server() {
    let (store, _dir, path) = sqlite().await;
    let first = TestServer::start(server_on(store, Duration::from_secs(30))).await;
    let run_id = first
        .start_run(json!({"agent": "slow", "input": "go"}))
        .await;
    let url = first.at(&format!("/v1/runs/{run_id}/events"));
    let before = read_events(&url, None, |e| e.kind == "tool_started").await;
    first.shut_down().await;

    // Left at its last checkpoint, still running, its lease released.
    let reopened = agentry_store::SqliteStore::open(&path).await.unwrap();
    let stored = agentry::RunStore::load(&reopened, &run_id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.snapshot.status(), agentry::RunStatus::Running);
    assert_eq!(stored.lease_expires_ms, 0, "the lease was released");

    let second = TestServer::start(server_on(reopened, Duration::from_secs(30))).await;
    let done = second.wait_status(&run_id, "finished").await;
    assert_eq!(done["text"], "done");
    assert_eq!(done["step"], 4, "no step done twice or lost");
    // A client that followed the first server goes on at the second.
    let last = before.last().unwrap().id.clone();
    let rest = all_events(
        &second.at(&format!("/v1/runs/{run_id}/events")),
        Some(&last),
    )
    .await;
    assert_eq!(rest.last().unwrap().kind, "run_finished");
    let ids: Vec<&str> = before
        .iter()
        .chain(&rest)
        .map(|e| e.id.as_str())
        .filter(|id| !id.contains('.'))
        .collect();
    let mut unique = ids.clone();
    unique.dedup();
    assert_eq!(ids, unique);
    second.shut_down().await;
}
