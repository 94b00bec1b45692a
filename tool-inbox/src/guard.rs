//! What every response carries and every request must pass before its
//! handler: security headers, the `Origin` check, and authentication.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse as _, Response};

use crate::api::{Shared, error_response};
use crate::auth::{Authenticate, RequestHead};

/// The page's policy: its own script and style only, no framing.
const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'none'; base-uri 'none'; frame-ancestors 'none'";

/// Adds the security headers to every response.
pub(crate) async fn security_headers(request: Request, next: Next) -> Response {
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    let set = [
        (header::CONTENT_SECURITY_POLICY, CONTENT_SECURITY_POLICY),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::REFERRER_POLICY, "no-referrer"),
        (header::CACHE_CONTROL, "no-store"),
    ];
    for (name, value) in set {
        // A page with a policy of its own (a decision link's) keeps it.
        if !headers.contains_key(&name) {
            headers.insert(name, HeaderValue::from_static(value));
        }
    }
    response
}

/// Whether `origin` is the inbox's own (the request's `Host`) or one the
/// application allowed. A request without `Origin` is not a browser's
/// cross-site request and passes.
pub(crate) fn origin_allowed(headers: &HeaderMap, allowed: &[String]) -> bool {
    let Some(origin) = headers.get(header::ORIGIN) else {
        return true;
    };
    let Ok(origin) = origin.to_str() else {
        return false;
    };
    if allowed.iter().any(|a| a == origin) {
        return true;
    }
    let host = headers.get(header::HOST).and_then(|h| h.to_str().ok());
    let own_host = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"));
    matches!((own_host, host), (Some(o), Some(h)) if o.eq_ignore_ascii_case(h))
}

/// Refuses a foreign `Origin` (403), then authenticates (401), and gives
/// the handler the principal as a request extension.
pub(crate) async fn admit<A: Authenticate>(
    State(shared): State<Arc<Shared<A>>>,
    mut request: Request,
    next: Next,
) -> Response {
    if !origin_allowed(request.headers(), &shared.options.allowed_origins) {
        shared.refusals.foreign_origin();
        return error_response(
            StatusCode::FORBIDDEN,
            "foreign_origin",
            "requests from this Origin are refused: the inbox serves its own page and the origins the application allowed",
        );
    }
    let peer = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|info| info.0);
    let head = RequestHead {
        headers: request.headers(),
        peer,
    };
    match shared.auth.authenticate(&head).await {
        Ok(principal) => {
            request.extensions_mut().insert(principal);
            next.run(request).await
        }
        Err(refused) => {
            shared.refusals.unauthenticated();
            let mut response = error_response(
                StatusCode::UNAUTHORIZED,
                "unauthenticated",
                &refused.to_string(),
            );
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            response.into_response()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(origin: &str, host: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(header::ORIGIN, HeaderValue::from_str(origin).unwrap());
        headers.insert(header::HOST, HeaderValue::from_str(host).unwrap());
        headers
    }

    #[test]
    fn own_origin_and_allowed_ones_pass() {
        assert!(origin_allowed(
            &with("http://127.0.0.1:8080", "127.0.0.1:8080"),
            &[]
        ));
        assert!(origin_allowed(&HeaderMap::new(), &[]));
        let allowed = ["https://ops.example.com".to_owned()];
        assert!(origin_allowed(
            &with("https://ops.example.com", "inbox:80"),
            &allowed
        ));
    }

    #[test]
    fn foreign_origin_is_refused() {
        assert!(!origin_allowed(
            &with("http://evil.example", "127.0.0.1:8080"),
            &[]
        ));
        assert!(!origin_allowed(&with("null", "127.0.0.1:8080"), &[]));
    }
}
