//! The bytes of the images, documents and audio in runs' messages, by digest: recorded events
//! hold media by reference (SHA-256 and size), and a client reads the bytes here.

use crate::error::{ApiError, ErrorBody};
use crate::state::AppState;
use agentry::content::{BlobDigest, media_type_of};
use axum::extract::{Path, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};

/// A media part's bytes, by the SHA-256 that events and messages name it by. Its type is read
/// from its bytes (`application/octet-stream` when they do not say); the same digest is always
/// the same bytes, so clients may cache it for good.
#[utoipa::path(
    get, path = "/v1/media/{sha256}", tag = "runs",
    params(("sha256" = String, Path, description = "The bytes' SHA-256, 64 hex digits")),
    responses(
        (status = 200, description = "The bytes", content_type = "application/octet-stream"),
        (status = 400, body = ErrorBody), (status = 404, body = ErrorBody),
    ),
)]
pub(crate) async fn media(
    State(state): State<AppState>,
    Path(sha256): Path<String>,
) -> Result<Response, ApiError> {
    let digest: BlobDigest = sha256
        .parse()
        .map_err(|e: agentry::content::BadDigest| ApiError::bad_request(e.to_string()))?;
    let blob = state
        .store
        .blob(digest)
        .await?
        .and_then(|b| b.bytes().cloned())
        .ok_or_else(|| ApiError::not_found(format!("no media sha256:{digest} in the store")))?;
    Ok((
        [
            (header::CONTENT_TYPE, media_type_of(&blob, None)),
            (
                header::CACHE_CONTROL,
                "private, max-age=31536000, immutable",
            ),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        ],
        blob,
    )
        .into_response())
}
