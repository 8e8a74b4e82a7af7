//! The transcript server itself: it delivers every chunk boundary to the client.

use super::*;
use crate::transcript_server::{Reply, TranscriptServer, split_at_bytes};

#[tokio::test]
async fn the_server_delivers_every_chunk_boundary_to_the_client() {
    let chunks = ["data: a", "bc\n", "\n", "data: \u{e9}"];
    let body: Vec<u8> = chunks.concat().into_bytes();
    // A boundary inside `é` too.
    let last = body.len() - 1;
    let server = TranscriptServer::one(Reply::sse(split_at_bytes(&body, &[7, 10, 11, last]))).await;

    let response = reqwest::get(&server.url).await.expect("a response");
    let mut frames = response.bytes_stream();
    let mut got = Vec::new();
    let mut ends = Vec::new();
    while let Some(frame) = frames.next().await {
        got.extend_from_slice(&frame.expect("a frame"));
        ends.push(got.len());
    }
    assert_eq!(got, body);
    for boundary in [7, 10, 11, last] {
        assert!(
            ends.contains(&boundary),
            "no read ended at byte {boundary}: {ends:?}"
        );
    }
}
