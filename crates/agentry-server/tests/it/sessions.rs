//! Sessions: a conversation across runs.

use crate::common::*;
use serde_json::json;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_in_a_session_go_on_from_its_last_run() {
    let (store, _dir, _) = sqlite().await;
    let server = TestServer::start(server_on(store, Duration::from_secs(30))).await;
    let (status, first) = server
        .post(
            "/v1/sessions/s-42/runs",
            json!({"input": "one", "wait": true}),
        )
        .await;
    assert_eq!(status, 200, "{first}");
    assert_eq!(first["session_id"], "s-42");
    assert_eq!(first["text"], "echo: one (turn 1)");
    let (_, second) = server
        .post(
            "/v1/sessions/s-42/runs",
            json!({"input": "two", "wait": true}),
        )
        .await;
    assert_eq!(
        second["text"], "echo: two (turn 2)",
        "the second run saw the first"
    );

    let (status, session) = server.get("/v1/sessions/s-42").await;
    assert_eq!(status, 200);
    assert_eq!(session["runs"].as_array().unwrap().len(), 2);
    assert_eq!(session["runs"][0]["run_id"], second["run_id"]);
    let texts: Vec<&str> = session["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["content"].as_str())
        .collect();
    assert_eq!(
        texts,
        ["one", "echo: one (turn 1)", "two", "echo: two (turn 2)"]
    );

    server
        .post(
            "/v1/runs",
            json!({"input": "elsewhere", "session_id": "s-7", "wait": true}),
        )
        .await;
    let (_, sessions) = server.get("/v1/sessions").await;
    let ids: Vec<&str> = sessions["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["session_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["s-7", "s-42"]);
    let (status, err) = server.get("/v1/sessions/nope").await;
    assert_eq!((status, err["code"].as_str()), (404, Some("not_found")));
    server.shut_down().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ending_a_session_runs_what_the_server_was_given_and_names_what_fails() {
    let (store, _dir, _) = sqlite().await;
    let ended = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = ended.clone();
    let server = TestServer::start(
        builder_on(store, Duration::from_secs(30))
            .on_session_end(move |session, reason| {
                let seen = seen.clone();
                async move {
                    if session == "broken" {
                        return Err("the audit log is full".to_string());
                    }
                    seen.lock().unwrap().push((session, reason));
                    Ok(())
                }
            })
            .build()
            .unwrap(),
    )
    .await;
    for session in ["s-1", "broken"] {
        let (status, _) = server
            .post(
                &format!("/v1/sessions/{session}/runs"),
                json!({"input": "hi", "wait": true}),
            )
            .await;
        assert_eq!(status, 200);
    }
    let (status, _) = server
        .post("/v1/sessions/s-1/end", json!({"reason": "logout"}))
        .await;
    assert_eq!(status, 204);
    let (status, _) = server.post("/v1/sessions/s-1/end", json!({})).await;
    assert_eq!(status, 204);
    assert_eq!(
        *ended.lock().unwrap(),
        [
            ("s-1".to_string(), "logout".to_string()),
            ("s-1".to_string(), "other".to_string())
        ]
    );
    let (status, error) = server.post("/v1/sessions/none/end", json!({})).await;
    assert_eq!(status, 404, "{error}");
    let (status, error) = server.post("/v1/sessions/s-1/end", json!({"why": 1})).await;
    assert_eq!(status, 400, "{error}");
    let (status, error) = server.post("/v1/sessions/broken/end", json!({})).await;
    assert_eq!(status, 500);
    assert!(
        error.to_string().contains("the audit log is full"),
        "{error}"
    );
    server.shut_down().await;
}
