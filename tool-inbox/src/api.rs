//! The JSON endpoints: list and read the calls waiting for a person, and
//! take their decisions, each item seen through its tool's display
//! transforms and the application's authorization.

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use axum::Extension;
use axum::Json;
use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use tool_core::transform::{CallValues, Phase, Target, TransformContext};
use tool_core::{Excerpt, Tool};
use tool_runtime::store::{AuditEntry, AuditKind, AuditQuery, PendingOrder, PendingQuery};
use tool_runtime::{
    Approvals, CallOutcome, CallState, Decider, Decision, Digest, PendingCall, PendingKind,
    Runtime, RuntimeError, StoredCall,
};

use crate::auth::{Action, Authenticate, Principal};
use crate::options::InboxOptions;

/// What every handler shares.
pub(crate) struct Shared<A> {
    pub(crate) runtime: Runtime,
    pub(crate) auth: A,
    pub(crate) options: InboxOptions,
    pub(crate) live: crate::live::Live,
    /// Requests refused before authentication, counted (never stored).
    pub(crate) refusals: crate::refusals::Refusals,
    /// The decision links this inbox honors, when it does.
    pub(crate) links: Option<crate::links::DecisionLinks>,
    /// Slack's button presses it turns into decisions, when it does.
    pub(crate) slack: Option<crate::slack::SlackActions>,
}

/// An error answer: `{"error": {"code": ..., "message": ...}}`.
pub(crate) fn error_response(status: StatusCode, code: &str, message: &str) -> Response {
    let body = json!({ "error": { "code": code, "message": message } });
    (status, Json(body)).into_response()
}

/// A refused request, as a handler returns it.
pub(crate) struct Refused {
    status: StatusCode,
    code: &'static str,
    message: String,
    /// The model-readable error of a value the tool's schema refused (its
    /// `validationErrors` locate each problem for the form).
    model_error: Option<Box<Value>>,
    /// For a late decision, what became of the call
    /// ([`status_of`]): `completed`, `declined`...
    recorded: Option<&'static str>,
}

impl Refused {
    pub(crate) fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Refused {
            status,
            code,
            message: message.into(),
            model_error: None,
            recorded: None,
        }
    }

    /// The answer for an item that does not exist or that the principal
    /// may not read: the same, so ids cannot be probed.
    fn not_found(call_id: &str) -> Self {
        Refused::new(
            StatusCode::NOT_FOUND,
            "not_found",
            format!("no pending item {:?}", Excerpt::of(call_id)),
        )
    }
}

impl Refused {
    /// Its status and what it says, for a page rather than JSON.
    pub(crate) fn status_and_message(self) -> (StatusCode, String) {
        (self.status, self.message)
    }

    /// The answer's `error` object: `code`, `message`, and `modelError` or
    /// `recorded` when there is one.
    fn body(self) -> Value {
        let mut error = json!({ "code": self.code, "message": self.message });
        if let Some(model_error) = self.model_error {
            error["modelError"] = *model_error;
        }
        if let Some(recorded) = self.recorded {
            error["recorded"] = json!(recorded);
        }
        error
    }
}

impl IntoResponse for Refused {
    fn into_response(self) -> Response {
        let status = self.status;
        (status, Json(json!({ "error": self.body() }))).into_response()
    }
}

impl From<JsonRejection> for Refused {
    fn from(rejection: JsonRejection) -> Self {
        Refused::new(rejection.status(), "invalid_body", rejection.body_text())
    }
}

impl From<QueryRejection> for Refused {
    fn from(rejection: QueryRejection) -> Self {
        Refused::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_query",
            rejection.body_text(),
        )
    }
}

/// The `limit` of a query, `default` when it gives none; refused unless
/// between 1 and `max`.
fn bounded_limit(limit: Option<usize>, default: usize, max: usize) -> Result<usize, Refused> {
    match limit.unwrap_or(default) {
        limit @ 1.. if limit <= max => Ok(limit),
        limit => Err(Refused::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_query",
            format!("limit must be between 1 and {max}, got {limit}"),
        )),
    }
}

impl From<RuntimeError> for Refused {
    fn from(error: RuntimeError) -> Self {
        let (status, code) = match &error {
            RuntimeError::UnknownCall { .. } => (StatusCode::NOT_FOUND, "not_found"),
            RuntimeError::Store(_) => (StatusCode::SERVICE_UNAVAILABLE, "store_unavailable"),
            RuntimeError::StaleDigest { .. } => (StatusCode::CONFLICT, "stale_digest"),
            RuntimeError::AlreadyDecided { .. } => (StatusCode::CONFLICT, "already_decided"),
            RuntimeError::SelfApproval { .. } => (StatusCode::FORBIDDEN, "self_approval"),
            RuntimeError::NotInGroup { .. } => (StatusCode::FORBIDDEN, "not_in_group"),
            RuntimeError::PrincipalRequired { .. } => (StatusCode::CONFLICT, "principal_required"),
            _ => (StatusCode::CONFLICT, "conflict"),
        };
        Refused::new(status, code, error.to_string())
    }
}

/// The kinds of calls a person decides (a background task waits for a
/// worker, not for a person).
fn for_a_person(kind: PendingKind) -> bool {
    matches!(
        kind,
        PendingKind::Approval | PendingKind::Suspended | PendingKind::Output
    )
}

/// An item as the inbox shows it: the call's values only as its tool's
/// display transforms show them.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ItemView {
    call_id: String,
    kind: PendingKind,
    tool: ToolView,
    /// The arguments as displayed (`null` when the transform shows nothing).
    input: Option<Value>,
    /// A suspension's payload as displayed.
    payload: Option<Value>,
    /// The schema of the resume data a suspension waits for.
    resume_schema: Option<Value>,
    /// The schema of a response (the tool's output schema).
    output_schema: Option<Value>,
    /// The schema of an edit (the tool's editable fields), for a call
    /// waiting for approval whose tool has some, when the principal may
    /// edit it.
    edit_schema: Option<Value>,
    /// The editable fields' raw values, beside the display projection
    /// (`input`), which an edit starts from; only with `editSchema`. A form
    /// filled from the display would send a masked or shortened value back
    /// as the new one.
    edit_values: Option<Value>,
    /// Why it was called: the last messages of the conversation the call
    /// was made in (an agent's run: the user's words, the model's text
    /// beside the call, earlier results as the transcript keeps them),
    /// newest last, bounded ([`context_of`]); empty for a direct call.
    context: Vec<Value>,
    /// Who asked for the call, when the call says.
    requester: Option<String>,
    /// When a call waiting for approval expires (milliseconds since the
    /// Unix epoch).
    expires_at_ms: Option<u64>,
    /// When the call started waiting (milliseconds since the Unix epoch).
    asked_at_ms: Option<u64>,
    /// For a call whose tool needs several approvers: how many, and who
    /// approved so far.
    approvals: Option<Approvals>,
    /// The item's digest, which a decision echoes: it names this version
    /// of this call, so a decision never lands on a call that changed.
    digest: String,
    /// The decisions this principal may take on it now (`approve`,
    /// `edit`, `decline`, `respond`, `resume`): what the application
    /// authorizes and the runtime's rules permit (no approval by a call's
    /// requester under separation of duties). The page shows these only;
    /// the server refuses the others anyway.
    actions: Vec<&'static str>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ToolView {
    id: String,
    title: Option<String>,
    description: Option<String>,
}

impl<A: Authenticate> Shared<A> {
    /// The decision links this inbox honors.
    pub(crate) fn links(&self) -> Option<&crate::links::DecisionLinks> {
        self.links.as_ref()
    }

    /// Whether a decision link also needs the inbox's authentication.
    pub(crate) fn links_require_sign_in(&self) -> bool {
        self.links
            .as_ref()
            .is_some_and(crate::links::DecisionLinks::sign_in_required)
    }

    /// How many items a page holds when its reader does not say: the
    /// list's and the event stream's first.
    pub(crate) fn default_page(&self) -> usize {
        self.options.max_page.min(50)
    }

    /// `call` as `principal` may see it, or `None` when it is not an item
    /// for a person or the principal may not read it.
    pub(crate) fn visible(&self, principal: &Principal, call: &PendingCall) -> bool {
        for_a_person(call.kind) && self.auth.authorize(principal, call, Action::Read)
    }

    /// The view of `stored` for `principal`, through its tool's display
    /// transforms; the raw values of the editable fields only for a
    /// principal who may edit the call.
    pub(crate) async fn view(&self, stored: &StoredCall, principal: &Principal) -> ItemView {
        let call = &stored.call;
        let tool = self.runtime.tool(&call.head.tool_id);
        let shown = |phase: Phase, raw: &Value| {
            let known = CallValues {
                input: Some(&call.input),
                suspend_payload: call.payload.as_ref(),
                ..CallValues::default()
            };
            let ctx = TransformContext::new(
                Target::Display,
                phase,
                &call.head.tool_id,
                &call.head.call_id,
                raw,
                known,
            );
            let projecting = tool.map(|tool| tool.transform().project(&ctx));
            let raw = raw.clone();
            async move {
                match projecting {
                    Some(projecting) => projecting.await.shown(&raw),
                    None => Some(raw),
                }
            }
        };
        let input_phase = if call.kind == PendingKind::Approval {
            Phase::Approval
        } else {
            Phase::Input
        };
        let input = shown(input_phase, &call.input).await;
        let payload = match &call.payload {
            Some(payload) => shown(Phase::Suspend, payload).await,
            None => None,
        };
        let definition = tool.map(|tool| tool.definition());
        let approvals = if call.kind == PendingKind::Approval
            && self.runtime.inbox().approvals_required(&call.head.tool_id) > 1
        {
            self.runtime
                .inbox()
                .approvals(&call.head.call_id)
                .await
                .ok()
        } else {
            None
        };
        let edit = tool
            .filter(|_| call.kind == PendingKind::Approval)
            .filter(|_| self.auth.authorize(principal, call, Action::Edit))
            .and_then(|tool| {
                let schema = tool.edit_schema()?.clone();
                Some((schema, editable_values(tool, &call.input)))
            });
        let (edit_schema, edit_values) = edit.unzip();
        let actions = self.actions(stored, principal, edit_schema.is_some());
        ItemView {
            call_id: call.head.call_id.clone(),
            kind: call.kind,
            tool: ToolView {
                id: call.head.tool_id.clone(),
                title: definition.and_then(|d| d.title.clone()),
                description: definition.map(|d| d.description.clone()),
            },
            input,
            payload,
            resume_schema: definition
                .filter(|_| call.kind == PendingKind::Suspended)
                .and_then(|d| d.resume_schema.clone()),
            output_schema: definition.and_then(|d| d.output_schema.clone()),
            edit_schema,
            edit_values,
            digest: stored.digest().to_string(),
            context: context_of(call),
            requester: call.head.requester.clone(),
            expires_at_ms: call.expires_at_ms,
            asked_at_ms: call.asked_at_ms,
            approvals,
            actions,
        }
    }

    /// The decisions `principal` may take on `stored` now (see
    /// [`ItemView::actions`]); `edit` only where the item offers an edit.
    fn actions(&self, stored: &StoredCall, principal: &Principal, edit: bool) -> Vec<&'static str> {
        let candidates: &[Action] = match stored.call.kind {
            PendingKind::Approval => &[
                Action::Approve,
                Action::Edit,
                Action::Decline,
                Action::Respond,
            ],
            PendingKind::Output => &[Action::Respond, Action::Decline],
            PendingKind::Suspended => &[Action::Resume],
            _ => &[],
        };
        let decider = Decider::new(principal.clone(), stored.digest());
        let inbox = self.runtime.inbox();
        candidates
            .iter()
            .filter(|action| **action != Action::Edit || edit)
            .filter(|action| self.auth.authorize(principal, &stored.call, **action))
            .filter(|action| {
                let decision = match action {
                    Action::Approve => Decision::Approve,
                    Action::Edit => Decision::Edit(Value::Null),
                    Action::Decline => Decision::Decline(None),
                    Action::Respond => Decision::Respond(Value::Null),
                    _ => Decision::Resume(Value::Null),
                };
                inbox.permits(stored, &decision, &decider).is_ok()
            })
            .map(|action| action.as_str())
            .collect()
    }

    /// The item `call_id` a decision by `principal` is about: pending, or
    /// settled already (a late decision, refused with what was recorded,
    /// and logged); not found when it does not exist, no longer waited for
    /// a person, or the principal may not read it.
    async fn decidable(
        &self,
        principal: &Principal,
        call_id: &str,
        action: Action,
    ) -> Result<StoredCall, Refused> {
        let stored = match self.runtime.inbox().stored(call_id).await? {
            Some(stored) if self.visible(principal, &stored.call) => stored,
            _ => return Err(Refused::not_found(call_id)),
        };
        match &stored.state {
            CallState::Pending => Ok(stored),
            CallState::Settled { outcome, .. } => {
                let outcome = CallOutcome::from(outcome.clone());
                Err(self.late(principal, &stored, action, &outcome).await)
            }
            CallState::Running { .. } => Err(Refused::new(
                StatusCode::CONFLICT,
                "running",
                format!("item {:?} was decided and is running", Excerpt::of(call_id)),
            )),
        }
    }

    /// A decision on `stored` after another took effect: logged as a
    /// refused attempt, answered 409 `already_decided` with what became of
    /// the call (its status, not its values).
    async fn late(
        &self,
        principal: &Principal,
        stored: &StoredCall,
        action: Action,
        outcome: &CallOutcome,
    ) -> Refused {
        let call = &stored.call;
        let attempt = AuditEntry::new(
            AuditKind::Refused,
            &call.head.call_id,
            &call.head.tool_id,
            action.as_str(),
        )
        .principal(principal.id())
        .reason("already decided");
        if let Err(error) = self.runtime.inbox().append_audit(attempt).await {
            tracing::error!(%error, "a refused decision attempt was not logged");
        }
        let mut refused = Refused::new(
            StatusCode::CONFLICT,
            "already_decided",
            format!(
                "item {:?} was decided already: {}",
                Excerpt::of(&call.head.call_id),
                status_of(outcome)
            ),
        );
        refused.recorded = Some(status_of(outcome));
        refused
    }

    /// The pending item `call_id`, when `principal` may read it.
    async fn item(&self, principal: &Principal, call_id: &str) -> Result<StoredCall, Refused> {
        match self.runtime.inbox().stored(call_id).await? {
            Some(stored)
                if stored.state == CallState::Pending && self.visible(principal, &stored.call) =>
            {
                Ok(stored)
            }
            _ => Err(Refused::not_found(call_id)),
        }
    }
}

/// The most messages of its conversation an item shows.
const CONTEXT_MESSAGES: usize = 6;
/// The most bytes (as JSON) those messages take together.
const CONTEXT_BYTES: usize = 16 * 1024;

/// The last messages of `call`'s conversation, newest last: at most
/// [`CONTEXT_MESSAGES`], as many as fit in [`CONTEXT_BYTES`]; a newest
/// message larger than that alone is shown as an excerpt of its text.
fn context_of(call: &PendingCall) -> Vec<Value> {
    let mut context = Vec::new();
    let mut bytes = 0;
    for message in call.head.messages.iter().rev().take(CONTEXT_MESSAGES) {
        let size = serde_json::to_string(message).map_or(usize::MAX, |text| text.len());
        if bytes + size > CONTEXT_BYTES {
            if context.is_empty() {
                let text = match message.get("text").and_then(Value::as_str) {
                    Some(text) => text.to_owned(),
                    None => message.to_string(),
                };
                let excerpt: String = text.chars().take(2_000).collect();
                context.push(json!({ "role": message.get("role"), "text": format!("{excerpt}…") }));
            }
            break;
        }
        bytes += size;
        context.push(message.clone());
    }
    context.reverse();
    context
}

/// The raw values of `tool`'s editable fields in `input`.
fn editable_values(tool: &Tool, input: &Value) -> Value {
    let values: Map<String, Value> = tool
        .definition()
        .editable
        .iter()
        .filter_map(|field| Some((field.clone(), input.get(field)?.clone())))
        .collect();
    Value::Object(values)
}

/// The first field of `edit` whose new value is the display projection
/// of its raw value (a masked or shortened value sent back as the new
/// one), when there is one: the edit was built from what the page showed,
/// not from the value.
fn projected_field<'a>(edit: &'a Value, raw: &Value, shown: Option<&Value>) -> Option<&'a str> {
    let (edit, shown) = (edit.as_object()?, shown?);
    edit.iter()
        .find(|(field, value)| {
            let shown = shown.get(field.as_str());
            shown == Some(*value) && raw.get(field.as_str()) != shown
        })
        .map(|(field, _)| field.as_str())
}

/// How many pending calls the list reads from the store at a time.
const STORE_PAGE: usize = 100;

/// The longest search text, in characters.
const MAX_SEARCH_CHARS: usize = 200;

/// The order of the list (`?sort=`): by call id, the longest waiting
/// first, or the soonest to expire first.
#[derive(Debug, Clone, Copy, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Sort {
    #[default]
    Id,
    Age,
    Expiry,
}

impl Sort {
    fn order(self) -> PendingOrder {
        match self {
            Sort::Id => PendingOrder::CallId,
            Sort::Age => PendingOrder::Asked,
            Sort::Expiry => PendingOrder::Expires,
        }
    }
}

/// Where a page ends, as `next` says it (the `after` of the next page):
/// the call id by call id; `<key>:<callId>` in an order by time.
fn cursor(order: PendingOrder, stored: &StoredCall) -> String {
    let call_id = &stored.call.head.call_id;
    match order.key(&stored.call) {
        Some(key) => format!("{key}:{call_id}"),
        None => call_id.clone(),
    }
}

/// The list's query: `?q=<text>&sort=age&tool=weather&kind=approval&run=<runId>&thread=..&resource=..&requester=..&older_than=<s>&newer_than=<s>&limit=20&after=<callId>`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ListQuery {
    /// Text the tool id, the requester or the call id contains, ignoring
    /// case.
    q: Option<String>,
    /// `id` (the default), `age` or `expiry`.
    sort: Option<Sort>,
    tool: Option<String>,
    kind: Option<PendingKind>,
    /// The agent run that made the call.
    run: Option<String>,
    /// The agent's thread.
    thread: Option<String>,
    /// The agent's resource (the user or entity the thread belongs to).
    resource: Option<String>,
    /// Who asked for the call.
    requester: Option<String>,
    /// Only calls waiting for more than this many seconds.
    older_than: Option<u64>,
    /// Only calls waiting for less than this many seconds.
    newer_than: Option<u64>,
    limit: Option<usize>,
    after: Option<String>,
}

impl ListQuery {
    /// The store's query for the list's filters and order, at `now_ms`;
    /// pages of [`STORE_PAGE`] from the query's `after` (refused when it is
    /// not a cursor of the order, or the search is over-long).
    fn store_query(&self, now_ms: u64) -> Result<PendingQuery, Refused> {
        if self
            .q
            .as_ref()
            .is_some_and(|q| q.chars().count() > MAX_SEARCH_CHARS)
        {
            return Err(Refused::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid_query",
                format!("a search has at most {MAX_SEARCH_CHARS} characters"),
            ));
        }
        let order = self.sort.unwrap_or_default().order();
        let mut query = PendingQuery::waiting_for_people()
            .limit(STORE_PAGE)
            .order(order);
        if let Some(kind) = self.kind {
            query = query.kind(kind);
        }
        let ago = |secs: u64| now_ms.saturating_sub(secs.saturating_mul(1_000));
        query.tool_id.clone_from(&self.tool);
        query.run_id.clone_from(&self.run);
        query.thread_id.clone_from(&self.thread);
        query.resource_id.clone_from(&self.resource);
        query.requester.clone_from(&self.requester);
        query.asked_before_ms = self.older_than.map(ago);
        query.asked_after_ms = self.newer_than.map(ago);
        query.text = self.q.clone().filter(|text| !text.trim().is_empty());
        match (&self.after, order) {
            (None, _) => {}
            (Some(after), PendingOrder::CallId) => query.after = Some(after.clone()),
            (Some(after), _) => {
                let position = after
                    .split_once(':')
                    .and_then(|(key, call_id)| Some((key.parse::<u64>().ok()?, call_id)));
                let Some((key, call_id)) = position else {
                    return Err(Refused::new(
                        StatusCode::UNPROCESSABLE_ENTITY,
                        "invalid_query",
                        format!(
                            "after {:?} is not where a page of this order ends: pass the `next` of the last page",
                            Excerpt::of(after)
                        ),
                    ));
                };
                query = query.after_position(key, call_id);
            }
        }
        Ok(query)
    }
}

/// Now, in milliseconds since the Unix epoch (as calls keep their times).
fn now_ms() -> u64 {
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
}

/// `GET /api/items`: a page of the items the principal may read and did
/// not dismiss, by call id or in the order asked; `next` is the `after` of
/// the next page.
pub(crate) async fn list<A: Authenticate>(
    State(shared): State<Arc<Shared<A>>>,
    Extension(principal): Extension<Principal>,
    query: Result<Query<ListQuery>, QueryRejection>,
) -> Result<Json<Value>, Refused> {
    let Query(query) = query?;
    let limit = bounded_limit(query.limit, shared.default_page(), shared.options.max_page)?;
    // Pages of the store's index until one more item than asked is found
    // (the principal's authorization applies on the way).
    let mut store_query = query.store_query(now_ms())?;
    let order = store_query.order;
    let mut calls: Vec<StoredCall> = Vec::new();
    while calls.len() <= limit {
        let page = shared
            .runtime
            .inbox()
            .waiting_page(store_query.clone())
            .await?;
        let Some(last) = page.last() else { break };
        store_query.after = Some(last.call.head.call_id.clone());
        store_query.after_key = order.key(&last.call);
        for stored in page {
            if shared.listed(&principal, &stored).await? {
                calls.push(stored);
            }
        }
    }
    let next = (calls.len() > limit).then(|| cursor(order, &calls[limit - 1]));
    calls.truncate(limit);
    let mut items = Vec::with_capacity(calls.len());
    for stored in &calls {
        items.push(shared.view(stored, &principal).await);
    }
    Ok(Json(json!({ "items": items, "next": next })))
}

/// `GET /api/items/{callId}`.
pub(crate) async fn read<A: Authenticate>(
    State(shared): State<Arc<Shared<A>>>,
    Extension(principal): Extension<Principal>,
    Path(call_id): Path<String>,
) -> Result<Json<ItemView>, Refused> {
    let stored = shared.item(&principal, &call_id).await?;
    Ok(Json(shared.view(&stored, &principal).await))
}

/// `GET /api/items/{callId}/audit`: the call's audit trail (requests,
/// decisions, refused attempts), in order, while the principal may read
/// the call (pending or settled).
pub(crate) async fn audit<A: Authenticate>(
    State(shared): State<Arc<Shared<A>>>,
    Extension(principal): Extension<Principal>,
    Path(call_id): Path<String>,
) -> Result<Json<Value>, Refused> {
    let readable = shared
        .runtime
        .inbox()
        .stored(&call_id)
        .await?
        .is_some_and(|stored| {
            shared
                .auth
                .authorize(&principal, &stored.call, Action::Read)
        });
    if !readable {
        return Err(Refused::not_found(&call_id));
    }
    let entries = shared
        .runtime
        .inbox()
        .audit(AuditQuery::all().call(&call_id))
        .await?;
    Ok(Json(json!({ "entries": entries })))
}

/// The audit export's query: `?after=<seq>&limit=<n>` (at most 1,000).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ExportQuery {
    after: Option<u64>,
    limit: Option<usize>,
}

/// The most entries one export answers.
const MAX_EXPORT: usize = 1_000;

/// `GET /api/audit`: the audit log as JSON lines (`application/x-ndjson`),
/// from `after`, the entries of the calls the principal may read (a call
/// purged since is left out: its item cannot be authorized any more).
pub(crate) async fn export<A: Authenticate>(
    State(shared): State<Arc<Shared<A>>>,
    Extension(principal): Extension<Principal>,
    query: Result<Query<ExportQuery>, QueryRejection>,
) -> Result<Response, Refused> {
    let Query(query) = query?;
    let limit = bounded_limit(query.limit, MAX_EXPORT, MAX_EXPORT)?;
    let entries = shared
        .runtime
        .inbox()
        .audit(
            AuditQuery::all()
                .after(query.after.unwrap_or(0))
                .limit(limit),
        )
        .await?;
    let mut readable = std::collections::HashMap::new();
    let mut lines = String::new();
    for entry in entries {
        if !readable.contains_key(&entry.call_id) {
            let stored = shared.runtime.inbox().stored(&entry.call_id).await?;
            let may =
                stored.is_some_and(|s| shared.auth.authorize(&principal, &s.call, Action::Read));
            readable.insert(entry.call_id.clone(), may);
        }
        if readable[&entry.call_id] {
            lines.push_str(&entry.to_json_line());
            lines.push('\n');
        }
    }
    Ok((
        [(axum::http::header::CONTENT_TYPE, "application/x-ndjson")],
        lines,
    )
        .into_response())
}

/// A decision's body: the item's `digest` as listed, and nothing else to
/// approve, `reason` to decline, `output` to respond, `data` to resume.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct DecisionBody {
    digest: String,
    reason: Option<String>,
    edit: Option<Value>,
    output: Option<Value>,
    data: Option<Value>,
}

impl DecisionBody {
    /// An approval's or a decline's body: the digest, and a reason.
    pub(crate) fn of(digest: String, reason: Option<String>) -> Self {
        DecisionBody {
            digest,
            reason,
            edit: None,
            output: None,
            data: None,
        }
    }
}

/// `POST /api/items/{callId}/{action}`: a decision, or `dismiss`.
pub(crate) async fn decide<A: Authenticate>(
    State(shared): State<Arc<Shared<A>>>,
    Extension(principal): Extension<Principal>,
    Path((call_id, action)): Path<(String, String)>,
    body: Result<Json<DecisionBody>, JsonRejection>,
) -> Result<Json<Value>, Refused> {
    let action = match action.as_str() {
        "approve" => Action::Approve,
        "decline" => Action::Decline,
        "respond" => Action::Respond,
        "resume" => Action::Resume,
        "edit" => Action::Edit,
        "dismiss" => {
            let Json(body) = body?;
            return shared.dismiss(&principal, &call_id, body.digest).await;
        }
        _ => {
            return Err(Refused::new(
                StatusCode::NOT_FOUND,
                "not_found",
                format!(
                    "no action {:?}: approve, decline, edit, respond, resume or dismiss",
                    Excerpt::of(&action)
                ),
            ));
        }
    };
    let Json(body) = body?;
    shared
        .decide(&principal, &call_id, action, body)
        .await
        .map(Json)
}

/// A batch's body: the decision (`approve` or `decline`, with an optional
/// `reason`) and the items, each with its digest as listed.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct BatchBody {
    action: String,
    reason: Option<String>,
    items: Vec<BatchItem>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct BatchItem {
    call_id: String,
    digest: String,
}

/// `POST /api/batch`: one decision on several items, each taken as its own
/// (authorized, checked against its digest, audited); the answer lists
/// each item's result, as its own request would have answered.
pub(crate) async fn batch<A: Authenticate>(
    State(shared): State<Arc<Shared<A>>>,
    Extension(principal): Extension<Principal>,
    body: Result<Json<BatchBody>, JsonRejection>,
) -> Result<Json<Value>, Refused> {
    let Json(body) = body?;
    let action = match body.action.as_str() {
        "approve" => Action::Approve,
        "decline" => Action::Decline,
        _ => {
            return Err(Refused::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid_body",
                format!(
                    "a batch approves or declines, not {:?}",
                    Excerpt::of(&body.action)
                ),
            ));
        }
    };
    let max = shared.options.max_page;
    if body.items.is_empty() || body.items.len() > max {
        return Err(Refused::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_body",
            format!("a batch holds 1 to {max} items, not {}", body.items.len()),
        ));
    }
    let mut results = Vec::with_capacity(body.items.len());
    for item in body.items {
        let decision = DecisionBody {
            digest: item.digest,
            reason: body.reason.clone(),
            edit: None,
            output: None,
            data: None,
        };
        let result = match shared
            .decide(&principal, &item.call_id, action, decision)
            .await
        {
            Ok(answer) => answer,
            Err(refused) => {
                let status = refused.status.as_u16();
                json!({ "callId": item.call_id, "httpStatus": status, "error": refused.body() })
            }
        };
        results.push(result);
    }
    Ok(Json(json!({ "results": results })))
}

impl<A: Authenticate> Shared<A> {
    /// Takes `action` on `call_id` for `principal`, as `body` says: the
    /// answer of `POST /api/items/{callId}/{action}` (and of a decision
    /// link's confirmation).
    pub(crate) async fn decide(
        &self,
        principal: &Principal,
        call_id: &str,
        action: Action,
        body: DecisionBody,
    ) -> Result<Value, Refused> {
        let stored = self.decidable(principal, call_id, action).await?;
        if !self.auth.authorize(principal, &stored.call, action) {
            let attempt = AuditEntry::new(
                AuditKind::Refused,
                call_id,
                &stored.call.head.tool_id,
                action.as_str(),
            )
            .principal(principal.id())
            .reason("not authorized");
            self.runtime.inbox().append_audit(attempt).await?;
            return Err(Refused::new(
                StatusCode::FORBIDDEN,
                "forbidden",
                format!("{} may not {} this item", principal.id(), action.as_str()),
            ));
        }
        let max_reason = self.options.max_reason_chars;
        if body
            .reason
            .as_ref()
            .is_some_and(|r| r.chars().count() > max_reason)
        {
            return Err(Refused::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid_body",
                format!("a reason has at most {max_reason} characters"),
            ));
        }
        let runtime = &self.runtime;
        let missing = |field: &str| {
            Refused::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid_body",
                format!("{} needs `{field}` in the body", action.as_str()),
            )
        };
        let decision = match action {
            Action::Approve => Decision::Approve,
            Action::Decline => Decision::Decline(body.reason),
            Action::Respond => Decision::Respond(body.output.ok_or_else(|| missing("output"))?),
            Action::Resume => Decision::Resume(body.data.ok_or_else(|| missing("data"))?),
            Action::Edit => {
                let edit = body.edit.ok_or_else(|| missing("edit"))?;
                let shown = self.view(&stored, principal).await.input;
                if let Some(field) = projected_field(&edit, &stored.call.input, shown.as_ref()) {
                    return Err(Refused::new(
                        StatusCode::UNPROCESSABLE_ENTITY,
                        "projected_value",
                        format!(
                            "the edit's `{}` is the value as displayed (masked or shortened), not a new value: send only the fields you change, with their new values",
                            Excerpt::of(field)
                        ),
                    ));
                }
                Decision::Edit(edit)
            }
            Action::Read => unreachable!("read is not a decision"),
        };
        let decider = Decider::new(principal.clone(), Digest::new(body.digest));
        let outcome = match runtime.decide_as(call_id, decision, decider).await {
            Ok(outcome) => outcome,
            // Another decision beat this one meanwhile: recorded as refused.
            Err(RuntimeError::AlreadyDecided { outcome, .. }) => {
                return Err(self.late(principal, &stored, action, &outcome).await);
            }
            Err(error) => return Err(error.into()),
        };
        tracing::info!(
            principal = principal.id(),
            call_id = %Excerpt::of(call_id),
            action = action.as_str(),
            "inbox decision"
        );
        still_pending_refusal(runtime, call_id, &outcome).await?;
        let mut answer = json!({ "callId": call_id, "status": status_of(&outcome) });
        if matches!(outcome, CallOutcome::ApprovalRequired { .. }) {
            // An approval counted, and others are needed: who gave theirs.
            answer["approvals"] = json!(runtime.inbox().approvals(call_id).await.ok());
        }
        Ok(answer)
    }

    /// Hides the item `call_id`, in the version `digest` names, from
    /// `principal`'s list and stream (a new version shows again): an
    /// audit note, so it holds on every instance and is on the record.
    async fn dismiss(
        &self,
        principal: &Principal,
        call_id: &str,
        digest: String,
    ) -> Result<Json<Value>, Refused> {
        let stored = self.item(principal, call_id).await?;
        if stored.digest().as_str() != digest {
            return Err(RuntimeError::StaleDigest {
                call_id: call_id.to_owned(),
            }
            .into());
        }
        let note = AuditEntry::new(
            AuditKind::Noted,
            call_id,
            &stored.call.head.tool_id,
            DISMISS,
        )
        .principal(principal.id())
        .digest(stored.digest());
        self.runtime.inbox().append_audit(note).await?;
        Ok(Json(json!({ "callId": call_id, "status": "dismissed" })))
    }

    /// Whether `principal` dismissed `stored` in its current version.
    pub(crate) async fn dismissed(
        &self,
        principal: &Principal,
        stored: &StoredCall,
    ) -> Result<bool, RuntimeError> {
        let digest = stored.digest();
        let mut query = AuditQuery::all().call(&stored.call.head.call_id);
        loop {
            let entries = self.runtime.inbox().audit(query.clone()).await?;
            let Some(last) = entries.last() else {
                return Ok(false);
            };
            query = query.after(last.seq);
            let found = entries.iter().any(|entry| {
                entry.kind == AuditKind::Noted
                    && entry.action == DISMISS
                    && entry.principal.as_deref() == Some(principal.id())
                    && entry.digest.as_deref() == Some(digest.as_str())
            });
            if found {
                return Ok(true);
            }
        }
    }

    /// Whether `stored` is an item of `principal`'s list: one they may
    /// read and did not dismiss.
    pub(crate) async fn listed(
        &self,
        principal: &Principal,
        stored: &StoredCall,
    ) -> Result<bool, RuntimeError> {
        Ok(self.visible(principal, &stored.call) && !self.dismissed(principal, stored).await?)
    }
}

/// The audit action of a dismissal.
const DISMISS: &str = "dismiss";

/// A decision the runtime refused before anything changed (resume data or
/// an output its schema refuses) leaves the call pending with a failed
/// outcome: that is the person's error to correct (422), with the
/// model-readable message.
async fn still_pending_refusal(
    runtime: &Runtime,
    call_id: &str,
    outcome: &CallOutcome,
) -> Result<(), Refused> {
    let Some(error) = outcome.error() else {
        return Ok(());
    };
    let still_pending = runtime
        .inbox()
        .stored(call_id)
        .await?
        .is_some_and(|stored| stored.state == CallState::Pending);
    if still_pending {
        let mut refused = Refused::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_value",
            error.message(),
        );
        refused.model_error = Some(Box::new(error.to_json()));
        return Err(refused);
    }
    Ok(())
}

/// What became of the call, without its values (the person saw them
/// through the display transforms; the raw output is not theirs to read).
fn status_of(outcome: &CallOutcome) -> &'static str {
    match outcome {
        CallOutcome::Completed { .. } => "completed",
        CallOutcome::Failed { .. } => "failed",
        CallOutcome::Suspended { .. } => "suspended",
        CallOutcome::Aborted => "aborted",
        CallOutcome::ApprovalRequired { .. } => "approval_required",
        CallOutcome::Declined { .. } => "declined",
        CallOutcome::BackgroundStarted { .. } => "background_started",
        _ => "pending",
    }
}
