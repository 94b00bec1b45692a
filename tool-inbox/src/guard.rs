//! What every response carries and every request must pass before its
//! handler: security headers, the `Origin` check, and authentication.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse as _, Response};
use tool_core::Excerpt;
use tool_runtime::Runtime;
use tool_runtime::store::{AuditEntry, AuditKind};

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
        headers.insert(name, HeaderValue::from_static(value));
    }
    response
}

/// Whether `origin` is the inbox's own (the request's `Host`) or one the
/// application allowed. A request without `Origin` is not a browser's
/// cross-site request and passes.
fn origin_allowed(headers: &HeaderMap, allowed: &[String]) -> bool {
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
        let origin = request.headers().get(header::ORIGIN);
        let origin = origin
            .and_then(|o| o.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        if request.method() == Method::POST {
            audit_foreign_origin(&shared.runtime, request.uri().path().to_owned(), origin).await;
        }
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

/// Records a decision attempt from a foreign `Origin` (a POST to
/// `.../api/items/{callId}/{action}`, at `path`) in the audit log, against
/// the call if it exists; other refused requests decide nothing and are
/// not logged.
async fn audit_foreign_origin(runtime: &Runtime, path: String, origin: String) {
    let mut segments = path.rsplit('/');
    let (Some(action), Some(call_id)) = (segments.next(), segments.next()) else {
        return;
    };
    let Ok(call_id) = percent_decoded(call_id) else {
        return;
    };
    let Ok(Some(stored)) = runtime.inbox().stored(&call_id).await else {
        return;
    };
    let attempt = AuditEntry::new(
        AuditKind::Refused,
        &call_id,
        &stored.call.head.tool_id,
        action,
    )
    .reason(format!("foreign Origin {:?}", Excerpt::of(&origin)));
    if let Err(error) = runtime.inbox().append_audit(attempt).await {
        tracing::error!(%error, "a refused attempt was not logged");
    }
}

/// `segment` of a path with its `%XX` escapes decoded (an agent's call id
/// holds a `/`, sent as `%2F`).
fn percent_decoded(segment: &str) -> Result<String, std::string::FromUtf8Error> {
    let bytes = segment.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok());
        match (bytes[i], hex.and_then(|h| u8::from_str_radix(h, 16).ok())) {
            (b'%', Some(byte)) => {
                decoded.push(byte);
                i += 3;
            }
            (byte, _) => {
                decoded.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8(decoded)
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
    fn path_segments_are_percent_decoded() {
        assert_eq!(percent_decoded("run-1%2Fcall-2").unwrap(), "run-1/call-2");
        assert_eq!(percent_decoded("100%").unwrap(), "100%");
        assert!(percent_decoded("%ff").is_err());
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
