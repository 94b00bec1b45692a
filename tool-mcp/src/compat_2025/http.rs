//! The 2025-11-25 hook of the streamable HTTP transport (`crate::http`):
//! a POSTed message goes through [`HttpEdge::request`] before rmcp reads
//! it; the `initialize` of a session that declared tasks gets the server's
//! `capabilities.tasks` in its response ([`with_server_tasks`]).

use std::collections::{HashSet, VecDeque};
use std::convert::Infallible;
use std::sync::Mutex;

use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt as _, Full};
use hyper::Response;
use hyper::body::Bytes;
use serde_json::Value;

use super::wire::{inbound, outbound_initialize, rename};

/// Most sessions remembered as having declared 2025-11-25 tasks (the
/// oldest are forgotten first: their task requests are then refused).
const MAX_TASKS_SESSIONS: usize = 10_000;

/// The sessions of one HTTP server whose `initialize` declared 2025-11-25
/// tasks: their task requests are [renamed](rename).
#[derive(Debug, Default)]
pub(crate) struct HttpEdge(Mutex<(HashSet<String>, VecDeque<String>)>);

/// What [`HttpEdge::request`] did to a POSTed message.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Posted {
    /// It changed: serialize it again.
    pub(crate) changed: bool,
    /// It holds a 2025-11-25 `initialize` that declares `capabilities.tasks`.
    declares_tasks: bool,
}

impl HttpEdge {
    /// Rewrites a message POSTed in `session` (`None`: before one was
    /// opened): what rmcp's types would drop of 2025-11-25's tasks is kept,
    /// and a session that declared them has its task requests renamed.
    pub(crate) fn request(&self, message: &mut Value, session: Option<&str>) -> Posted {
        let seen = inbound(message);
        let renamed = session.is_some_and(|id| self.contains(id)) && rename(message);
        Posted {
            changed: seen.changed || renamed,
            declares_tasks: seen.declares_tasks,
        }
    }

    /// The server opened `session` answering the message `posted`: a
    /// session whose `initialize` declared tasks is remembered (only a
    /// session can have its requests renamed). Whether the response needs
    /// the server's `capabilities.tasks` ([`with_server_tasks`]).
    pub(crate) fn opened(&self, posted: Posted, session: &str) -> bool {
        if posted.declares_tasks {
            self.insert(session);
        }
        posted.declares_tasks
    }

    /// The client ended `session` (`DELETE`).
    pub(crate) fn closed(&self, session: &str) {
        let mut guard = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let (set, order) = &mut *guard;
        if set.remove(session) {
            order.retain(|s| s != session);
        }
    }

    fn insert(&self, session: &str) {
        let mut guard = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let (set, order) = &mut *guard;
        if !set.insert(session.to_owned()) {
            return;
        }
        order.push_back(session.to_owned());
        if order.len() > MAX_TASKS_SESSIONS
            && let Some(oldest) = order.pop_front()
        {
            set.remove(&oldest);
        }
    }

    fn contains(&self, session: &str) -> bool {
        let guard = self.0.lock().unwrap_or_else(|e| e.into_inner());
        guard.0.contains(session)
    }
}

/// An `initialize` response (JSON, or an SSE stream) with the server's
/// 2025-11-25 `capabilities.tasks` in its result.
pub(crate) async fn with_server_tasks(
    response: Response<BoxBody<Bytes, Infallible>>,
) -> Response<BoxBody<Bytes, Infallible>> {
    let sse = response
        .headers()
        .get(hyper::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    let (mut parts, body) = response.into_parts();
    if sse {
        let mut events = InitializeEvents::default();
        return Response::from_parts(parts, body.map_frame(move |f| events.frame(f)).boxed());
    }
    // A JSON response: one message, complete.
    let Ok(collected) = body.collect().await;
    let bytes = collected.to_bytes();
    let body = match serde_json::from_slice::<serde_json::Value>(&bytes) {
        Ok(mut message) => match outbound_initialize(&mut message) {
            true => Bytes::from(message.to_string()),
            false => bytes,
        },
        Err(_) => bytes,
    };
    parts.headers.remove(hyper::header::CONTENT_LENGTH);
    Response::from_parts(parts, Full::new(body).boxed())
}

/// Rewrites the first message event of an SSE stream (the `initialize`
/// result) with [`outbound_initialize`]; every other byte
/// passes unchanged.
#[derive(Debug, Default)]
struct InitializeEvents {
    partial: Vec<u8>,
    done: bool,
}

impl InitializeEvents {
    fn frame(&mut self, frame: hyper::body::Frame<Bytes>) -> hyper::body::Frame<Bytes> {
        match frame.into_data() {
            Ok(data) if !self.done => hyper::body::Frame::data(self.data(&data)),
            Ok(data) => hyper::body::Frame::data(data),
            Err(frame) => frame,
        }
    }

    fn data(&mut self, data: &[u8]) -> Bytes {
        self.partial.extend_from_slice(data);
        let mut out = Vec::with_capacity(self.partial.len());
        let mut start = 0;
        while !self.done {
            let Some(end) = self.partial[start..]
                .windows(2)
                .position(|w| w == b"\n\n")
                .map(|at| start + at + 2)
            else {
                break;
            };
            let event = &self.partial[start..end];
            match std::str::from_utf8(event).ok().and_then(rewrite_event) {
                Some(rewritten) => {
                    out.extend_from_slice(rewritten.as_bytes());
                    self.done = true;
                }
                None => out.extend_from_slice(event),
            }
            start = end;
        }
        if self.done {
            out.extend_from_slice(&self.partial[start..]);
            self.partial = Vec::new();
        } else {
            self.partial.drain(..start);
        }
        Bytes::from(out)
    }
}

/// The event with its `data` (a JSON-RPC message) rewritten, when it
/// carries an `initialize` result.
fn rewrite_event(event: &str) -> Option<String> {
    let mut out = String::with_capacity(event.len() + 96);
    let mut rewritten = false;
    for line in event.split_inclusive('\n') {
        let data = line
            .strip_prefix("data:")
            .map(|d| d.trim_end_matches(['\r', '\n']).trim_start());
        let message = data.and_then(|d| serde_json::from_str::<serde_json::Value>(d).ok());
        match message {
            Some(mut message) if !rewritten => {
                if outbound_initialize(&mut message) {
                    out.push_str(&format!("data: {message}\n"));
                    rewritten = true;
                } else {
                    out.push_str(line);
                }
            }
            _ => out.push_str(line),
        }
    }
    rewritten.then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rewritten(chunks: &[&str]) -> String {
        let mut events = InitializeEvents::default();
        chunks
            .iter()
            .map(|chunk| {
                let frame = events.frame(hyper::body::Frame::data(Bytes::from(chunk.to_string())));
                String::from_utf8(frame.into_data().unwrap().to_vec()).unwrap()
            })
            .collect()
    }

    #[test]
    fn an_initialize_result_gets_the_servers_tasks_wherever_the_frames_split() {
        let result = r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25","capabilities":{}}}"#;
        let stream =
            format!("data: \nid: 0\nretry: 3000\n\ndata: {result}\nid: 1\n\ndata: after\n\n");
        let whole = rewritten(&[&stream]);
        let bytes: Vec<String> = stream.chars().map(String::from).collect();
        let bytes: Vec<&str> = bytes.iter().map(String::as_str).collect();
        assert_eq!(rewritten(&bytes), whole);
        assert!(
            whole.starts_with("data: \nid: 0\nretry: 3000\n\n"),
            "{whole}"
        );
        assert!(whole.ends_with("\nid: 1\n\ndata: after\n\n"), "{whole}");
        let message = whole
            .lines()
            .find_map(|line| line.strip_prefix("data: {"))
            .expect("the result");
        let message: serde_json::Value = serde_json::from_str(&format!("{{{message}")).unwrap();
        assert!(
            message["result"]["capabilities"]["tasks"]["requests"]["tools"]["call"].is_object()
        );
        // Any other first message passes unchanged.
        let other = "data: {\"jsonrpc\":\"2.0\",\"id\":0,\"error\":{\"code\":-32600,\"message\":\"no\"}}\n\n";
        assert_eq!(rewritten(&[other]), other);
        assert_eq!(rewritten(&["data: not json\n\n"]), "data: not json\n\n");
    }
}
