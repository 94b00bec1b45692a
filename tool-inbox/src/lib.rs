//! The human side of approval: an [axum] [`Router`] that lists the calls a
//! [`Runtime`] keeps waiting for a person (approvals, suspensions, calls
//! of declaration-only tools) and takes that person's decisions, behind
//! the application's authentication.
//!
//! Use it when people, not programs, approve, decline, edit, answer or
//! resume your tools' calls: mount the router in your axum application,
//! give it your authentication (bearer tokens, a trusted proxy header, or
//! your own [`Authenticate`]) and, per item, who may see and decide it.
//! Every decision is checked against the tool's schemas and recorded in
//! the runtime's audit log. (The example serves a port, so it is not run.)
//!
//! ```no_run
//! use tool_inbox::{BearerTokens, Principal};
//! use tool_runtime::Runtime;
//!
//! # async fn run(runtime: Runtime) -> std::io::Result<()> {
//! let auth = BearerTokens::new().token(std::env::var("INBOX_TOKEN").unwrap(), Principal::new("ops"));
//! let app = axum::Router::new().nest("/inbox", tool_inbox::router(runtime, auth));
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
//! axum::serve(listener, app).await
//! # }
//! ```
//!
//! # Endpoints
//!
//! Under wherever the router is mounted; every request authenticated by
//! the [`Authenticate`] given, every item filtered by its
//! [`authorize`](Authenticate::authorize):
//!
//! | request | answer |
//! |---|---|
//! | `GET /api/items?q=&sort=&tool=&kind=&run=&thread=&resource=&requester=&older_than=&newer_than=&limit=&after=` | `{"items": [...], "next"}`: the items the principal may read and did not dismiss; `q` searches tool id, requester and call id; `sort` is `id` (the default), `age` or `expiry`; `next` (or `null`) is the `after` of the next page; `run`, `thread` and `resource` are those of the agent that made the call |
//! | `GET /api/items/{callId}` | the item |
//! | `POST /api/items/{callId}/approve` `{"digest"}` | `{"callId", "status"}` |
//! | `POST /api/items/{callId}/decline` `{"digest", "reason": "..."}` | `{"callId", "status": "declined"}` |
//! | `POST /api/items/{callId}/respond` `{"digest", "output": ...}` | the call settled with that output; its tool never runs |
//! | `POST /api/items/{callId}/resume` `{"digest", "data": ...}` | the suspended call resumed |
//! | `POST /api/items/{callId}/edit` `{"digest", "edit": {...}}` | the call approved with the editable fields it names (`editSchema`) changed; an item gives a principal who may edit the raw values to start from (`editValues`), and a field sent back as displayed is refused (422 `projected_value`) |
//! | `POST /api/items/{callId}/dismiss` `{"digest"}` | the item, in this version, hidden from the principal's list and stream (an audit note) |
//! | `POST /api/batch` `{"action", "reason", "items": [{"callId", "digest"}]}` | `{"results": [...]}`: approve or decline each item as its own request would |
//! | `GET /api/audit?after=&limit=` | the audit log as JSON lines (`application/x-ndjson`), the entries of the calls the principal may read, from a `seq` |
//! | `GET /api/items/{callId}/audit` | `{"entries": [...]}`: the call's requests, decisions and refused attempts, pending or settled |
//! | `GET /` | the web page (and its `inbox.js`, `inbox.css`): no authentication, it asks for the token |
//! | `GET /api/events` | server-sent events: the first page as `item`s, then `ready` (`{"principal", "next"}`); then `item` for each new item, `changed` for one in a new version or with an approval counted, `dismissed`, and `settled` (`{"callId", "action", "by", "reason"}`) for each one that no longer waits, on any instance sharing the store |
//!
//! An item shows the call's arguments and suspension payload as its
//! tool's display transforms show them, never the raw values a transform
//! hides, and its `digest`: a decision echoes it, and is refused (409
//! `stale_digest`) when the call changed since it was read, or (409
//! `already_decided`) when another decision took effect first. Every
//! decision is taken as the principal ([`tool_runtime::Runtime::decide_as`])
//! and recorded in the runtime's audit log, as are refused attempts. A call id holding `/` (an agent's call) is sent percent-encoded.
//!
//! Errors are `{"error": {"code", "message"}}`: 401 unauthenticated, 403 a
//! foreign `Origin` or an action the principal may not take, 404 an item
//! that does not exist or that the principal may not read (the same
//! answer, so ids cannot be probed), 409 an item no longer waiting for
//! that decision, 413 a body over the limit, 422 a value the tool's schema
//! refuses (with `modelError`, the model-readable error locating each
//! problem) or a malformed request. Every response carries a strict
//! `Content-Security-Policy`, `X-Content-Type-Options: nosniff` and
//! `Referrer-Policy: no-referrer`.

mod api;
mod auth;
mod confirm;
mod events;
mod guard;
mod links;
mod live;
mod options;
mod page;
mod refusals;
pub mod slack;
mod slack_press;

use std::sync::Arc;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::middleware;
use axum::routing::{get, post};
use tool_runtime::Runtime;

pub use auth::{
    Action, Authenticate, Authorized, BearerTokens, Principal, RequestHead, TrustedHeader,
    Unauthenticated,
};
pub use links::{DecisionLinks, LinkAction, LinkError};
pub use options::{
    MAX_BODY_BYTES, MAX_PAGE, MAX_REASON_CHARS, MAX_STREAMS, MAX_STREAMS_PER_PRINCIPAL,
    POLL_INTERVAL,
};

use api::Shared;
use options::InboxOptions;

/// The inbox of `runtime` behind `auth`, with the default limits: see
/// [`Inbox`] to change them.
///
/// ```
/// use tool_inbox::{BearerTokens, Principal};
///
/// let runtime = tool_runtime::Runtime::builder().build().unwrap();
/// let router: axum::Router = tool_inbox::router(runtime, BearerTokens::new().token("t", Principal::new("ops")));
/// # let _ = router;
/// ```
pub fn router<A: Authenticate>(runtime: Runtime, auth: A) -> Router {
    Inbox::new(runtime, auth).router()
}

/// The inbox's settings, then its [`router`](Inbox::router).
///
/// ```
/// use tool_inbox::{BearerTokens, Inbox, Principal};
///
/// let runtime = tool_runtime::Runtime::builder().build().unwrap();
/// let router = Inbox::new(runtime, BearerTokens::new().token("t", Principal::new("ops")))
///     .max_body_bytes(16 * 1024)
///     .allowed_origin("https://ops.example.com")
///     .router();
/// # let _: axum::Router = router;
/// ```
#[derive(Debug)]
pub struct Inbox<A> {
    runtime: Runtime,
    auth: A,
    options: InboxOptions,
    links: Option<DecisionLinks>,
    slack: Option<slack::SlackActions>,
}

impl<A: Authenticate> Inbox<A> {
    /// The inbox of `runtime` behind `auth`.
    pub fn new(runtime: Runtime, auth: A) -> Self {
        Inbox {
            runtime,
            auth,
            options: InboxOptions::default(),
            links: None,
            slack: None,
        }
    }

    /// The largest request body accepted (413 beyond), [`MAX_BODY_BYTES`]
    /// by default.
    #[must_use]
    pub fn max_body_bytes(mut self, bytes: usize) -> Self {
        self.options.max_body_bytes = bytes;
        self
    }

    /// The most items one page lists (a larger `limit` is refused with
    /// 422), [`MAX_PAGE`] by default.
    #[must_use]
    pub fn max_page(mut self, items: usize) -> Self {
        self.options.max_page = items.max(1);
        self
    }

    /// The longest decline reason, in characters (422 beyond),
    /// [`MAX_REASON_CHARS`] by default.
    #[must_use]
    pub fn max_reason_chars(mut self, chars: usize) -> Self {
        self.options.max_reason_chars = chars;
        self
    }

    /// How many event streams one principal may hold open at once (429
    /// beyond), [`MAX_STREAMS_PER_PRINCIPAL`] by default.
    #[must_use]
    pub fn max_streams_per_principal(mut self, streams: usize) -> Self {
        self.options.max_streams_per_principal = streams;
        self
    }

    /// How many event streams the inbox holds open at once, all
    /// principals together (429 beyond), [`MAX_STREAMS`] by default.
    #[must_use]
    pub fn max_streams(mut self, streams: usize) -> Self {
        self.options.max_streams = streams;
        self
    }

    /// How often the event stream reads the store's audit log for the
    /// changes of other instances sharing it ([`POLL_INTERVAL`] by
    /// default); this runtime's own show at once.
    #[must_use]
    pub fn poll_interval(mut self, interval: std::time::Duration) -> Self {
        self.options.poll_interval = interval;
        self
    }

    /// Accepts requests from pages of `origin` (`scheme://host[:port]`)
    /// besides the inbox's own; any other `Origin` is refused with 403.
    #[must_use]
    pub fn allowed_origin(mut self, origin: impl Into<String>) -> Self {
        self.options.allowed_origins.push(origin.into());
        self
    }

    /// Honors the decision links `links` makes (`GET` and `POST
    /// /links/{token}`): a confirmation page, then the decision, once, by
    /// the link's principal ([`DecisionLinks`]).
    #[must_use]
    pub fn decision_links(mut self, links: DecisionLinks) -> Self {
        self.links = Some(links);
        self
    }

    /// Turns presses of the Approve and Decline buttons of Slack messages
    /// into decisions (`POST /slack/actions`, Slack's interactivity Request
    /// URL), by the principal `actions` maps the Slack user to, after
    /// checking Slack's signature ([`slack::SlackActions`]).
    #[must_use]
    pub fn slack_actions(mut self, actions: slack::SlackActions) -> Self {
        self.slack = Some(actions);
        self
    }

    /// The router to mount (`Router::nest("/inbox", ...)`) or serve.
    /// Nested at `/inbox`, the page is at `/inbox`: axum matches a nested
    /// router's `/` at the prefix, not at `/inbox/` (add a redirect there
    /// if your users type it).
    pub fn router(self) -> Router {
        let max_body = self.options.max_body_bytes;
        let (links, slack) = (self.links.is_some(), self.slack.is_some());
        let shared = Arc::new(Shared {
            runtime: self.runtime,
            auth: self.auth,
            options: self.options,
            live: live::Live::new(),
            refusals: refusals::Refusals::default(),
            links: self.links,
            slack: self.slack,
        });
        // A decision link is its own credential (and asks the inbox's
        // authentication itself when told to): outside the guard.
        let signed_routes = match links {
            true => Router::new().route(
                "/links/{token}",
                get(confirm::open::<A>).post(confirm::confirm::<A>),
            ),
            false => Router::new(),
        };
        // Slack's requests carry their own signature, checked there.
        let signed_routes = match slack {
            true => signed_routes.route("/slack/actions", post(slack_press::actions::<A>)),
            false => signed_routes,
        }
        .layer(DefaultBodyLimit::max(max_body))
        .with_state(Arc::clone(&shared));
        let api = Router::new()
            .route("/api/items", get(api::list::<A>))
            .route("/api/items/{call_id}", get(api::read::<A>))
            .route("/api/items/{call_id}/audit", get(api::audit::<A>))
            .route("/api/audit", get(api::export::<A>))
            .route("/api/items/{call_id}/{action}", post(api::decide::<A>))
            .route("/api/batch", post(api::batch::<A>))
            .route("/api/events", get(events::events::<A>))
            .layer(middleware::from_fn_with_state(
                Arc::clone(&shared),
                guard::admit::<A>,
            ))
            .layer(DefaultBodyLimit::max(max_body))
            .with_state(shared);
        Router::new()
            .route("/", get(page::index))
            .route("/inbox.js", get(page::script))
            .route("/inbox.css", get(page::style))
            .merge(api)
            .merge(signed_routes)
            .layer(middleware::from_fn(guard::security_headers))
    }
}
