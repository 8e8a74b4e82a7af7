//! Every hook run of a served run is in its history, with its duration.

use crate::common::*;
use serde_json::json;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_hook_run_is_recorded_with_its_duration() {
    let (store, _dir, _) = sqlite().await;
    let server = TestServer::start(server_on(store, Duration::from_secs(30))).await;
    let run = server
        .start_run(json!({"agent": "team", "input": "go"}))
        .await;
    server.wait_status(&run, "finished").await;
    let events = all_events(&server.at(&format!("/v1/runs/{run}/events")), None).await;
    let ran: Vec<_> = events
        .iter()
        .filter(|e| e.kind == "custom" && e.data["name"] == "hook_ran")
        .map(|e| &e.data["data"])
        .collect();
    // The agent's one hook ran on each of its two tool calls' BeforeTool.
    let mine: Vec<_> = ran.iter().filter(|r| r["hook"] == "no-deletes").collect();
    assert_eq!(mine.len(), 2, "{ran:?}");
    for r in &mine {
        assert_eq!(r["event"], "BeforeTool");
        assert!(r["duration_us"].is_u64(), "{r}");
    }
    // The recorder does not record itself.
    assert!(
        ran.iter()
            .all(|r| !r["hook"].as_str().unwrap().contains("hook-timings")),
        "{ran:?}"
    );
    // The decision comes after the run of the hook that took it.
    let at = |pred: &dyn Fn(&Sse) -> bool| events.iter().position(pred).unwrap();
    let first_run = at(&|e| e.kind == "custom" && e.data["data"]["hook"] == "no-deletes");
    let decision = at(&|e| e.kind == "hook_decision");
    assert!(first_run < decision);

    // An agent without hooks records none.
    let plain = server
        .start_run(json!({"agent": "echo", "input": "hi"}))
        .await;
    server.wait_status(&plain, "finished").await;
    let events = all_events(&server.at(&format!("/v1/runs/{plain}/events")), None).await;
    assert!(
        events.iter().all(|e| e.kind != "custom"),
        "{:?}",
        kinds(&events)
    );
    server.shut_down().await;
}
