//! Sinks for [tool-runtime](tool_runtime)'s notifications that speak real
//! protocols: a signed webhook, email over SMTP and Slack, each a
//! [`NotificationSink`](tool_runtime::NotificationSink) a
//! [`Dispatcher`](tool_runtime::Dispatcher) delivers to.
//!
//! - [`webhook::WebhookSink`] POSTs a notification's JSON to an endpoint,
//!   signed as the [Standard Webhooks](https://www.standardwebhooks.com/)
//!   specification says (`webhook-id`, `webhook-timestamp`,
//!   `webhook-signature`), with every current secret so that secrets
//!   rotate without a gap. [`webhook::Verifier`] is the receiving side: it
//!   checks the signature, the timestamp's window and refuses a replay.
//! - [`email::EmailSink`] mails a notification, as plain text and HTML, to
//!   the recipients the application chooses for it.
//! - [`slack::SlackSink`] posts a notification to a Slack incoming webhook
//!   as a Block Kit message (with the inbox's renderer, a request's
//!   Approve and Decline buttons, which the inbox's Slack endpoint reads).
//!
//! # Delivery guarantees
//!
//! A notification is stored with the change it reports, and the dispatcher
//! delivers it **at least once**: a sink's failure is either tried again
//! with backoff ([`SinkError::retry`](tool_runtime::SinkError::retry): a
//! timeout, a refused connection, HTTP 408, 429 or 5xx, SMTP 4xx) or makes
//! the notification dead at once
//! ([`SinkError::permanent`](tool_runtime::SinkError::permanent): any other
//! HTTP 4xx, a redirect, SMTP 5xx), visible in the outbox until sent
//! again. A notification may therefore arrive more than once, always with
//! the same id: a receiver acts on an id once ([`webhook::Verifier`]
//! remembers the ids it saw within its window).
//!
//! ```no_run
//! use std::time::Duration;
//! use tool_notify::email::EmailSink;
//! use tool_notify::lettre::{AsyncSmtpTransport, Tokio1Executor};
//! use tool_notify::webhook::WebhookSink;
//! use tool_runtime::{Runtime, SinkLimits};
//!
//! # async fn run(runtime: Runtime) -> Result<(), Box<dyn std::error::Error>> {
//! let webhook = WebhookSink::new(
//!     "ops-webhook",
//!     "https://ops.example.com/hooks/approvals",
//!     ["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"],
//! )?;
//! let smtp = AsyncSmtpTransport::<Tokio1Executor>::starttls_relay("smtp.example.com")?.build();
//! let email = EmailSink::new("email", smtp, "Approvals <approvals@example.com>".parse()?, |_| {
//!     vec!["finance@example.com".parse().unwrap()]
//! })?;
//! let dispatcher = runtime
//!     .dispatcher()
//!     .sink(webhook)
//!     .sink_with(email, SinkLimits::default().timeout(Duration::from_secs(30)))
//!     .build()?;
//! dispatcher.run().await;
//! # Ok(())
//! # }
//! ```

pub mod email;
mod error;
mod post;
mod render;
pub mod slack;
mod text;
pub mod webhook;

pub use error::NotifyError;
/// The SMTP library [`email::EmailSink`] sends with: its transport, its
/// mailboxes, its TLS settings.
pub use lettre;
