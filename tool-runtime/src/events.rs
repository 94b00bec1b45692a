//! Events for UIs: every phase of every call, with display payloads (and the
//! transcript payloads to store), streamed through a broadcast channel.
//!
//! Without a subscriber, emitting costs one atomic load: events are built
//! only when someone listens.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use serde_json::Value;
use tokio::sync::{Notify, broadcast};
use tool_core::transform::{CallValues, Phase, Target, TransformContext};
use tool_core::{LogRecord, Progress, Tool};

use crate::call_outcome::CallOutcome;

/// One thing that happened to one call.
///
/// ```
/// use tool_runtime::{EventKind, ToolEvent};
///
/// fn describe(event: &ToolEvent) -> String {
///     match &event.kind {
///         EventKind::Output { payload } => format!("{} finished: {}", event.call_id, payload.display),
///         other => format!("{} {}: {:?}", event.tool_id, event.call_id, other),
///     }
/// }
/// ```
#[derive(Debug, Clone)]
pub struct ToolEvent {
    /// The call.
    pub call_id: String,
    /// The tool called.
    pub tool_id: String,
    /// What happened.
    pub kind: EventKind,
}

/// The payload of a phase, as shown and as stored: `display` goes to UIs,
/// `transcript` to the stored conversation. Each is the raw value unless the
/// tool has a transform for that target.
#[derive(Debug, Clone, PartialEq)]
pub struct Payload {
    /// What a UI shows.
    pub display: Value,
    /// What a transcript stores.
    pub transcript: Value,
}

/// What happened; see [`ToolEvent`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum EventKind {
    /// The model started streaming the call's arguments.
    InputStart,
    /// One more fragment of the arguments (display projection of the
    /// fragment; not sent when the tool's display transform suppresses deltas).
    InputDelta {
        /// The fragment as displayed (by default the raw text as a JSON string).
        display: Value,
    },
    /// The arguments are complete and valid.
    InputAvailable {
        /// The input.
        payload: Payload,
    },
    /// The call waits for `approve` or `decline`.
    ApprovalRequired {
        /// The input awaiting approval.
        payload: Payload,
        /// What a decision looks like: `{"approved": boolean}`.
        resume_schema: Value,
    },
    /// The call is to a declaration-only tool and waits for the
    /// application to give its output (`respond`) or decline it; its input
    /// was shown by [`InputAvailable`](EventKind::InputAvailable).
    AwaitingOutput {
        /// The schema the output must match, when the tool has one.
        output_schema: Option<Value>,
    },
    /// The tool suspended itself.
    Suspended {
        /// The suspend payload.
        payload: Payload,
        /// The schema resume data must match.
        resume_schema: Option<Value>,
    },
    /// A suspended call was resumed (or an approved call released).
    Resumed {
        /// The resume data (`{"approved": true}` for an approval).
        payload: Payload,
    },
    /// The call completed.
    Output {
        /// The output.
        payload: Payload,
    },
    /// The call was declined; it never ran.
    Declined {
        /// The reason given, if any.
        reason: Option<String>,
    },
    /// The call failed.
    Error {
        /// The model-facing error object.
        payload: Payload,
    },
    /// The call was aborted (cancel or timeout).
    Aborted,
    /// The tool reported progress.
    Progress(Progress),
    /// The tool wrote a log message (`ctx.observe()`, or a `tracing` event
    /// inside the call with the runtime's [`log_layer`](crate::Runtime::log_layer)).
    Log(LogRecord),
    /// The tool wrote a custom chunk (`ctx.writer().write(..)`, see
    /// [`tool_core::Writer`]): sent as written, in order with the call's
    /// progress and logs.
    Custom(Value),
    /// The call runs as a background task.
    BackgroundStarted {
        /// The task.
        task_id: String,
    },
    /// A background task ended.
    BackgroundCompleted {
        /// The task.
        task_id: String,
        /// How it ended.
        outcome: CallOutcome,
    },
}

/// An entry of a stored transcript: the transcript payload of one phase.
#[derive(Debug, Clone, PartialEq)]
pub struct TranscriptEntry {
    /// The call.
    pub call_id: String,
    /// The tool.
    pub tool_id: String,
    /// The phase.
    pub phase: Phase,
    /// The transcript projection of the phase's payload.
    pub payload: Value,
}

impl ToolEvent {
    /// The transcript entry of this event, for events that carry a payload.
    ///
    /// ```
    /// use serde_json::json;
    /// use tool_runtime::{EventKind, Payload, ToolEvent};
    ///
    /// let event = ToolEvent {
    ///     call_id: "c1".into(),
    ///     tool_id: "weather".into(),
    ///     kind: EventKind::Output { payload: Payload { display: json!("21°C"), transcript: json!({ "t": 21 }) } },
    /// };
    /// assert_eq!(event.transcript().unwrap().payload, json!({ "t": 21 }));
    /// ```
    pub fn transcript(&self) -> Option<TranscriptEntry> {
        let (phase, payload) = match &self.kind {
            EventKind::InputAvailable { payload } => (Phase::Input, payload),
            EventKind::ApprovalRequired { payload, .. } => (Phase::Approval, payload),
            EventKind::Suspended { payload, .. } => (Phase::Suspend, payload),
            EventKind::Resumed { payload } => (Phase::Resume, payload),
            EventKind::Output { payload } => (Phase::Output, payload),
            EventKind::Error { payload } => (Phase::Error, payload),
            _ => return None,
        };
        Some(TranscriptEntry {
            call_id: self.call_id.clone(),
            tool_id: self.tool_id.clone(),
            phase,
            payload: payload.transcript.clone(),
        })
    }
}

/// A subscription to a runtime's events, from [`Runtime::events`](crate::Runtime::events).
///
/// Events sent before subscribing are not seen. A subscriber that falls more
/// than the channel capacity behind skips the oldest events (logged, and
/// counted by [`Events::missed`]).
///
/// ```
/// use serde_json::json;
/// use tool_core::{Tool, ToolError};
/// use tool_runtime::{EventKind, Runtime, ToolCall};
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let echo = Tool::builder("echo").description("Echo")
///     .execute(|input, _ctx| async move { Ok::<_, ToolError>(input) })
///     .build().unwrap();
/// let runtime = Runtime::builder().tool(echo).build().unwrap();
/// let mut events = runtime.events();
/// runtime.call(ToolCall::new("c1", "echo", json!({ "x": 1 }))).await;
/// assert!(matches!(events.next().await.unwrap().kind, EventKind::InputAvailable { .. }));
/// assert!(matches!(events.next().await.unwrap().kind, EventKind::Output { .. }));
/// # });
/// ```
#[derive(Debug)]
pub struct Events {
    rx: broadcast::Receiver<ToolEvent>,
    missed: u64,
    subscribers: Arc<AtomicUsize>,
}

impl Drop for Events {
    fn drop(&mut self) {
        self.subscribers.fetch_sub(1, Ordering::Release);
    }
}

impl Events {
    /// The next event; `None` once the runtime (every clone) is gone.
    pub async fn next(&mut self) -> Option<ToolEvent> {
        loop {
            match self.rx.recv().await {
                Ok(event) => return Some(event),
                Err(broadcast::error::RecvError::Lagged(n)) => self.lagged(n),
                Err(broadcast::error::RecvError::Closed) => return None,
            }
        }
    }

    /// The next event if one is waiting, without waiting.
    pub fn try_next(&mut self) -> Option<ToolEvent> {
        loop {
            match self.rx.try_recv() {
                Ok(event) => return Some(event),
                Err(broadcast::error::TryRecvError::Lagged(n)) => self.lagged(n),
                Err(_) => return None,
            }
        }
    }

    /// How many events this subscriber skipped because it fell behind.
    pub fn missed(&self) -> u64 {
        self.missed
    }

    fn lagged(&mut self, n: u64) {
        self.missed += n;
        tracing::warn!(
            missed = n,
            "tool event subscriber fell behind; events were skipped"
        );
    }
}

/// The sending side, shared by every clone of a runtime.
#[derive(Debug, Clone)]
pub(crate) struct EventBus {
    /// Made by the first subscriber: a broadcast channel allocates its
    /// whole buffer (`capacity` events, 344 KB at the default) up front,
    /// which a runtime nobody subscribes to (an MCP server) would carry.
    tx: Arc<OnceLock<broadcast::Sender<ToolEvent>>>,
    /// Live subscriptions; read with one atomic load on every emit
    /// (`Sender::receiver_count` takes a lock).
    subscribers: Arc<AtomicUsize>,
    /// Watchers of single calls' notices: what an MCP request forwards to
    /// its client. A watcher gets its call's notices only, and calls nobody
    /// subscribed to build no other events.
    watchers: Arc<Watchers>,
    /// How many notices a watcher keeps unread: the broadcast's capacity.
    capacity: usize,
}

/// The watchers of calls, by call id.
#[derive(Debug, Default)]
struct Watchers {
    /// How many are registered; read with one atomic load.
    count: AtomicUsize,
    by_call: Mutex<HashMap<Arc<str>, Vec<Arc<WatchQueue>>>>,
}

impl Watchers {
    fn by_call(&self) -> std::sync::MutexGuard<'_, HashMap<Arc<str>, Vec<Arc<WatchQueue>>>> {
        self.by_call.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The unread notices of one watcher.
#[derive(Debug, Default)]
struct WatchQueue {
    notices: Mutex<VecDeque<Notice>>,
    /// Woken on each notice (a permit is kept when nobody waits).
    ready: Notify,
}

/// What a watcher of one call gets ([`Runtime::watch`](crate::Runtime::watch)):
/// its progress, log messages and custom chunks, in the order the tool sent
/// them, as [`EventKind::Progress`], [`EventKind::Log`] and
/// [`EventKind::Custom`] would show them.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Notice {
    /// The tool reported progress (`ctx.progress`).
    Progress(Progress),
    /// The tool logged (`ctx.log`, or a `tracing` record inside the call's
    /// span with the runtime's `log_layer` installed, feature `log-layer`).
    Log(LogRecord),
    /// The tool wrote a custom chunk (`ctx.writer()`).
    Custom(Value),
}

impl From<Notice> for EventKind {
    fn from(notice: Notice) -> Self {
        match notice {
            Notice::Progress(progress) => EventKind::Progress(progress),
            Notice::Log(record) => EventKind::Log(record),
            Notice::Custom(chunk) => EventKind::Custom(chunk),
        }
    }
}

/// The notices of one call, from [`Runtime::watch`](crate::Runtime::watch);
/// unregisters when dropped. A transport forwards them to its client (the
/// MCP server sends them as progress and logging notifications).
#[derive(Debug)]
pub struct CallWatch {
    queue: Arc<WatchQueue>,
    call_id: Arc<str>,
    watchers: Arc<Watchers>,
}

impl CallWatch {
    /// The next notice, once there is one. Cancel-safe: a notice is taken
    /// only by the poll that returns it.
    pub async fn next(&mut self) -> Notice {
        loop {
            if let Some(notice) = self.try_next() {
                return notice;
            }
            self.queue.ready.notified().await;
        }
    }

    /// The next notice if one is waiting, without waiting.
    pub fn try_next(&mut self) -> Option<Notice> {
        self.queue
            .notices
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop_front()
    }
}

impl Drop for CallWatch {
    fn drop(&mut self) {
        // One lookup (an `Arc` clone of the key, no copy of the id).
        if let std::collections::hash_map::Entry::Occupied(mut queues) =
            self.watchers.by_call().entry(Arc::clone(&self.call_id))
        {
            queues
                .get_mut()
                .retain(|queue| !Arc::ptr_eq(queue, &self.queue));
            if queues.get().is_empty() {
                queues.remove();
            }
        }
        self.watchers.count.fetch_sub(1, Ordering::Release);
    }
}

impl EventBus {
    pub(crate) fn new(capacity: usize) -> Self {
        let capacity = capacity.max(1);
        EventBus {
            tx: Arc::default(),
            subscribers: Arc::default(),
            watchers: Arc::default(),
            capacity,
        }
    }

    pub(crate) fn subscribe(&self) -> Events {
        self.subscribers.fetch_add(1, Ordering::AcqRel);
        Events {
            rx: self
                .tx
                .get_or_init(|| broadcast::channel(self.capacity).0)
                .subscribe(),
            missed: 0,
            subscribers: Arc::clone(&self.subscribers),
        }
    }

    /// Watches the progress and log messages of the call `call_id` (of
    /// calls starting from now on), until the watch is dropped.
    pub(crate) fn watch(&self, call_id: &str) -> CallWatch {
        let call_id: Arc<str> = Arc::from(call_id);
        let queue = Arc::new(WatchQueue::default());
        self.watchers
            .by_call()
            .entry(Arc::clone(&call_id))
            .or_default()
            .push(Arc::clone(&queue));
        self.watchers.count.fetch_add(1, Ordering::AcqRel);
        CallWatch {
            queue,
            call_id,
            watchers: Arc::clone(&self.watchers),
        }
    }

    /// True when someone listens; events are only built then.
    #[inline]
    pub(crate) fn active(&self) -> bool {
        self.subscribers.load(Ordering::Acquire) > 0
    }

    /// True when someone takes the notices of `call_id`: a subscriber, or a
    /// watcher of that call.
    pub(crate) fn noticed(&self, call_id: &str) -> bool {
        self.active() || (self.watched() && self.watchers.by_call().contains_key(call_id))
    }

    fn watched(&self) -> bool {
        self.watchers.count.load(Ordering::Acquire) > 0
    }

    /// Sends the event `make` builds, if anyone listens.
    #[inline]
    pub(crate) fn emit(&self, call_id: &str, tool_id: &str, make: impl FnOnce() -> EventKind) {
        if self.active()
            && let Some(tx) = self.tx.get()
        {
            let _ = tx.send(ToolEvent {
                call_id: call_id.to_owned(),
                tool_id: tool_id.to_owned(),
                kind: make(),
            });
        }
    }

    /// Sends the event `make` builds from the projected payload `payload`
    /// gives, if anyone listens: only then do the tool's transformers run.
    pub(crate) async fn emit_shown<P>(
        &self,
        call_id: &str,
        tool_id: &str,
        payload: impl FnOnce() -> P,
        make: impl FnOnce(Payload) -> EventKind,
    ) where
        P: Future<Output = Payload>,
    {
        if self.active() {
            let payload = payload().await;
            self.emit(call_id, tool_id, || make(payload));
        }
    }

    /// Sends a call's progress, log message or custom chunk to the subscribers and to the
    /// watchers of the call. A watcher that has `capacity` notices unread
    /// skips this one (logged), as a subscriber that falls behind does.
    pub(crate) fn notice(&self, call_id: &str, tool_id: &str, notice: Notice) {
        self.emit(call_id, tool_id, || notice.clone().into());
        if !self.watched() {
            return;
        }
        let queues = self.watchers.by_call().get(call_id).cloned();
        for queue in queues.into_iter().flatten() {
            let mut notices = queue.notices.lock().unwrap_or_else(PoisonError::into_inner);
            if notices.len() >= self.capacity {
                tracing::warn!(
                    call_id,
                    "a watcher of the call fell behind; a notice was skipped"
                );
                continue;
            }
            notices.push_back(notice.clone());
            drop(notices);
            queue.ready.notify_one();
        }
    }
}

impl Payload {
    /// The display and transcript projections of `raw`, the payload of
    /// `phase` of the call `call_id` to `tool_id`, through `tool`'s
    /// transforms (`None`: no tool, the raw value both ways); `known` is
    /// what the call gave in its other phases, which the transformers see
    /// ([`CallValues`]). What events, an agent's chunks and any UI built on
    /// the runtime show. Async transformers run when the future is polled,
    /// each within its transform's time limit.
    ///
    /// ```
    /// use serde_json::json;
    /// use tool_core::transform::{CallValues, Phase, ToolTransform};
    /// use tool_core::{Tool, ToolError};
    /// use tool_runtime::Payload;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let login = Tool::builder("login")
    ///     .description("Log in")
    ///     .transform(
    ///         ToolTransform::new()
    ///             .display(Phase::Input, |ctx| {
    ///                 Some(json!({ "user": ctx.payload["user"], "password": "***" }))
    ///             })
    ///             .display(Phase::Output, |ctx| {
    ///                 Some(json!({ "user": ctx.known.input?["user"], "result": ctx.payload }))
    ///             }),
    ///     )
    ///     .execute(|_input, _ctx| async move { Ok::<_, ToolError>(json!("ok")) })
    ///     .build()
    ///     .unwrap();
    /// let raw = json!({ "user": "ada", "password": "hunter2" });
    /// let shown = Payload::of(Some(&login), "c1", "login", Phase::Input, &raw, CallValues::default()).await;
    /// assert_eq!(shown.display, json!({ "user": "ada", "password": "***" }));
    /// assert_eq!(shown.transcript, raw);
    ///
    /// let known = CallValues { input: Some(&raw), ..CallValues::default() };
    /// let shown = Payload::of(Some(&login), "c1", "login", Phase::Output, &json!("ok"), known).await;
    /// assert_eq!(shown.display, json!({ "user": "ada", "result": "ok" }));
    /// # }
    /// ```
    pub fn of(
        tool: Option<&Tool>,
        call_id: &str,
        tool_id: &str,
        phase: Phase,
        raw: &Value,
        known: CallValues<'_>,
    ) -> impl Future<Output = Payload> + Send + 'static {
        let project = |target| {
            let ctx = TransformContext::new(target, phase, tool_id, call_id, raw, known);
            tool.map(|tool| tool.transform().project(&ctx))
        };
        let (display, transcript) = (project(Target::Display), project(Target::Transcript));
        let raw = raw.clone();
        async move {
            // Suppressed is for input deltas only: a whole phase never is.
            let display = match display {
                Some(display) => display.await.shown(&raw).unwrap_or(Value::Null),
                None => raw.clone(),
            };
            let transcript = match transcript {
                Some(transcript) => transcript.await.shown(&raw).unwrap_or(Value::Null),
                None => raw,
            };
            Payload {
                display,
                transcript,
            }
        }
    }

    /// The display projection of `delta`, a fragment of streamed arguments;
    /// `None` when `tool`'s display transform suppresses deltas. Shown as
    /// it streams, without waiting: an async input-delta transformer
    /// suppresses them ([`Projecting::now`](tool_core::transform::Projecting::now)).
    ///
    /// ```
    /// use serde_json::json;
    /// use tool_runtime::Payload;
    ///
    /// assert_eq!(Payload::delta_display(None, "c1", "search", r#"{"q":"#), Some(json!(r#"{"q":"#)));
    /// ```
    pub fn delta_display(
        tool: Option<&Tool>,
        call_id: &str,
        tool_id: &str,
        delta: &str,
    ) -> Option<Value> {
        let raw = Value::String(delta.to_owned());
        let Some(tool) = tool else {
            return Some(raw);
        };
        let ctx = TransformContext::new(
            Target::Display,
            Phase::InputDelta,
            tool_id,
            call_id,
            &raw,
            CallValues::default(),
        );
        tool.transform().project(&ctx).now().shown(&raw)
    }
}

#[cfg(test)]
mod tests {
    use tool_core::LogRecord;

    use super::{EventBus, Notice};

    fn log(text: &str) -> Notice {
        Notice::Log(LogRecord::new(tracing::Level::INFO, text))
    }

    fn text(notice: Option<Notice>) -> Option<String> {
        match notice? {
            Notice::Log(record) => Some(record.message),
            Notice::Progress(_) | Notice::Custom(_) => None,
        }
    }

    #[test]
    fn a_watcher_gets_its_calls_notices_up_to_the_capacity_until_dropped() {
        let bus = EventBus::new(2);
        assert!(!bus.noticed("c1"));
        let mut watch = bus.watch("c1");
        let mut again = bus.watch("c1");
        assert!(bus.noticed("c1"));
        assert!(!bus.noticed("c2"), "another call is not watched");
        bus.notice("c2", "t", log("other call"));
        for n in 1..=3 {
            bus.notice("c1", "t", log(&format!("n{n}")));
        }
        // Each watcher of the call has its own queue; the third notice
        // found them full.
        for queue in [&mut watch, &mut again] {
            assert_eq!(text(queue.try_next()).as_deref(), Some("n1"));
            assert_eq!(text(queue.try_next()).as_deref(), Some("n2"));
            assert_eq!(text(queue.try_next()), None);
        }
        drop(watch);
        assert!(bus.noticed("c1"), "one watcher left");
        drop(again);
        assert!(!bus.noticed("c1"));
        assert!(bus.watchers.by_call().is_empty(), "nothing left behind");
    }
}
