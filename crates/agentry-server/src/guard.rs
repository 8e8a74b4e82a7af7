//! What every request passes before a handler: the bearer token, the host it was sent to, and
//! the size of its headers.

use crate::error::ApiError;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::sync::Arc;
use subtle::ConstantTimeEq;

/// How requests are let in.
#[derive(Clone, Debug)]
pub(crate) struct Guard {
    /// The bearer token every request but `/healthz` must carry, when one is set.
    pub(crate) token: Option<Arc<[u8]>>,
    /// Without a token on a loopback address: only requests addressed to a loopback host
    /// (`localhost`, `127.0.0.1`, `[::1]`) are served, so a web page that points a name of its
    /// own at this machine (DNS rebinding) reaches nothing.
    pub(crate) loopback_hosts_only: bool,
    /// The most bytes of request headers, names and values together.
    pub(crate) max_header_bytes: usize,
}

impl Guard {
    fn check(&self, path: &str, headers: &HeaderMap) -> Result<(), ApiError> {
        let size: usize = headers
            .iter()
            .map(|(name, value)| name.as_str().len() + value.len())
            .sum();
        if size > self.max_header_bytes {
            return Err(ApiError::new(
                StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
                "headers_too_large",
                format!(
                    "the request's headers are {size} bytes; this server takes at most {} \
                     (server.max_header_bytes)",
                    self.max_header_bytes
                ),
            ));
        }
        if self.loopback_hosts_only && !headers.get(header::HOST).is_some_and(is_loopback_host) {
            return Err(ApiError::new(
                StatusCode::FORBIDDEN,
                "forbidden_host",
                "this server answers requests addressed to localhost only (it has no token); \
                 give it a token (AGENTRY_SERVER_TOKEN) to serve other names",
            ));
        }
        // Health, A2A agent cards (what an agent is and how to call it, which A2A clients
        // read before they authenticate) and the inspector's page (no data) are public.
        if path == "/healthz"
            || path.ends_with("/.well-known/agent-card.json")
            || crate::inspector::is_public(path)
        {
            return Ok(());
        }
        if let Some(token) = &self.token {
            let given = headers
                .get(header::AUTHORIZATION)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.strip_prefix("Bearer "))
                .map(str::as_bytes);
            let ok = given.is_some_and(|g| bool::from(g.ct_eq(token)));
            if !ok {
                let message = if given.is_some() {
                    "the bearer token is wrong"
                } else {
                    "this server needs `Authorization: Bearer <token>` (its token is set with \
                     AGENTRY_SERVER_TOKEN or server.token)"
                };
                return Err(ApiError::new(
                    StatusCode::UNAUTHORIZED,
                    "unauthorized",
                    message,
                ));
            }
        }
        Ok(())
    }
}

/// True for a `Host` header naming a loopback address.
fn is_loopback_host(host: &header::HeaderValue) -> bool {
    let Ok(host) = host.to_str() else {
        return false;
    };
    let name = match host.strip_prefix('[') {
        Some(rest) => rest.split(']').next().unwrap_or(""),
        None => host.rsplit_once(':').map_or(host, |(name, _)| name),
    };
    name.eq_ignore_ascii_case("localhost")
        || name
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// The middleware.
pub(crate) async fn guard(State(guard): State<Guard>, request: Request, next: Next) -> Response {
    match guard.check(request.uri().path(), request.headers()) {
        Ok(()) => next.run(request).await,
        Err(e) => {
            let mut response = e.into_response();
            if response.status() == StatusCode::UNAUTHORIZED {
                response.headers_mut().insert(
                    header::WWW_AUTHENTICATE,
                    header::HeaderValue::from_static("Bearer"),
                );
            }
            response
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_hosts_are_told_apart_from_other_names() {
        for host in [
            "localhost:7777",
            "127.0.0.1:7777",
            "[::1]:7777",
            "LOCALHOST",
            "127.0.0.1",
        ] {
            assert!(is_loopback_host(&host.parse().unwrap()), "{host}");
        }
        for host in [
            "evil.example:7777",
            "10.0.0.1:7777",
            "localhost.evil.example",
            "[fe80::1]:80",
        ] {
            assert!(!is_loopback_host(&host.parse().unwrap()), "{host}");
        }
    }
}
