//! `POST /v1/runs/{id}/replay`: a stored run replayed with the hooks the server has now.

use crate::common::*;
use agentry::prelude::*;
use serde_json::json;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replay_says_where_todays_hooks_decide_otherwise_and_stores_nothing() {
    let (store, _dir, path) = sqlite().await;
    let then = TestServer::start(server_on(store, Duration::from_secs(30))).await;
    let noted = then
        .start_run(json!({"agent": "notes", "input": "note"}))
        .await;
    then.wait_status(&noted, "finished").await;
    let teamed = then
        .start_run(json!({"agent": "team", "input": "go"}))
        .await;
    then.wait_status(&teamed, "finished").await;

    // The same agents now, with a guard that blocks notes.
    let runtime = Runtime::new()
        .store(agentry_store::SqliteStore::open(&path).await.unwrap())
        .with(no_notes());
    let now = TestServer::start(
        agentry_server::Server::builder(runtime)
            .agent(notes())
            .agent(team())
            .build()
            .unwrap(),
    )
    .await;
    let before = now.get("/v1/runs").await.1["runs"]
        .as_array()
        .unwrap()
        .len();

    let (status, same) = now
        .post(&format!("/v1/runs/{teamed}/replay"), json!({}))
        .await;
    assert_eq!(status, 200, "{same}");
    assert_eq!(same["differences"], 0, "{same}");
    assert_eq!(same["calls"].as_array().unwrap().len(), 2);
    // The recorded block by the agent's own hook is kept, and the same now.
    assert_eq!(
        same["calls"][1]["recorded"]["decisions"][0],
        "blocked by no-deletes: deleting is not allowed here"
    );
    assert_eq!(same["calls"][1]["same"], true);

    let (status, report) = now
        .post(&format!("/v1/runs/{noted}/replay"), json!({}))
        .await;
    assert_eq!(status, 200, "{report}");
    assert_eq!(report["run_id"], noted.as_str());
    assert_eq!(report["model_turns"], 3);
    let calls = report["calls"].as_array().unwrap();
    assert_eq!(calls.len(), 2);
    for call in calls {
        assert_eq!(call["tool"], "note");
        assert_eq!(call["same"], false, "{call}");
        assert_eq!(call["recorded"]["decisions"], json!([]));
        assert_eq!(call["recorded"]["content"], "noted");
        assert_eq!(
            call["replay"]["decisions"],
            json!(["blocked by no-notes: no notes today"])
        );
        assert_eq!(call["replay"]["is_error"], true);
    }
    assert_eq!(report["recorded_end"], report["replay_end"]);
    assert_eq!(report["differences"], 2);

    // Nothing was stored, nothing ran: the store holds the same runs.
    let after = now.get("/v1/runs").await.1["runs"]
        .as_array()
        .unwrap()
        .len();
    assert_eq!(before, after);

    let (status, missing) = now.post("/v1/runs/nope/replay", json!({})).await;
    assert_eq!((status, missing["code"].as_str()), (404, Some("not_found")));
    now.shut_down().await;
    then.shut_down().await;
}
