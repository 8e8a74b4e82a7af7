//! `GET /v1/runs/{id}/steps`: where each step's events stand and what it used; one step's
//! events by `after` and `until`, as a page fetches them when a person opens a listed step.

use crate::common::*;
use serde_json::{Value, json};
use std::time::Duration;

/// The recorded events numbered `from..=to` of `events` (id and kind).
fn numbered(events: &[Sse], from: u64, to: u64) -> Vec<(String, String)> {
    recorded(events)
        .into_iter()
        .filter(|(id, _)| (from..=to).contains(&id.parse::<u64>().unwrap()))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runs_steps_place_each_steps_events_and_say_what_it_used() {
    let (store, _dir, path) = sqlite().await;
    let server = TestServer::start(server_on(store, Duration::from_secs(30))).await;
    // A second server on the same file holds no hub of the runs: it reads them from the store.
    let reader = agentry_store::SqliteStore::open(&path).await.unwrap();
    let other = TestServer::start(server_on(reader, Duration::from_secs(30))).await;
    // The team asks its researcher (step 1), tries a delete a hook blocks (step 2), answers.
    let team = server
        .start_run(json!({"agent": "team", "input": "go"}))
        .await;
    server.wait_status(&team, "finished").await;
    let (status, body) = server.get(&format!("/v1/runs/{team}/steps")).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["run_id"], team.as_str());
    let steps = body["steps"].as_array().unwrap();
    let field = |name: &str| -> Vec<Value> { steps.iter().map(|s| s[name].clone()).collect() };
    assert_eq!(field("step"), [1, 2, 3]);
    assert_eq!(field("tool_calls"), [1, 1, 0]);
    assert_eq!(field("sub_agent_runs"), [1, 0, 0]);
    // Each call of the model was sent the history so far: 1, then 3, then 5 messages.
    assert_eq!(field("messages_sent"), [1, 3, 5]);
    assert!(
        steps
            .iter()
            .all(|s| s["finished_at_ms"].as_i64() >= s["started_at_ms"].as_i64())
    );
    assert!(steps.iter().all(|s| s.get("failed").is_none()));

    // The steps cover the run's events after its opening, one after another, to its last.
    let (firsts, lasts): (Vec<u64>, Vec<u64>) = steps
        .iter()
        .map(|s| (s["first"].as_u64().unwrap(), s["last"].as_u64().unwrap()))
        .unzip();
    for i in 1..steps.len() {
        assert_eq!(firsts[i], lasts[i - 1] + 1, "{body}");
    }
    assert_eq!(lasts[2], body["last_event"].as_u64().unwrap());

    // One step's events: after the one before its first, until its last; the stream ends there,
    // the sub-agent's run among them, as the whole stream has them. From the server that drove
    // the run (its events held live) and from one that reads them from the store.
    let url = server.at(&format!("/v1/runs/{team}/events"));
    let whole = all_events(&url, None).await;
    let (_, listed) = other.get(&format!("/v1/runs/{team}/steps")).await;
    assert_eq!(listed["steps"], body["steps"]);
    for events in [url.clone(), other.at(&format!("/v1/runs/{team}/events"))] {
        for (&first, &last) in firsts.iter().zip(&lasts) {
            let part = all_events(
                &format!("{events}?until={last}"),
                Some(&(first - 1).to_string()),
            )
            .await;
            assert_eq!(part[0].kind, "step_started", "{:?}", kinds(&part));
            assert_eq!(recorded(&part), numbered(&whole, first, last));
        }
    }
    let researcher = all_events(
        &format!("{url}?until={}", lasts[0]),
        Some(&(firsts[0] - 1).to_string()),
    )
    .await;
    assert!(
        researcher
            .iter()
            .any(|e| e.kind == "run_started" && e.data["agent_path"] == "team/researcher"),
        "{:?}",
        kinds(&researcher)
    );
    // The run's opening: what came before its first step (its input).
    let opening = all_events(&format!("{url}?until={}", firsts[0] - 1), None).await;
    assert_eq!(recorded(&opening), numbered(&whole, 1, firsts[0] - 1));
    assert!(
        kinds(&opening).contains(&"message"),
        "{:?}",
        kinds(&opening)
    );

    // A run that waits for a person: a range up to its last event ends there too.
    let ops = server
        .start_run(json!({"agent": "ops", "input": "restart"}))
        .await;
    server.wait_status(&ops, "awaiting_approval").await;
    let (_, paused) = server.get(&format!("/v1/runs/{ops}/steps")).await;
    let last = paused["last_event"].as_u64().unwrap();
    assert_eq!(paused["steps"][0]["tool_calls"], 1);
    let all = all_events(
        &server.at(&format!("/v1/runs/{ops}/events?until={last}")),
        None,
    )
    .await;
    assert_eq!(recorded(&all).last().unwrap().0, last.to_string());
    let stored = all_events(
        &other.at(&format!("/v1/runs/{ops}/events?until={last}")),
        None,
    )
    .await;
    assert_eq!(recorded(&stored), recorded(&all));

    // An unknown run is 404; a bad bound is 400; the operation is in the OpenAPI document.
    let (status, err) = server.get("/v1/runs/nope/steps").await;
    assert_eq!((status, err["code"].as_str()), (404, Some("not_found")));
    let status = reqwest::get(format!("{url}?until=two"))
        .await
        .unwrap()
        .status();
    assert_eq!(status, 400);
    let (_, doc) = server.get("/openapi.json").await;
    assert!(doc["paths"]["/v1/runs/{run_id}/steps"]["get"].is_object());
    let until = &doc["paths"]["/v1/runs/{run_id}/events"]["get"]["parameters"];
    assert!(until.to_string().contains("\"until\""), "{until}");
    other.shut_down().await;
    server.shut_down().await;
}
