//! WebFetch against a real HTTP server on loopback: HTML as text, the prompt in the header,
//! the size cap, the time limit, and what it refuses.

use crate::common::call;
use agentry::Tool;
use agentry::prelude::*;
use agentry_tools::WebFetch;
use axum::Router;
use axum::http::{StatusCode, header};
use axum::routing::get;
use std::time::{Duration, Instant};

/// Starts the test server; returns its base URL.
async fn server() -> String {
    let app = Router::new()
        .route(
            "/page",
            get(|| async {
                (
                    [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
                    "<html><head><title>T</title><script>var x = 1;</script></head>\
                     <body><h1>Opening hours</h1><p>Open <b>9 to 5</b>, Monday to Friday.</p></body></html>",
                )
            }),
        )
        .route(
            "/plain",
            get(|| async { ([(header::CONTENT_TYPE, "text/plain")], "just text") }),
        )
        .route(
            "/big",
            get(|| async { ([(header::CONTENT_TYPE, "text/plain")], "a".repeat(100_000)) }),
        )
        .route(
            "/slow",
            get(|| async {
                tokio::time::sleep(Duration::from_secs(20)).await;
                "late"
            }),
        )
        .route(
            "/image",
            get(|| async { ([(header::CONTENT_TYPE, "image/png")], vec![0x89u8, b'P', b'N', b'G']) }),
        )
        .route(
            "/missing",
            get(|| async { (StatusCode::NOT_FOUND, "no such page") }),
        )
        .route(
            "/moved",
            get(|| async { (StatusCode::FOUND, [(header::LOCATION, "/plain")]) }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}")
}

#[tokio::test]
async fn html_comes_back_as_readable_text_with_the_prompt_in_the_header() {
    let base = server().await;
    let fetch = WebFetch::new();
    let out = call(
        &fetch,
        json!({"url": format!("{base}/page"), "prompt": "When is it open?"}),
    )
    .await
    .unwrap();
    assert!(out.starts_with(&format!("URL: {base}/page\n")), "{out}");
    assert!(out.contains("Status: 200 OK"), "{out}");
    assert!(out.contains("Prompt: When is it open?"), "{out}");
    assert!(out.contains("Opening hours"), "{out}");
    assert!(out.contains("9 to 5"), "{out}");
    assert!(!out.contains("<p>") && !out.contains("var x"), "{out}");
    assert!(!fetch.needs_approval());
}

#[tokio::test]
async fn plain_text_and_redirects() {
    let base = server().await;
    let out = call(
        &WebFetch::new(),
        json!({"url": format!("{base}/moved"), "prompt": "p"}),
    )
    .await
    .unwrap();
    assert!(out.starts_with(&format!("URL: {base}/plain\n")), "{out}");
    assert!(out.ends_with("\n\njust text"), "{out}");
}

#[tokio::test]
async fn a_body_over_the_cap_is_cut_with_a_marker() {
    let base = server().await;
    let fetch = WebFetch::new().max_bytes(1000);
    let out = call(&fetch, json!({"url": format!("{base}/big"), "prompt": "p"}))
        .await
        .unwrap();
    assert!(out.contains(&"a".repeat(1000)), "{out}");
    assert!(!out.contains(&"a".repeat(1001)), "{out}");
    assert!(
        out.ends_with("[the body was cut at 1000 bytes, the size cap of a fetch]"),
        "{out}"
    );
}

#[tokio::test]
async fn a_slow_server_hits_the_time_limit() {
    let base = server().await;
    let fetch = WebFetch::new().timeout(Duration::from_millis(300));
    let started = Instant::now();
    let err = call(
        &fetch,
        json!({"url": format!("{base}/slow"), "prompt": "p"}),
    )
    .await
    .unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(err.contains("longer than the 300 ms limit"), "{err}");
}

#[tokio::test]
async fn errors_name_the_problem() {
    let base = server().await;
    let fetch = WebFetch::new();
    let err = call(&fetch, json!({"url": "file:///etc/passwd", "prompt": "p"}))
        .await
        .unwrap_err();
    assert!(err.contains("only http and https"), "{err}");
    let err = call(&fetch, json!({"url": "not a url", "prompt": "p"}))
        .await
        .unwrap_err();
    assert!(err.contains("not a valid URL"), "{err}");
    let err = call(
        &fetch,
        json!({"url": format!("{base}/missing"), "prompt": "p"}),
    )
    .await
    .unwrap_err();
    assert!(
        err.contains("answered 404 Not Found: no such page"),
        "{err}"
    );
    let err = call(
        &fetch,
        json!({"url": format!("{base}/image"), "prompt": "p"}),
    )
    .await
    .unwrap_err();
    assert!(err.contains("`image/png`, which is not text"), "{err}");
}
