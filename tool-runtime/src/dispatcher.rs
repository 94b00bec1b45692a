//! The dispatcher: delivers the notifications of a store's outbox to the
//! application's sinks (a webhook, email, a chat), at least once each,
//! under a lease per notification as decisions claim calls.
//!
//! What happens to one attempt is decided without I/O ([`RetryPolicy`]:
//! delivered, tried again after a jittered exponential backoff, or dead),
//! so that it is tested apart from the sinks.

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tracing::Instrument as _;

use crate::error::RuntimeError;
use crate::store::{Delivery, DynOutbox, Notification, OutboxEntry, Retention};

/// Where notifications go: one channel (a webhook endpoint, a mail server,
/// a chat's incoming webhook). A sink delivers one notification per call;
/// the [`Dispatcher`] bounds how many calls it has at once and for how
/// long each may take ([`SinkLimits`]).
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use tool_runtime::store::Notification;
/// use tool_runtime::{NotificationSink, SinkError};
///
/// /// Keeps what it is given: a sink for tests.
/// struct Kept(Arc<Mutex<Vec<Notification>>>);
///
/// impl NotificationSink for Kept {
///     fn name(&self) -> &str {
///         "kept"
///     }
///
///     async fn deliver(&self, notification: &Notification) -> Result<(), SinkError> {
///         self.0.lock().unwrap().push(notification.clone());
///         Ok(())
///     }
/// }
/// ```
pub trait NotificationSink: Send + Sync + 'static {
    /// Its name, unique among a dispatcher's sinks: what a route names and
    /// an outbox entry records as having taken a notification.
    fn name(&self) -> &str;

    /// Delivers `notification`: `Ok` once the receiver took it; an error
    /// says why and whether trying again may help.
    fn deliver(
        &self,
        notification: &Notification,
    ) -> impl Future<Output = Result<(), SinkError>> + Send;
}

/// Why a sink did not deliver a notification, and whether trying again
/// may help (a timeout, a 5xx, a refused connection) or not (a 4xx: the
/// receiver refuses it as it is).
///
/// ```
/// use tool_runtime::SinkError;
///
/// let error = SinkError::permanent("HTTP 410 Gone");
/// assert!(!error.retryable());
/// assert_eq!(error.to_string(), "HTTP 410 Gone");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SinkError {
    reason: String,
    retryable: bool,
}

impl SinkError {
    /// A failure that may pass: the notification is tried again.
    pub fn retry(reason: impl Into<String>) -> Self {
        SinkError {
            reason: reason.into(),
            retryable: true,
        }
    }

    /// A refusal trying again will not change: the notification is dead.
    pub fn permanent(reason: impl Into<String>) -> Self {
        SinkError {
            reason: reason.into(),
            retryable: false,
        }
    }

    /// Whether trying again may help.
    pub fn retryable(&self) -> bool {
        self.retryable
    }
}

impl fmt::Display for SinkError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.reason)
    }
}

impl std::error::Error for SinkError {}

/// How much of the dispatcher one sink may take: deliveries at once, and
/// how long each may take (waiting for its turn included) before it
/// counts as failed, so that a sink that hangs stalls only its own.
///
/// ```
/// use std::time::Duration;
/// use tool_runtime::SinkLimits;
///
/// let limits = SinkLimits::default().concurrency(2).timeout(Duration::from_secs(5));
/// assert_eq!((limits.concurrency, limits.timeout), (2, Duration::from_secs(5)));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct SinkLimits {
    /// Deliveries at once (default 4).
    pub concurrency: usize,
    /// How long one may take (default 10 s).
    pub timeout: Duration,
}

impl Default for SinkLimits {
    fn default() -> Self {
        SinkLimits {
            concurrency: 4,
            timeout: Duration::from_secs(10),
        }
    }
}

impl SinkLimits {
    /// Deliveries at once.
    #[must_use]
    pub fn concurrency(mut self, deliveries: usize) -> Self {
        self.concurrency = deliveries;
        self
    }

    /// How long one may take.
    #[must_use]
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }
}

/// When a failed delivery is tried again, and when it is given up: the
/// `n`th attempt's failure waits `first · 2ⁿ⁻¹`, at most `cap`, less a
/// random part of up to half (jitter, so that a receiver back from an
/// outage is not hit by every retry at once); the `max_attempts`th failure,
/// or a permanent one, makes the notification dead.
///
/// ```
/// use std::time::Duration;
/// use tool_runtime::RetryPolicy;
///
/// let policy = RetryPolicy::default();
/// assert_eq!(policy.backoff(1, 1.0), Duration::from_secs(1));
/// assert_eq!(policy.backoff(3, 1.0), Duration::from_secs(4));
/// assert_eq!(policy.backoff(3, 0.0), Duration::from_secs(2)); // jitter takes up to half
/// assert_eq!(policy.backoff(30, 1.0), Duration::from_secs(600)); // the cap
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct RetryPolicy {
    /// Attempts at most (default 10), at least 1.
    pub max_attempts: u32,
    /// The wait after the first failure (default 1 s).
    pub first: Duration,
    /// The longest wait (default 10 min).
    pub cap: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 10,
            first: Duration::from_secs(1),
            cap: Duration::from_secs(600),
        }
    }
}

impl RetryPolicy {
    /// Attempts at most.
    #[must_use]
    pub fn max_attempts(mut self, attempts: u32) -> Self {
        self.max_attempts = attempts;
        self
    }

    /// The wait after the first failure, and the longest.
    #[must_use]
    pub fn backoff_between(mut self, first: Duration, cap: Duration) -> Self {
        self.first = first;
        self.cap = cap;
        self
    }

    /// The wait after the failure of attempt `attempt` (from 1), with
    /// `jitter` in `0.0..=1.0` (1.0: the full wait; 0.0: half of it).
    pub fn backoff(&self, attempt: u32, jitter: f64) -> Duration {
        let doublings = attempt.saturating_sub(1).min(31);
        let full = self.first.saturating_mul(1 << doublings).min(self.cap);
        full.mul_f64(0.5 + 0.5 * jitter.clamp(0.0, 1.0))
    }

    /// How the attempt `entry` was claimed for ended, now at `now_ms`: the
    /// sinks that took it (this attempt's added to the earlier ones') and
    /// the failures, by sink.
    pub fn settle(
        &self,
        entry: &OutboxEntry,
        delivered_to: Vec<String>,
        failures: &[(String, SinkError)],
        now_ms: u64,
        jitter: f64,
    ) -> Delivery {
        if failures.is_empty() {
            return Delivery::Delivered { delivered_to };
        }
        let error = failures
            .iter()
            .map(|(sink, error)| format!("{sink}: {error}"))
            .collect::<Vec<_>>()
            .join("; ");
        let permanent = failures.iter().any(|(_, error)| !error.retryable());
        if permanent || entry.attempts >= self.max_attempts {
            return Delivery::Dead {
                delivered_to,
                error,
            };
        }
        let wait = self.backoff(entry.attempts, jitter);
        Delivery::Retry {
            next_at_ms: now_ms.saturating_add(u64::try_from(wait.as_millis()).unwrap_or(u64::MAX)),
            delivered_to,
            error,
        }
    }
}

/// How often a running dispatcher purges the outbox, at most.
const PURGE_EVERY: Duration = Duration::from_secs(60);

/// Which sinks get a notification: by default, every sink.
type Route = Arc<dyn Fn(&Notification) -> Vec<String> + Send + Sync>;

/// [`NotificationSink`] as a trait object.
trait DynSink: Send + Sync + 'static {
    fn name(&self) -> &str;
    fn deliver<'a>(
        &'a self,
        notification: &'a Notification,
    ) -> Pin<Box<dyn Future<Output = Result<(), SinkError>> + Send + 'a>>;
}

impl<S: NotificationSink> DynSink for S {
    fn name(&self) -> &str {
        NotificationSink::name(self)
    }

    fn deliver<'a>(
        &'a self,
        notification: &'a Notification,
    ) -> Pin<Box<dyn Future<Output = Result<(), SinkError>> + Send + 'a>> {
        Box::pin(NotificationSink::deliver(self, notification))
    }
}

/// A sink with its limits.
struct Slot {
    sink: Arc<dyn DynSink>,
    turns: Arc<Semaphore>,
    timeout: Duration,
}

/// Sets a [`Dispatcher`] up: its sinks, which notification goes where,
/// retries, lease; made by [`Runtime::dispatcher`](crate::Runtime::dispatcher).
/// [`build`](DispatcherBuilder::build) refuses a setup that could not
/// work (no sink, two sinks of one name, a route to no sink, a lease no
/// longer than a sink's timeout).
#[must_use = "a dispatcher builder does nothing until built"]
pub struct DispatcherBuilder {
    outbox: Arc<dyn DynOutbox>,
    owner: String,
    sinks: Vec<(Arc<dyn DynSink>, SinkLimits)>,
    route: Option<Route>,
    policy: RetryPolicy,
    lease: Duration,
    poll_every: Duration,
    concurrency: usize,
    retention: Retention,
}

impl fmt::Debug for DispatcherBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sinks: Vec<&str> = self.sinks.iter().map(|(sink, _)| sink.name()).collect();
        f.debug_struct("DispatcherBuilder")
            .field("owner", &self.owner)
            .field("sinks", &sinks)
            .field("policy", &self.policy)
            .finish_non_exhaustive()
    }
}

impl DispatcherBuilder {
    pub(crate) fn new(outbox: Arc<dyn DynOutbox>, owner: String) -> Self {
        DispatcherBuilder {
            outbox,
            owner,
            sinks: Vec::new(),
            route: None,
            policy: RetryPolicy::default(),
            lease: Duration::from_secs(60),
            poll_every: Duration::from_secs(1),
            concurrency: 32,
            retention: Retention::new(Duration::from_secs(7 * 24 * 3600), 100_000),
        }
    }

    /// Adds `sink`, with the default [`SinkLimits`].
    pub fn sink(self, sink: impl NotificationSink) -> Self {
        self.sink_with(sink, SinkLimits::default())
    }

    /// Adds `sink` with its own `limits`.
    pub fn sink_with(mut self, sink: impl NotificationSink, limits: SinkLimits) -> Self {
        self.sinks.push((Arc::new(sink), limits));
        self
    }

    /// Which sinks get each notification, by name: the application's
    /// choice per tool, kind and call (its groups, its people's
    /// preferences). A notification routed to no sink is settled as
    /// delivered to none. Default: every sink.
    pub fn route(
        mut self,
        route: impl Fn(&Notification) -> Vec<String> + Send + Sync + 'static,
    ) -> Self {
        self.route = Some(Arc::new(route));
        self
    }

    /// When failed deliveries are tried again and given up.
    pub fn retry(mut self, policy: RetryPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// How long a claim on a notification holds (default 60 s): longer
    /// than every sink's timeout, so that a claim never runs out while its
    /// delivery may still succeed.
    pub fn lease(mut self, lease: Duration) -> Self {
        self.lease = lease;
        self
    }

    /// How often it looks for due notifications when it found none
    /// (default 1 s).
    pub fn poll_every(mut self, interval: Duration) -> Self {
        self.poll_every = interval.max(Duration::from_millis(1));
        self
    }

    /// Notifications in delivery at once (default 32).
    pub fn concurrency(mut self, notifications: usize) -> Self {
        self.concurrency = notifications.max(1);
        self
    }

    /// What the outbox keeps of delivered and dead notifications (default
    /// 7 days, 100,000 at most).
    pub fn retention(mut self, retention: Retention) -> Self {
        self.retention = retention;
        self
    }

    /// The dispatcher, or why this setup cannot work
    /// ([`RuntimeError::Dispatcher`]).
    pub fn build(self) -> Result<Dispatcher, RuntimeError> {
        let refused = |reason: String| RuntimeError::Dispatcher { reason };
        if self.sinks.is_empty() {
            return Err(refused("it has no sink".to_owned()));
        }
        let mut slots = HashMap::new();
        for (sink, limits) in self.sinks {
            let name = sink.name().to_owned();
            if name.is_empty() || name.len() > 64 {
                return Err(refused(format!(
                    "a sink's name must be 1 to 64 bytes, not {name:?}"
                )));
            }
            if limits.concurrency == 0 || limits.timeout.is_zero() {
                return Err(refused(format!(
                    "sink {name:?} needs a concurrency and a timeout above zero"
                )));
            }
            if limits.timeout >= self.lease {
                return Err(refused(format!(
                    "sink {name:?} may take {:?}, as long as the lease ({:?}): a claim would run out while its delivery may still succeed",
                    limits.timeout, self.lease
                )));
            }
            let slot = Slot {
                sink,
                turns: Arc::new(Semaphore::new(limits.concurrency)),
                timeout: limits.timeout,
            };
            if slots.insert(name.clone(), slot).is_some() {
                return Err(refused(format!("two sinks are named {name:?}")));
            }
        }
        if self.policy.max_attempts == 0 || self.policy.first > self.policy.cap {
            return Err(refused(
                "its retry policy needs an attempt at least and a first wait no longer than its cap"
                    .to_owned(),
            ));
        }
        Ok(Dispatcher {
            inner: Arc::new(DispatcherInner {
                outbox: self.outbox,
                owner: self.owner,
                slots,
                route: self.route,
                policy: self.policy,
                lease: self.lease,
                poll_every: self.poll_every,
                concurrency: self.concurrency,
                retention: self.retention,
            }),
        })
    }
}

/// Delivers a runtime's notifications to its sinks: claims due ones from
/// the store's outbox, sends each to the sinks its route names (those that
/// took it already skipped), and settles it as delivered, to be tried
/// again, or dead. Any number of dispatchers on any number of instances
/// share an outbox: a notification is claimed by one at a time, under a
/// lease and a fencing token, and one whose dispatcher died is claimed
/// again once its lease ran out. Delivery is at least once: a receiver
/// drops a notification whose id it has seen.
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use serde_json::json;
/// use tool_core::{Tool, ToolError};
/// use tool_runtime::store::{Notification, NotificationKind};
/// use tool_runtime::{NotificationSink, Runtime, SinkError, ToolCall};
///
/// struct Kept(Arc<Mutex<Vec<Notification>>>);
///
/// impl NotificationSink for Kept {
///     fn name(&self) -> &str {
///         "kept"
///     }
///
///     async fn deliver(&self, notification: &Notification) -> Result<(), SinkError> {
///         self.0.lock().unwrap().push(notification.clone());
///         Ok(())
///     }
/// }
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let refund = Tool::builder("refund").description("Refunds an order").require_approval(true)
///     .execute(|input, _ctx| async move { Ok::<_, ToolError>(input) })
///     .build().unwrap();
/// let runtime = Runtime::builder().tool(refund).notifications(true).build().unwrap();
/// let kept = Arc::new(Mutex::new(Vec::new()));
/// let dispatcher = runtime.dispatcher().sink(Kept(Arc::clone(&kept))).build().unwrap();
///
/// runtime.call(ToolCall::new("c1", "refund", json!({ "amount": 1200 }))).await;
/// let report = dispatcher.dispatch_once().await.unwrap();
/// assert_eq!(report.delivered, 1);
/// let kept = kept.lock().unwrap();
/// assert_eq!(kept[0].kind, NotificationKind::ApprovalRequested);
/// assert_eq!(kept[0].data["input"]["amount"], 1200);
/// # });
/// ```
#[derive(Clone)]
pub struct Dispatcher {
    inner: Arc<DispatcherInner>,
}

struct DispatcherInner {
    outbox: Arc<dyn DynOutbox>,
    owner: String,
    slots: HashMap<String, Slot>,
    route: Option<Route>,
    policy: RetryPolicy,
    lease: Duration,
    poll_every: Duration,
    concurrency: usize,
    retention: Retention,
}

impl fmt::Debug for Dispatcher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut sinks: Vec<&String> = self.inner.slots.keys().collect();
        sinks.sort();
        f.debug_struct("Dispatcher")
            .field("owner", &self.inner.owner)
            .field("sinks", &sinks)
            .field("policy", &self.inner.policy)
            .finish_non_exhaustive()
    }
}

/// What one round of [`Dispatcher::dispatch_once`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct DispatchReport {
    /// Notifications claimed.
    pub claimed: usize,
    /// Delivered to every sink routed.
    pub delivered: usize,
    /// To be tried again.
    pub retried: usize,
    /// Given up.
    pub dead: usize,
    /// Settled by another claim meanwhile (this one's lease ran out).
    pub superseded: usize,
}

impl Dispatcher {
    /// Claims the notifications due now (as many as its concurrency),
    /// delivers them at once and settles each; what it did. What a test or
    /// a scheduled job runs; [`run_until`](Self::run_until) loops it.
    pub async fn dispatch_once(&self) -> Result<DispatchReport, RuntimeError> {
        let inner = &self.inner;
        let claimed = inner
            .outbox
            .claim_notifications(&inner.owner, inner.lease, inner.concurrency)
            .await?;
        let mut report = DispatchReport {
            claimed: claimed.len(),
            ..DispatchReport::default()
        };
        let mut sending = JoinSet::new();
        for entry in claimed {
            let inner = Arc::clone(inner);
            sending.spawn(async move { inner.send(entry).await }.in_current_span());
        }
        while let Some(sent) = sending.join_next().await {
            match sent {
                Ok(Ok(Some(delivery))) => match delivery {
                    Delivery::Delivered { .. } => report.delivered += 1,
                    Delivery::Retry { .. } => report.retried += 1,
                    Delivery::Dead { .. } => report.dead += 1,
                },
                Ok(Ok(None)) => report.superseded += 1,
                // Unsettled: claimed again once its lease runs out.
                Ok(Err(error)) => {
                    tracing::warn!(%error, "could not settle a notification; it is sent again after its lease");
                }
                Err(panicked) => {
                    tracing::error!(%panicked, "a notification's delivery panicked; it is sent again after its lease");
                }
            }
        }
        Ok(report)
    }

    /// Delivers until the future is dropped.
    ///
    /// # Panics
    ///
    /// When polled outside a tokio runtime with its time driver.
    pub fn run(self) -> impl Future<Output = ()> + Send + 'static {
        self.run_until(std::future::pending())
    }

    /// Delivers until `shutdown` resolves, then stops claiming: each
    /// claimed notification is sent by a task of its own (as many at once
    /// as its concurrency), which goes on to settle it; one whose process
    /// ends first is sent again by whoever claims it after its lease.
    /// Purges what its retention no longer keeps, at most every minute.
    ///
    /// # Panics
    ///
    /// As [`run`](Self::run).
    pub fn run_until(
        self,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> impl Future<Output = ()> + Send + 'static {
        async move {
            // Each claimed notification is sent by a task of its own holding
            // a slot, and a freed slot is filled at once: a notification
            // stuck on a slow sink holds its slot only, never the loop.
            let slots = Arc::new(Semaphore::new(self.inner.concurrency));
            let looping = async {
                let mut next_purge = tokio::time::Instant::now();
                loop {
                    if tokio::time::Instant::now() >= next_purge {
                        self.inner.purge().await;
                        next_purge = tokio::time::Instant::now() + PURGE_EVERY;
                    }
                    let free = slots.available_permits();
                    let claimed = match free {
                        0 => 0,
                        free => self.claim_and_send(free, &slots).await,
                    };
                    if claimed == free {
                        // Full, or more may be due: wait for a free slot.
                        let _ = Arc::clone(&slots).acquire_owned().await;
                        continue;
                    }
                    tokio::time::sleep(self.inner.poll_every).await;
                }
            };
            tokio::select! {
                () = looping => {}
                () = shutdown => {}
            }
        }
        .instrument(tracing::info_span!("dispatcher"))
    }
}

impl Dispatcher {
    /// Claims up to `free` due notifications and sends each in a task of
    /// its own, holding one of `slots` until it is settled; how many it
    /// claimed.
    async fn claim_and_send(&self, free: usize, slots: &Arc<Semaphore>) -> usize {
        let inner = &self.inner;
        let claimed = match inner
            .outbox
            .claim_notifications(&inner.owner, inner.lease, free)
            .await
        {
            Ok(claimed) => claimed,
            Err(error) => {
                tracing::warn!(%error, "could not claim notifications; trying again at the next poll");
                return 0;
            }
        };
        let count = claimed.len();
        for entry in claimed {
            let Ok(slot) = Arc::clone(slots).try_acquire_owned() else {
                // Never: no more were claimed than slots were free. Its
                // lease runs out and another claim sends it.
                break;
            };
            let inner = Arc::clone(inner);
            tokio::spawn(
                async move {
                    if let Err(error) = inner.send(entry).await {
                        tracing::warn!(%error, "could not settle a notification; it is sent again after its lease");
                    }
                    drop(slot);
                }
                .in_current_span(),
            );
        }
        count
    }
}

impl DispatcherInner {
    /// Purges what the retention no longer keeps.
    async fn purge(&self) {
        if let Err(error) = self.outbox.purge_outbox(self.retention).await {
            tracing::warn!(%error, "could not purge the outbox");
        }
    }

    /// Sends the claimed `entry` to the sinks its route names that have not
    /// taken it, and settles it; the delivery settled (`None`: another
    /// claim's meanwhile).
    async fn send(&self, entry: OutboxEntry) -> Result<Option<Delivery>, RuntimeError> {
        let notification = Arc::new(entry.notification.clone());
        let mut routed = match &self.route {
            Some(route) => route(&notification),
            None => self.slots.keys().cloned().collect(),
        };
        // A sink named twice gets it once.
        routed.sort_unstable();
        routed.dedup();
        let mut delivered_to = entry.delivered_to.clone();
        let mut failures = Vec::new();
        let mut sending = JoinSet::new();
        for name in routed {
            if delivered_to.contains(&name) {
                continue;
            }
            let Some(slot) = self.slots.get(&name) else {
                failures.push((name, SinkError::permanent("the route names no such sink")));
                continue;
            };
            let (sink, turns, timeout) = (
                Arc::clone(&slot.sink),
                Arc::clone(&slot.turns),
                slot.timeout,
            );
            let notification = Arc::clone(&notification);
            let span =
                tracing::info_span!("deliver", sink = %name, notification = %notification.id);
            sending.spawn(
                async move {
                    let delivered = tokio::time::timeout(timeout, async {
                        let _turn = turns.acquire().await;
                        sink.deliver(&notification).await
                    })
                    .await
                    .unwrap_or_else(|_| {
                        Err(SinkError::retry(format!("no answer within {timeout:?}")))
                    });
                    (name, delivered)
                }
                .instrument(span),
            );
        }
        while let Some(sent) = sending.join_next().await {
            match sent {
                Ok((name, Ok(()))) => delivered_to.push(name),
                Ok((name, Err(error))) => {
                    tracing::warn!(sink = %name, %error, "a sink did not take a notification");
                    failures.push((name, error));
                }
                Err(panicked) => {
                    failures.push(("?".to_owned(), SinkError::retry(panicked.to_string())));
                }
            }
        }
        let now_ms = crate::store::epoch_ms_now();
        let delivery = self
            .policy
            .settle(&entry, delivered_to, &failures, now_ms, jitter(&entry));
        let settled = self
            .outbox
            .settle_notification(entry.notification.seq, entry.epoch, delivery.clone())
            .await?;
        Ok(settled.then_some(delivery))
    }
}

/// A number in `0.0..1.0` that differs between notifications and attempts
/// (std's per-hasher random keys).
fn jitter(entry: &OutboxEntry) -> f64 {
    use std::hash::{BuildHasher, RandomState};
    let random =
        RandomState::new().hash_one((entry.notification.seq, entry.attempts, SystemTime::now()));
    (random >> 11) as f64 / (1_u64 << 53) as f64
}
