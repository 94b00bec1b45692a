//! Display and transcript transforms: what UIs and stored transcripts show of
//! a call, phase by phase, while execute and the model keep the raw values.

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use serde_json::{Value, json};

/// Where a projected payload goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Target {
    /// Events for UIs.
    Display,
    /// Entries of the stored conversation transcript.
    Transcript,
}

/// The phase of a call a payload belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Phase {
    /// A streamed fragment of the arguments.
    InputDelta,
    /// The complete arguments.
    Input,
    /// The tool's output.
    Output,
    /// An error result.
    Error,
    /// An approval request.
    Approval,
    /// A suspension payload.
    Suspend,
    /// Resume data.
    Resume,
}

impl Phase {
    /// The phases whose payload is a whole value (every one but
    /// [`InputDelta`](Phase::InputDelta)).
    pub const WHOLE: [Phase; 6] = [
        Phase::Input,
        Phase::Output,
        Phase::Error,
        Phase::Approval,
        Phase::Suspend,
        Phase::Resume,
    ];

    /// The reference's name for the phase (`input-available`, `output-available`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::InputDelta => "input-delta",
            Phase::Input => "input-available",
            Phase::Output => "output-available",
            Phase::Error => "error",
            Phase::Approval => "approval",
            Phase::Suspend => "suspend",
            Phase::Resume => "resume",
        }
    }
}

/// What is known of a call when one of its payloads is projected: each
/// phase's value once the call reached it (`None` before, and for a value the
/// call never had). The reference's `input`, `output`, `error`,
/// `suspendPayload` and `resumeData`.
#[derive(Debug, Clone, Copy, Default)]
pub struct CallValues<'a> {
    /// The arguments the tool runs on (validated), once admitted.
    pub input: Option<&'a Value>,
    /// The tool's raw output.
    pub output: Option<&'a Value>,
    /// The error result (a [`ModelError`](crate::ModelError)'s JSON).
    pub error: Option<&'a Value>,
    /// What the call suspended with, from its suspension on.
    pub suspend_payload: Option<&'a Value>,
    /// The data it was resumed with (an approval's `{"approved": true}`),
    /// from its resumption on.
    pub resume_data: Option<&'a Value>,
}

impl<'a> CallValues<'a> {
    /// These values with `payload` as `phase`'s own: the input of
    /// [`Input`](Phase::Input) and [`Approval`](Phase::Approval), the output,
    /// the error, the suspension's payload, the resume data. An input delta
    /// is no phase's value.
    ///
    /// ```
    /// use serde_json::json;
    /// use tool_core::transform::{CallValues, Phase};
    ///
    /// let (input, output) = (json!({ "city": "Paris" }), json!({ "temperature": 21 }));
    /// let known = CallValues { input: Some(&input), ..CallValues::default() }.with(Phase::Output, &output);
    /// assert_eq!((known.input, known.output), (Some(&input), Some(&output)));
    /// ```
    #[must_use]
    pub fn with(mut self, phase: Phase, payload: &'a Value) -> Self {
        let slot = match phase {
            Phase::InputDelta => return self,
            Phase::Input | Phase::Approval => &mut self.input,
            Phase::Output => &mut self.output,
            Phase::Error => &mut self.error,
            Phase::Suspend => &mut self.suspend_payload,
            Phase::Resume => &mut self.resume_data,
        };
        *slot = Some(payload);
        self
    }
}

/// [`CallValues`], owned: what a host keeps of a call so that its
/// transformers see the earlier phases' values in later ones.
///
/// ```
/// use serde_json::json;
/// use tool_core::transform::OwnedCallValues;
///
/// let kept = OwnedCallValues { input: Some(json!({ "city": "Paris" })), ..OwnedCallValues::default() };
/// assert_eq!(kept.values().input, Some(&json!({ "city": "Paris" })));
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct OwnedCallValues {
    /// See [`CallValues::input`].
    pub input: Option<Value>,
    /// See [`CallValues::output`].
    pub output: Option<Value>,
    /// See [`CallValues::error`].
    pub error: Option<Value>,
    /// See [`CallValues::suspend_payload`].
    pub suspend_payload: Option<Value>,
    /// See [`CallValues::resume_data`].
    pub resume_data: Option<Value>,
}

impl OwnedCallValues {
    /// The values, borrowed.
    pub fn values(&self) -> CallValues<'_> {
        CallValues {
            input: self.input.as_ref(),
            output: self.output.as_ref(),
            error: self.error.as_ref(),
            suspend_payload: self.suspend_payload.as_ref(),
            resume_data: self.resume_data.as_ref(),
        }
    }
}

/// What a transformer is given: the payload of its phase and what is known
/// of the call at that point.
#[derive(Debug, Clone, Copy)]
pub struct TransformContext<'a> {
    /// Where the result goes.
    pub target: Target,
    /// Which phase of the call.
    pub phase: Phase,
    /// The tool's id.
    pub tool_id: &'a str,
    /// The call's id.
    pub call_id: &'a str,
    /// The raw payload of this phase.
    pub payload: &'a Value,
    /// The call's values known at this phase, this phase's own included (an
    /// output transformer sees the input the output came from).
    pub known: CallValues<'a>,
}

impl<'a> TransformContext<'a> {
    /// The context of `payload`, the payload of `phase` of the call
    /// `call_id` to `tool_id`, for `target`; `known` gets `payload` as the
    /// phase's own value ([`CallValues::with`]).
    ///
    /// ```
    /// use serde_json::json;
    /// use tool_core::transform::{CallValues, Phase, Target, TransformContext};
    ///
    /// let output = json!({ "temperature": 21 });
    /// let ctx = TransformContext::new(Target::Display, Phase::Output, "weather", "c1", &output, CallValues::default());
    /// assert_eq!(ctx.known.output, Some(&output));
    /// ```
    pub fn new(
        target: Target,
        phase: Phase,
        tool_id: &'a str,
        call_id: &'a str,
        payload: &'a Value,
        known: CallValues<'a>,
    ) -> Self {
        TransformContext {
            target,
            phase,
            tool_id,
            call_id,
            payload,
            known: known.with(phase, payload),
        }
    }
}

/// The result of projecting one payload for one target.
#[derive(Debug, Clone, PartialEq)]
pub enum Projection {
    /// No transform is configured for the target: use the raw payload.
    Unchanged,
    /// Nothing is shown (unhandled or failed input deltas).
    Suppressed,
    /// Show this instead of the raw payload.
    Projected(Value),
}

impl Projection {
    /// What a configured target shows of `phase` when no transformer gives
    /// a value: the "payload unavailable" notice, or nothing for an input
    /// delta.
    fn unavailable(phase: Phase) -> Projection {
        if phase == Phase::InputDelta {
            Projection::Suppressed
        } else {
            Projection::Projected(
                json!({ "message": format!("Tool {} payload unavailable", phase.as_str()) }),
            )
        }
    }

    /// The payload to show: the projection, `raw` when unchanged, `None`
    /// when suppressed.
    ///
    /// ```
    /// use serde_json::json;
    /// use tool_core::transform::Projection;
    ///
    /// let raw = json!({ "city": "Paris" });
    /// assert_eq!(Projection::Unchanged.shown(&raw), Some(raw.clone()));
    /// assert_eq!(Projection::Projected(json!("Paris")).shown(&raw), Some(json!("Paris")));
    /// assert_eq!(Projection::Suppressed.shown(&raw), None);
    /// ```
    pub fn shown(self, raw: &Value) -> Option<Value> {
        match self {
            Projection::Unchanged => Some(raw.clone()),
            Projection::Suppressed => None,
            Projection::Projected(value) => Some(value),
        }
    }
}

type BoxedProjection = Pin<Box<dyn Future<Output = Projection> + Send>>;

/// A projection under way ([`ToolTransform::project`]): a future of the
/// [`Projection`], `Send + 'static`. A sync transformer has already run;
/// an async transformer's future runs when this is polled, within the
/// transform's [time limit](ToolTransform::time_limit).
#[must_use = "a projection shows nothing unless awaited (or taken with `now`)"]
pub struct Projecting(Stage);

enum Stage {
    Ready(Projection),
    Waiting {
        future: BoxedProjection,
        phase: Phase,
    },
}

impl Projecting {
    /// The projection without waiting: a sync transformer's, and for an
    /// async transformer what a failed one shows (the "payload unavailable"
    /// notice, or nothing for an input delta). For places that cannot wait,
    /// as [`Phase::InputDelta`] fragments shown as they stream.
    ///
    /// ```
    /// use serde_json::json;
    /// use tool_core::transform::{CallValues, Phase, Projection, Target, ToolTransform, TransformContext};
    ///
    /// let transform = ToolTransform::new()
    ///     .display(Phase::InputDelta, |ctx| Some(ctx.payload.clone()))
    ///     .display_async(Phase::Input, |_ctx| async { Some(json!("later")) });
    /// let delta = json!("{\"ci");
    /// let ctx = TransformContext::new(Target::Display, Phase::InputDelta, "t", "c1", &delta, CallValues::default());
    /// assert_eq!(transform.project(&ctx).now(), Projection::Projected(delta.clone()));
    /// let input = json!({ "city": "Paris" });
    /// let ctx = TransformContext::new(Target::Display, Phase::Input, "t", "c1", &input, CallValues::default());
    /// assert_eq!(
    ///     transform.project(&ctx).now(),
    ///     Projection::Projected(json!({ "message": "Tool input-available payload unavailable" }))
    /// );
    /// ```
    pub fn now(self) -> Projection {
        match self.0 {
            Stage::Ready(projection) => projection,
            Stage::Waiting { phase, .. } => Projection::unavailable(phase),
        }
    }
}

impl fmt::Debug for Projecting {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Stage::Ready(projection) => f.debug_tuple("Ready").field(projection).finish(),
            Stage::Waiting { phase, .. } => {
                f.debug_struct("Waiting").field("phase", phase).finish()
            }
        }
    }
}

impl Future for Projecting {
    type Output = Projection;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Projection> {
        match &mut self.get_mut().0 {
            Stage::Ready(projection) => {
                Poll::Ready(std::mem::replace(projection, Projection::Suppressed))
            }
            Stage::Waiting { future, .. } => future.as_mut().poll(cx),
        }
    }
}

/// Polls a future, a panic in a poll becoming its message.
struct CatchPanic<F>(Pin<Box<F>>);

impl<F: Future> Future for CatchPanic<F> {
    type Output = Result<F::Output, String>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let future = self.get_mut().0.as_mut();
        match crate::panic::catch_panic(|| future.poll(cx)) {
            Ok(Poll::Ready(value)) => Poll::Ready(Ok(value)),
            Ok(Poll::Pending) => Poll::Pending,
            Err(panic) => Poll::Ready(Err(panic)),
        }
    }
}

type SyncTransformer = dyn Fn(&TransformContext<'_>) -> Option<Value> + Send + Sync;
type AsyncTransformer = dyn Fn(&TransformContext<'_>) -> Pin<Box<dyn Future<Output = Option<Value>> + Send>>
    + Send
    + Sync;

#[derive(Clone)]
enum Transformer {
    Sync(Arc<SyncTransformer>),
    Async(Arc<AsyncTransformer>),
}

/// How long an async transformer may take unless
/// [`time_limit`](ToolTransform::time_limit) says otherwise: events wait
/// for it, and with them the call.
pub const DEFAULT_TIME_LIMIT: Duration = Duration::from_secs(5);

/// Per-phase transformers for the display and transcript targets.
///
/// A target with at least one transformer is *configured*; for a configured
/// target, a phase without a transformer (or whose transformer returns
/// `None`, panics, or, async, overruns the [time
/// limit](Self::time_limit)) shows `{"message": "Tool <phase> payload
/// unavailable"}`, and input deltas are suppressed. Unconfigured targets
/// show raw payloads. A transformer gets the phase's payload and what is
/// known of the call then ([`TransformContext::known`]).
///
/// ```
/// use serde_json::json;
/// use tool_core::transform::{CallValues, Phase, Projection, Target, ToolTransform, TransformContext};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let transform = ToolTransform::new()
///     .display(Phase::Input, |ctx| Some(json!({ "city": ctx.payload["location"] })))
///     .display_async(Phase::Output, |ctx| {
///         // Whatever the future needs is taken from the context first.
///         let city = ctx.known.input.map(|input| input["location"].clone());
///         let temperature = ctx.payload["temperature"].clone();
///         async move { Some(json!({ "city": city, "temperature": temperature })) }
///     });
/// let input = json!({ "location": "Paris" });
/// let ctx = TransformContext::new(Target::Display, Phase::Input, "weather", "c1", &input, CallValues::default());
/// assert_eq!(transform.project(&ctx).await, Projection::Projected(json!({ "city": "Paris" })));
///
/// let output = json!({ "temperature": 21 });
/// let known = CallValues { input: Some(&input), ..CallValues::default() };
/// let ctx = TransformContext::new(Target::Display, Phase::Output, "weather", "c1", &output, known);
/// assert_eq!(
///     transform.project(&ctx).await,
///     Projection::Projected(json!({ "city": "Paris", "temperature": 21 }))
/// );
///
/// let ctx = TransformContext { phase: Phase::Error, ..ctx };
/// assert_eq!(
///     transform.project(&ctx).await,
///     Projection::Projected(json!({ "message": "Tool error payload unavailable" }))
/// );
///
/// let ctx = TransformContext { target: Target::Transcript, ..ctx };
/// assert_eq!(transform.project(&ctx).await, Projection::Unchanged);
/// # }
/// ```
#[derive(Clone)]
pub struct ToolTransform {
    transformers: HashMap<(Target, Phase), Transformer>,
    time_limit: Duration,
}

impl Default for ToolTransform {
    fn default() -> Self {
        ToolTransform {
            transformers: HashMap::new(),
            time_limit: DEFAULT_TIME_LIMIT,
        }
    }
}

impl fmt::Debug for ToolTransform {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut keys: Vec<_> = self.transformers.keys().collect();
        keys.sort_by_key(|(t, p)| (*t as u8, *p as u8));
        f.debug_struct("ToolTransform")
            .field("phases", &keys)
            .field("time_limit", &self.time_limit)
            .finish()
    }
}

impl ToolTransform {
    /// No transformers: every target shows raw payloads.
    pub fn new() -> Self {
        ToolTransform::default()
    }

    /// Sets the display transformer of `phase`.
    #[must_use]
    pub fn display<F>(self, phase: Phase, transformer: F) -> Self
    where
        F: Fn(&TransformContext<'_>) -> Option<Value> + Send + Sync + 'static,
    {
        self.with(Target::Display, phase, transformer)
    }

    /// Sets the transcript transformer of `phase`.
    #[must_use]
    pub fn transcript<F>(self, phase: Phase, transformer: F) -> Self
    where
        F: Fn(&TransformContext<'_>) -> Option<Value> + Send + Sync + 'static,
    {
        self.with(Target::Transcript, phase, transformer)
    }

    /// Sets the transformer of `target` for `phase`.
    #[must_use]
    pub fn with<F>(mut self, target: Target, phase: Phase, transformer: F) -> Self
    where
        F: Fn(&TransformContext<'_>) -> Option<Value> + Send + Sync + 'static,
    {
        self.transformers
            .insert((target, phase), Transformer::Sync(Arc::new(transformer)));
        self
    }

    /// Sets the display transformer of `phase` to an async one (see
    /// [`with_async`](Self::with_async)).
    #[must_use]
    pub fn display_async<F, Fut>(self, phase: Phase, transformer: F) -> Self
    where
        F: Fn(&TransformContext<'_>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Option<Value>> + Send + 'static,
    {
        self.with_async(Target::Display, phase, transformer)
    }

    /// Sets the transcript transformer of `phase` to an async one (see
    /// [`with_async`](Self::with_async)).
    #[must_use]
    pub fn transcript_async<F, Fut>(self, phase: Phase, transformer: F) -> Self
    where
        F: Fn(&TransformContext<'_>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Option<Value>> + Send + 'static,
    {
        self.with_async(Target::Transcript, phase, transformer)
    }

    /// Sets the transformer of `target` for `phase` to an async one: called
    /// with the context, it returns a `Send + 'static` future (take what it
    /// needs from the context first), awaited within the [time
    /// limit](Self::time_limit) on a Tokio runtime with its timer; one
    /// that panics, yields `None` or overruns shows the "payload
    /// unavailable" notice. Input deltas are shown as they stream, without
    /// waiting: an async input-delta transformer suppresses them.
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// use serde_json::json;
    /// use tool_core::transform::{CallValues, Phase, Projection, Target, ToolTransform, TransformContext};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let transform = ToolTransform::new()
    ///     .with_async(Target::Display, Phase::Output, |_ctx| async {
    ///         tokio::time::sleep(Duration::from_secs(60)).await;
    ///         Some(json!("too late"))
    ///     })
    ///     .time_limit(Duration::from_millis(10));
    /// let output = json!(21);
    /// let ctx = TransformContext::new(Target::Display, Phase::Output, "t", "c1", &output, CallValues::default());
    /// assert_eq!(
    ///     transform.project(&ctx).await,
    ///     Projection::Projected(json!({ "message": "Tool output-available payload unavailable" }))
    /// );
    /// # }
    /// ```
    #[must_use]
    pub fn with_async<F, Fut>(mut self, target: Target, phase: Phase, transformer: F) -> Self
    where
        F: Fn(&TransformContext<'_>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Option<Value>> + Send + 'static,
    {
        let boxed = move |ctx: &TransformContext<'_>| {
            Box::pin(transformer(ctx)) as Pin<Box<dyn Future<Output = Option<Value>> + Send>>
        };
        self.transformers
            .insert((target, phase), Transformer::Async(Arc::new(boxed)));
        self
    }

    /// How long an async transformer may take before the notice is shown
    /// instead ([`DEFAULT_TIME_LIMIT`] unless set): a projected event, and
    /// the call that emits it, wait for it.
    #[must_use]
    pub fn time_limit(mut self, limit: Duration) -> Self {
        self.time_limit = limit;
        self
    }

    /// Shows, for `target`, every phase that has no transformer yet as it
    /// is, so configuring one phase does not hide the others. Input deltas
    /// (partial argument text, which a transformer of the whole input cannot
    /// see into) stay suppressed.
    ///
    /// ```
    /// use serde_json::json;
    /// use tool_core::transform::{CallValues, Phase, Projection, Target, ToolTransform, TransformContext};
    ///
    /// let transform = ToolTransform::new()
    ///     .display(Phase::Output, |_ctx| Some(json!("done")))
    ///     .pass_through_others(Target::Display);
    /// let input = json!({ "city": "Paris" });
    /// let ctx = TransformContext::new(Target::Display, Phase::Input, "t", "c1", &input, CallValues::default());
    /// assert_eq!(transform.project(&ctx).now(), Projection::Projected(input.clone()));
    /// let ctx = TransformContext { phase: Phase::Output, ..ctx };
    /// assert_eq!(transform.project(&ctx).now(), Projection::Projected(json!("done")));
    /// let delta = json!("{\"ci");
    /// let ctx = TransformContext { phase: Phase::InputDelta, payload: &delta, ..ctx };
    /// assert_eq!(transform.project(&ctx).now(), Projection::Suppressed);
    /// ```
    #[must_use]
    pub fn pass_through_others(mut self, target: Target) -> Self {
        for phase in Phase::WHOLE {
            self.transformers.entry((target, phase)).or_insert_with(|| {
                Transformer::Sync(Arc::new(|ctx: &TransformContext<'_>| {
                    Some(ctx.payload.clone())
                }))
            });
        }
        self
    }

    /// Shows `target`'s payloads of every phase with the object fields named
    /// `fields` removed, at any depth (an API token in the input, an email
    /// in the output or in a suspension's payload); input deltas, whose
    /// partial text could carry them, are suppressed. Replaces the target's
    /// transformers.
    ///
    /// ```
    /// use serde_json::json;
    /// use tool_core::transform::{CallValues, Phase, Projection, Target, ToolTransform, TransformContext};
    ///
    /// let transform = ToolTransform::new().redact(Target::Display, &["token"]);
    /// let input = json!({ "city": "Paris", "auth": { "token": "s3cret" } });
    /// let ctx = TransformContext::new(Target::Display, Phase::Approval, "t", "c1", &input, CallValues::default());
    /// assert_eq!(transform.project(&ctx).now(), Projection::Projected(json!({ "city": "Paris", "auth": {} })));
    /// ```
    #[must_use]
    pub fn redact(mut self, target: Target, fields: &[&str]) -> Self {
        let fields: Arc<[String]> = fields.iter().map(|f| (*f).to_owned()).collect();
        self.transformers.retain(|(t, _), _| *t != target);
        for phase in Phase::WHOLE {
            let fields = Arc::clone(&fields);
            self.transformers.insert(
                (target, phase),
                Transformer::Sync(Arc::new(move |ctx: &TransformContext<'_>| {
                    let mut shown = ctx.payload.clone();
                    remove_fields(&mut shown, &fields);
                    Some(shown)
                })),
            );
        }
        self
    }

    /// True when no target has a transformer: every payload is shown raw,
    /// and a host need keep nothing of a call for its transformers.
    pub fn is_empty(&self) -> bool {
        self.transformers.is_empty()
    }

    /// True when `target` has at least one transformer.
    pub fn is_configured(&self, target: Target) -> bool {
        self.transformers.keys().any(|(t, _)| *t == target)
    }

    /// Projects the payload of `ctx` for its target: a sync transformer
    /// runs now, an async one when the result is awaited (or not at all,
    /// taken with [`Projecting::now`]).
    pub fn project(&self, ctx: &TransformContext<'_>) -> Projecting {
        if !self.is_configured(ctx.target) {
            return Projecting(Stage::Ready(Projection::Unchanged));
        }
        let (target, phase) = (ctx.target, ctx.phase);
        let unavailable = Projection::unavailable(phase);
        let warn = |why: &str| warn_failed(ctx.tool_id, ctx.call_id, target, phase, why);
        let ready = |projection| Projecting(Stage::Ready(projection));
        let Some(transformer) = self.transformers.get(&(target, phase)) else {
            return ready(unavailable);
        };
        let future = match transformer {
            Transformer::Sync(transformer) => {
                return match crate::panic::catch_panic(|| transformer(ctx)) {
                    Ok(Some(value)) => ready(Projection::Projected(value)),
                    Ok(None) => ready(unavailable),
                    Err(panic) => {
                        warn(&format!("it panicked: {panic}"));
                        ready(unavailable)
                    }
                };
            }
            Transformer::Async(transformer) => {
                match crate::panic::catch_panic(|| transformer(ctx)) {
                    Ok(future) => future,
                    Err(panic) => {
                        warn(&format!("it panicked: {panic}"));
                        return ready(unavailable);
                    }
                }
            }
        };
        let (tool_id, call_id, limit) = (
            ctx.tool_id.to_owned(),
            ctx.call_id.to_owned(),
            self.time_limit,
        );
        let future = async move {
            // The timer inside the guard too: polled off a Tokio runtime
            // with its timer, it panics, and the notice is shown.
            let bounded = CatchPanic(Box::pin(async move {
                tokio::time::timeout(limit, future).await
            }));
            let why = match bounded.await {
                Ok(Ok(Some(value))) => return Projection::Projected(value),
                Ok(Ok(None)) => return unavailable,
                Ok(Err(_)) => format!("it took longer than {limit:?}"),
                Err(panic) => format!("it panicked: {panic}"),
            };
            warn_failed(&tool_id, &call_id, target, phase, &why);
            Projection::unavailable(phase)
        };
        Projecting(Stage::Waiting {
            future: Box::pin(future),
            phase,
        })
    }
}

/// Logs why a transformer gave no value.
fn warn_failed(tool_id: &str, call_id: &str, target: Target, phase: Phase, why: &str) {
    tracing::warn!(
        tool_id,
        call_id,
        target = ?target,
        phase = phase.as_str(),
        why,
        "tool payload transform failed; showing a placeholder"
    );
}

/// Removes the object fields named `fields` from `value`, at any depth.
fn remove_fields(value: &mut Value, fields: &[String]) {
    match value {
        Value::Object(object) => {
            object.retain(|key, _| !fields.contains(key));
            for inner in object.values_mut() {
                remove_fields(inner, fields);
            }
        }
        Value::Array(items) => {
            for item in items {
                remove_fields(item, fields);
            }
        }
        _ => {}
    }
}
