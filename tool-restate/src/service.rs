//! The Restate services an application serves: `ToolCalls`, a virtual
//! object per call (keyed by its id), and `ToolCallFences`, which tells a
//! step whether an earlier execution of it began.
//!
//! Each step (a call, a decision) is one journaled `ctx.run`: the call's
//! document and audit entries are read from the object's state, restored
//! into a memory store, and a runtime built by the application's
//! configuration takes the step there with its usual semantics (validation,
//! approval rules, hooks, transforms, time limits); what the store holds
//! afterwards is written back to the object's state. Restate runs one
//! invocation per key at a time, so a call is decided by one step at once;
//! its journal keeps each step's result, so a step whose result was
//! journaled is never taken again.

use std::sync::Arc;
use std::time::{Duration, UNIX_EPOCH};

use restate_sdk::prelude::*;
use serde::{Deserialize, Serialize};
use tool_runtime::store::{
    AuditEntry, AuditLog, AuditQuery, CallStore, MemoryStore, PendingCall, PendingKind,
    RecordedOutcome, StoreError,
};
use tool_runtime::{
    CallOutcome, CallState, Decision, RunCheck, Runtime, RuntimeBuilder, RuntimeError, StoredCall,
    ToolCall,
};

use crate::document::{CallDocument, DocumentState, now_ms};
use crate::error::RestateError;
use crate::ingress::Ingress;
use crate::rules::{ToolRules, step_rules};
use crate::wire::{Answer, CallRequest, DecideRequest, Reply, WireDecision};

/// State key of a stored call's document.
const CALL: &str = "call";
/// State key of a call's audit entries, in order.
const AUDIT: &str = "audit";
/// State key of the outcome of a call that was never stored (it ran at
/// once and settled).
const OUTCOME: &str = "outcome";
/// `ToolCallFences`' state key: the step last entered and how often.
const ENTERED: &str = "entered";

/// An application's tools as Restate services.
///
/// `configure` builds the application's runtime without a store (its
/// tools, approval rules, hooks, time limits): every step builds one on a
/// store restored from the call's object. `ingress` is the Restate
/// ingress's URL, through which a step of a tool that is not `retry_safe`
/// enters its fence.
///
/// ```no_run
/// use serde_json::{json, Value};
/// use tool_core::{Tool, ToolContext, ToolError};
/// use tool_restate::RestateTools;
/// use tool_runtime::Runtime;
///
/// # async fn serve() -> Result<(), Box<dyn std::error::Error>> {
/// let tools = RestateTools::new("http://127.0.0.1:8080", || {
///     let pay = Tool::builder("pay")
///         .description("Pays")
///         .require_approval(true)
///         .execute(|input: Value, _ctx: ToolContext<Value, Value>| async move { Ok::<_, ToolError>(input) })
///         .build()
///         .expect("tool");
///     Runtime::builder().tool(pay).approvals_required(2)
/// })?;
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:9080").await?;
/// tools.serve(listener).await; // then register http://127.0.0.1:9080 with the Restate server
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct RestateTools {
    shared: Arc<Shared>,
}

/// What every handler of every object shares.
struct Shared {
    configure: Box<dyn Fn() -> RuntimeBuilder + Send + Sync>,
    /// Built once from `configure`: the tools' definitions.
    template: Runtime,
    ingress: Ingress,
}

impl std::fmt::Debug for RestateTools {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RestateTools")
            .field("ingress", &self.shared.ingress.url())
            .field("tools", &self.shared.template.tools())
            .finish_non_exhaustive()
    }
}

impl RestateTools {
    /// The tools of the runtime `configure` builds, served as Restate
    /// services; steps of tools that are not `retry_safe` enter their
    /// fence through `ingress`. A background tool's task runs in an
    /// invocation of its own (the object's `settle`), so the call's step
    /// answers at once. Fails as the runtime's build would, and for a
    /// runtime that writes notifications (not served on Restate by this
    /// crate: each step's store is dropped with its step).
    pub fn new(
        ingress: impl Into<String>,
        configure: impl Fn() -> RuntimeBuilder + Send + Sync + 'static,
    ) -> Result<Self, RestateError> {
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(RestateError::Http)?;
        let ingress = Ingress::new(ingress, http);
        let template = configure()
            .store(MemoryStore::new())
            .rule_store(step_rules(&ingress))
            .build()?;
        if template.notifies() {
            return Err(RestateError::Notifications);
        }
        Ok(RestateTools {
            shared: Arc::new(Shared {
                configure: Box::new(configure),
                template,
                ingress,
            }),
        })
    }

    /// The standing rules the steps apply, kept in the object `ToolRules`:
    /// made and revoked here with the application's rules about rules
    /// (who may make them, the predicates they call), as on a `Runtime`.
    ///
    /// ```no_run
    /// use std::time::{Duration, SystemTime};
    /// use serde_json::{json, Value};
    /// use tool_core::{Tool, ToolContext, ToolError};
    /// use tool_restate::RestateTools;
    /// use tool_runtime::{Principal, Runtime, StandingRule};
    ///
    /// # async fn make() -> Result<(), Box<dyn std::error::Error>> {
    /// let tools = RestateTools::new("http://127.0.0.1:8080", || {
    ///     let refund = Tool::builder("refund").description("Refunds").require_approval(true)
    ///         .execute(|input: Value, _ctx: ToolContext<Value, Value>| async move { Ok::<_, ToolError>(input) })
    ///         .build().expect("tool");
    ///     Runtime::builder().tool(refund).rule_authors("finance-leads")
    /// })?;
    /// let lead = Principal::new("dana").in_group("finance-leads");
    /// let until = SystemTime::now() + Duration::from_secs(3600);
    /// let rule = StandingRule::new("acme", "refund", until).when_equals("/customer", json!("acme"));
    /// tools.rules().make(&lead, rule).await?; // acme's refunds now run without waiting
    /// # Ok(()) }
    /// ```
    pub fn rules(&self) -> tool_runtime::StandingRules {
        self.shared.template.rules()
    }

    /// The SDK's endpoint with its objects bound, for
    /// [`HyperEndpoint`](restate_sdk::hyper::HyperEndpoint) or another
    /// transport of the SDK.
    pub fn endpoint(&self) -> Endpoint {
        Endpoint::builder()
            .bind(ToolCalls {
                shared: Arc::clone(&self.shared),
            })
            .bind(ToolCallFences)
            .bind(ToolRules)
            .build()
    }

    /// Serves [`endpoint`](Self::endpoint) on `listener` over HTTP/2 (as
    /// the SDK's `HttpServer` does, but with `TCP_NODELAY` on each
    /// connection, and no Ctrl-C handler of its own), until the future is
    /// dropped. Without `TCP_NODELAY`, a step's small frames waited for the
    /// server's delayed ACK: 40 ms and more per step, measured.
    pub async fn serve(&self, listener: tokio::net::TcpListener) {
        let endpoint = restate_sdk::hyper::HyperEndpoint::new(self.endpoint());
        loop {
            let stream = match listener.accept().await {
                Ok((stream, _)) => stream,
                Err(error) => {
                    // Out of file descriptors, say: not the end of serving.
                    tracing::warn!(%error, "could not accept a connection from the Restate server");
                    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                    continue;
                }
            };
            if let Err(error) = stream.set_nodelay(true) {
                tracing::debug!(%error, "TCP_NODELAY not set");
            }
            let endpoint = endpoint.clone();
            tokio::spawn(async move {
                let connection =
                    hyper::server::conn::http2::Builder::new(hyper_util::rt::TokioExecutor::new())
                        .serve_connection(hyper_util::rt::TokioIo::new(stream), endpoint);
                if let Err(error) = connection.await {
                    tracing::debug!(%error, "a connection from the Restate server ended");
                }
            });
        }
    }
}

/// The virtual object `ToolCalls`: one per call, keyed by its id.
pub struct ToolCalls {
    shared: Arc<Shared>,
}

/// What the object's state holds for one call.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Kept {
    document: Option<CallDocument>,
    audit: Vec<AuditEntry>,
    outcome: Option<RecordedOutcome>,
}

impl Kept {
    /// The call's outcome once settled (stored, or run at once).
    fn settled(&self) -> Option<RecordedOutcome> {
        self.outcome
            .clone()
            .or_else(|| self.document.as_ref()?.outcome().cloned())
    }
}

/// A step's result, as journaled: the answer (or why the step was
/// refused) and what the call's object keeps after it.
#[derive(Debug, Serialize, Deserialize)]
struct Step {
    answer: Result<Reply, Refusal>,
    kept: Kept,
    /// For a call the step stored waiting for an approval that expires:
    /// in how long (the object's `expire` is sent for then).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    expires_in_ms: Option<u64>,
}

/// A step the runtime refused (a decision by the wrong principal, on a
/// stale version, ...): the HTTP status the handler fails with, and the
/// runtime's message.
#[derive(Debug, Serialize, Deserialize)]
struct Refusal {
    status: u16,
    message: String,
}

impl From<&RuntimeError> for Refusal {
    fn from(error: &RuntimeError) -> Self {
        let status = match error {
            RuntimeError::UnknownCall { .. } | RuntimeError::Purged { .. } => 404,
            RuntimeError::SelfApproval { .. }
            | RuntimeError::PrincipalRequired { .. }
            | RuntimeError::NotInGroup { .. }
            | RuntimeError::RuleRefused { .. } => 403,
            RuntimeError::StaleDigest { .. }
            | RuntimeError::NotAwaitingApproval { .. }
            | RuntimeError::NotSuspended { .. }
            | RuntimeError::AwaitingOutput { .. }
            | RuntimeError::Running { .. } => 409,
            _ => 400,
        };
        Refusal {
            status,
            message: error.to_string(),
        }
    }
}

/// Whether a step is a call's first.
enum OpKind {
    Call,
    Other,
}

/// The step a handler takes.
enum Op {
    Call(CallRequest),
    /// A decision on the call the document keeps.
    Decide(DecideRequest, Box<CallDocument>),
    /// Runs the queued background task the document keeps.
    Settle(Box<CallDocument>),
}

#[restate_sdk::object]
impl ToolCalls {
    /// Calls a tool (the object's key is the call's id): runs it, or
    /// stores it waiting for approval. A call already made is answered
    /// with its recorded outcome once settled, and refused (409) while it
    /// waits.
    #[handler]
    async fn call(
        &self,
        ctx: ObjectContext<'_>,
        request: Json<CallRequest>,
    ) -> Result<Json<Reply>, HandlerError> {
        let key = ctx.key().to_owned();
        let kept = read(&ctx).await?;
        if let Some(outcome) = kept.settled() {
            return Ok(Json(Reply::Outcome(Answer::Settled(outcome))));
        }
        if let Some(document) = &kept.document {
            let waits = match document.state {
                DocumentState::Queued => "runs in the background: wait for its outcome",
                _ => "waits for a decision",
            };
            return Err(TerminalError::new_with_code(
                409,
                format!("call {key:?} was made already and {waits}"),
            )
            .into());
        }
        let Json(request) = request;
        let fence = self
            .shared
            .fenced(&request.tool_id)
            .then(|| format!("call-{:016x}", ctx.random_seed()));
        let shared = Arc::clone(&self.shared);
        let Json(step) = ctx
            .run(|| async move {
                shared
                    .take(&key, fence, Vec::new(), Op::Call(request))
                    .await
                    .map(Json)
            })
            .name("call")
            .await?;
        answer(&ctx, step)
    }

    /// Decides the waiting call, through the runtime's approval rules
    /// (principal, digest, N of M, groups, separation of duties, expiry).
    /// A decision on a settled call is answered with its recorded outcome,
    /// as the runtime answers it.
    #[handler]
    async fn decide(
        &self,
        ctx: ObjectContext<'_>,
        request: Json<DecideRequest>,
    ) -> Result<Json<Reply>, HandlerError> {
        let key = ctx.key().to_owned();
        let kept = read(&ctx).await?;
        let Some(document) = kept.document.clone() else {
            let why = match kept.outcome {
                Some(_) => format!("call {key:?} ran without waiting for a decision"),
                None => format!("no call {key:?}"),
            };
            return Err(TerminalError::new_with_code(404, why).into());
        };
        let Json(request) = request;
        let runs = matches!(
            request.decision,
            WireDecision::Approve | WireDecision::Edit(_) | WireDecision::Resume(_)
        );
        let fence = (runs
            && document.outcome().is_none()
            && self.shared.fenced(&document.call.head.tool_id))
        .then(|| format!("decide-{:016x}", ctx.random_seed()));
        let shared = Arc::clone(&self.shared);
        let Json(step) = ctx
            .run(|| async move {
                shared
                    .take(
                        &key,
                        fence,
                        kept.audit,
                        Op::Decide(request, Box::new(document)),
                    )
                    .await
                    .map(Json)
            })
            .name("decide")
            .await?;
        answer(&ctx, step)
    }

    /// Runs the call's background task when it is queued (the step that
    /// queued it sent this handler; a caller waiting for the outcome may
    /// come first, and then runs it itself), and answers the call's
    /// outcome. Refused (409) while the call waits for a decision, 404 for
    /// no call.
    #[handler]
    async fn settle(&self, ctx: ObjectContext<'_>) -> Result<Json<Reply>, HandlerError> {
        let key = ctx.key().to_owned();
        let kept = read(&ctx).await?;
        if let Some(outcome) = kept.settled() {
            return Ok(Json(Reply::Outcome(Answer::Settled(outcome))));
        }
        let Some(document) = kept.document else {
            return Err(TerminalError::new_with_code(404, format!("no call {key:?}")).into());
        };
        if document.state != DocumentState::Queued {
            return Err(TerminalError::new_with_code(
                409,
                format!("call {key:?} waits for a decision"),
            )
            .into());
        }
        let fence = self
            .shared
            .fenced(&document.call.head.tool_id)
            .then(|| format!("task-{:016x}", ctx.random_seed()));
        let shared = Arc::clone(&self.shared);
        let Json(step) = ctx
            .run(|| async move {
                shared
                    .take(&key, fence, kept.audit, Op::Settle(Box::new(document)))
                    .await
                    .map(Json)
            })
            .name("settle")
            .await?;
        answer(&ctx, step)
    }

    /// Declines the call with the reason `expired` when it still waits
    /// for an approval that expired (the step that stored it sent this
    /// handler for then; a decision that came first wins). Answers whether
    /// it did.
    #[handler]
    async fn expire(&self, ctx: ObjectContext<'_>) -> Result<bool, HandlerError> {
        let key = ctx.key().to_owned();
        let kept = read(&ctx).await?;
        let Some(document) = kept.document.filter(|d| d.state == DocumentState::Pending) else {
            return Ok(false);
        };
        let shared = Arc::clone(&self.shared);
        let Json(after) = ctx
            .run(|| async move { shared.expire(&key, kept.audit, document).await.map(Json) })
            .name("expire")
            .await?;
        let expired = after
            .document
            .as_ref()
            .is_some_and(|d| d.outcome().is_some());
        keep(&ctx, after);
        Ok(expired)
    }

    /// The call's document, `null` for a call never stored (read its
    /// outcome with `call`) or never made.
    #[handler]
    async fn get(
        &self,
        ctx: SharedObjectContext<'_>,
    ) -> Result<Json<Option<CallDocument>>, HandlerError> {
        Ok(Json(
            ctx.get::<Json<CallDocument>>(CALL).await?.map(|Json(d)| d),
        ))
    }
}

/// What the call's object keeps.
async fn read(ctx: &ObjectContext<'_>) -> Result<Kept, TerminalError> {
    Ok(Kept {
        document: ctx.get::<Json<CallDocument>>(CALL).await?.map(|Json(d)| d),
        audit: ctx
            .get::<Json<Vec<AuditEntry>>>(AUDIT)
            .await?
            .map(|Json(a)| a)
            .unwrap_or_default(),
        outcome: ctx
            .get::<Json<RecordedOutcome>>(OUTCOME)
            .await?
            .map(|Json(o)| o),
    })
}

/// Keeps what the step left and answers with its answer; a background
/// task the step queued is sent to `settle`, to run in an invocation of
/// its own, and a call that waits for an approval that expires is sent to
/// `expire` for when it does.
fn answer(ctx: &ObjectContext<'_>, step: Step) -> Result<Json<Reply>, HandlerError> {
    if let Some(delay) = step.expires_in_ms {
        ctx.object_client::<ToolCallsClient>(ctx.key())
            .expire()
            .send_after(Duration::from_millis(delay));
    }
    keep(ctx, step.kept);
    step.answer
        .map(Json)
        .map_err(|refusal| TerminalError::new_with_code(refusal.status, refusal.message).into())
}

/// Writes what a step left to the object's state; sends a background task
/// it queued to `settle`.
fn keep(ctx: &ObjectContext<'_>, kept: Kept) {
    let Kept {
        document,
        audit,
        outcome,
    } = kept;
    if let Some(document) = document {
        if document.state == DocumentState::Queued {
            ctx.object_client::<ToolCallsClient>(ctx.key())
                .settle()
                .send();
        }
        ctx.set(CALL, Json(document));
    }
    if !audit.is_empty() {
        ctx.set(AUDIT, Json(audit));
    }
    if let Some(outcome) = outcome {
        ctx.set(OUTCOME, Json(outcome));
    }
}

impl Shared {
    /// Whether steps of `tool_id` enter a fence: it is not `retry_safe`
    /// (nor transactional), so running it twice is what must not happen.
    fn fenced(&self, tool_id: &str) -> bool {
        self.template
            .tool(tool_id)
            .is_some_and(|tool| !tool.definition().retry_safe)
    }

    /// A step's store, holding the call's audit entries `audit`, and the
    /// application's runtime configured on it (standing rules read from
    /// `ToolRules`).
    async fn step_runtime(
        &self,
        audit: Vec<AuditEntry>,
    ) -> HandlerResult<(Arc<MemoryStore>, RuntimeBuilder)> {
        let store = Arc::new(MemoryStore::new());
        for entry in audit {
            store.append_audit(entry).await?;
        }
        let builder = (self.configure)()
            .store(Arc::clone(&store))
            .rule_store(step_rules(&self.ingress));
        Ok((store, builder))
    }

    /// Takes `op` on the call `key`, whose audit entries are `audit`. With
    /// a `fence`, enters it first: when an earlier execution of this step
    /// entered it (and died before its result was journaled), the call is
    /// recovered as the runtime recovers an interrupted call (settled as
    /// interrupted, or reconciled) instead of run again.
    async fn take(
        &self,
        key: &str,
        fence: Option<String>,
        audit: Vec<AuditEntry>,
        op: Op,
    ) -> HandlerResult<Step> {
        let (store, builder) = self.step_runtime(audit).await?;
        // Tasks are queued, and run by `settle`'s step: a task spawned by
        // this step's runtime would outlive its store.
        let mut builder = builder.leave_tasks_to_workers(true);
        // A stored call's step enters the fence when its tool is about to
        // run, after the decision (recorded and audited whichever execution
        // takes it); a call's first step, which may run the tool at once
        // without storing it, enters it before anything.
        let (unreachable, mut fence_failed) = tokio::sync::watch::channel(false);
        let op_kind = match &op {
            Op::Call(_) => OpKind::Call,
            _ => OpKind::Other,
        };
        let before_step = match (&op, fence) {
            (Op::Call(_), fence) => fence,
            (_, Some(step)) => {
                builder = builder.before_run(fence_check(&self.ingress, key, step, unreachable));
                None
            }
            (_, None) => None,
        };
        let runtime = builder.build()?;
        let interrupted = match &before_step {
            Some(step) => enter(&self.ingress, key, step).await? > 1,
            None => false,
        };
        // Whether the runtime's store holds the call as it is to be kept:
        // not a call that ran at once (never stored), nor one recovered
        // under a kind it never had.
        let mut keeps_call = true;
        let result = match op {
            Op::Call(request) if interrupted => {
                keeps_call = false;
                let call =
                    PendingCall::new(key, request.tool_id, PendingKind::Approval, request.input);
                recover(&runtime, &store, StoredCall::pending(call)).await
            }
            Op::Call(request) => {
                let mut call = ToolCall::new(key, request.tool_id, request.input);
                if let Some(requester) = request.requester {
                    call = call.with_requester(requester);
                }
                Ok(runtime.call(call).await)
            }
            Op::Settle(document) => {
                store.restore(document.into_stored());
                run_task(&runtime, key, fence_failed.clone()).await
            }
            Op::Decide(request, document) => {
                store.restore(document.into_stored());
                let decider = request.decider();
                let decision = Decision::from(request.decision);
                match decider {
                    Some(decider) => runtime.decide_as(key, decision, decider).await,
                    None => runtime.decide(key, decision, Default::default()).await,
                }
            }
        };
        if *fence_failed.borrow_and_update() {
            // Nothing ran: the step is taken again (Restate retries it).
            return Err(RestateError::Fence {
                call_id: key.to_owned(),
            }
            .into());
        }
        let stored = match keeps_call {
            true => store.get(key).await?,
            false => None,
        };
        let document = stored.as_ref().and_then(CallDocument::of);
        let outcome = match (&document, &result) {
            (None, Ok(outcome)) => RecordedOutcome::from_outcome(outcome),
            _ => None,
        };
        let audit = store.audit(AuditQuery::all().call(key)).await?;
        let expires_in_ms = match (&op_kind, &document) {
            (OpKind::Call, Some(document)) if document.state == DocumentState::Pending => document
                .call
                .expires_at_ms
                .map(|at| at.saturating_sub(now_ms())),
            _ => None,
        };
        Ok(Step {
            answer: match &result {
                Ok(outcome) => Ok(Reply::Outcome(Answer::from(outcome))),
                Err(RuntimeError::AlreadyDecided { outcome, .. }) => {
                    Ok(Reply::AlreadyDecided(Answer::from(&**outcome)))
                }
                Err(error) => Err(Refusal::from(error)),
            },
            kept: Kept {
                document,
                audit,
                outcome,
            },
            expires_in_ms,
        })
    }

    /// Declines the waiting call `document` keeps if its approval expired
    /// (as the runtime does on sight): what the object keeps afterwards.
    async fn expire(
        &self,
        key: &str,
        audit: Vec<AuditEntry>,
        document: CallDocument,
    ) -> HandlerResult<Kept> {
        let (store, builder) = self.step_runtime(audit).await?;
        let runtime = builder.build()?;
        store.restore(document.into_stored());
        runtime.inbox().waiting().await?;
        Ok(Kept {
            document: store.get(key).await?.as_ref().and_then(CallDocument::of),
            audit: store.audit(AuditQuery::all().call(key)).await?,
            outcome: None,
        })
    }
}

/// Enters the call `key`'s fence for `step` through the ingress: how many
/// executions of the step did (1 for the first).
async fn enter(ingress: &Ingress, key: &str, step: &str) -> Result<u32, RestateError> {
    ingress
        .post("ToolCallFences", key, "enter", Some(&step))
        .await
}

/// The runtime's check before a stored call's tool runs: enters the
/// call's fence for `step`; an earlier execution entered makes the call
/// interrupted. A fence that cannot be reached is told on `unreachable`.
fn fence_check(
    ingress: &Ingress,
    key: &str,
    step: String,
    unreachable: tokio::sync::watch::Sender<bool>,
) -> impl Fn(&StoredCall) -> std::pin::Pin<Box<dyn Future<Output = Result<RunCheck, StoreError>> + Send>>
+ Send
+ Sync
+ 'static {
    let (ingress, key, unreachable) = (ingress.clone(), key.to_owned(), Arc::new(unreachable));
    move |_stored| {
        let (ingress, key, step, unreachable) = (
            ingress.clone(),
            key.clone(),
            step.clone(),
            Arc::clone(&unreachable),
        );
        Box::pin(async move {
            match enter(&ingress, &key, &step).await {
                Ok(1) => Ok(RunCheck::Run),
                Ok(_) => Ok(RunCheck::Interrupted),
                Err(error) => {
                    unreachable.send_replace(true);
                    Err(StoreError::Io {
                        location: format!("ToolCallFences through {}", ingress.url()),
                        reason: error.to_string(),
                        source: Some(Box::new(error)),
                    })
                }
            }
        })
    }
}

/// Runs the queued task `call_id` with a worker of `runtime` (its time
/// limit, retries and completion hooks), until it settles, or until its
/// fence could not be reached (`fence_failed`; the task then stays claimed
/// in a store the step drops).
async fn run_task(
    runtime: &Runtime,
    call_id: &str,
    mut fence_failed: tokio::sync::watch::Receiver<bool>,
) -> Result<CallOutcome, RuntimeError> {
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let worker = tokio::spawn(runtime.worker().run_until(async move {
        let _ = stopped.await;
    }));
    let outcome = tokio::select! {
        outcome = runtime.wait(call_id) => outcome,
        // The check's own error went to the worker, which keeps none.
        _ = fence_failed.wait_for(|failed| *failed) => Err(RuntimeError::Store(StoreError::Io {
            location: "ToolCallFences".to_owned(),
            reason: format!("the fence of task {call_id:?} could not be entered"),
            source: None,
        })),
    };
    let _ = stop.send(());
    // The worker ran only this task, which has settled or never started.
    let _ = worker.await;
    outcome
}

/// Recovers `stored`, put back as running under a lease that ran out: what
/// the runtime does with a call whose instance died while running it.
async fn recover(
    runtime: &Runtime,
    store: &MemoryStore,
    mut stored: StoredCall,
) -> Result<CallOutcome, RuntimeError> {
    let call_id = stored.call.head.call_id.clone();
    stored.state = CallState::Running {
        owner: "an earlier execution of this step".to_owned(),
        lease_expires_at: UNIX_EPOCH,
    };
    stored.attempt = stored.attempt.max(1);
    store.restore(stored);
    let recovered = runtime.recover().await?;
    recovered
        .into_iter()
        .find(|r| r.call_id == call_id)
        .map(|r| r.outcome)
        .ok_or(RuntimeError::UnknownCall { call_id })
}

/// The virtual object `ToolCallFences`, keyed by call id: counts the
/// executions of a step, so that a step whose earlier execution died knows.
pub struct ToolCallFences;

/// The step last entered and how many executions entered it.
#[derive(Debug, Serialize, Deserialize)]
struct Entered {
    step: String,
    times: u32,
}

#[restate_sdk::object]
impl ToolCallFences {
    /// Enters `step`: how many executions did, this one included. Entering
    /// another step starts its count (a call takes one step at a time).
    #[handler]
    async fn enter(&self, ctx: ObjectContext<'_>, step: Json<String>) -> Result<u32, HandlerError> {
        let Json(step) = step;
        let times = match ctx.get::<Json<Entered>>(ENTERED).await? {
            Some(Json(entered)) if entered.step == step => entered.times.saturating_add(1),
            _ => 1,
        };
        ctx.set(ENTERED, Json(Entered { step, times }));
        Ok(times)
    }
}
