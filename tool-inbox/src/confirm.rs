//! The confirmation page of a decision link (`GET /links/{token}`) and the
//! decision its button makes (`POST /links/{token}`): a page rendered on
//! the server, without script, whose `GET` never decides.

use std::fmt::Write as _;
use std::sync::Arc;

use axum::extract::rejection::FormRejection;
use axum::extract::{ConnectInfo, Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use axum::{Extension, Form};
use serde::Deserialize;
use serde_json::{Value, json};
use tool_runtime::store::{AuditEntry, AuditKind, AuditQuery};
use tool_runtime::{CallState, StoredCall};

use crate::api::{DecisionBody, Refused, Shared};
use crate::auth::{Action, Authenticate, RequestHead};
use crate::guard::origin_allowed;
use crate::links::{LinkAction, LinkClaims, millis};

/// The audit log's action of a link's use: its nonce in the detail.
const LINK_USED: &str = "link";

/// The page's policy: its form posts to itself, its style is the inbox's.
const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; style-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

/// `GET /links/{token}`: what the link would do, and a button to do it.
pub(crate) async fn open<A: Authenticate>(
    State(shared): State<Arc<Shared<A>>>,
    Path(token): Path<String>,
) -> Response {
    let claims = match checked(&shared, &token).await {
        Ok(claims) => claims,
        Err(page) => return page,
    };
    let principal = claims.principal();
    let stored = match current(&shared, &claims).await {
        Ok(stored) => stored,
        Err(page) => return page,
    };
    let view = serde_json::to_value(shared.view(&stored, &principal).await).unwrap_or_default();
    let verb = claims.action.as_str();
    let mut body = String::new();
    let _ = write!(
        body,
        "<h1>{} this call?</h1><p class=\"who\">As <strong>{}</strong>. Nothing happens until you press the button.</p>",
        capitalized(verb),
        escape(principal.id())
    );
    let _ = write!(
        body,
        "<dl><dt>Tool</dt><dd>{}</dd><dt>Call</dt><dd><code>{}</code></dd>",
        escape(
            view["tool"]["title"]
                .as_str()
                .or(view["tool"]["id"].as_str())
                .unwrap_or("")
        ),
        escape(&claims.call_id)
    );
    if let Some(requester) = view["requester"].as_str() {
        let _ = write!(body, "<dt>Asked by</dt><dd>{}</dd>", escape(requester));
    }
    let shown = serde_json::to_string_pretty(&view["input"]).unwrap_or_default();
    let _ = write!(
        body,
        "<dt>Arguments</dt><dd><pre>{}</pre></dd></dl>",
        escape(&shown)
    );
    body.push_str("<form method=\"post\">");
    if claims.action == LinkAction::Decline {
        body.push_str(
            "<label for=\"reason\">Reason (the model reads it)</label><textarea id=\"reason\" name=\"reason\" maxlength=\"2000\"></textarea>",
        );
    }
    let _ = write!(
        body,
        "<button type=\"submit\" class=\"{verb}\">{}</button></form>",
        capitalized(verb)
    );
    page(
        StatusCode::OK,
        &format!("{} {}", capitalized(verb), claims.call_id),
        &body,
    )
}

/// The form a link's page posts: a decline's reason.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct Confirmed {
    reason: Option<String>,
}

/// `POST /links/{token}`: the decision, once, by the link's principal.
pub(crate) async fn confirm<A: Authenticate>(
    State(shared): State<Arc<Shared<A>>>,
    Path(token): Path<String>,
    headers: HeaderMap,
    peer: Option<Extension<ConnectInfo<std::net::SocketAddr>>>,
    form: Result<Form<Confirmed>, FormRejection>,
) -> Response {
    if !origin_allowed(&headers, &shared.options.allowed_origins) {
        shared.refusals.foreign_origin();
        return message(
            StatusCode::FORBIDDEN,
            "Refused",
            "This request came from another site.",
        );
    }
    let claims = match checked(&shared, &token).await {
        Ok(claims) => claims,
        Err(page) => return page,
    };
    let principal = claims.principal();
    let head = RequestHead {
        headers: &headers,
        peer: peer.map(|Extension(ConnectInfo(peer))| peer),
    };
    let signed_in = shared.auth.authenticate(&head).await;
    let impostor = match &signed_in {
        Ok(someone) if someone.id() != principal.id() => Some(someone.id().to_owned()),
        Err(_) if shared.links_require_sign_in() => Some("nobody signed in".to_owned()),
        _ => None,
    };
    if let Some(who) = impostor {
        refuse(
            &shared,
            &claims,
            &format!("a link of {} used by {who}", principal.id()),
        )
        .await;
        return message(
            StatusCode::FORBIDDEN,
            "Not yours",
            &format!(
                "This link is {}'s: sign in as them to use it.",
                principal.id()
            ),
        );
    }
    let stored = match current(&shared, &claims).await {
        Ok(stored) => stored,
        Err(page) => return page,
    };
    match first_use(&shared, &claims, &stored).await {
        Ok(true) => {}
        Ok(false) => {
            refuse(&shared, &claims, "link used already").await;
            return message(
                StatusCode::GONE,
                "Used already",
                "This link was used already: each link decides once.",
            );
        }
        Err(refused) => return refused_page(refused),
    }
    let action = match claims.action {
        LinkAction::Approve => Action::Approve,
        LinkAction::Decline => Action::Decline,
    };
    let reason = form
        .ok()
        .and_then(|Form(confirmed)| confirmed.reason)
        .filter(|reason| !reason.trim().is_empty());
    let body = DecisionBody::of(claims.digest.clone(), reason);
    match shared
        .decide(&principal, &claims.call_id, action, body)
        .await
    {
        Ok(answer) => {
            let status = answer["status"].as_str().unwrap_or("decided");
            let said = match status {
                "approval_required" => {
                    "Your approval is counted; the call waits for the others it needs.".to_owned()
                }
                status => format!("Done: the call is {}.", status.replace('_', " ")),
            };
            message(StatusCode::OK, &capitalized(claims.action.as_str()), &said)
        }
        Err(refused) => refused_page(refused),
    }
}

/// The claims of `token` if this inbox's key signed it and it has not
/// expired; otherwise the page that says why (an expired link's attempt
/// in the audit log).
async fn checked<A: Authenticate>(shared: &Shared<A>, token: &str) -> Result<LinkClaims, Response> {
    let links = shared.links().ok_or_else(not_valid)?;
    let claims = links.verify(token).ok_or_else(not_valid)?;
    if claims.expired(millis(std::time::SystemTime::now())) {
        refuse(shared, &claims, "link expired").await;
        return Err(message(
            StatusCode::GONE,
            "Expired",
            "This link has expired: open the inbox to decide.",
        ));
    }
    Ok(claims)
}

fn not_valid() -> Response {
    message(
        StatusCode::NOT_FOUND,
        "Not a valid link",
        "This link is not one of this inbox's, or it was cut short.",
    )
}

/// The call `claims` is about, still waiting in the version the link was
/// made for; otherwise the page that says what became of it.
async fn current<A: Authenticate>(
    shared: &Shared<A>,
    claims: &LinkClaims,
) -> Result<StoredCall, Response> {
    let stored = match shared.runtime.inbox().stored(&claims.call_id).await {
        Ok(Some(stored)) => stored,
        Ok(None) => {
            return Err(message(
                StatusCode::NOT_FOUND,
                "Gone",
                "This call is no longer kept.",
            ));
        }
        Err(error) => return Err(refused_page(error.into())),
    };
    match &stored.state {
        CallState::Pending if stored.digest().as_str() == claims.digest => Ok(stored),
        CallState::Pending => {
            refuse(shared, claims, "stale or foreign digest").await;
            Err(message(
                StatusCode::CONFLICT,
                "Changed",
                "This call changed since the link was sent: open the inbox to decide on it as it is now.",
            ))
        }
        CallState::Running { .. } | CallState::Settled { .. } => {
            refuse(shared, claims, "decided already").await;
            Err(message(
                StatusCode::GONE,
                "Decided already",
                "This call was decided already.",
            ))
        }
    }
}

/// Records this use of the link and whether it is the first: of uses at
/// once, the one recorded first (smallest `seq`).
async fn first_use<A: Authenticate>(
    shared: &Shared<A>,
    claims: &LinkClaims,
    stored: &StoredCall,
) -> Result<bool, Refused> {
    let inbox = shared.runtime.inbox();
    let used = AuditEntry::new(
        AuditKind::Noted,
        &claims.call_id,
        &stored.call.head.tool_id,
        LINK_USED,
    )
    .principal(&claims.principal)
    .digest(&claims.digest)
    .detail(json!({ "nonce": claims.nonce, "action": claims.action.as_str() }));
    let mine = inbox.append_audit(used).await?;
    let log = inbox
        .audit(AuditQuery::all().call(&claims.call_id).limit(10_000))
        .await?;
    let first = log
        .iter()
        .filter(|entry| entry.kind == AuditKind::Noted && entry.action == LINK_USED)
        .find(|entry| {
            entry.detail.as_ref().and_then(|d| d.get("nonce"))
                == Some(&Value::from(claims.nonce.as_str()))
        })
        .map(|entry| entry.seq);
    Ok(first == Some(mine))
}

/// Records a refused use of the link.
async fn refuse<A: Authenticate>(shared: &Shared<A>, claims: &LinkClaims, reason: &str) {
    let tool_id = match shared.runtime.inbox().stored(&claims.call_id).await {
        Ok(Some(stored)) => stored.call.head.tool_id,
        _ => String::new(),
    };
    let attempt = AuditEntry::new(
        AuditKind::Refused,
        &claims.call_id,
        tool_id,
        claims.action.as_str(),
    )
    .principal(&claims.principal)
    .digest(&claims.digest)
    .reason(reason)
    .detail(json!({ "link": claims.nonce }));
    if let Err(error) = shared.runtime.inbox().append_audit(attempt).await {
        tracing::error!(%error, "a refused decision link was not recorded");
    }
}

fn refused_page(refused: Refused) -> Response {
    let (status, said) = refused.status_and_message();
    message(status, "Not done", &said)
}

fn message(status: StatusCode, title: &str, said: &str) -> Response {
    page(
        status,
        title,
        &format!(
            "<h1>{}</h1><p class=\"outcome\">{}</p>",
            escape(title),
            escape(said)
        ),
    )
}

fn page(status: StatusCode, title: &str, body: &str) -> Response {
    let html = format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><meta name=\"robots\" content=\"noindex\"><title>{}</title><link rel=\"stylesheet\" href=\"../inbox.css\"></head><body><main class=\"link\">{body}</main></body></html>",
        escape(title)
    );
    let mut response = (status, Html(html)).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONTENT_SECURITY_POLICY),
    );
    // A browser sends its form's `Origin` (checked) only under a policy
    // that lets it: `no-referrer` makes it `null`. The token in the URL
    // goes to the inbox's own origin only.
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
    response
}

fn capitalized(word: &str) -> String {
    let mut chars = word.chars();
    chars
        .next()
        .map(|first| first.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

/// `text` safe inside HTML text and attribute values.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_escaped_for_html() {
        assert_eq!(
            escape("<a href=\"x\">'&'</a>"),
            "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;"
        );
        assert_eq!(capitalized("approve"), "Approve");
    }
}
