//! The email sink against real SMTP servers on 127.0.0.1: aiosmtpd (from
//! PyPI) writing what it receives to a maildir, and a scripted server
//! whose replies decide retry or dead.
//!
//! The aiosmtpd test skips, saying so, when `python3 -m aiosmtpd` is not
//! there (`pip install aiosmtpd`), unless `REQUIRE_SMTP=1`: then it fails.

use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use mail_parser::{MessageParser, MimeHeaders};
use serde_json::json;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tool_notify::email::EmailSink;
use tool_notify::lettre::message::Mailbox;
use tool_notify::lettre::{AsyncSmtpTransport, Tokio1Executor};
use tool_runtime::NotificationSink;
use tool_runtime::store::{DeliveryState, Notification, NotificationKind, OutboxQuery};

use crate::{approval_runtime, ask_refund, refund_input};

/// An aiosmtpd server on 127.0.0.1 writing each message it accepts into a
/// maildir; stopped when dropped.
struct Aiosmtpd {
    port: u16,
    maildir: PathBuf,
    server: Child,
    _dir: tempfile::TempDir,
}

impl Aiosmtpd {
    /// The server, listening; `None` (with a notice) when aiosmtpd is not
    /// installed and `REQUIRE_SMTP=1` is not set.
    fn start() -> Option<Aiosmtpd> {
        let installed = Command::new("python3")
            .args(["-c", "import aiosmtpd"])
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|status| status.success());
        if !installed {
            assert!(
                std::env::var("REQUIRE_SMTP").as_deref() != Ok("1"),
                "REQUIRE_SMTP=1, but `python3 -m aiosmtpd` is not available (pip install aiosmtpd)"
            );
            eprintln!(
                "skipped: `python3 -m aiosmtpd` is not available (pip install aiosmtpd; REQUIRE_SMTP=1 makes this a failure)"
            );
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        let maildir = dir.path().join("maildir");
        let log = std::fs::File::create(dir.path().join("aiosmtpd.log")).unwrap();
        let port = free_port();
        let server = Command::new("python3")
            .args(["-m", "aiosmtpd", "-n", "-l", &format!("127.0.0.1:{port}")])
            .args(["-c", "aiosmtpd.handlers.Mailbox"])
            .arg(&maildir)
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap();
        let mut smtpd = Aiosmtpd {
            port,
            maildir,
            server,
            _dir: dir,
        };
        smtpd.wait_until_listening();
        Some(smtpd)
    }

    fn wait_until_listening(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(15);
        while TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            if let Some(exit) = self.server.try_wait().unwrap() {
                let log = std::fs::read_to_string(self.maildir.with_file_name("aiosmtpd.log"));
                panic!("aiosmtpd exited ({exit}): {log:?}");
            }
            assert!(
                Instant::now() < deadline,
                "aiosmtpd did not listen within 15 s"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The messages received so far, raw.
    fn messages(&self) -> Vec<Vec<u8>> {
        let Ok(files) = std::fs::read_dir(self.maildir.join("new")) else {
            return Vec::new();
        };
        files
            .map(|file| std::fs::read(file.unwrap().path()).unwrap())
            .collect()
    }

    fn transport(&self) -> AsyncSmtpTransport<Tokio1Executor> {
        smtp_to(self.port)
    }
}

impl Drop for Aiosmtpd {
    fn drop(&mut self) {
        let _ = self.server.kill();
        let _ = self.server.wait();
    }
}

/// A port nothing listens on (it was free a moment ago).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Plain SMTP to 127.0.0.1:`port`, no TLS: a test server.
fn smtp_to(port: u16) -> AsyncSmtpTransport<Tokio1Executor> {
    AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous("127.0.0.1")
        .port(port)
        .timeout(Some(Duration::from_secs(5)))
        .build()
}

fn mailbox(address: &str) -> Mailbox {
    address.parse().unwrap()
}

#[tokio::test]
async fn an_approval_is_mailed_as_text_and_html_to_the_chosen_recipients() {
    let Some(smtpd) = Aiosmtpd::start() else {
        return;
    };
    let runtime = approval_runtime();
    ask_refund(&runtime, "c1", refund_input()).await;
    let sink = EmailSink::new(
        "email",
        smtpd.transport(),
        mailbox("Approvals <approvals@example.com>"),
        |notification: &Notification| match notification.tool_id.as_str() {
            "refund" => vec![
                mailbox("finance@example.com"),
                mailbox("Ops Desk <ops@example.com>"),
            ],
            _ => Vec::new(),
        },
    )
    .unwrap();
    let dispatcher = runtime.dispatcher().sink(sink).build().unwrap();

    let report = dispatcher.dispatch_once().await.unwrap();
    assert_eq!((report.claimed, report.delivered), (1, 1), "{report:?}");

    let messages = smtpd.messages();
    assert_eq!(messages.len(), 1);
    let message = MessageParser::default().parse(&messages[0]).unwrap();
    assert_eq!(message.subject(), Some("Approval needed: refund (call c1)"));
    let entries = runtime.inbox().outbox(OutboxQuery::all()).await.unwrap();
    let id = &entries[0].notification.id;
    assert_eq!(
        message.message_id(),
        Some(format!("{id}@tool-notify").as_str())
    );
    let to: Vec<&str> = message
        .to()
        .unwrap()
        .iter()
        .filter_map(|address| address.address())
        .collect();
    assert_eq!(to, ["finance@example.com", "ops@example.com"]);
    assert_eq!(
        message.from().unwrap().first().unwrap().address(),
        Some("approvals@example.com")
    );
    let content_type = |part: &mail_parser::MessagePart| {
        let kind = part.content_type().unwrap();
        format!("{}/{}", kind.ctype(), kind.subtype().unwrap_or(""))
    };
    assert_eq!(content_type(message.root_part()), "multipart/alternative");
    let part = |wanted: &str| {
        message
            .parts
            .iter()
            .find(|part| part.content_type().is_some() && content_type(part) == wanted)
            .unwrap_or_else(|| panic!("no {wanted} part"))
            .text_contents()
            .unwrap()
            .to_owned()
    };
    let (text, html) = (part("text/plain"), part("text/html"));

    assert!(text.contains("Tool: refund\n"), "{text}");
    assert!(text.contains("Event: approval.requested\n"), "{text}");
    assert!(text.contains("input.amount: 1200\n"), "{text}");
    assert!(
        text.contains("input.note: <b>urgent</b> & \"soon\"\n"),
        "{text}"
    );
    assert!(text.contains("requirement.principals: 1\n"), "{text}");
    assert!(
        html.contains("<td style=\"white-space:pre-wrap\">&lt;b&gt;urgent&lt;/b&gt; &amp; &quot;soon&quot;</td>"),
        "{html}"
    );
    assert!(!html.contains("<b>urgent"), "{html}");
    assert!(
        html.contains("<th align=\"left\" valign=\"top\">input.amount</th>"),
        "{html}"
    );
}

#[tokio::test]
async fn a_notification_with_no_recipient_is_delivered_to_nobody() {
    // Nothing listens on the port: delivering to nobody never connects.
    let sink = EmailSink::new(
        "email",
        smtp_to(free_port()),
        mailbox("approvals@example.com"),
        |_: &Notification| Vec::new(),
    )
    .unwrap();
    let notification =
        Notification::new(NotificationKind::TaskCompleted, "c9", "export", json!({}));

    assert_eq!(sink.deliver(&notification).await, Ok(()));
}

#[tokio::test]
async fn an_smtp_4xx_is_tried_again_and_a_5xx_is_dead() {
    for (reply, retryable) in [
        ("451 4.3.0 try later", true),
        ("550 5.1.1 no such user", false),
    ] {
        let port = scripted_smtp(reply).await;
        let sink = EmailSink::new(
            "email",
            smtp_to(port),
            mailbox("approvals@example.com"),
            |_: &Notification| vec![mailbox("finance@example.com")],
        )
        .unwrap();
        let notification = Notification::new(
            NotificationKind::ApprovalRequested,
            "c1",
            "refund",
            json!({}),
        );

        let failed = sink.deliver(&notification).await.unwrap_err();

        assert_eq!(failed.retryable(), retryable, "{reply}: {failed}");
        assert!(
            failed.to_string().contains(&reply[..3]),
            "{reply}: {failed}"
        );
    }
}

#[tokio::test]
async fn a_refused_mail_through_the_dispatcher_is_dead_with_the_reply() {
    let port = scripted_smtp("554 5.7.1 relay denied").await;
    let runtime = approval_runtime();
    ask_refund(&runtime, "c1", refund_input()).await;
    let sink = EmailSink::new(
        "email",
        smtp_to(port),
        mailbox("approvals@example.com"),
        |_: &Notification| vec![mailbox("finance@example.com")],
    )
    .unwrap();
    let dispatcher = runtime.dispatcher().sink(sink).build().unwrap();

    let report = dispatcher.dispatch_once().await.unwrap();

    assert_eq!(report.dead, 1, "{report:?}");
    let entries = runtime.inbox().outbox(OutboxQuery::all()).await.unwrap();
    assert!(matches!(entries[0].state, DeliveryState::Dead { .. }));
    let error = entries[0].last_error.as_deref().unwrap();
    assert!(
        error.starts_with("email: ") && error.contains("554"),
        "{error}"
    );
}

/// An SMTP server on 127.0.0.1 that accepts a session and answers every
/// `RCPT TO` with `rcpt_reply`; its port.
async fn scripted_smtp(rcpt_reply: &'static str) -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            tokio::spawn(smtp_session(socket, rcpt_reply));
        }
    });
    port
}

async fn smtp_session(socket: tokio::net::TcpStream, rcpt_reply: &str) {
    let (read, mut write) = socket.into_split();
    let mut lines = BufReader::new(read).lines();
    write.write_all(b"220 scripted ESMTP\r\n").await.unwrap();
    while let Ok(Some(line)) = lines.next_line().await {
        let verb = line.split(' ').next().unwrap_or("").to_ascii_uppercase();
        let reply = match verb.as_str() {
            "EHLO" | "HELO" => "250 scripted",
            "RCPT" => rcpt_reply,
            "QUIT" => "221 bye",
            _ => "250 OK",
        };
        if write
            .write_all(format!("{reply}\r\n").as_bytes())
            .await
            .is_err()
            || verb == "QUIT"
        {
            return;
        }
    }
}
