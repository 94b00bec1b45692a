//! Email over SMTP: [`EmailSink`].
//!
//! Which notifications are mailed is the dispatcher's route; to whom, the
//! sink's recipients. Here people are mailed when an approval is asked
//! for, and a webhook gets everything:
//!
//! ```
//! use tool_notify::email::EmailSink;
//! use tool_notify::lettre::{AsyncSmtpTransport, Tokio1Executor};
//! use tool_notify::webhook::WebhookSink;
//! use tool_runtime::Runtime;
//! use tool_runtime::store::NotificationKind;
//!
//! let runtime = Runtime::builder().notifications(true).build().unwrap();
//! let smtp = AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous("127.0.0.1").port(2525).build();
//! let email = EmailSink::new("email", smtp, "approvals@example.com".parse().unwrap(), |_| {
//!     vec!["finance@example.com".parse().unwrap()]
//! })
//! .unwrap();
//! let webhook = WebhookSink::new("audit", "https://audit.example.com/hooks", ["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"]).unwrap();
//! let dispatcher = runtime
//!     .dispatcher()
//!     .sink(email)
//!     .sink(webhook)
//!     .route(|notification| match notification.kind {
//!         NotificationKind::ApprovalRequested => vec!["email".into(), "audit".into()],
//!         _ => vec!["audit".into()],
//!     })
//!     .build()
//!     .unwrap();
//! # let _ = dispatcher;
//! ```

use std::fmt;

use lettre::message::{Mailbox, MultiPart};
use lettre::transport::smtp::Error as SmtpError;
use lettre::{AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};
use tool_runtime::store::Notification;
use tool_runtime::{NotificationSink, SinkError};

use crate::NotifyError;
use crate::render::Rendered;

/// Who is mailed a notification.
type Recipients = Box<dyn Fn(&Notification) -> Vec<Mailbox> + Send + Sync>;

/// Mails each notification to the recipients the application chooses for
/// it, through an SMTP server: one message, `multipart/alternative` with a
/// plain-text and an HTML part, its subject saying what happened (`Approval
/// needed: refund (call c1)`), its body the notification's facts and data
/// a line each (`input.amount: 1200`), every value escaped in the HTML.
///
/// The SMTP transport is lettre's, set up with its API: the relay,
/// STARTTLS or TLS, credentials, port, timeout. An SMTP 4xx reply (and no
/// connection, no answer) makes the notification tried again; a 5xx reply
/// makes it dead. A notification with no recipient is delivered to nobody:
/// done.
///
/// ```no_run
/// use tool_notify::email::EmailSink;
/// use tool_notify::lettre::transport::smtp::authentication::Credentials;
/// use tool_notify::lettre::{AsyncSmtpTransport, Tokio1Executor};
///
/// # fn make() -> Result<(), Box<dyn std::error::Error>> {
/// // STARTTLS on port 587, with a login.
/// let smtp = AsyncSmtpTransport::<Tokio1Executor>::starttls_relay("smtp.example.com")?
///     .credentials(Credentials::new("approvals".to_owned(), std::env::var("SMTP_PASSWORD")?))
///     .build();
/// let sink = EmailSink::new("email", smtp, "Approvals <approvals@example.com>".parse()?, |notification| {
///     match notification.tool_id.as_str() {
///         "refund" => vec!["finance@example.com".parse().unwrap()],
///         _ => Vec::new(),
///     }
/// })?;
/// # let _ = sink;
/// # Ok(())
/// # }
/// ```
pub struct EmailSink {
    name: String,
    transport: AsyncSmtpTransport<Tokio1Executor>,
    from: Mailbox,
    recipients: Recipients,
}

impl EmailSink {
    /// A sink named `name` (as the dispatcher routes to it) that sends
    /// through `transport`, from `from`, to whom `recipients` chooses for
    /// each notification (as `To`); refused when the name is empty.
    ///
    /// ```
    /// use tool_notify::NotifyError;
    /// use tool_notify::email::EmailSink;
    /// use tool_notify::lettre::{AsyncSmtpTransport, Tokio1Executor};
    ///
    /// let smtp = AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous("127.0.0.1").port(2525).build();
    /// let from = "approvals@example.com".parse().unwrap();
    /// let refused = EmailSink::new("", smtp, from, |_| Vec::new()).err().unwrap();
    /// assert_eq!(refused, NotifyError::EmptyName);
    /// ```
    pub fn new(
        name: impl Into<String>,
        transport: AsyncSmtpTransport<Tokio1Executor>,
        from: Mailbox,
        recipients: impl Fn(&Notification) -> Vec<Mailbox> + Send + Sync + 'static,
    ) -> Result<Self, NotifyError> {
        let name = name.into();
        if name.is_empty() {
            return Err(NotifyError::EmptyName);
        }
        Ok(EmailSink {
            name,
            transport,
            from,
            recipients: Box::new(recipients),
        })
    }

    /// The message telling `to` of `notification`.
    fn message(&self, notification: &Notification, to: Vec<Mailbox>) -> Result<Message, SinkError> {
        let rendered = Rendered::of(notification);
        let mut message = Message::builder()
            .message_id(message_id(notification))
            .from(self.from.clone())
            .subject(rendered.subject);
        for mailbox in to {
            message = message.to(mailbox);
        }
        message
            .multipart(MultiPart::alternative_plain_html(
                rendered.text,
                rendered.html,
            ))
            .map_err(|error| {
                SinkError::permanent(format!("the message could not be made: {error}"))
            })
    }
}

impl NotificationSink for EmailSink {
    fn name(&self) -> &str {
        &self.name
    }

    async fn deliver(&self, notification: &Notification) -> Result<(), SinkError> {
        let to = (self.recipients)(notification);
        if to.is_empty() {
            return Ok(());
        }
        let message = self.message(notification, to)?;
        match self.transport.send(message).await {
            Ok(_) => Ok(()),
            Err(error) => Err(refusal(&error)),
        }
    }
}

impl fmt::Debug for EmailSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EmailSink")
            .field("name", &self.name)
            .field("from", &self.from)
            .finish_non_exhaustive()
    }
}

/// The message's `Message-ID`, made of the notification's id: a second
/// delivery of a notification (delivery is at least once) is then the same
/// message to a mail system that drops duplicates. `None` (lettre makes
/// one up) for an id that cannot be one.
fn message_id(notification: &Notification) -> Option<String> {
    let id = &notification.id;
    let fits = !id.is_empty()
        && id
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || byte == b'-' || byte == b'_');
    fits.then(|| format!("<{id}@tool-notify>"))
}

/// What a failed send means for the notification: a 5xx reply, or a
/// message lettre itself cannot send, fails the same way again; a 4xx
/// reply, a connection or TLS failure, a timeout may pass.
fn refusal(error: &SmtpError) -> SinkError {
    if error.is_permanent() || error.is_client() {
        SinkError::permanent(error.to_string())
    } else {
        SinkError::retry(error.to_string())
    }
}
