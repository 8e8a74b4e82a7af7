//! Secure by default: tokens, hosts, limits, CORS, JSON errors.

use crate::common::*;
use agentry::prelude::*;
use agentry_server::{Server, ServerError};
use serde_json::json;
use std::time::Duration;

fn with_token(store: agentry_store::SqliteStore, token: &str) -> Server {
    Server::builder(Runtime::new().store(store))
        .agent(echo())
        .token(token)
        .build()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_a_token_every_request_but_health_must_carry_it() {
    let (store, _dir, _) = sqlite().await;
    let server = TestServer::start(with_token(store, "s3cret-token")).await;
    let client = reqwest::Client::new();
    let send = |auth: Option<&'static str>| {
        let mut r = client.get(server.at("/v1/runs"));
        if let Some(auth) = auth {
            r = r.header("Authorization", auth);
        }
        r.send()
    };
    for (auth, message) in [
        (None, "this server needs `Authorization: Bearer <token>`"),
        (Some("Bearer wrong"), "the bearer token is wrong"),
        (Some("Bearer s3cret-toke"), "the bearer token is wrong"),
        (
            Some("Bearer s3cret-token-and-more"),
            "the bearer token is wrong",
        ),
        (Some("Basic czNjcmV0LXRva2Vu"), "this server needs"),
    ] {
        let r = send(auth).await.unwrap();
        assert_eq!(r.status(), 401, "{auth:?}");
        assert_eq!(r.headers()["www-authenticate"], "Bearer");
        let body: serde_json::Value = r.json().await.unwrap();
        assert_eq!(body["code"], "unauthorized");
        assert!(
            body["message"].as_str().unwrap().starts_with(message),
            "{body}"
        );
    }
    assert_eq!(
        send(Some("Bearer s3cret-token")).await.unwrap().status(),
        200
    );
    let r = client.get(server.at("/openapi.json")).send().await.unwrap();
    assert_eq!(r.status(), 401, "the document needs the token too");
    let r = client.get(server.at("/healthz")).send().await.unwrap();
    assert_eq!(r.status(), 200);
    // An A2A agent card is public, and says calls need the token, in the shape of the
    // protocol the client states (none: 0.3); the calls do.
    let r = client
        .get(server.at("/a2a/echo/.well-known/agent-card.json"))
        .header("A2A-Version", "1.0")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let card: serde_json::Value = r.json().await.unwrap();
    assert_eq!(
        card["securitySchemes"]["bearer"]["httpAuthSecurityScheme"]["scheme"],
        "Bearer"
    );
    let r = client
        .get(server.at("/a2a/echo/.well-known/agent-card.json"))
        .send()
        .await
        .unwrap();
    let card: serde_json::Value = r.json().await.unwrap();
    assert_eq!(
        card["securitySchemes"]["bearer"],
        json!({"type": "http", "scheme": "bearer"})
    );
    assert_eq!(card["security"], json!([{"bearer": []}]));
    for path in [
        "/a2a/echo",
        "/v1/chat/completions",
        "/v1/ui/echo",
        "/v1/ag-ui/echo",
    ] {
        let r = client
            .post(server.at(path))
            .json(&json!({}))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 401, "{path}");
    }
    // Starting a run without the token does nothing.
    let r = client
        .post(server.at("/v1/runs"))
        .json(&json!({"input": "hi"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    server.shut_down().await;
}

#[tokio::test]
async fn beyond_loopback_the_server_refuses_to_start_without_a_token() {
    let (store, _dir, _) = sqlite().await;
    let server = Server::builder(Runtime::new().store(store.clone()))
        .agent(echo())
        .build()
        .unwrap();
    let err = server
        .check_bind("0.0.0.0:7777".parse().unwrap())
        .unwrap_err();
    assert!(matches!(err, ServerError::NoToken(_)));
    assert!(err.to_string().contains("without a token"), "{err}");
    assert!(server.check_bind("127.0.0.1:7777".parse().unwrap()).is_ok());
    assert!(server.check_bind("[::1]:7777".parse().unwrap()).is_ok());
    let with = with_token(store, "t");
    assert!(with.check_bind("0.0.0.0:7777".parse().unwrap()).is_ok());

    let err = Server::builder(Runtime::new())
        .agent(echo())
        .build()
        .unwrap_err();
    assert!(matches!(err, ServerError::NoStore), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_token_only_requests_addressed_to_localhost_are_served() {
    let (store, _dir, _) = sqlite().await;
    let server = TestServer::start(server_on(store, Duration::from_secs(30))).await;
    let client = reqwest::Client::new();
    let r = client
        .get(server.at("/v1/runs"))
        .header("Host", "attacker.example")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 403);
    let body: serde_json::Value = r.json().await.unwrap();
    assert_eq!(body["code"], "forbidden_host");
    let port = server.url.rsplit(':').next().unwrap().to_owned();
    let r = client
        .get(server.at("/v1/runs"))
        .header("Host", format!("localhost:{port}"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    server.shut_down().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversize_bodies_and_headers_and_wrong_requests_get_json_errors() {
    let (store, _dir, _) = sqlite().await;
    let server = TestServer::start(server_on(store, Duration::from_secs(30))).await;
    // A connection per request: a server that refuses a body it has not read closes the
    // connection after its answer, and a pooled client may write its next request into it.
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .build()
        .unwrap();
    let json_of = |r: reqwest::Response| async move {
        let status = r.status().as_u16();
        let ct = r.headers()["content-type"].to_str().unwrap().to_owned();
        assert_eq!(ct, "application/json");
        (status, r.json::<serde_json::Value>().await.unwrap())
    };

    let big = "x".repeat(3 * 1024 * 1024);
    let r = client
        .post(server.at("/v1/runs"))
        .json(&json!({"input": big}))
        .send()
        .await
        .unwrap();
    let (status, body) = json_of(r).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (413, Some("payload_too_large"))
    );

    let r = client
        .get(server.at("/v1/runs"))
        .header("X-Padding", "y".repeat(40 * 1024))
        .send()
        .await
        .unwrap();
    let (status, body) = json_of(r).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (431, Some("headers_too_large"))
    );

    let r = client
        .post(server.at("/v1/runs"))
        .header("Content-Type", "text/plain")
        .body(r#"{"input": "hi"}"#)
        .send()
        .await
        .unwrap();
    let (status, body) = json_of(r).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (415, Some("unsupported_media_type"))
    );

    let r = client
        .post(server.at("/v1/runs"))
        .header("Content-Type", "application/json")
        .body("{not json")
        .send()
        .await
        .unwrap();
    let (status, body) = json_of(r).await;
    assert_eq!((status, body["code"].as_str()), (400, Some("bad_request")));

    let (status, body) = json_of(client.get(server.at("/v2/nothing")).send().await.unwrap()).await;
    assert_eq!((status, body["code"].as_str()), (404, Some("not_found")));
    let (status, body) = json_of(client.delete(server.at("/v1/runs")).send().await.unwrap()).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (405, Some("method_not_allowed"))
    );
    server.shut_down().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cors_is_closed_unless_origins_are_given() {
    let (store, _dir, _) = sqlite().await;
    let closed = TestServer::start(server_on(store.clone(), Duration::from_secs(30))).await;
    let open = TestServer::start(
        Server::builder(Runtime::new().store(store))
            .agent(echo())
            .cors_origins(["https://app.example"])
            .build()
            .unwrap(),
    )
    .await;
    let client = reqwest::Client::new();
    let preflight = |url: String, origin: &'static str| {
        client
            .request(reqwest::Method::OPTIONS, url)
            .header("Origin", origin)
            .header("Access-Control-Request-Method", "POST")
            .header("Access-Control-Request-Headers", "content-type")
            .send()
    };
    let r = preflight(closed.at("/v1/runs"), "https://app.example")
        .await
        .unwrap();
    assert!(r.headers().get("access-control-allow-origin").is_none());
    let r = preflight(open.at("/v1/runs"), "https://app.example")
        .await
        .unwrap();
    assert_eq!(
        r.headers()["access-control-allow-origin"],
        "https://app.example"
    );
    let r = preflight(open.at("/v1/runs"), "https://evil.example")
        .await
        .unwrap();
    assert!(r.headers().get("access-control-allow-origin").is_none());
    closed.shut_down().await;
    open.shut_down().await;
}
