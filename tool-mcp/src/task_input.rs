//! What a running task asks its client (SEP-2663 in-task input): a tool
//! that asks through [`McpContext`](crate::McpContext) while it runs as a
//! task cannot send the client a request (no request is open: the client
//! polls), so each question waits here, keyed by an id this server mints,
//! until `tasks/update` brings its answer. `tasks/get` shows the questions
//! of a task as its `inputRequests`.
//!
//! These questions live with the tool's running future, on the instance
//! that runs it (cancelling the task drops the future, and so its
//! questions): another instance says the task works, and cannot take
//! its answers. A tool whose question must outlive its instance suspends
//! instead (the task's suspension is stored; see `tasks.rs`).

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use rmcp::model::{
    CreateMessageRequest, CreateMessageRequestParams, CreateMessageResult, ElicitRequest,
    ElicitRequestParams, ElicitResult, ElicitationAction, InputRequest, InputRequests,
    ListRootsRequest, ListRootsResult, SamplingMessage,
};
use serde_json::Value;
use tokio::sync::oneshot;

use crate::context::{ElicitFuture, Elicitation, Elicitor, RootsFuture, SampleFuture};
use crate::convert;
use crate::elicit::{self, Answer};

/// What an answer must be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    /// An `ElicitResult`.
    Elicitation,
    /// A `CreateMessageResult`.
    Sampling,
    /// A `ListRootsResult`.
    Roots,
}

impl Expect {
    fn name(self) -> &'static str {
        match self {
            Expect::Elicitation => "an elicitation result ({\"action\": ..., \"content\": ...})",
            Expect::Sampling => "a sampling result (CreateMessageResult)",
            Expect::Roots => "a roots result (ListRootsResult)",
        }
    }

    /// Whether `answer` has the shape this question's answer must have.
    fn check(self, answer: &Value) -> Result<(), String> {
        let checked = match self {
            Expect::Elicitation => serde_json::from_value::<ElicitResult>(answer.clone()).map(drop),
            Expect::Sampling => {
                serde_json::from_value::<CreateMessageResult>(answer.clone()).map(drop)
            }
            Expect::Roots => serde_json::from_value::<ListRootsResult>(answer.clone()).map(drop),
        };
        checked.map_err(|e| e.to_string())
    }
}

/// One question waiting for its answer.
struct Question {
    request: InputRequest,
    expect: Expect,
    answer: oneshot::Sender<Value>,
}

/// The questions of the tasks this server runs, by task id, then key.
#[derive(Default, Clone)]
pub(crate) struct TaskInputs {
    inner: Arc<Inputs>,
}

#[derive(Default)]
struct Inputs {
    waiting: Mutex<HashMap<String, BTreeMap<String, Question>>>,
    /// Keys are unique over a task's lifetime (SEP-2663): a counter, never reused.
    next: AtomicU64,
}

/// Why a `tasks/update` was refused.
#[derive(Debug)]
pub(crate) struct BadAnswer {
    pub(crate) key: String,
    pub(crate) why: String,
}

impl TaskInputs {
    /// The questions task `task_id` waits on here, if any.
    pub(crate) fn outstanding(&self, task_id: &str) -> Option<InputRequests> {
        let waiting = self.lock();
        let questions = waiting.get(task_id).filter(|q| !q.is_empty())?;
        Some(
            questions
                .iter()
                .map(|(key, q)| (key.clone(), q.request.clone()))
                .collect(),
        )
    }

    /// Delivers the answers to questions task `task_id` waits on here. Every
    /// answer is checked first: one of the wrong shape refuses them all.
    /// Keys no question here has (answered already, never asked, asked on
    /// another instance) are left out; the number delivered is returned.
    pub(crate) fn answer(
        &self,
        task_id: &str,
        answers: &BTreeMap<String, Value>,
    ) -> Result<usize, BadAnswer> {
        let mut waiting = self.lock();
        let Some(questions) = waiting.get_mut(task_id) else {
            return Ok(0);
        };
        for (key, answer) in answers {
            if let Some(question) = questions.get(key) {
                question.expect.check(answer).map_err(|why| BadAnswer {
                    key: key.clone(),
                    why: format!("expected {}: {why}", question.expect.name()),
                })?;
            }
        }
        let mut delivered = 0;
        for (key, answer) in answers {
            if let Some(question) = questions.remove(key) {
                // The asking future may be gone (the task ended): nothing to tell.
                let _ = question.answer.send(answer.clone());
                delivered += 1;
            }
        }
        if questions.is_empty() {
            waiting.remove(task_id);
        }
        Ok(delivered)
    }

    /// Registers a question; its answer arrives on the receiver. The guard
    /// takes the question back when the asking future ends unanswered.
    fn ask(
        &self,
        task_id: &str,
        request: InputRequest,
        expect: Expect,
    ) -> (oneshot::Receiver<Value>, Asked) {
        let n = self.inner.next.fetch_add(1, Ordering::Relaxed);
        let key = format!(
            "{}-{n}",
            match expect {
                Expect::Elicitation => "elicit",
                Expect::Sampling => "sample",
                Expect::Roots => "roots",
            }
        );
        let (answer, answered) = oneshot::channel();
        self.lock().entry(task_id.to_owned()).or_default().insert(
            key.clone(),
            Question {
                request,
                expect,
                answer,
            },
        );
        let asked = Asked {
            inputs: self.clone(),
            task_id: task_id.to_owned(),
            key,
        };
        (answered, asked)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, BTreeMap<String, Question>>> {
        self.inner
            .waiting
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

/// Takes a question back when the future that asked it ends (answered:
/// nothing left; dropped: the question no longer stands).
struct Asked {
    inputs: TaskInputs,
    task_id: String,
    key: String,
}

impl Drop for Asked {
    fn drop(&mut self) {
        let mut waiting = self.inputs.lock();
        if let Some(questions) = waiting.get_mut(&self.task_id) {
            questions.remove(&self.key);
            if questions.is_empty() {
                waiting.remove(&self.task_id);
            }
        }
    }
}

/// What a tool running as an MCP task asks its client: each question waits
/// for `tasks/update`, shown by `tasks/get` meanwhile.
pub(crate) struct TaskElicitor {
    pub(crate) inputs: TaskInputs,
    pub(crate) task_id: String,
    /// The client shows forms.
    pub(crate) forms: bool,
    /// The client declared sampling.
    pub(crate) sampling: bool,
    /// The client declared roots.
    pub(crate) roots: bool,
    /// The protocol version the client's requests speak.
    pub(crate) protocol: String,
}

impl TaskElicitor {
    async fn wait(&self, request: InputRequest, expect: Expect) -> Result<Value, String> {
        let (answered, _asked) = self.inputs.ask(&self.task_id, request, expect);
        tracing::info!(task_id = %self.task_id, "MCP task waits for its client's input");
        answered
            .await
            .map_err(|_| "the question was withdrawn before the client answered".to_owned())
    }
}

impl Elicitor for TaskElicitor {
    fn roots(&self) -> RootsFuture<'_> {
        Box::pin(async move {
            if !self.roots {
                return Err(elicit::undeclared("roots (`roots`)", &self.protocol));
            }
            let request = InputRequest::ListRoots(ListRootsRequest::default());
            let answer = self.wait(request, Expect::Roots).await?;
            let listed: ListRootsResult =
                serde_json::from_value(answer).map_err(|e| format!("a bad answer: {e}"))?;
            Ok(convert::listed_roots(&listed))
        })
    }

    fn elicit(&self, message: String, schema: Value) -> ElicitFuture<'_> {
        Box::pin(async move {
            let form = elicit::tool_form_for(self.forms, &self.protocol, message, &schema)?;
            let params = ElicitRequestParams::FormElicitationParams {
                meta: None,
                message: form.message.clone(),
                requested_schema: form.schema.clone(),
            };
            let request = InputRequest::Elicitation(ElicitRequest::new(params));
            let answer = self.wait(request, Expect::Elicitation).await?;
            // Checked by `TaskInputs::answer`.
            let result: ElicitResult =
                serde_json::from_value(answer).map_err(|e| format!("a bad answer: {e}"))?;
            Ok(match form.answer(&result) {
                Answer::Data(content) => Elicitation::Accepted(content),
                Answer::Refused(ElicitationAction::Decline) => Elicitation::Declined,
                Answer::Refused(_) => Elicitation::Cancelled,
            })
        })
    }

    fn sample(&self, prompt: String, max_tokens: u32) -> SampleFuture<'_> {
        Box::pin(async move {
            if !self.sampling {
                return Err(elicit::undeclared("sampling (`sampling`)", &self.protocol));
            }
            let message = SamplingMessage::user_text(prompt);
            let params = CreateMessageRequestParams::new(vec![message], max_tokens);
            let request = InputRequest::CreateMessage(CreateMessageRequest::new(params));
            let answer = self.wait(request, Expect::Sampling).await?;
            let result: CreateMessageResult =
                serde_json::from_value(answer).map_err(|e| format!("a bad answer: {e}"))?;
            Ok(convert::sampled_text(&result))
        })
    }
}
