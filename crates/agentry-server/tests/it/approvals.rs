//! Paused runs decided over HTTP: the stream follows the run through the pause.

use crate::common::*;
use serde_json::json;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approved_call_runs_and_the_same_stream_follows_the_run_to_its_end() {
    let (store, _dir, _) = sqlite().await;
    let server = TestServer::start(server_on(store, Duration::from_secs(30))).await;
    let run_id = server
        .start_run(json!({"agent": "ops", "input": "restart"}))
        .await;
    let url = server.at(&format!("/v1/runs/{run_id}/events"));
    let reader = tokio::spawn(async move { all_events(&url, None).await });

    let paused = server.wait_status(&run_id, "awaiting_approval").await;
    assert_eq!(paused["pending"][0]["call_id"], "c1");
    assert_eq!(paused["pending"][0]["tool"], "shell");
    // The secret in the call's input is masked by the runtime's redactor, here too.
    let shown = paused.to_string();
    assert!(!shown.contains("sk-live-0123"), "{shown}");

    let (status, decided) = server
        .post(
            &format!("/v1/runs/{run_id}/approvals"),
            json!({"decisions": [{"call_id": "c1", "decision": "approve"}]}),
        )
        .await;
    assert_eq!(status, 202, "{decided}");
    assert_eq!(decided["status"], "running");
    let events = reader.await.unwrap();
    let kinds = kinds(&events);
    let paused_at = kinds
        .iter()
        .position(|k| *k == "awaiting_approval")
        .unwrap();
    let resolved_at = kinds
        .iter()
        .position(|k| *k == "approval_resolved")
        .unwrap();
    assert!(paused_at < resolved_at);
    assert_eq!(kinds.last(), Some(&"run_finished"));
    assert!(
        !serde_json::to_string(&events.iter().map(|e| &e.data).collect::<Vec<_>>())
            .unwrap()
            .contains("sk-live-0123")
    );
    let done = server.wait_status(&run_id, "finished").await;
    assert_eq!(done["text"], "result: ran 54 chars");

    // Deciding again: it waits for nothing.
    let (status, err) = server
        .post(
            &format!("/v1/runs/{run_id}/approvals"),
            json!({"decisions": [{"decision": "approve"}]}),
        )
        .await;
    assert_eq!(status, 409);
    assert!(
        err["message"]
            .as_str()
            .unwrap()
            .contains("not waiting for approval"),
        "{err}"
    );
    server.shut_down().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rejection_reaches_the_model_and_reject_and_stop_stops_the_run() {
    let (store, _dir, _) = sqlite().await;
    let server = TestServer::start(server_on(store, Duration::from_secs(30))).await;

    let (_, paused) = server
        .post(
            "/v1/runs",
            json!({"agent": "ops", "input": "restart", "wait": true}),
        )
        .await;
    let run_id = paused["run_id"].as_str().unwrap();
    let (status, done) = server
        .post(
            &format!("/v1/runs/{run_id}/approvals"),
            json!({"decisions": [{"decision": "reject", "reason": "not during business hours"}], "wait": true}),
        )
        .await;
    assert_eq!(status, 200, "{done}");
    assert_eq!(done["status"], "finished");
    assert!(
        done["text"]
            .as_str()
            .unwrap()
            .contains("not during business hours"),
        "{done}"
    );

    let (_, paused) = server
        .post(
            "/v1/runs",
            json!({"agent": "ops", "input": "restart", "wait": true}),
        )
        .await;
    let run_id = paused["run_id"].as_str().unwrap();
    let (status, stopped) = server
        .post(
            &format!("/v1/runs/{run_id}/approvals"),
            json!({"decisions": [{"call_id": "c1", "decision": "reject_and_stop", "reason": "no"}], "wait": true}),
        )
        .await;
    assert_eq!(status, 200, "{stopped}");
    assert_eq!(stopped["stop"]["kind"], "stopped_by_human", "{stopped}");

    // Decisions that do not match the pending calls change nothing.
    let (_, paused) = server
        .post(
            "/v1/runs",
            json!({"agent": "ops", "input": "restart", "wait": true}),
        )
        .await;
    let run_id = paused["run_id"].as_str().unwrap();
    let (status, err) = server
        .post(
            &format!("/v1/runs/{run_id}/approvals"),
            json!({"decisions": [{"call_id": "zz", "decision": "approve"}]}),
        )
        .await;
    assert_eq!(status, 409);
    assert!(
        err["message"]
            .as_str()
            .unwrap()
            .contains("no pending call `zz`"),
        "{err}"
    );
    let (status, err) = server
        .post(
            &format!("/v1/runs/{run_id}/approvals"),
            json!({"decisions": [{"call_id": "c1", "decision": "maybe"}]}),
        )
        .await;
    assert_eq!((status, err["code"].as_str()), (400, Some("bad_request")));
    let (_, still) = server.get(&format!("/v1/runs/{run_id}")).await;
    assert_eq!(still["status"], "awaiting_approval");

    // A paused run can be cancelled where it stands.
    let (status, cancelled) = server
        .post(&format!("/v1/runs/{run_id}/cancel"), json!({}))
        .await;
    assert_eq!(status, 202, "{cancelled}");
    assert_eq!(cancelled["status"], "cancelled");
    server.shut_down().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_run_is_cancelled_and_resumed_to_its_end() {
    let (store, _dir, _) = sqlite().await;
    let server = TestServer::start(server_on(store, Duration::from_secs(30))).await;
    let run_id = server
        .start_run(json!({"agent": "slow", "input": "go"}))
        .await;
    let url = server.at(&format!("/v1/runs/{run_id}/events"));
    read_events(&url, None, |e| e.kind == "tool_started").await;
    let (status, _) = server
        .post(&format!("/v1/runs/{run_id}/cancel"), json!({}))
        .await;
    assert_eq!(status, 202);
    let cancelled = server.wait_status(&run_id, "cancelled").await;
    assert_eq!(cancelled["stop"]["kind"], "cancelled");
    let (status, err) = server
        .post(&format!("/v1/runs/{run_id}/cancel"), json!({}))
        .await;
    assert_eq!((status, err["code"].as_str()), (409, Some("conflict")));

    let (status, resumed) = server
        .post(&format!("/v1/runs/{run_id}/resume"), json!({}))
        .await;
    assert_eq!(status, 202, "{resumed}");
    let done = server.wait_status(&run_id, "finished").await;
    assert_eq!(done["text"], "done");
    let (status, err) = server
        .post(&format!("/v1/runs/{run_id}/resume"), json!({}))
        .await;
    assert_eq!(status, 409);
    assert!(
        err["message"].as_str().unwrap().contains("has finished"),
        "{err}"
    );
    server.shut_down().await;
}
