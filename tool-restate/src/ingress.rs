//! Requests to handlers through the Restate ingress: what the client, a
//! step entering its fence, and the rule store send.

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::error::RestateError;

/// The ingress at one address, and the HTTP client that reaches it.
#[derive(Debug, Clone)]
pub(crate) struct Ingress {
    url: String,
    http: reqwest::Client,
}

impl Ingress {
    /// The ingress at `url` (`http://host:8080`), reached with `http`.
    pub(crate) fn new(url: impl Into<String>, http: reqwest::Client) -> Self {
        Ingress {
            url: url.into().trim_end_matches('/').to_owned(),
            http,
        }
    }

    /// Its address.
    pub(crate) fn url(&self) -> &str {
        &self.url
    }

    /// The HTTP client (for the admin API beside it).
    pub(crate) fn http(&self) -> &reqwest::Client {
        &self.http
    }

    /// Calls `handler` of the object `service` keyed `key` with `body` (a
    /// handler without input takes none), and reads its answer; a refusal
    /// is [`RestateError::Refused`] with the handler's status and message.
    pub(crate) async fn post<B: Serialize, T: DeserializeOwned>(
        &self,
        service: &str,
        key: &str,
        handler: &str,
        body: Option<&B>,
    ) -> Result<T, RestateError> {
        let url = format!("{}/{service}/{}/{handler}", self.url, path_segment(key));
        let mut request = self.http.post(&url);
        if let Some(body) = body {
            request = request.json(body);
        }
        let response = request.send().await.map_err(RestateError::Http)?;
        let status = response.status();
        if status.is_success() {
            return response.json::<T>().await.map_err(RestateError::Http);
        }
        let text = response.text().await.unwrap_or_default();
        // The ingress answers a handler's terminal error as {"message": ...}.
        let message = serde_json::from_str::<serde_json::Value>(&text)
            .ok()
            .and_then(|body| body.get("message")?.as_str().map(str::to_owned))
            .unwrap_or(text);
        Err(RestateError::Refused {
            status: status.as_u16(),
            message,
        })
    }
}

/// `key` as one segment of an ingress path.
fn path_segment(key: &str) -> String {
    let mut out = String::with_capacity(key.len());
    for byte in key.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.' | b'~') {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}
