//! Several servers on one store share the runs: any of them streams, decides or cancels any
//! run. On one SQLite file always; on Postgres when `AGENTRY_TEST_POSTGRES_URL` names a server.

use crate::common::*;
use agentry::RunStore;
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

/// A lease short enough that a cancel request reaches the driving server quickly.
const LEASE: Duration = Duration::from_secs(1);

async fn share(a: Arc<dyn RunStore>, b: Arc<dyn RunStore>) {
    let one = TestServer::start(server_on(a, LEASE)).await;
    let two = TestServer::start(server_on(b, LEASE)).await;

    // A run one has answered for is in the store: two finds it at once, every time, on every
    // door a client would follow it by.
    for i in 0..20 {
        let run_id = one
            .start_run(json!({"agent": "echo", "input": format!("go {i}")}))
            .await;
        let (status, body) = two.get(&format!("/v1/runs/{run_id}")).await;
        assert_eq!(status, 200, "run {i} on the other server: {body}");
        let events = all_events(&two.at(&format!("/v1/runs/{run_id}/events")), None).await;
        assert_eq!(events.last().unwrap().kind, "run_finished", "run {i}");
    }

    // Driven by one, streamed by two (from the store, as one saves it).
    let run_id = one.start_run(json!({"agent": "slow", "input": "go"})).await;
    let seen_by_two = all_events(&two.at(&format!("/v1/runs/{run_id}/events")), None).await;
    let seen_by_one = all_events(&one.at(&format!("/v1/runs/{run_id}/events")), None).await;
    assert_eq!(recorded(&seen_by_two), recorded(&seen_by_one));
    assert_eq!(seen_by_two.last().unwrap().kind, "run_finished");

    // Paused on one, approved on two (which drives it on), followed on one to its end.
    let run_id = one
        .start_run(json!({"agent": "ops", "input": "restart"}))
        .await;
    let follow = {
        let url = one.at(&format!("/v1/runs/{run_id}/events"));
        tokio::spawn(async move { all_events(&url, None).await })
    };
    two.wait_status(&run_id, "awaiting_approval").await;
    let (status, body) = two
        .post(
            &format!("/v1/runs/{run_id}/approvals"),
            json!({"decisions": [{"decision": "approve"}]}),
        )
        .await;
    assert_eq!(status, 202, "{body}");
    let events = tokio::time::timeout(Duration::from_secs(20), follow)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(events.last().unwrap().kind, "run_finished");
    assert!(kinds(&events).contains(&"approval_resolved"));
    assert_eq!(
        one.wait_status(&run_id, "finished").await["text"],
        "result: ran 54 chars"
    );

    // Driven by one, cancelled on two.
    let run_id = one.start_run(json!({"agent": "slow", "input": "go"})).await;
    read_events(&one.at(&format!("/v1/runs/{run_id}/events")), None, |e| {
        e.kind == "tool_started"
    })
    .await;
    let (status, body) = two
        .post(&format!("/v1/runs/{run_id}/cancel"), json!({}))
        .await;
    assert_eq!(status, 202, "{body}");
    let cancelled = one.wait_status(&run_id, "cancelled").await;
    assert_eq!(cancelled["stop"]["kind"], "cancelled");

    one.shut_down().await;
    two.shut_down().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_servers_on_one_sqlite_file_share_the_runs() {
    let (a, _dir, path) = sqlite().await;
    let b = agentry_store::SqliteStore::open(&path).await.unwrap();
    share(Arc::new(a), Arc::new(b)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_servers_on_one_postgres_database_share_the_runs() {
    let Some(db) = PostgresDb::create().await else {
        return;
    };
    share(Arc::new(db.store().await), Arc::new(db.store().await)).await;
    db.drop_db().await;
}
