//! A running tool's own questions on protocol 2026-07-28 (SEP-2322): the
//! client takes no requests of the server's, so a question the tool asks
//! through [`McpContext`](crate::McpContext) ends the `tools/call` with an
//! `input_required` result carrying it (`elicitation/create`,
//! `sampling/createMessage` or `roots/list`), and the client's retry (`inputResponses`,
//! with the `requestState`) runs the tool again from the start: each
//! question it asks again, under the same key, now has its answer.
//!
//! Nothing waits on the server between rounds: the answers of the earlier
//! rounds travel in the `requestState`, signed (`request_state.rs`). The
//! questions of one round are all those the run asked before it ended:
//! several asked at once (`tokio::join!`) are one round.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

use rmcp::model::{
    ClientCapabilities, CreateMessageRequest, CreateMessageRequestParams, CreateMessageResult,
    ElicitRequest, ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationCapability,
    FormElicitationCapability, InputRequest, InputRequests, ListRootsRequest, ListRootsResult,
    RootsCapabilities, SamplingMessage,
};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::context::{ElicitFuture, Elicitation, Elicitor, Root, RootsFuture, SampleFuture};
use crate::convert;
use crate::elicit::{self, Answer};

/// What the client of a round declared it can be asked, and whether the
/// server asks users at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Asks {
    /// The server asks users (`McpServerBuilder::elicitation`).
    pub(crate) server_elicits: bool,
    /// The client declared form elicitation.
    pub(crate) forms: bool,
    /// The client declared sampling.
    pub(crate) sampling: bool,
    /// The client declared roots.
    pub(crate) roots: bool,
}

/// One run of a tool on behalf of one `tools/call` of 2026-07-28: the
/// answers it may read, and the questions it asked that have none.
#[derive(Clone)]
pub(crate) struct Round {
    inner: Arc<Inner>,
}

struct Inner {
    /// The protocol version the client's requests speak.
    protocol: String,
    /// The answers given so far, by key: the earlier rounds' (from the
    /// `requestState`), then this retry's `inputResponses`.
    given: BTreeMap<String, Value>,
    asks: Asks,
    state: Mutex<State>,
    /// Fired by the first question without an answer: the request stops
    /// waiting for the run.
    asked: CancellationToken,
    /// Fired once the request stopped waiting: questions asked from now on
    /// fail at once.
    closed: CancellationToken,
}

#[derive(Default)]
struct State {
    /// How many questions without a key of their own were asked (their key
    /// is their rank: the same in every round of a run that asks the same).
    generated: u64,
    /// The answers the run read, by key: what the next round's state carries.
    used: BTreeMap<String, Value>,
    /// The questions without an answer.
    questions: InputRequests,
    /// An answer of the wrong shape: its key, and why.
    bad_answer: Option<(String, String)>,
    /// What the run asked for that the client did not declare.
    missing: Option<ClientCapabilities>,
    /// The request no longer waits: questions are neither asked nor kept.
    over: bool,
}

/// How a round ended, beyond the call's outcome.
pub(crate) enum Ending {
    /// Nothing to add: settle the outcome.
    Settled,
    /// Questions without answers: an `input_required` result with these,
    /// whose state carries the answers read so far.
    Asked {
        questions: InputRequests,
        answers: BTreeMap<String, Value>,
    },
    /// An answer of the wrong shape, at this key.
    BadAnswer { key: String, why: String },
    /// The run failed after asking for what the client did not declare.
    Missing(ClientCapabilities),
}

impl Round {
    pub(crate) fn new(protocol: String, given: BTreeMap<String, Value>, asks: Asks) -> Self {
        Round {
            inner: Arc::new(Inner {
                protocol,
                given,
                asks,
                state: Mutex::new(State::default()),
                asked: CancellationToken::new(),
                closed: CancellationToken::new(),
            }),
        }
    }

    /// The elicitor a tool asks through in this round.
    pub(crate) fn elicitor(&self) -> RoundElicitor {
        RoundElicitor {
            round: self.clone(),
        }
    }

    /// Runs `call` (the tool's run) until it ends, or until it asked a
    /// question without an answer: then the questions still asked while it
    /// winds down (`stop` fires its abort signal; its pending questions
    /// fail) are kept, and its outcome is whatever it ended in.
    pub(crate) async fn until_asked<F: Future + Unpin>(
        &self,
        mut call: F,
        stop: impl FnOnce(),
    ) -> F::Output {
        let outcome = tokio::select! {
            biased;
            outcome = &mut call => outcome,
            () = self.inner.asked.cancelled() => {
                self.inner.closed.cancel();
                stop();
                call.await
            }
        };
        self.inner.closed.cancel();
        self.lock().over = true;
        outcome
    }

    /// How the round ended, once its run did (`failed`: the run's outcome
    /// is a failure).
    pub(crate) fn ending(&self, failed: bool) -> Ending {
        let mut state = self.lock();
        if let Some((key, why)) = state.bad_answer.take() {
            return Ending::BadAnswer { key, why };
        }
        if !state.questions.is_empty() {
            return Ending::Asked {
                questions: std::mem::take(&mut state.questions),
                answers: std::mem::take(&mut state.used),
            };
        }
        match state.missing.take() {
            Some(missing) if failed => Ending::Missing(missing),
            _ => Ending::Settled,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.inner
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// The key of a question: its own, or its rank among those without one.
    fn key(&self, own: Option<&str>, kind: &str) -> String {
        match own {
            Some(key) => key.to_owned(),
            None => {
                let mut state = self.lock();
                state.generated += 1;
                format!("{kind}-{}", state.generated)
            }
        }
    }

    /// The answer to `key`, read as a `T` (`what` names it for an error);
    /// `None` when there is none. One of the wrong shape is kept as the
    /// round's bad answer.
    fn answer<T: serde::de::DeserializeOwned>(
        &self,
        key: &str,
        what: &str,
    ) -> Option<Result<T, String>> {
        let given = self.inner.given.get(key)?;
        Some(match serde_json::from_value::<T>(given.clone()) {
            Ok(answer) => {
                self.lock().used.insert(key.to_owned(), given.clone());
                Ok(answer)
            }
            Err(e) => {
                let why = format!("expected {what}: {e}");
                let mut state = self.lock();
                state
                    .bad_answer
                    .get_or_insert((key.to_owned(), why.clone()));
                Err(format!("the client's answer to {key:?} is not {what}: {e}"))
            }
        })
    }

    /// The answer to `key` (`what` it must be), or else the question
    /// `request()` asked under `key`: an error either way when there is
    /// none (see [`ask`](Self::ask)).
    async fn answer_or_ask<T: serde::de::DeserializeOwned>(
        &self,
        key: String,
        what: &str,
        request: impl FnOnce() -> InputRequest,
    ) -> Result<T, String> {
        match self.answer::<T>(&key, what) {
            Some(answer) => answer,
            None => Err(self.ask(key, request()).await),
        }
    }

    /// Asks `request` under `key`: kept for this round's result, unless the
    /// request no longer waits. Ends when the request stopped waiting for
    /// the run; `Err` says so, in words for the tool.
    async fn ask(&self, key: String, request: InputRequest) -> String {
        {
            let mut state = self.lock();
            if state.over {
                return "this call's request no longer waits for answers (a question asked after the call's result was settled, e.g. by a task)".to_owned();
            }
            state.questions.insert(key.clone(), request);
        }
        tracing::debug!(%key, "a tool asks its 2026-07-28 client: input_required");
        self.inner.asked.cancel();
        self.inner.closed.cancelled().await;
        format!(
            "question {key:?} went to the client in an input_required result; the tool runs again with its answer"
        )
    }

    /// Notes that the run asked for `missing`, which the client did not
    /// declare; the tool's error says so.
    fn missing(&self, missing: ClientCapabilities, what: &str) -> String {
        self.lock().missing.get_or_insert(missing);
        elicit::undeclared(what, &self.inner.protocol)
    }
}

/// What a tool asks on 2026-07-28: each question is answered from the
/// round's answers, or goes to the client in the `input_required` result.
pub(crate) struct RoundElicitor {
    round: Round,
}

impl RoundElicitor {
    async fn elicit_under(
        &self,
        key: Option<&str>,
        message: String,
        schema: Value,
    ) -> Result<Elicitation, String> {
        let asks = self.round.inner.asks;
        if !asks.server_elicits {
            return Err(
                "this server does not ask users (McpServerBuilder::elicitation is off)".to_owned(),
            );
        }
        if !asks.forms {
            let form = ElicitationCapability::new().with_form(FormElicitationCapability::default());
            let mut missing = ClientCapabilities::default();
            missing.elicitation = Some(form);
            return Err(self
                .round
                .missing(missing, "form elicitation (`elicitation`)"));
        }
        let form = elicit::tool_form_for(true, &self.round.inner.protocol, message, &schema)?;
        let what = "an elicitation result ({\"action\": ..., \"content\": ...})";
        let result: ElicitResult = self
            .round
            .answer_or_ask(self.round.key(key, "elicit"), what, || {
                let params = ElicitRequestParams::FormElicitationParams {
                    meta: None,
                    message: form.message.clone(),
                    requested_schema: form.schema.clone(),
                };
                InputRequest::Elicitation(ElicitRequest::new(params))
            })
            .await?;
        Ok(match form.answer(&result) {
            Answer::Data(content) => Elicitation::Accepted(content),
            Answer::Refused(ElicitationAction::Decline) => Elicitation::Declined,
            Answer::Refused(_) => Elicitation::Cancelled,
        })
    }

    async fn sample_under(
        &self,
        key: Option<&str>,
        prompt: String,
        max_tokens: u32,
    ) -> Result<String, String> {
        if !self.round.inner.asks.sampling {
            let mut missing = ClientCapabilities::default();
            missing.sampling = Some(Default::default());
            return Err(self.round.missing(missing, "sampling (`sampling`)"));
        }
        let what = "a sampling result (CreateMessageResult)";
        let result: CreateMessageResult = self
            .round
            .answer_or_ask(self.round.key(key, "sample"), what, || {
                let message = SamplingMessage::user_text(prompt);
                let params = CreateMessageRequestParams::new(vec![message], max_tokens);
                InputRequest::CreateMessage(CreateMessageRequest::new(params))
            })
            .await?;
        Ok(convert::sampled_text(&result))
    }

    async fn roots_under(&self, key: Option<&str>) -> Result<Vec<Root>, String> {
        if !self.round.inner.asks.roots {
            let mut missing = ClientCapabilities::default();
            missing.roots = Some(RootsCapabilities::default());
            return Err(self.round.missing(missing, "roots (`roots`)"));
        }
        let what = "a roots result (ListRootsResult)";
        let listed: ListRootsResult = self
            .round
            .answer_or_ask(self.round.key(key, "roots"), what, || {
                InputRequest::ListRoots(ListRootsRequest::default())
            })
            .await?;
        Ok(convert::listed_roots(&listed))
    }
}

impl Elicitor for RoundElicitor {
    fn roots(&self) -> RootsFuture<'_> {
        Box::pin(self.roots_under(None))
    }

    fn roots_keyed(&self, key: &str) -> RootsFuture<'_> {
        let key = key.to_owned();
        Box::pin(async move { self.roots_under(Some(&key)).await })
    }

    fn elicit(&self, message: String, schema: Value) -> ElicitFuture<'_> {
        Box::pin(self.elicit_under(None, message, schema))
    }

    fn elicit_keyed(&self, key: &str, message: String, schema: Value) -> ElicitFuture<'_> {
        let key = key.to_owned();
        Box::pin(async move { self.elicit_under(Some(&key), message, schema).await })
    }

    fn sample(&self, prompt: String, max_tokens: u32) -> SampleFuture<'_> {
        Box::pin(self.sample_under(None, prompt, max_tokens))
    }

    fn sample_keyed(&self, key: &str, prompt: String, max_tokens: u32) -> SampleFuture<'_> {
        let key = key.to_owned();
        Box::pin(async move { self.sample_under(Some(&key), prompt, max_tokens).await })
    }
}
