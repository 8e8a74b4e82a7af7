//! The run inspector: a web page over the run API, served at `/`. Its files are part of the
//! binary (nothing to build or fetch at run time); the page reads and acts only through the
//! endpoints every other client uses, with the same token.

use axum::Router;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

const INDEX: &str = include_str!("../inspector/index.html");
const APP_JS: &str = include_str!("../inspector/app.js");
const APP_CSS: &str = include_str!("../inspector/app.css");

/// What the page may load and where it may connect: this server only (images and audio of
/// runs' messages as data or blob URLs of bytes read from it), no inline script, no frames (so
/// no other site can overlay it).
const POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
    connect-src 'self'; img-src 'self' data: blob:; media-src 'self' data: blob:; \
    base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

fn asset(body: &'static str, content_type: &'static str) -> Response {
    let mut response = body.into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(POLICY),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    response
}

/// The page's routes: `/` and its two files under `/inspector/`.
pub(crate) fn routes<S: Clone + Send + Sync + 'static>() -> Router<S> {
    Router::new()
        .route(
            "/",
            get(|| async { asset(INDEX, "text/html; charset=utf-8") }),
        )
        .route(
            "/inspector/app.js",
            get(|| async { asset(APP_JS, "text/javascript; charset=utf-8") }),
        )
        .route(
            "/inspector/app.css",
            get(|| async { asset(APP_CSS, "text/css; charset=utf-8") }),
        )
}

/// True for the paths of the page itself, which hold no data and are served without a token
/// (the page asks for one and sends it with every request it makes).
pub(crate) fn is_public(path: &str) -> bool {
    matches!(path, "/" | "/inspector/app.js" | "/inspector/app.css")
}
