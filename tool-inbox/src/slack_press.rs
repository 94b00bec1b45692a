//! The handler of Slack's interactivity requests (`POST /slack/actions`):
//! a press checked against Slack's signature, read, mapped to a principal
//! and decided through the API's own decision ([`crate::slack`] says what
//! a press is and signs).

use std::sync::Arc;
use std::time::SystemTime;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Json, Response};
use serde::Deserialize;
use serde_json::json;
use tool_core::Excerpt;
use tool_runtime::store::{AuditEntry, AuditKind};

use crate::api::{DecisionBody, Shared};
use crate::auth::{Action, Authenticate};
use crate::slack::{APPROVE_ACTION_ID, DECLINE_ACTION_ID, SlackUser};

/// What of a `block_actions` payload the endpoint reads.
#[derive(Debug, Deserialize)]
struct Payload {
    #[serde(rename = "type")]
    kind: String,
    user: SlackUser,
    #[serde(default)]
    team: Option<Team>,
    #[serde(default)]
    actions: Vec<PressedButton>,
}

#[derive(Debug, Deserialize)]
struct Team {
    id: String,
}

#[derive(Debug, Deserialize)]
struct PressedButton {
    action_id: String,
    #[serde(default)]
    value: Option<String>,
}

/// A button's value: the call and the version it showed.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ButtonValue {
    call_id: String,
    digest: String,
}

/// The form Slack posts: its payload as JSON.
#[derive(Debug, Deserialize)]
struct Form {
    payload: String,
}

/// `POST /slack/actions`.
pub(crate) async fn actions<A: Authenticate>(
    State(shared): State<Arc<Shared<A>>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let Some(slack) = shared.slack.as_ref() else {
        return StatusCode::NOT_FOUND.into_response();
    };
    if let Err(why) = slack.verify(&headers, &body, SystemTime::now()) {
        tracing::warn!(why, "a request to the Slack endpoint was refused");
        return answer(
            StatusCode::UNAUTHORIZED,
            &format!("not a request from Slack: {why}"),
        );
    }
    let payload = serde_urlencoded::from_bytes::<Form>(&body)
        .map_err(|e| e.to_string())
        .and_then(|form| serde_json::from_str::<Payload>(&form.payload).map_err(|e| e.to_string()));
    let mut payload = match payload {
        Ok(payload) if payload.kind == "block_actions" => payload,
        Ok(payload) => {
            return answer(
                StatusCode::OK,
                &format!("ignored: a {:?} payload", Excerpt::of(&payload.kind)),
            );
        }
        Err(why) => {
            return answer(
                StatusCode::BAD_REQUEST,
                &format!("the payload does not read: {why}"),
            );
        }
    };
    if payload.user.team_id.is_none() {
        payload.user.team_id = payload.team.map(|team| team.id);
    }
    let Some(button) = payload.actions.first() else {
        return answer(StatusCode::BAD_REQUEST, "no action pressed");
    };
    let action = match button.action_id.as_str() {
        APPROVE_ACTION_ID => Action::Approve,
        DECLINE_ACTION_ID => Action::Decline,
        other => {
            return answer(
                StatusCode::OK,
                &format!("ignored: action {:?}", Excerpt::of(other)),
            );
        }
    };
    let value = button
        .value
        .as_deref()
        .map(serde_json::from_str::<ButtonValue>);
    let Some(Ok(value)) = value else {
        return answer(
            StatusCode::BAD_REQUEST,
            "the button's value is not {\"callId\", \"digest\"}",
        );
    };
    let Some(principal) = slack.principal(&payload.user) else {
        let tool_id = match shared.runtime.inbox().stored(&value.call_id).await {
            Ok(Some(stored)) => stored.call.head.tool_id,
            _ => String::new(),
        };
        let attempt = AuditEntry::new(AuditKind::Refused, &value.call_id, tool_id, action.as_str())
            .digest(&value.digest)
            .reason(format!(
                "slack user {} is not mapped to a principal",
                Excerpt::of(&payload.user.id)
            ));
        if let Err(error) = shared.runtime.inbox().append_audit(attempt).await {
            tracing::error!(%error, "a refused Slack action was not recorded");
        }
        return answer(StatusCode::FORBIDDEN, "you may not decide this call");
    };
    let body = DecisionBody::of(value.digest, None);
    match shared.decide(&principal, &value.call_id, action, body).await {
        Ok(decided) => (StatusCode::OK, Json(json!({ "text": format!("{} {}: {}", principal.id(), action.as_str(), decided["status"].as_str().unwrap_or("done")), "decision": decided }))).into_response(),
        Err(refused) => {
            let (status, said) = refused.status_and_message();
            answer(status, &said)
        }
    }
}

/// An answer Slack shows the presser (`text`).
fn answer(status: StatusCode, text: &str) -> Response {
    (
        status,
        Json(json!({ "response_type": "ephemeral", "text": text })),
    )
        .into_response()
}
