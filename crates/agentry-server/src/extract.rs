//! Extractors whose rejections are the API's JSON errors.

use crate::error::ApiError;
use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::StatusCode;
use axum::http::request::Parts;
use serde::de::DeserializeOwned;

/// A JSON request body (`Content-Type: application/json`), or a JSON error saying what is
/// wrong with it.
#[derive(Debug)]
pub(crate) struct JsonBody<T>(pub(crate) T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequest<S> for JsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        match axum::Json::<T>::from_request(req, state).await {
            Ok(axum::Json(value)) => Ok(JsonBody(value)),
            Err(rejection) => Err(json_error(&rejection)),
        }
    }
}

fn json_error(rejection: &JsonRejection) -> ApiError {
    // Malformed JSON and JSON of the wrong shape are both a bad request.
    let status = match rejection.status() {
        s @ (StatusCode::PAYLOAD_TOO_LARGE | StatusCode::UNSUPPORTED_MEDIA_TYPE) => s,
        _ => StatusCode::BAD_REQUEST,
    };
    let code = match status {
        StatusCode::PAYLOAD_TOO_LARGE => "payload_too_large",
        StatusCode::UNSUPPORTED_MEDIA_TYPE => "unsupported_media_type",
        _ => "bad_request",
    };
    let message = match status {
        StatusCode::PAYLOAD_TOO_LARGE => {
            "the request body is larger than this server takes (server.max_body)".to_owned()
        }
        StatusCode::UNSUPPORTED_MEDIA_TYPE => {
            "send the body as JSON, with `Content-Type: application/json`".to_owned()
        }
        _ => format!(
            "the request body is not what this endpoint takes: {}",
            rejection.body_text()
        ),
    };
    ApiError::new(status, code, message)
}

/// Query parameters, or a JSON error saying which one is wrong.
#[derive(Debug)]
pub(crate) struct QueryArgs<T>(pub(crate) T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequestParts<S> for QueryArgs<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        match axum::extract::Query::<T>::from_request_parts(parts, state).await {
            Ok(axum::extract::Query(value)) => Ok(QueryArgs(value)),
            Err(rejection) => Err(query_error(&rejection)),
        }
    }
}

fn query_error(rejection: &QueryRejection) -> ApiError {
    ApiError::bad_request(format!(
        "the query string is wrong: {}",
        rejection.body_text()
    ))
}
