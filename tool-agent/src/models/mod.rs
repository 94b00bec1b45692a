//! HTTP models: [`OpenAiChatModel`], [`OpenAiResponsesModel`] and
//! [`AnthropicModel`], each a [`Model`](super::Model) that streams one
//! provider's API. What they share is told in `http.md`, which each
//! model's documentation includes.

mod anthropic;
mod openai_chat;
mod openai_responses;

use std::sync::{Arc, OnceLock};
use std::time::{Duration, SystemTime};

use futures_util::StreamExt;
use futures_util::stream;
use serde_json::Value;
use tool_core::decode::{DecodeError, SseParser, StreamDecoder, ToolCallEvent};
use tool_core::provider::Provider;

use super::{ModelCallError, ModelEvent, ModelFinish, ModelStream};

pub use anthropic::AnthropicModel;
pub use openai_chat::OpenAiChatModel;
pub use openai_responses::OpenAiResponsesModel;

/// The default timeout for connecting, the first byte, and between chunks.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);
/// The default number of retries (the official SDKs').
const DEFAULT_MAX_RETRIES: u32 = 2;
/// The first backoff; doubled at each retry (the official SDKs').
const BACKOFF_BASE: Duration = Duration::from_millis(500);
/// The longest backoff without the server's delay (the official SDKs').
const BACKOFF_CAP: Duration = Duration::from_secs(8);
/// The longest delay the server may ask for (`retry-after-ms`,
/// `retry-after`): a longer one is not waited, nor retried.
const RETRY_AFTER_CAP: Duration = Duration::from_secs(120);
/// How many characters of a provider's error message are kept.
const MESSAGE_CHARS: usize = 500;
/// How much of an error answer's body is read for its message.
const ERROR_BODY_BYTES: usize = 64 * 1024;

/// One item of a model stream.
type Item = Result<ModelEvent, ModelCallError>;

/// The HTTP settings every model's builder sets.
#[derive(Clone)]
struct HttpSettings {
    provider: Provider,
    api_key: Option<String>,
    api_key_env: &'static str,
    base_url: String,
    timeout: Duration,
    max_retries: u32,
    /// Headers sent with every request (after the defaults, replacing one
    /// of the same name).
    headers: Vec<(String, String)>,
    /// Built at the first stream, shared by the model's clones.
    client: Arc<OnceLock<reqwest::Client>>,
}

impl std::fmt::Debug for HttpSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpSettings")
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("api_key_env", &self.api_key_env)
            .field("base_url", &self.base_url)
            .field("timeout", &self.timeout)
            .field("max_retries", &self.max_retries)
            .field(
                "headers",
                &self
                    .headers
                    .iter()
                    .map(|(name, _)| name)
                    .collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl HttpSettings {
    fn new(provider: Provider, api_key_env: &'static str, base_url: &str) -> Self {
        HttpSettings {
            provider,
            api_key: None,
            api_key_env,
            base_url: base_url.to_owned(),
            timeout: DEFAULT_TIMEOUT,
            max_retries: DEFAULT_MAX_RETRIES,
            headers: Vec::new(),
            client: Arc::new(OnceLock::new()),
        }
    }

    /// The key given, or the environment's (read now).
    fn api_key(&self) -> Result<String, ModelCallError> {
        if let Some(key) = &self.api_key {
            return Ok(key.clone());
        }
        match std::env::var(self.api_key_env) {
            Ok(key) if !key.trim().is_empty() => Ok(key.trim().to_owned()),
            _ => Err(ModelCallError::MissingApiKey {
                provider: self.provider,
                env: self.api_key_env,
            }),
        }
    }

    /// The model's client, built the first time.
    fn client(&self) -> Result<reqwest::Client, ModelCallError> {
        if let Some(client) = self.client.get() {
            return Ok(client.clone());
        }
        // No client timeouts: `connect` and `step` time each wait themselves.
        let client = reqwest::Client::builder()
            .build()
            .map_err(|error| transport(self.provider, "could not build the HTTP client", error))?;
        Ok(self.client.get_or_init(|| client).clone())
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base_url.trim_end_matches('/'))
    }
}

/// How a request authenticates.
#[derive(Debug, Clone, Copy)]
enum Auth {
    /// `authorization: Bearer <key>` (OpenAI).
    Bearer,
    /// `x-api-key: <key>` and `anthropic-version` (Anthropic).
    Anthropic,
}

/// One streamed request.
struct Call {
    settings: HttpSettings,
    path: &'static str,
    auth: Auth,
    body: Value,
    /// The request's own headers ([`ModelRequest::headers`](crate::ModelRequest::headers)).
    headers: Vec<(String, String)>,
}

impl Call {
    /// The headers sent: the defaults and the key, then the model's, then
    /// the request's (each replacing one of the same name).
    fn header_map(&self, key: &str) -> Result<reqwest::header::HeaderMap, ModelCallError> {
        use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
        let mut headers = HeaderMap::new();
        let mut set = |name: &str, value: &str| -> Result<(), ModelCallError> {
            let invalid = |what: &str| {
                ModelCallError::Other(format!("the HTTP header {name:?} is not valid: {what}"))
            };
            let name =
                HeaderName::from_bytes(name.as_bytes()).map_err(|e| invalid(&e.to_string()))?;
            let mut value = HeaderValue::from_str(value).map_err(|e| invalid(&e.to_string()))?;
            if name == reqwest::header::AUTHORIZATION || name.as_str() == "x-api-key" {
                value.set_sensitive(true);
            }
            headers.insert(name, value);
            Ok(())
        };
        set("content-type", "application/json")?;
        set("accept", "text/event-stream")?;
        match self.auth {
            Auth::Bearer => set("authorization", &format!("Bearer {key}"))?,
            Auth::Anthropic => {
                set("x-api-key", key)?;
                set("anthropic-version", "2023-06-01")?;
            }
        }
        for (name, value) in self.settings.headers.iter().chain(&self.headers) {
            set(name, value)?;
        }
        Ok(headers)
    }
}

/// What comes after an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flow {
    Continue,
    /// The answer is over (its last item was pushed).
    Done,
}

/// One provider's reading of its events.
trait Protocol: Send + 'static {
    /// Reads one SSE event's `data`, pushing what it means.
    fn data(&mut self, data: &str, out: &mut Vec<Item>) -> Flow;

    /// The body ended without the provider's last event: the finish it
    /// already announced, if any (Anthropic's `stop_reason` before
    /// `message_stop`, Chat's `finish_reason` before `[DONE]`).
    fn announced_finish(&mut self) -> Option<ModelFinish>;

    /// The decoder, to report the calls still open.
    fn decoder(&mut self) -> &mut dyn StreamDecoder;
}

/// Streams `call`, read by `protocol`.
fn run<P: Protocol>(call: Call, protocol: P) -> ModelStream {
    let start = State::Start(Box::new((call, protocol)));
    Box::pin(stream::unfold(start, step::<P>).flat_map(stream::iter))
}

enum State<P> {
    Start(Box<(Call, P)>),
    Body(Box<Body<P>>),
    Done,
}

struct Body<P> {
    provider: Provider,
    timeout: Duration,
    response: reqwest::Response,
    utf8: Utf8,
    sse: SseParser,
    protocol: P,
}

impl<P: Protocol> Body<P> {
    /// Feeds body text; `Done` when an event ended the answer.
    fn feed(&mut self, text: &str, out: &mut Vec<Item>) -> Flow {
        for event in self.sse.push(text) {
            if self.protocol.data(&event.data, out) == Flow::Done {
                return Flow::Done;
            }
        }
        Flow::Continue
    }

    /// The calls still open, as `Incomplete` events.
    fn cut(&mut self, out: &mut Vec<Item>) {
        push_calls(out, self.protocol.decoder().finish());
    }

    /// The body ended cleanly: the rest of its text, then the announced
    /// finish or an error.
    fn end(&mut self, out: &mut Vec<Item>) {
        let rest = self.utf8.finish();
        if self.feed(&rest, out) == Flow::Done {
            return;
        }
        if let Some(event) = self.sse.finish()
            && self.protocol.data(&event.data, out) == Flow::Done
        {
            return;
        }
        self.cut(out);
        match self.protocol.announced_finish() {
            Some(finish) => out.push(Ok(ModelEvent::Finish(finish))),
            None => out.push(Err(ModelCallError::StreamEnded {
                provider: self.provider,
                reason: "the stream closed before the answer finished".into(),
                source: None,
            })),
        }
    }
}

async fn step<P: Protocol>(state: State<P>) -> Option<(Vec<Item>, State<P>)> {
    match state {
        State::Done => None,
        State::Start(start) => {
            let (call, protocol) = *start;
            match connect(&call).await {
                Ok(response) => Some((
                    Vec::new(),
                    State::Body(Box::new(Body {
                        provider: call.settings.provider,
                        timeout: call.settings.timeout,
                        response,
                        utf8: Utf8::default(),
                        sse: SseParser::new(),
                        protocol,
                    })),
                )),
                Err(error) => Some((vec![Err(error)], State::Done)),
            }
        }
        State::Body(mut body) => {
            let mut out = Vec::new();
            match tokio::time::timeout(body.timeout, body.response.chunk()).await {
                Ok(Ok(Some(bytes))) => {
                    let text = body.utf8.push(&bytes);
                    if body.feed(&text, &mut out) == Flow::Done {
                        return Some((out, State::Done));
                    }
                    Some((out, State::Body(body)))
                }
                Ok(Ok(None)) => {
                    body.end(&mut out);
                    Some((out, State::Done))
                }
                Ok(Err(error)) => {
                    body.cut(&mut out);
                    out.push(Err(ModelCallError::StreamEnded {
                        provider: body.provider,
                        reason: format!("the stream broke off: {}", error_chain(&error)),
                        source: Some(Box::new(error)),
                    }));
                    Some((out, State::Done))
                }
                Err(_) => {
                    body.cut(&mut out);
                    out.push(Err(ModelCallError::Timeout {
                        provider: body.provider,
                        after: body.timeout,
                    }));
                    Some((out, State::Done))
                }
            }
        }
    }
}

/// Sends the request, with the retries; the response has a success status.
async fn connect(call: &Call) -> Result<reqwest::Response, ModelCallError> {
    let settings = &call.settings;
    let provider = settings.provider;
    let key = settings.api_key()?;
    let client = settings.client()?;
    let url = settings.url(call.path);
    let body =
        serde_json::to_vec(&call.body).map_err(|error| ModelCallError::Other(error.to_string()))?;
    let headers = call.header_map(&key)?;
    let mut attempt = 0;
    loop {
        let request = client
            .post(&url)
            .headers(headers.clone())
            .body(body.clone());
        let retryable = attempt < settings.max_retries;
        let wait = match tokio::time::timeout(settings.timeout, request.send()).await {
            Err(_) if retryable => {
                tracing::warn!(%provider, attempt, "model request timed out; retrying");
                backoff(attempt)
            }
            Err(_) => {
                return Err(ModelCallError::Timeout {
                    provider,
                    after: settings.timeout,
                });
            }
            Ok(Err(error)) if retryable && !error.is_builder() => {
                tracing::warn!(%provider, attempt, error = %error_chain(&error), "model request failed; retrying");
                backoff(attempt)
            }
            Ok(Err(error)) => return Err(transport(provider, "the request failed", error)),
            Ok(Ok(response)) => {
                let status = response.status();
                if status.is_success() {
                    return Ok(response);
                }
                let headers = response.headers();
                let delay = server_delay(headers);
                if retryable && should_retry(status.as_u16(), headers, delay) {
                    let wait = match delay {
                        Some(delay) if !delay.is_zero() => delay,
                        _ => backoff(attempt),
                    };
                    tracing::warn!(%provider, attempt, status = status.as_u16(), ?wait, "model request refused; retrying");
                    wait
                } else {
                    let message = error_message(response, settings.timeout).await;
                    return Err(ModelCallError::Status {
                        provider,
                        status: status.as_u16(),
                        message,
                    });
                }
            }
        };
        tokio::time::sleep(wait).await;
        attempt += 1;
    }
}

/// Whether a refused request is sent again, as the official SDKs decide:
/// never when the server asks for a delay beyond [`RETRY_AFTER_CAP`]; as
/// `x-should-retry: true` or `false` says, when it does; else for 408
/// (request timeout), 409 (lock timeout), 429 and 5xx.
fn should_retry(
    status: u16,
    headers: &reqwest::header::HeaderMap,
    delay: Option<Duration>,
) -> bool {
    if delay.is_none() && asks_too_long(headers) {
        return false;
    }
    match headers.get("x-should-retry").map(|v| v.as_bytes()) {
        Some(b"true") => return true,
        Some(b"false") => return false,
        _ => {}
    }
    matches!(status, 408 | 409 | 429) || status >= 500
}

/// The delay the server asks for: `retry-after-ms` (milliseconds), else
/// `retry-after` (seconds, fractions allowed, or an HTTP date); `None` when
/// absent, unreadable, negative (a date past), or beyond
/// [`RETRY_AFTER_CAP`] (see [`asks_too_long`]). Zero is kept: the backoff
/// then applies, a floor under `retry-after: 0`.
fn server_delay(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let seconds = header_seconds(headers, SystemTime::now())?;
    (seconds >= 0.0 && seconds <= RETRY_AFTER_CAP.as_secs_f64())
        .then(|| Duration::from_secs_f64(seconds))
}

/// Whether the server asks for a delay beyond [`RETRY_AFTER_CAP`].
fn asks_too_long(headers: &reqwest::header::HeaderMap) -> bool {
    header_seconds(headers, SystemTime::now())
        .is_some_and(|seconds| seconds > RETRY_AFTER_CAP.as_secs_f64())
}

/// The first of `retry-after-ms` and `retry-after` that reads as a number,
/// in seconds (an overflow reads as infinite); `retry-after` may also be an
/// HTTP date (RFC 9110), read as the seconds from `now` until then
/// (negative once past), as the official SDKs read it.
fn header_seconds(headers: &reqwest::header::HeaderMap, now: SystemTime) -> Option<f64> {
    [("retry-after-ms", 1000.0), ("retry-after", 1.0)]
        .into_iter()
        .find_map(|(name, divisor)| {
            let text = headers.get(name)?.to_str().ok()?.trim();
            match text.parse::<f64>() {
                Ok(value) => (!value.is_nan()).then_some(value / divisor),
                Err(_) if name == "retry-after" => {
                    let at = httpdate::parse_http_date(text).ok()?;
                    Some(match at.duration_since(now) {
                        Ok(ahead) => ahead.as_secs_f64(),
                        Err(past) => -past.duration().as_secs_f64(),
                    })
                }
                Err(_) => None,
            }
        })
}

/// 500 ms × 2^attempt, at most [`BACKOFF_CAP`], less a random 0 to 25 %.
fn backoff(attempt: u32) -> Duration {
    let full = BACKOFF_BASE
        .saturating_mul(2u32.saturating_pow(attempt.min(16)))
        .min(BACKOFF_CAP);
    full.mul_f64(1.0 - 0.25 * random_fraction())
}

/// A number in `[0, 1)`, random enough for a jitter (std's hasher keys are
/// random per process; the clock makes each draw differ).
fn random_fraction() -> f64 {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    hasher.write_u128(now.as_nanos());
    (hasher.finish() >> 11) as f64 / (1u64 << 53) as f64
}

/// The provider's message in an error answer: `error.message` of its JSON
/// (OpenAI and Anthropic both), else the body's text, else the status.
async fn error_message(mut response: reqwest::Response, timeout: Duration) -> String {
    let status = response.status();
    let mut body = Vec::new();
    while body.len() < ERROR_BODY_BYTES {
        match tokio::time::timeout(timeout, response.chunk()).await {
            Ok(Ok(Some(chunk))) => body.extend_from_slice(&chunk),
            _ => break,
        }
    }
    let text = String::from_utf8_lossy(&body);
    let message = serde_json::from_str::<Value>(&text)
        .ok()
        .and_then(|json| {
            let error = json.get("error")?;
            match error {
                Value::String(message) => Some(message.clone()),
                _ => error.get("message")?.as_str().map(str::to_owned),
            }
        })
        .unwrap_or_else(|| text.trim().to_owned());
    let message = if message.is_empty() {
        status.canonical_reason().unwrap_or("no message").to_owned()
    } else {
        message
    };
    cut(&message, MESSAGE_CHARS)
}

/// The first `chars` characters of `text`.
fn cut(text: &str, chars: usize) -> String {
    match text.char_indices().nth(chars) {
        Some((end, _)) => format!("{}...", &text[..end]),
        None => text.to_owned(),
    }
}

/// A [`ModelCallError::Transport`] from an HTTP client error.
fn transport(provider: Provider, what: &str, error: reqwest::Error) -> ModelCallError {
    ModelCallError::Transport {
        provider,
        reason: format!("{what}: {}", error_chain(&error)),
        source: Some(Box::new(error)),
    }
}

/// An error and its sources, joined with `: `.
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// Body bytes to text, keeping a character split between chunks whole.
#[derive(Debug, Default)]
struct Utf8 {
    pending: Vec<u8>,
}

impl Utf8 {
    fn push(&mut self, bytes: &[u8]) -> String {
        self.pending.extend_from_slice(bytes);
        match std::str::from_utf8(&self.pending) {
            Ok(text) => {
                let text = text.to_owned();
                self.pending.clear();
                text
            }
            // An unfinished character at the end: keep it for the next chunk.
            Err(error) if error.error_len().is_none() => {
                let valid = error.valid_up_to();
                let text = String::from_utf8_lossy(&self.pending[..valid]).into_owned();
                self.pending.drain(..valid);
                text
            }
            Err(_) => {
                let text = String::from_utf8_lossy(&self.pending).into_owned();
                self.pending.clear();
                text
            }
        }
    }

    fn finish(&mut self) -> String {
        let text = String::from_utf8_lossy(&self.pending).into_owned();
        self.pending.clear();
        text
    }
}

/// Parses an event's data: `None` for blank data; data that is not JSON is
/// a [`DecodeError::InvalidJson`] (it may have carried a tool call or the
/// finish, so it is not skipped).
fn parse_event(data: &str) -> Result<Option<Value>, DecodeError> {
    let trimmed = data.trim();
    if trimmed.is_empty() {
        return Ok(None);
    }
    serde_json::from_str(trimmed)
        .map(Some)
        .map_err(|source| DecodeError::InvalidJson {
            data: data.to_owned(),
            source,
        })
}

/// Pushes a decoder's answer: its events; for an error (the provider's
/// error event, or an event that could not be decoded, which may have
/// carried a tool call or the finish), the open calls as `Incomplete` and
/// the error, which ends the answer (`Done`).
fn decoded(
    provider: Provider,
    decoder: &mut dyn StreamDecoder,
    result: Result<Vec<ToolCallEvent>, DecodeError>,
    out: &mut Vec<Item>,
) -> Flow {
    match result {
        Ok(events) => {
            push_calls(out, events);
            Flow::Continue
        }
        Err(source) => {
            if !matches!(source, DecodeError::Provider { .. }) {
                tracing::warn!(%provider, error = %source, "a model stream event could not be decoded; the answer ends");
            }
            push_calls(out, decoder.finish());
            out.push(Err(ModelCallError::Decode { provider, source }));
            Flow::Done
        }
    }
}

fn push_calls(out: &mut Vec<Item>, events: Vec<ToolCallEvent>) {
    out.extend(
        events
            .into_iter()
            .map(|event| Ok(ModelEvent::ToolCall(event))),
    );
}

/// A text delta, unless empty.
fn push_text(out: &mut Vec<Item>, text: Option<&str>) {
    if let Some(text) = text
        && !text.is_empty()
    {
        out.push(Ok(ModelEvent::TextDelta(text.to_owned())));
    }
}

/// The count at `pointer` in `value`, 0 when absent.
fn count(value: &Value, pointer: &str) -> u64 {
    value.pointer(pointer).and_then(Value::as_u64).unwrap_or(0)
}

/// A call's arguments as an object, for Anthropic's `tool_use.input`: a
/// call cut off before its arguments were complete (its partial text, a
/// string) is sent back as `{}`; its result is the cut-off explanation.
fn arguments_object(arguments: &Value) -> Value {
    match arguments {
        Value::Object(_) => arguments.clone(),
        _ => Value::Object(serde_json::Map::new()),
    }
}

/// A call's arguments as JSON text, for OpenAI's `arguments`: a call cut
/// off before its arguments were complete (its partial text, a string) is
/// sent back as `{}`, never its text encoded twice.
fn arguments_text(arguments: &Value) -> String {
    match arguments {
        Value::String(_) => "{}".to_owned(),
        other => other.to_string(),
    }
}

/// Generates the builder methods every HTTP model shares.
macro_rules! http_builder {
    ($model:ident, $name:literal, $env:literal, $base:literal) => {
        impl $model {
            #[doc = concat!("The API key to send (by default the environment variable `", $env, "` is read when a stream starts).")]
            ///
            /// ```
            #[doc = concat!("use tool_agent::", stringify!($model), ";")]
            ///
            #[doc = concat!("let model = ", stringify!($model), "::new(\"", $name, "\").api_key(\"my-key\");")]
            /// # drop(model);
            /// ```
            pub fn api_key(mut self, key: impl Into<String>) -> Self {
                self.http.api_key = Some(key.into());
                self
            }

            #[doc = concat!("The environment variable the API key is read from when none was given (default `", $env, "`).")]
            ///
            /// ```
            #[doc = concat!("use tool_agent::", stringify!($model), ";")]
            ///
            #[doc = concat!("let model = ", stringify!($model), "::new(\"", $name, "\").api_key_env(\"MY_PROXY_KEY\");")]
            /// # drop(model);
            /// ```
            pub fn api_key_env(mut self, name: &'static str) -> Self {
                self.http.api_key_env = name;
                self
            }

            #[doc = concat!("The API's base URL (default `", $base, "`), for a proxy or a compatible server.")]
            ///
            /// ```
            #[doc = concat!("use tool_agent::", stringify!($model), ";")]
            ///
            #[doc = concat!("let model = ", stringify!($model), "::new(\"", $name, "\").base_url(\"http://127.0.0.1:8080\");")]
            /// # drop(model);
            /// ```
            pub fn base_url(mut self, url: impl Into<String>) -> Self {
                self.http.base_url = url.into();
                self
            }

            /// The time allowed for connecting and the answer's headers,
            /// then between any two chunks of its body (default 60 s).
            ///
            /// ```
            /// use std::time::Duration;
            #[doc = concat!("use tool_agent::", stringify!($model), ";")]
            ///
            #[doc = concat!("let model = ", stringify!($model), "::new(\"", $name, "\").timeout(Duration::from_secs(20));")]
            /// # drop(model);
            /// ```
            pub fn timeout(mut self, timeout: ::std::time::Duration) -> Self {
                self.http.timeout = timeout;
                self
            }

            /// How many times a request refused with 408, 409, 429 or 5xx
            /// (or as `x-should-retry` says), or that got no answer, is sent
            /// again (default 2, as the official SDKs).
            ///
            /// ```
            #[doc = concat!("use tool_agent::", stringify!($model), ";")]
            ///
            #[doc = concat!("let model = ", stringify!($model), "::new(\"", $name, "\").max_retries(0);")]
            /// # drop(model);
            /// ```
            pub fn max_retries(mut self, retries: u32) -> Self {
                self.http.max_retries = retries;
                self
            }

            /// Sends the HTTP header `name: value` with every request
            /// (replacing a default header of that name; a request's own
            /// headers, [`ModelRequest::header`](crate::ModelRequest::header),
            /// replace it in turn). An invalid one fails each stream with
            /// [`ModelCallError::Other`](crate::ModelCallError::Other).
            ///
            /// ```
            #[doc = concat!("use tool_agent::", stringify!($model), ";")]
            ///
            #[doc = concat!("let model = ", stringify!($model), "::new(\"", $name, "\").header(\"x-team\", \"search\");")]
            /// # drop(model);
            /// ```
            pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
                self.http.headers.push((name.into(), value.into()));
                self
            }
        }
    };
}

use http_builder;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_the_cap_less_a_jitter() {
        for (attempt, full) in [
            (0, Duration::from_millis(500)),
            (1, Duration::from_secs(1)),
            (3, Duration::from_secs(4)),
            (4, Duration::from_secs(8)),
            (40, BACKOFF_CAP),
        ] {
            for _ in 0..20 {
                let wait = backoff(attempt);
                assert!(
                    wait <= full && wait >= full.mul_f64(0.75),
                    "{attempt}: {wait:?}"
                );
            }
        }
        let draws: std::collections::HashSet<_> = (0..20).map(|_| backoff(0)).collect();
        assert!(draws.len() > 1, "jittered");
    }

    fn headers(pairs: &[(&'static str, &str)]) -> reqwest::header::HeaderMap {
        pairs
            .iter()
            .map(|(name, value)| {
                (
                    reqwest::header::HeaderName::from_static(name),
                    value.parse().unwrap(),
                )
            })
            .collect()
    }

    #[test]
    fn the_server_delay_prefers_milliseconds_and_is_capped() {
        let ms = headers(&[("retry-after-ms", "250"), ("retry-after", "3")]);
        assert_eq!(server_delay(&ms), Some(Duration::from_millis(250)));
        let s = headers(&[("retry-after", "1.5")]);
        assert_eq!(server_delay(&s), Some(Duration::from_millis(1500)));
        let zero = headers(&[("retry-after", "0")]);
        assert_eq!(server_delay(&zero), Some(Duration::ZERO));
        let long = headers(&[("retry-after", "600")]);
        assert_eq!(server_delay(&long), None);
        assert!(!should_retry(429, &long, None));
        let date = headers(&[("retry-after", "Wed, 21 Oct 2015 07:28:00 GMT")]);
        assert_eq!(server_delay(&date), None);
        assert!(should_retry(429, &date, None));
    }

    #[test]
    fn retry_after_may_be_an_http_date() {
        // HTTP dates have whole seconds: the date 30 s from now, rounded down.
        let now = SystemTime::now();
        let soon = headers(&[(
            "retry-after",
            &httpdate::fmt_http_date(now + Duration::from_secs(30)),
        )]);
        let seconds = header_seconds(&soon, now).unwrap();
        assert!((29.0..=30.0).contains(&seconds), "{seconds}");
        let delay = server_delay(&soon).unwrap();
        assert!(
            delay > Duration::from_secs(25) && delay <= Duration::from_secs(30),
            "{delay:?}"
        );
        assert!(should_retry(503, &soon, Some(delay)));
        // A date past: no delay of the server's (the backoff applies), retried.
        let past = headers(&[(
            "retry-after",
            &httpdate::fmt_http_date(now - Duration::from_secs(5)),
        )]);
        assert!(header_seconds(&past, now).unwrap() <= -4.0);
        assert_eq!(server_delay(&past), None);
        assert!(should_retry(429, &past, None));
        // A date beyond the cap: not waited, nor retried.
        let far = headers(&[(
            "retry-after",
            &httpdate::fmt_http_date(now + Duration::from_secs(3600)),
        )]);
        assert_eq!(server_delay(&far), None);
        assert!(!should_retry(429, &far, None));
        // Neither a number nor a date: ignored.
        let junk = headers(&[("retry-after", "soon")]);
        assert_eq!(header_seconds(&junk, now), None);
        assert!(should_retry(429, &junk, None));
    }

    #[test]
    fn retried_statuses_follow_the_official_sdks() {
        let none = headers(&[]);
        for status in [408, 409, 429, 500, 502, 503, 529] {
            assert!(should_retry(status, &none, None), "{status}");
        }
        for status in [400, 401, 403, 404, 422] {
            assert!(!should_retry(status, &none, None), "{status}");
        }
        assert!(should_retry(
            400,
            &headers(&[("x-should-retry", "true")]),
            None
        ));
        assert!(!should_retry(
            503,
            &headers(&[("x-should-retry", "false")]),
            None
        ));
    }

    #[test]
    fn utf8_split_across_chunks_stays_whole() {
        let text = "é東";
        let bytes = text.as_bytes();
        let mut utf8 = Utf8::default();
        let mut out = String::new();
        for byte in bytes {
            out.push_str(&utf8.push(std::slice::from_ref(byte)));
        }
        out.push_str(&utf8.finish());
        assert_eq!(out, text);
    }

    #[test]
    fn messages_are_cut_at_500_characters() {
        let long = "x".repeat(600);
        assert_eq!(cut(&long, MESSAGE_CHARS).chars().count(), 503);
        assert_eq!(cut("short", MESSAGE_CHARS), "short");
    }
}
