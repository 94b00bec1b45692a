//! A webhook receiver for tool-notify's `WebhookSink`: listens on
//! 127.0.0.1, verifies each request with `Verifier` (signature, timestamp
//! window, replay), prints what it got.
//!
//! ```sh
//! WEBHOOK_SECRETS=whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw \
//!     cargo run -p tool-notify --example webhook_receiver -- 8787
//! ```
//!
//! Then point a `WebhookSink` at `http://127.0.0.1:8787/` with the same
//! secret. During a rotation, give both secrets, separated by a space.

use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use tool_notify::webhook::{Verifier, VerifyError};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let secrets = std::env::var("WEBHOOK_SECRETS").map_err(
        |_| "set WEBHOOK_SECRETS to the sink's secrets (whsec_..., separated by spaces)",
    )?;
    let verifier = Arc::new(Verifier::new(secrets.split_whitespace())?);
    let port = match std::env::args().nth(1) {
        Some(port) => port.parse::<u16>()?,
        None => 8787,
    };
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    println!("listening on http://{}/", listener.local_addr()?);
    let app = Router::new().route("/", post(receive)).with_state(verifier);
    axum::serve(listener, app).await?;
    Ok(())
}

/// Verifies one request and answers as `VerifyError` advises the sender.
async fn receive(
    State(verifier): State<Arc<Verifier>>,
    headers: HeaderMap,
    body: Bytes,
) -> StatusCode {
    match verifier.verify(&headers, &body) {
        Ok(notification) => {
            println!(
                "{} {}: {} call {} {}",
                notification.id,
                notification.kind.as_str(),
                notification.tool_id,
                notification.call_id,
                notification.data
            );
            StatusCode::NO_CONTENT
        }
        // A sender's retry after a lost answer looks the same: acknowledged,
        // so that it stops, and not acted on again.
        Err(VerifyError::Replayed { id }) => {
            println!("{id} again: replay refused");
            StatusCode::OK
        }
        Err(refused) => {
            println!("refused: {refused}");
            match refused {
                // Trying again later will pass.
                VerifyError::Busy { .. } => StatusCode::SERVICE_UNAVAILABLE,
                VerifyError::Body { .. } => StatusCode::BAD_REQUEST,
                _ => StatusCode::UNAUTHORIZED,
            }
        }
    }
}
