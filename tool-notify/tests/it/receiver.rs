//! A webhook receiver on 127.0.0.1, on axum: it verifies each request with
//! the crate's [`Verifier`] and answers as the test scripts it.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, post};
use tokio::task::JoinHandle;
use tool_notify::webhook::{Verifier, VerifyError};
use tool_runtime::store::Notification;

/// How the receiver answers one request it verified.
#[derive(Debug, Clone)]
pub enum Answer {
    /// This status, empty.
    Status(u16),
    /// Never.
    Hang,
    /// 302 to `/moved` on the same server.
    Redirect,
    /// This status with a body of `bytes` bytes, streamed slowly: 64 KiB
    /// every 20 ms (10 MiB take 3.2 s).
    SlowBody { status: u16, bytes: usize },
}

/// One request the receiver got.
#[derive(Debug, Clone)]
pub struct Received {
    pub headers: HeaderMap,
    pub body: Bytes,
    pub verified: Result<Notification, VerifyError>,
}

/// A running receiver; stopped when dropped.
pub struct Receiver {
    /// Where to POST: `http://127.0.0.1:<port>/hook`.
    pub url: String,
    shared: Arc<Shared>,
    server: JoinHandle<()>,
}

struct Shared {
    verifier: Verifier,
    answers: Mutex<VecDeque<Answer>>,
    received: Mutex<Vec<Received>>,
    moved_hits: AtomicUsize,
    streamed_bytes: AtomicUsize,
}

impl Receiver {
    /// A receiver knowing `secrets` that answers each verified request with
    /// the next of `answers`, then 200.
    pub async fn start(secrets: &[&str], answers: impl IntoIterator<Item = Answer>) -> Receiver {
        let shared = Arc::new(Shared {
            verifier: Verifier::new(secrets).unwrap(),
            answers: Mutex::new(answers.into_iter().collect()),
            received: Mutex::new(Vec::new()),
            moved_hits: AtomicUsize::new(0),
            streamed_bytes: AtomicUsize::new(0),
        });
        let app = Router::new()
            .route("/hook", post(hook))
            .route("/moved", any(moved))
            .with_state(Arc::clone(&shared));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/hook", listener.local_addr().unwrap());
        let server = tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        Receiver {
            url,
            shared,
            server,
        }
    }

    /// Every request so far, in order.
    pub fn received(&self) -> Vec<Received> {
        self.shared.received.lock().unwrap().clone()
    }

    /// The notifications of the requests that verified, in order.
    pub fn verified(&self) -> Vec<Notification> {
        self.received()
            .into_iter()
            .filter_map(|received| received.verified.ok())
            .collect()
    }

    /// Requests to `/moved`, where a redirect points.
    pub fn moved_hits(&self) -> usize {
        self.shared.moved_hits.load(Ordering::SeqCst)
    }

    /// Bytes of slow bodies handed to the server so far.
    pub fn streamed_bytes(&self) -> usize {
        self.shared.streamed_bytes.load(Ordering::SeqCst)
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.server.abort();
    }
}

async fn hook(State(shared): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    let verified = shared.verifier.verify(&headers, &body);
    shared.received.lock().unwrap().push(Received {
        headers,
        body,
        verified: verified.clone(),
    });
    let notification = match verified {
        Ok(notification) => notification,
        // Taken before: acknowledged, not acted on again.
        Err(VerifyError::Replayed { .. }) => return StatusCode::OK.into_response(),
        Err(_) => return StatusCode::UNAUTHORIZED.into_response(),
    };
    let answer = shared
        .answers
        .lock()
        .unwrap()
        .pop_front()
        .unwrap_or(Answer::Status(200));
    let status = |code: u16| StatusCode::from_u16(code).unwrap();
    match answer {
        Answer::Status(code) if status(code).is_success() => status(code).into_response(),
        Answer::Status(code) => {
            // Not acted on: the sender's next attempt is to be taken.
            shared.verifier.forget(&notification.id);
            status(code).into_response()
        }
        Answer::Hang => std::future::pending().await,
        Answer::Redirect => (StatusCode::FOUND, [(header::LOCATION, "/moved")]).into_response(),
        Answer::SlowBody {
            status: code,
            bytes,
        } => {
            shared.verifier.forget(&notification.id);
            (status(code), slow_body(shared, bytes)).into_response()
        }
    }
}

async fn moved(State(shared): State<Arc<Shared>>) -> StatusCode {
    shared.moved_hits.fetch_add(1, Ordering::SeqCst);
    StatusCode::OK
}

/// `bytes` bytes of `x`, 64 KiB every 20 ms, counted as they are handed
/// over.
fn slow_body(shared: Arc<Shared>, bytes: usize) -> Body {
    const CHUNK: usize = 64 * 1024;
    let chunks = futures_util::stream::unfold(bytes, move |left| {
        let shared = Arc::clone(&shared);
        async move {
            if left == 0 {
                return None;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
            let size = left.min(CHUNK);
            shared.streamed_bytes.fetch_add(size, Ordering::SeqCst);
            Some((
                Ok::<_, Infallible>(Bytes::from(vec![b'x'; size])),
                left - size,
            ))
        }
    });
    Body::from_stream(chunks)
}
