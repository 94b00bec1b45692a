//! The agent side (feature `agent`): a loop that calls a model, runs the
//! tool calls it makes through a [`Runtime`], pauses for approval and
//! suspension, and goes on when they are decided.
//!
//! A run is one turn of a conversation: model answer, tool calls (the
//! step's calls run concurrently), results, next answer, until the model
//! stops or `max_steps`. A step whose calls wait for approval or resume
//! data ends the stream with [`FinishReason::Suspended`] once the others
//! settled; the run (conversation so far, which calls wait) is stored with
//! the runtime's store, so [`Agent::approve_tool_call`],
//! [`Agent::decline_tool_call`] and [`Agent::resume`] continue it in this
//! process, after a restart, or on another instance sharing the store.
//! Each decision names the exact call; one for a call that does not wait in
//! that run is an error, and a declined call never runs.
//!
//! ```
//! use futures_util::{StreamExt as _, stream};
//! use serde_json::json;
//! use tool_core::decode::ToolCallEvent;
//! use tool_core::provider::Provider;
//! use tool_core::{Tool, ToolError};
//! use tool_runtime::Runtime;
//! use tool_agent::{Agent, AgentChunk, FinishReason, Message, Model, ModelEvent, ModelFinish, ModelRequest, ModelStream, Thread};
//!
//! /// Calls `delete` once, then says "done".
//! struct Scripted;
//! impl Model for Scripted {
//!     fn provider(&self) -> Provider { Provider::OpenAiChat }
//!     fn stream(&self, request: ModelRequest) -> ModelStream {
//!         let answered = matches!(request.messages.last(), Some(Message::ToolResult { .. }));
//!         let events = if answered {
//!             vec![ModelEvent::TextDelta("done".into()), ModelEvent::Finish(ModelFinish::Stop)]
//!         } else {
//!             vec![
//!                 ModelEvent::ToolCall(ToolCallEvent::Start { call_id: "c1".into(), tool_name: "delete".into() }),
//!                 ModelEvent::ToolCall(ToolCallEvent::InputEnd { call_id: "c1".into(), input: json!({}) }),
//!                 ModelEvent::Finish(ModelFinish::ToolCalls),
//!             ]
//!         };
//!         Box::pin(stream::iter(events.into_iter().map(Ok)))
//!     }
//! }
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let delete = Tool::builder("delete").description("Deletes everything").require_approval(true)
//!     .execute(|_input, _ctx| async move { Ok::<_, ToolError>(json!("deleted")) })
//!     .build().unwrap();
//! let runtime = Runtime::builder().tool(delete).build().unwrap();
//! let agent = Agent::builder("janitor", Scripted, runtime).instructions("Clean up").build().unwrap();
//!
//! let paused = agent.generate(Thread::new("t1"), vec![Message::user("clean")]).await.unwrap();
//! assert_eq!(paused.finish_reason, FinishReason::Suspended);
//! assert!(paused.chunks.iter().any(|c| matches!(c, AgentChunk::ToolCallApproval { call_id, .. } if call_id == "c1")));
//!
//! let done = agent.approve_tool_call(&paused.run_id, "c1").await.unwrap().output().await;
//! assert_eq!((done.text.as_str(), done.finish_reason), ("done", FinishReason::Stop));
//! # });
//! ```

mod chunk;
mod model;
mod models;
mod run;

use std::collections::BTreeMap;
use std::fmt;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures_core::Stream;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::mpsc;
use tool_core::provider::{Export, ExportError};

pub use chunk::{AgentChunk, FinishReason, approval_schema};
pub use model::{
    Message, Model, ModelError, ModelEvent, ModelFinish, ModelRequest, ModelStream, ToolCallRequest,
};
pub use models::{AnthropicModel, OpenAiChatModel, OpenAiResponsesModel};

use run::{Chunks, Gone, RunRecord, WaitingFor};
use tool_runtime::{CallOutcome, Decision, PendingKind, Runtime, RuntimeError, StoreError};

/// Steps a run takes at most unless told otherwise.
const MAX_STEPS: usize = 10;
/// Chunks buffered ahead of the reader.
const CHUNK_BUFFER: usize = 64;

/// The conversation a run belongs to: given to the tools
/// (`ToolContext::agent`) and kept with the run.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Thread {
    /// The thread's id.
    pub thread_id: String,
    /// Whose it is (a user, an account), if known.
    pub resource_id: Option<String>,
}

impl Thread {
    /// The thread `thread_id`.
    pub fn new(thread_id: impl Into<String>) -> Self {
        Thread {
            thread_id: thread_id.into(),
            resource_id: None,
        }
    }

    /// Whose thread it is.
    #[must_use]
    pub fn with_resource(mut self, resource_id: impl Into<String>) -> Self {
        self.resource_id = Some(resource_id.into());
        self
    }
}

/// Why an agent could not be built, or a run not continued.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AgentError {
    /// A tool cannot be exported for the model's provider.
    #[error(transparent)]
    Export(#[from] ExportError),
    /// No run with this id is stored.
    #[error("no agent run {run_id:?} is stored")]
    UnknownRun {
        /// The run.
        run_id: String,
    },
    /// The run is another agent's.
    #[error("run {run_id:?} belongs to agent {owner:?}, not {agent:?}")]
    OtherAgent {
        /// The run.
        run_id: String,
        /// The agent whose run it is.
        owner: String,
        /// This agent.
        agent: String,
    },
    /// The decision names a call that does not wait in the run (for this
    /// kind of decision).
    #[error(
        "call {call_id:?} is not waiting for {expected} in run {run_id:?}{}",
        describe_waiting(waiting)
    )]
    NotWaiting {
        /// The run.
        run_id: String,
        /// The call named.
        call_id: String,
        /// What the decision needed it to wait for.
        expected: &'static str,
        /// The calls that do wait, and for what.
        waiting: Vec<(String, &'static str)>,
    },
    /// A reply came while calls wait for approval: approval is a consent
    /// boundary, decided only by a decision.
    #[error("run {run_id:?} has calls waiting for approval ({}): approve or decline them first", call_ids.join(", "))]
    ApprovalPending {
        /// The run.
        run_id: String,
        /// The calls.
        call_ids: Vec<String>,
    },
    /// Another instance changed the run at the same time, again and again.
    #[error("run {run_id:?} was changed by another instance while this one saved it")]
    Conflict {
        /// The run.
        run_id: String,
    },
    /// The stored run could not be read.
    #[error("the record of run {run_id:?} cannot be read: {reason}")]
    Record {
        /// The run.
        run_id: String,
        /// Why.
        reason: String,
    },
    /// The runtime refused the decision.
    #[error(transparent)]
    Runtime(#[from] RuntimeError),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

fn describe_waiting(waiting: &[(String, &'static str)]) -> String {
    if waiting.is_empty() {
        return "; no call waits in it".to_owned();
    }
    let calls: Vec<String> = waiting
        .iter()
        .map(|(id, what)| format!("{id} ({what})"))
        .collect();
    format!("; waiting: {}", calls.join(", "))
}

/// An agent: instructions, a [`Model`] and a [`Runtime`] whose tools it
/// calls. Cheap to clone; every clone is the same agent. See the
/// [module docs](self).
#[derive(Clone)]
pub struct Agent {
    inner: Arc<AgentInner>,
}

struct AgentInner {
    id: String,
    instructions: String,
    model: Arc<dyn Model>,
    runtime: Runtime,
    max_steps: usize,
    max_tokens: Option<u32>,
    auto_resume: bool,
    /// The tools' exports for the model's provider, by name.
    exports: BTreeMap<String, Export>,
}

impl fmt::Debug for Agent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Agent")
            .field("id", &self.inner.id)
            .field("provider", &self.inner.model.provider())
            .field("tools", &self.inner.exports.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

/// Builds an [`Agent`].
#[must_use]
pub struct AgentBuilder {
    id: String,
    instructions: String,
    model: Arc<dyn Model>,
    runtime: Runtime,
    max_steps: usize,
    max_tokens: Option<u32>,
    auto_resume: bool,
}

impl fmt::Debug for AgentBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AgentBuilder")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

impl AgentBuilder {
    /// The system instructions.
    pub fn instructions(mut self, instructions: impl Into<String>) -> Self {
        self.instructions = instructions.into();
        self
    }

    /// Steps (model answers) a run takes at most, at least one (default 10).
    pub fn max_steps(mut self, steps: usize) -> Self {
        self.max_steps = steps.max(1);
        self
    }

    /// The most tokens each model answer may take.
    pub fn max_tokens(mut self, tokens: u32) -> Self {
        self.max_tokens = Some(tokens);
        self
    }

    /// Resume suspended calls from the user's next message (see
    /// [`Agent::reply`]): the pending suspensions are listed in the
    /// instructions, and tools that can suspend take the optional input
    /// fields `suspendedToolCallId` and `resumeData` (typed from their
    /// resume schema); a call that carries them resumes that suspension,
    /// which must be one of the same tool in the same run. Never approvals.
    pub fn auto_resume_suspended_tools(mut self, enabled: bool) -> Self {
        self.auto_resume = enabled;
        self
    }

    /// Builds the agent: fails when a tool cannot be exported for the
    /// model's provider.
    pub fn build(self) -> Result<Agent, AgentError> {
        let provider = self.model.provider();
        let mut exports = BTreeMap::new();
        for tool in self.runtime.tools().iter() {
            let definition = tool.definition();
            let export = if self.auto_resume && definition.resume_schema.is_some() {
                run::with_resume_fields(definition.clone(), provider)?
            } else {
                tool.export(provider)?.clone()
            };
            exports.insert(tool.id().to_owned(), export);
        }
        Ok(Agent {
            inner: Arc::new(AgentInner {
                id: self.id,
                instructions: self.instructions,
                model: self.model,
                runtime: self.runtime,
                max_steps: self.max_steps,
                max_tokens: self.max_tokens,
                auto_resume: self.auto_resume,
                exports,
            }),
        })
    }
}

/// What a call must wait for to take `decision`.
fn waiting_for(decision: &Decision) -> WaitingFor {
    if decision.pending_kind() == PendingKind::Suspended {
        WaitingFor::ResumeData
    } else {
        WaitingFor::Approval
    }
}

fn describe(waiting_for: WaitingFor) -> &'static str {
    match waiting_for {
        WaitingFor::Approval => "approval",
        WaitingFor::ResumeData => "resume data",
    }
}

impl Agent {
    /// Starts an agent `id` calling `model` with `runtime`'s tools.
    pub fn builder(id: impl Into<String>, model: impl Model, runtime: Runtime) -> AgentBuilder {
        AgentBuilder {
            id: id.into(),
            instructions: String::new(),
            model: Arc::new(model),
            runtime,
            max_steps: MAX_STEPS,
            max_tokens: None,
            auto_resume: false,
        }
    }

    /// The agent's id.
    pub fn id(&self) -> &str {
        &self.inner.id
    }

    /// The runtime whose tools it calls.
    pub fn runtime(&self) -> &Runtime {
        &self.inner.runtime
    }

    /// Starts a run of `thread` on `messages` (the conversation so far, the
    /// user's last): its chunks, until it finishes or pauses.
    pub fn stream(&self, thread: Thread, messages: Vec<Message>) -> AgentStream {
        let run_id = new_run_id();
        let record = RunRecord::new(&self.inner.id, thread, messages);
        self.spawn(run_id.clone(), move |agent, chunks| async move {
            chunks
                .send(AgentChunk::Start {
                    run_id: run_id.clone(),
                })
                .await?;
            agent.run_steps(&run_id, record, None, &chunks).await
        })
    }

    /// [`stream`](Self::stream), collected.
    pub async fn generate(
        &self,
        thread: Thread,
        messages: Vec<Message>,
    ) -> Result<AgentOutput, AgentError> {
        Ok(self.stream(thread, messages).output().await)
    }

    /// Approves the call `call_id` waiting in run `run_id`: it runs, and the
    /// run goes on once no call of its step waits.
    pub async fn approve_tool_call(
        &self,
        run_id: &str,
        call_id: &str,
    ) -> Result<AgentStream, AgentError> {
        self.decide(run_id, call_id, Decision::Approve).await
    }

    /// Declines the call `call_id` waiting in run `run_id`: it never runs,
    /// and the model reads `reason` (default "Tool call was not approved by
    /// the user").
    pub async fn decline_tool_call(
        &self,
        run_id: &str,
        call_id: &str,
        reason: Option<String>,
    ) -> Result<AgentStream, AgentError> {
        self.decide(run_id, call_id, Decision::Decline(reason))
            .await
    }

    /// Resumes the call `call_id` suspended in run `run_id` with `data`
    /// (validated against its resume schema: invalid data leaves it
    /// suspended, and the stream says why).
    pub async fn resume(
        &self,
        run_id: &str,
        call_id: &str,
        data: Value,
    ) -> Result<AgentStream, AgentError> {
        self.decide(run_id, call_id, Decision::Resume(data)).await
    }

    /// The user's next message in run `run_id`: the conversation goes on
    /// (a run that finished, or one whose calls wait only for resume data,
    /// when the agent auto-resumes; their suspensions are then listed for
    /// the model, which resumes them from this message).
    pub async fn reply(
        &self,
        run_id: &str,
        text: impl Into<String>,
    ) -> Result<AgentStream, AgentError> {
        let (mut record, revision) = self.load(run_id).await?;
        let approvals: Vec<String> = record
            .waiting
            .iter()
            .filter(|(_, w)| w.waiting_for == WaitingFor::Approval)
            .map(|(id, _)| id.clone())
            .collect();
        if !approvals.is_empty() {
            return Err(AgentError::ApprovalPending {
                run_id: run_id.to_owned(),
                call_ids: approvals,
            });
        }
        if !record.waiting.is_empty() && !self.inner.auto_resume {
            return Err(self.not_waiting(run_id, "", WaitingFor::ResumeData, &record));
        }
        // The suspended calls get a result saying so, so the conversation
        // reads as a whole; the suspensions stay resumable.
        for (call_id, waiting) in std::mem::take(&mut record.waiting) {
            record.settled.insert(
                call_id.clone(),
                run::Settled {
                    tool_name: waiting.tool_name.clone(),
                    content: serde_json::json!({ "status": "suspended", "waitingFor": "resume data", "payload": waiting.payload }),
                    is_error: false,
                },
            );
            record.suspensions.insert(call_id, waiting);
        }
        record.close_step();
        record.messages.push(Message::user(text));
        record.steps = 0;
        let run_id = run_id.to_owned();
        Ok(self.spawn(run_id.clone(), move |agent, chunks| async move {
            chunks
                .send(AgentChunk::Start {
                    run_id: run_id.clone(),
                })
                .await?;
            agent
                .run_steps(&run_id, record, Some(revision), &chunks)
                .await
        }))
    }

    /// The conversation of run `run_id` so far, as a thread's history
    /// keeps it: each tool's transcript transform applied to its calls'
    /// arguments and results (the model reads them raw).
    pub async fn transcript(&self, run_id: &str) -> Result<Vec<Message>, AgentError> {
        let (record, _) = self.load(run_id).await?;
        Ok(self.transcript_of(record.messages))
    }

    async fn decide(
        &self,
        run_id: &str,
        call_id: &str,
        decision: Decision,
    ) -> Result<AgentStream, AgentError> {
        let (record, _) = self.load(run_id).await?;
        let expected = waiting_for(&decision);
        let waits = record
            .waiting
            .get(call_id)
            .is_some_and(|w| w.waiting_for == expected);
        if !waits {
            return Err(self.not_waiting(run_id, call_id, expected, &record));
        }
        let (run_id, call_id) = (run_id.to_owned(), call_id.to_owned());
        Ok(self.spawn(run_id.clone(), move |agent, chunks| async move {
            chunks
                .send(AgentChunk::Start {
                    run_id: run_id.clone(),
                })
                .await?;
            agent
                .continue_after(&run_id, &call_id, decision, &chunks)
                .await
        }))
    }

    /// Makes the decision through the runtime, records it in the run
    /// (again on a concurrent change), and goes on when no call waits.
    async fn continue_after(
        &self,
        run_id: &str,
        call_id: &str,
        decision: Decision,
        chunks: &Chunks,
    ) -> Result<(), Gone> {
        let runtime = &self.inner.runtime;
        let stored_id = run::runtime_call_id(run_id, call_id);
        let (thread, tool_name) = match self.load(run_id).await {
            Ok((record, _)) => {
                let tool_name = record.waiting.get(call_id).map(|w| w.tool_name.clone());
                (record.thread, tool_name)
            }
            Err(error) => return self.fail(run_id, chunks, error.to_string()).await,
        };
        let agent = Some(self.context(run_id, &thread, tool_name.as_deref()));
        let decided = runtime.decide(&stored_id, decision, agent).await;
        let outcome = match decided {
            Ok(outcome) => outcome,
            Err(error) => return self.fail(run_id, chunks, error.to_string()).await,
        };
        // Invalid resume data leaves the call suspended: the run still waits.
        let still_pending = matches!(
            runtime.stored(&stored_id).await,
            Ok(Some(stored)) if stored.state.is_pending()
        );
        for _ in 0..SAVE_ATTEMPTS {
            let (mut record, revision) = match self.load(run_id).await {
                Ok(loaded) => loaded,
                Err(error) => return self.fail(run_id, chunks, error.to_string()).await,
            };
            let tool_name = match record.waiting.get(call_id) {
                Some(waiting) => waiting.tool_name.clone(),
                // Another decision on it was recorded first.
                None => {
                    let message = format!("call {call_id:?} was decided by another decision");
                    return self.fail(run_id, chunks, message).await;
                }
            };
            if still_pending {
                return self
                    .pause_again(run_id, &record, call_id, &tool_name, outcome, chunks)
                    .await;
            }
            record.apply(self, call_id, &outcome);
            let mut shown = record.clone();
            self.report(&mut shown, call_id, &tool_name, outcome.clone(), chunks)
                .await?;
            if !record.waiting.is_empty() {
                match self.save(run_id, Some(revision), false, &record).await {
                    Ok(_) => {
                        return chunks
                            .send(AgentChunk::Finish {
                                run_id: run_id.to_owned(),
                                reason: FinishReason::Suspended,
                            })
                            .await;
                    }
                    Err(AgentError::Conflict { .. }) => continue,
                    Err(error) => return self.fail(run_id, chunks, error.to_string()).await,
                }
            }
            record.close_step();
            // Claims the continuation: of concurrent last decisions, the
            // one whose save wins goes on.
            match self.save(run_id, Some(revision), false, &record).await {
                Ok(saved) => return self.run_steps(run_id, record, Some(saved), chunks).await,
                Err(AgentError::Conflict { .. }) => continue,
                Err(error) => return self.fail(run_id, chunks, error.to_string()).await,
            }
        }
        let message = AgentError::Conflict {
            run_id: run_id.to_owned(),
        }
        .to_string();
        self.fail(run_id, chunks, message).await
    }

    /// The call stays waiting (resume data refused): its error, and the run pauses again.
    async fn pause_again(
        &self,
        run_id: &str,
        record: &RunRecord,
        call_id: &str,
        tool_name: &str,
        outcome: CallOutcome,
        chunks: &Chunks,
    ) -> Result<(), Gone> {
        let mut shown = record.clone();
        shown.waiting.remove(call_id);
        self.report(&mut shown, call_id, tool_name, outcome, chunks)
            .await?;
        chunks
            .send(AgentChunk::Finish {
                run_id: run_id.to_owned(),
                reason: FinishReason::Suspended,
            })
            .await
    }

    pub(crate) async fn fail(
        &self,
        run_id: &str,
        chunks: &Chunks,
        message: String,
    ) -> Result<(), Gone> {
        chunks.send(AgentChunk::Error { message }).await?;
        chunks
            .send(AgentChunk::Finish {
                run_id: run_id.to_owned(),
                reason: FinishReason::Error,
            })
            .await
    }

    fn not_waiting(
        &self,
        run_id: &str,
        call_id: &str,
        expected: WaitingFor,
        record: &RunRecord,
    ) -> AgentError {
        AgentError::NotWaiting {
            run_id: run_id.to_owned(),
            call_id: call_id.to_owned(),
            expected: describe(expected),
            waiting: record
                .waiting
                .iter()
                .map(|(id, w)| (id.clone(), describe(w.waiting_for)))
                .collect(),
        }
    }

    /// The stored run `run_id` of this agent, and its revision.
    async fn load(&self, run_id: &str) -> Result<(RunRecord, u64), AgentError> {
        let stored = self
            .inner
            .runtime
            .runs()
            .load(run_id)
            .await?
            .ok_or_else(|| AgentError::UnknownRun {
                run_id: run_id.to_owned(),
            })?;
        let record: RunRecord =
            serde_json::from_value(stored.record).map_err(|e| AgentError::Record {
                run_id: run_id.to_owned(),
                reason: e.to_string(),
            })?;
        if record.agent_id != self.inner.id {
            return Err(AgentError::OtherAgent {
                run_id: run_id.to_owned(),
                owner: record.agent_id,
                agent: self.inner.id.clone(),
            });
        }
        Ok((record, stored.revision))
    }

    /// Runs `work` as a task sending the stream's chunks.
    fn spawn<F, Fut>(&self, run_id: String, work: F) -> AgentStream
    where
        F: FnOnce(Agent, Chunks) -> Fut + Send + 'static,
        Fut: Future<Output = Result<(), Gone>> + Send + 'static,
    {
        let (tx, rx) = mpsc::channel(CHUNK_BUFFER);
        let agent = self.clone();
        tokio::spawn(async move {
            // A reader that went away stops the run at its next chunk.
            let _ = work(agent, Chunks::new(tx)).await;
        });
        AgentStream { run_id, rx }
    }
}

/// How often a decision re-reads and saves a run another instance changed meanwhile.
const SAVE_ATTEMPTS: usize = 8;

/// A new run id: unique per process and run (std's random hasher keys).
fn new_run_id() -> String {
    use std::hash::{BuildHasher, RandomState};
    let random = RandomState::new().hash_one(std::time::SystemTime::now());
    format!("run-{random:016x}")
}

/// The chunks of a run, as it goes. Dropping it stops the run at its next
/// chunk; calls already running settle in the runtime.
#[derive(Debug)]
pub struct AgentStream {
    run_id: String,
    rx: mpsc::Receiver<AgentChunk>,
}

impl AgentStream {
    /// The run's id.
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// Reads the stream to its end.
    pub async fn output(mut self) -> AgentOutput {
        let mut output = AgentOutput {
            run_id: self.run_id.clone(),
            text: String::new(),
            finish_reason: FinishReason::Error,
            chunks: Vec::new(),
        };
        while let Some(chunk) = self.rx.recv().await {
            match &chunk {
                AgentChunk::TextDelta { text } => output.text.push_str(text),
                AgentChunk::Finish { reason, .. } => output.finish_reason = reason.clone(),
                _ => {}
            }
            output.chunks.push(chunk);
        }
        output
    }
}

impl Stream for AgentStream {
    type Item = AgentChunk;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<AgentChunk>> {
        self.rx.poll_recv(cx)
    }
}

/// A run's stream, read to its end.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct AgentOutput {
    /// The run.
    pub run_id: String,
    /// The model's text, every step's.
    pub text: String,
    /// Why it ended (`Error` if it ended without saying).
    pub finish_reason: FinishReason,
    /// Every chunk, in order.
    pub chunks: Vec<AgentChunk>,
}
