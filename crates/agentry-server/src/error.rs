//! What a request that fails gets: a status and a JSON body with a code and a message that
//! says what was wrong and what to do; never a stack trace.

use agentry::StoreError;
use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use utoipa::ToSchema;

/// The body of every error response.
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorBody {
    /// What went wrong, as a stable word: `not_found`, `bad_request`, `unauthorized`,
    /// `conflict`, `leased`, `payload_too_large`, `unsupported_media_type`, `internal`, ...
    pub code: &'static str,
    /// What went wrong and what to do, for a person.
    pub message: String,
}

/// A failed request: its status, code and message.
#[derive(Debug)]
pub struct ApiError {
    status: StatusCode,
    body: ErrorBody,
}

impl ApiError {
    /// An error with this status, code and message.
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            status,
            body: ErrorBody {
                code,
                message: message.into(),
            },
        }
    }

    /// 400: the request itself is wrong.
    pub fn bad_request(message: impl Into<String>) -> Self {
        ApiError::new(StatusCode::BAD_REQUEST, "bad_request", message)
    }

    /// 404: no such thing.
    pub fn not_found(message: impl Into<String>) -> Self {
        ApiError::new(StatusCode::NOT_FOUND, "not_found", message)
    }

    /// 409: the thing is not in a state that allows this.
    pub fn conflict(message: impl Into<String>) -> Self {
        ApiError::new(StatusCode::CONFLICT, "conflict", message)
    }

    /// 500: the server failed; the message says where, not how (no traces).
    pub fn internal(message: impl Into<String>) -> Self {
        ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", message)
    }

    /// The status.
    pub fn status(&self) -> StatusCode {
        self.status
    }

    /// The code.
    pub fn code(&self) -> &'static str {
        self.body.code
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.body.message
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.status, Json(self.body)).into_response()
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        match &e {
            StoreError::NotFound { .. } => ApiError::not_found(e.to_string()),
            StoreError::Leased { .. } => {
                ApiError::new(StatusCode::CONFLICT, "leased", e.to_string())
            }
            StoreError::Conflict { .. } | StoreError::OutOfOrder { .. } => {
                ApiError::conflict(e.to_string())
            }
            _ => {
                tracing::error!(error = %e, "the run store failed");
                ApiError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "store_unavailable",
                    format!("the run store failed: {e}"),
                )
            }
        }
    }
}

impl From<agentry::Error> for ApiError {
    fn from(e: agentry::Error) -> Self {
        match e {
            agentry::Error::Store(store) => store.into(),
            agentry::Error::Resume { .. } | agentry::Error::Session { .. } => {
                ApiError::conflict(e.to_string())
            }
            other => ApiError::internal(other.to_string()),
        }
    }
}
