//! Calls and decisions through the Restate ingress.

use serde::Serialize;
use serde::de::DeserializeOwned;
use tool_runtime::{CallOutcome, StoredCall};

use crate::document::{CallDocument, now_ms};
use crate::error::RestateError;
use crate::ingress::Ingress;
use crate::wire::{CallRequest, DecideRequest, Reply};

/// A client of the `ToolCalls` objects through a Restate ingress: what an
/// application (its agent loop, its inbox) calls instead of a `Runtime`.
///
/// ```no_run
/// use serde_json::json;
/// use tool_restate::{CallRequest, DecideRequest, RestateClient, WireDecision};
/// use tool_runtime::{CallOutcome, Decider, Principal};
///
/// # async fn run() -> Result<(), tool_restate::RestateError> {
/// let client = RestateClient::new("http://127.0.0.1:8080");
/// let waiting = client.call("c1", CallRequest::new("pay", json!({ "amount": 5 }))).await?;
/// assert!(matches!(waiting, CallOutcome::ApprovalRequired { .. }));
/// let stored = client.get("c1").await?.expect("stored");
/// let decider = Decider::new(Principal::new("alice"), stored.digest());
/// let done = client.decide("c1", DecideRequest::new(WireDecision::Approve).by(decider)).await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct RestateClient {
    ingress: Ingress,
    admin: Option<String>,
}

impl RestateClient {
    /// A client of the ingress at `ingress` (`http://host:8080`).
    pub fn new(ingress: impl Into<String>) -> Self {
        RestateClient {
            ingress: Ingress::new(ingress, reqwest::Client::new()),
            admin: None,
        }
    }

    /// Also reads the server's admin API at `admin` (`http://host:9070`),
    /// for [`waiting`](Self::waiting).
    #[must_use]
    pub fn admin(mut self, admin: impl Into<String>) -> Self {
        self.admin = Some(admin.into().trim_end_matches('/').to_owned());
        self
    }

    /// The calls waiting for a decision, by id, `limit` at most, those
    /// after the id `after` (the last of the previous page): what an inbox
    /// lists. Read from the Restate server's SQL introspection of the
    /// objects' state (the admin API), which sees every call without an
    /// index of its own to keep in step.
    pub async fn waiting(
        &self,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<StoredCall>, RestateError> {
        let admin = self.admin.as_deref().ok_or(RestateError::NoAdmin)?;
        // The document's own serialization of a pending state (serde
        // writes a struct's fields in order); each row is checked again
        // once parsed.
        let mut query = String::from(
            "SELECT service_key, value_utf8 FROM state
             WHERE service_name = 'ToolCalls' AND key = 'call'
               AND value_utf8 LIKE '%\"state\":{\"status\":\"pending\"}%'",
        );
        if let Some(after) = after {
            query.push_str(&format!(
                " AND service_key > '{}'",
                after.replace('\'', "''")
            ));
        }
        query.push_str(&format!(" ORDER BY service_key LIMIT {limit}"));
        let response = self
            .ingress
            .http()
            .post(format!("{admin}/query"))
            .header("accept", "application/json")
            .json(&serde_json::json!({ "query": query }))
            .send()
            .await
            .map_err(RestateError::Http)?;
        let status = response.status();
        if !status.is_success() {
            return Err(RestateError::Refused {
                status: status.as_u16(),
                message: response.text().await.unwrap_or_default(),
            });
        }
        let body: serde_json::Value = response.json().await.map_err(RestateError::Http)?;
        let rows = body["rows"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default();
        let mut waiting = Vec::with_capacity(rows.len());
        let now_ms = now_ms();
        for row in rows {
            let call_id = row["service_key"].as_str().unwrap_or_default();
            let text = row["value_utf8"].as_str().unwrap_or_default();
            let document = serde_json::from_str::<CallDocument>(text).map_err(|error| {
                RestateError::Document {
                    call_id: call_id.to_owned(),
                    error,
                }
            })?;
            // An expired call is declined by its object's timer (`expire`):
            // nobody decides it any more.
            if document.outcome().is_none() && !document.call.expired(now_ms) {
                waiting.push(document.into_stored());
            }
        }
        Ok(waiting)
    }

    /// Makes the call `call_id`: its outcome, or what it waits for. Made
    /// again, a settled call answers its recorded outcome; a waiting one is
    /// refused (409).
    pub async fn call(
        &self,
        call_id: &str,
        request: CallRequest,
    ) -> Result<CallOutcome, RestateError> {
        self.post::<_, Reply>(call_id, "call", Some(&request))
            .await
            .and_then(|reply| reply.into_outcome(call_id))
    }

    /// Decides the waiting call `call_id`; refused (403, 404, 409) as the
    /// runtime refuses it, and [`RestateError::AlreadyDecided`] (with the
    /// call's outcome) when another decision came first.
    pub async fn decide(
        &self,
        call_id: &str,
        request: DecideRequest,
    ) -> Result<CallOutcome, RestateError> {
        self.post::<_, Reply>(call_id, "decide", Some(&request))
            .await
            .and_then(|reply| reply.into_outcome(call_id))
    }

    /// The outcome of the call `call_id` once it settles: a background
    /// task's, after it ran (as [`Runtime::wait`](tool_runtime::Runtime::wait)).
    /// Refused (409) while the call waits for a decision, 404 for no call.
    pub async fn wait(&self, call_id: &str) -> Result<CallOutcome, RestateError> {
        self.post::<(), Reply>(call_id, "settle", None)
            .await
            .and_then(|reply| reply.into_outcome(call_id))
    }

    /// The call `call_id` as stored (waiting or settled); `None` for a call
    /// never stored.
    pub async fn get(&self, call_id: &str) -> Result<Option<StoredCall>, RestateError> {
        self.post::<(), Option<CallDocument>>(call_id, "get", None)
            .await
            .map(|document| document.map(CallDocument::into_stored))
    }

    async fn post<B: Serialize, T: DeserializeOwned>(
        &self,
        call_id: &str,
        handler: &str,
        body: Option<&B>,
    ) -> Result<T, RestateError> {
        self.ingress.post("ToolCalls", call_id, handler, body).await
    }
}

impl Reply {
    fn into_outcome(self, call_id: &str) -> Result<CallOutcome, RestateError> {
        match self {
            Reply::Outcome(answer) => Ok(CallOutcome::from(answer)),
            Reply::AlreadyDecided(answer) => Err(RestateError::AlreadyDecided {
                call_id: call_id.to_owned(),
                outcome: Box::new(CallOutcome::from(answer)),
            }),
        }
    }
}
