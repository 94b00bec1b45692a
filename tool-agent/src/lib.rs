//! The agent side of tool-runtime: a loop that calls a model, runs the
//! tool calls it makes through a [`Runtime`], pauses for approval and
//! suspension, and goes on when they are decided.
//!
//! Use it when you want the whole loop rather than single calls: streamed
//! chunks for a UI, runs that pause for a person and continue on any
//! instance sharing the runtime's store, background tasks whose results
//! reach the model later, and HTTP models for OpenAI Chat, OpenAI Responses
//! and Anthropic (or your own [`Model`]; [`ScriptedModel`] in tests). If
//! your application already has an agent framework, give it the runtime's
//! tools instead (`tool-rig` for rig, `tool_core::provider` for your own
//! HTTP calls).
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
//! A call of a background tool lets the run go on: its task's result enters
//! the conversation before the next step once it settles (here, or on a
//! worker of another instance). A run whose model stopped waits for its
//! tasks up to [`AgentBuilder::background_wait`], then ends with
//! [`FinishReason::BackgroundTasks`]; [`Agent::continue_run`], or the next
//! [`Agent::stream`] on its thread, takes the results that settled
//! meanwhile. A running call's progress and custom chunks (`ctx.writer()`)
//! come as [`AgentChunk::ToolProgress`] and [`AgentChunk::Custom`].
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

mod awaiting;
mod chunk;
mod error;
mod machine;
mod model;
mod models;
mod record;
mod resume_fields;
mod run;
mod scripted;

use std::collections::BTreeMap;
use std::fmt;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use futures_core::Stream;
use serde_json::Value;
use tokio::sync::mpsc;
use tool_core::transform::{CallValues, Phase};
use tool_core::{Extensions, RequestContext, TypedTool};
use tool_runtime::{Decision, Payload, Runtime, RuntimeError};

pub use chunk::{AgentChunk, FinishReason, approval_schema};
pub use error::AgentError;
pub use model::{
    Message, Model, ModelCallError, ModelEvent, ModelFinish, ModelRequest, ModelStream,
    ToolCallRequest, Usage,
};
pub use models::{AnthropicModel, OpenAiChatModel, OpenAiResponsesModel};
pub use record::{AwaitedTask, Thread};
pub use scripted::{ScriptedModel, ScriptedStep};

use machine::RunSettings;
use record::RunRecord;
use run::{CallShape, Chunks, Gone, Runner};

/// Steps a run takes at most unless told otherwise.
const MAX_STEPS: usize = 10;
/// How long a run waits for its background tasks unless told otherwise.
const BACKGROUND_WAIT: Duration = Duration::from_secs(30);
/// Chunks buffered ahead of the reader.
const CHUNK_BUFFER: usize = 64;

/// An agent: instructions, a [`Model`] and a [`Runtime`] whose tools it
/// calls. Cheap to clone; every clone is the same agent. See the
/// [module docs](self).
#[derive(Clone)]
pub struct Agent {
    inner: Arc<Runner>,
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
    background_wait: Duration,
    extensions: Extensions,
    on_call: Option<CallShape>,
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

    /// How long a run waits for the background tasks its calls started once
    /// the model stopped (default 30 seconds). A task that settles within
    /// it gives its result to the conversation and the run takes another
    /// step; past it the stream ends with [`FinishReason::BackgroundTasks`],
    /// the run stored listing them, for [`Agent::continue_run`]. The run
    /// never waits while the model has more to do: a step that made calls
    /// goes on at once, with the results that settled by then.
    /// `Duration::ZERO` never waits.
    ///
    /// ```
    /// use std::time::Duration;
    /// use tool_agent::{Agent, ScriptedModel};
    /// use tool_runtime::Runtime;
    ///
    /// let runtime = Runtime::builder().build().unwrap();
    /// let agent = Agent::builder("reporter", ScriptedModel::new([]), runtime)
    ///     .background_wait(Duration::from_secs(5))
    ///     .build()
    ///     .unwrap();
    /// # let _ = agent;
    /// ```
    pub fn background_wait(mut self, wait: Duration) -> Self {
        self.background_wait = wait;
        self
    }

    /// Attaches a typed value to every call the agent makes: the tool reads
    /// it with `ctx.extension::<T>()` (a database pool, a client). Values
    /// live in this process: a call approved or resumed on another instance
    /// gets that instance's agent's values.
    ///
    /// ```
    /// use tool_agent::{Agent, ScriptedModel};
    /// use tool_runtime::Runtime;
    ///
    /// #[derive(Debug)]
    /// struct Tenant(&'static str);
    ///
    /// let runtime = Runtime::builder().build().unwrap();
    /// let agent = Agent::builder("helper", ScriptedModel::new([]), runtime)
    ///     .extension(Tenant("acme"))
    ///     .build()
    ///     .unwrap();
    /// # let _ = agent;
    /// ```
    pub fn extension<T: Send + Sync + 'static>(mut self, value: T) -> Self {
        self.extensions.insert(value);
        self
    }

    /// Shapes the envelope of each call the agent makes, last (after the
    /// run's request context, the agent's extensions and the agent context):
    /// a per-call request context, a requester, an extension that depends
    /// on the tool. What it sets is validated like any call's.
    ///
    /// ```
    /// use tool_agent::{Agent, ScriptedModel};
    /// use tool_runtime::Runtime;
    ///
    /// let runtime = Runtime::builder().build().unwrap();
    /// let agent = Agent::builder("helper", ScriptedModel::new([]), runtime)
    ///     .on_call(|head| head.with_requester("user:ada"))
    ///     .build()
    ///     .unwrap();
    /// # let _ = agent;
    /// ```
    pub fn on_call(
        mut self,
        shape: impl Fn(tool_runtime::CallHead) -> tool_runtime::CallHead + Send + Sync + 'static,
    ) -> Self {
        self.on_call = Some(Arc::new(shape));
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
                resume_fields::with_resume_fields(definition.clone(), provider)?
            } else {
                tool.export(provider)?.clone()
            };
            exports.insert(tool.id().to_owned(), export);
        }
        Ok(Agent {
            inner: Arc::new(Runner {
                id: self.id,
                instructions: self.instructions,
                model: self.model,
                runtime: self.runtime,
                settings: RunSettings {
                    max_steps: self.max_steps,
                    auto_resume: self.auto_resume,
                    background_wait: self.background_wait,
                },
                max_tokens: self.max_tokens,
                exports: Arc::new(exports),
                extensions: self.extensions,
                on_call: self.on_call,
            }),
        })
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
            background_wait: BACKGROUND_WAIT,
            extensions: Extensions::new(),
            on_call: None,
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
    /// user's last): its chunks, until it finishes or pauses. It takes over
    /// the background tasks the thread's earlier runs of this agent await
    /// (see [`continue_run`](Self::continue_run)): the results that settled
    /// meanwhile enter its conversation before its first step.
    pub fn stream(&self, thread: Thread, messages: Vec<Message>) -> AgentStream {
        self.stream_with(thread, messages, RequestContext::new())
    }

    /// [`stream`](Self::stream) with a request context for the run: every
    /// call of the run (its approvals and resumptions too, on any instance:
    /// the run keeps it) runs with it, validated against the tool's
    /// `request_context` schema like any call's.
    ///
    /// ```
    /// use serde_json::json;
    /// use tool_agent::{Agent, Message, ScriptedModel, ScriptedStep, Thread};
    /// use tool_core::{RequestContext, Tool, ToolError};
    /// use tool_runtime::Runtime;
    ///
    /// # tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap().block_on(async {
    /// let whoami = Tool::builder("whoami")
    ///     .description("Says who asks")
    ///     .request_context_schema(json!({
    ///         "type": "object",
    ///         "properties": { "userId": { "type": "string" } },
    ///         "required": ["userId"]
    ///     }))
    ///     .execute(|_input, ctx| async move {
    ///         Ok::<_, ToolError>(ctx.request_context().values()["userId"].clone())
    ///     })
    ///     .build()
    ///     .unwrap();
    /// let model = ScriptedModel::new([
    ///     ScriptedStep::new().tool_call("c1", "whoami", json!({})),
    ///     ScriptedStep::answer("done"),
    /// ]);
    /// let agent = Agent::builder("helper", model.clone(), Runtime::builder().tool(whoami).build().unwrap())
    ///     .build()
    ///     .unwrap();
    /// let context = RequestContext::new().with("userId", "u-7");
    /// let output = agent
    ///     .stream_with(Thread::new("t1"), vec![Message::user("who am I?")], context)
    ///     .output()
    ///     .await;
    /// assert_eq!(output.text, "done");
    /// # });
    /// ```
    pub fn stream_with(
        &self,
        thread: Thread,
        messages: Vec<Message>,
        request_context: RequestContext,
    ) -> AgentStream {
        let run_id = new_run_id();
        let mut record = RunRecord::new(&self.inner.id, thread, messages);
        record.request_context = request_context.values().clone();
        self.spawn(run_id.clone(), move |runner, chunks| async move {
            chunks
                .send(AgentChunk::Start {
                    run_id: run_id.clone(),
                })
                .await?;
            runner.start_run(&run_id, record, &chunks).await
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
        self.decide(run_id, call_id, Decision::Approve, None).await
    }

    /// Declines the call `call_id` waiting in run `run_id` (for approval, or
    /// for its output): it never runs,
    /// and the model reads `reason` (default "Tool call was not approved by
    /// the user").
    pub async fn decline_tool_call(
        &self,
        run_id: &str,
        call_id: &str,
        reason: Option<String>,
    ) -> Result<AgentStream, AgentError> {
        self.decide(run_id, call_id, Decision::Decline(reason), None)
            .await
    }

    /// Gives the call `call_id` waiting in run `run_id` its `output` without
    /// running its tool: the result of a declaration-only tool's call (the
    /// stream said [`AgentChunk::ToolCallAwaitingOutput`]), or an answer
    /// instead of running a call waiting for approval. The output is
    /// validated against the tool's output schema (an invalid one leaves
    /// the call waiting, and the stream says why); the model reads it as
    /// the tool's result, and the run goes on once no call of its step
    /// waits. See [`Runtime::respond`].
    ///
    /// ```
    /// use serde_json::json;
    /// use tool_agent::{Agent, AgentChunk, FinishReason, Message, ModelFinish, ScriptedModel, ScriptedStep, Thread};
    /// use tool_core::Tool;
    /// use tool_runtime::Runtime;
    ///
    /// # tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap().block_on(async {
    /// // Runs in the user's browser: declared here, no execute function.
    /// let pick = Tool::builder("pick-color").description("Ask the user to pick a color").build().unwrap();
    /// let model = ScriptedModel::new([
    ///     ScriptedStep::new().tool_call("c1", "pick-color", json!({})).finish(ModelFinish::ToolCalls),
    ///     ScriptedStep::answer("Teal it is"),
    /// ]);
    /// let agent = Agent::builder("painter", model, Runtime::builder().tool(pick).build().unwrap()).build().unwrap();
    /// let paused = agent.generate(Thread::new("t1"), vec![Message::user("pick one")]).await.unwrap();
    /// assert_eq!(paused.finish_reason, FinishReason::Suspended);
    /// assert!(paused.chunks.iter().any(|c| matches!(c, AgentChunk::ToolCallAwaitingOutput { .. })));
    /// let done = agent.respond_tool_call(&paused.run_id, "c1", json!("teal")).await.unwrap().output().await;
    /// assert_eq!(done.text, "Teal it is");
    /// # });
    /// ```
    pub async fn respond_tool_call(
        &self,
        run_id: &str,
        call_id: &str,
        output: Value,
    ) -> Result<AgentStream, AgentError> {
        self.decide(run_id, call_id, Decision::Respond(output), None)
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
        self.decide(run_id, call_id, Decision::Resume(data), None)
            .await
    }

    /// [`resume`](Self::resume) with the resume type of the typed tool `T`
    /// (`#[tool]`'s generated struct): data of another type does not
    /// compile, and a call of another tool is refused
    /// ([`RuntimeError::TypeMismatch`],
    /// as [`AgentError::Runtime`]) before anything changes. See
    /// [`Runtime::resume_as`].
    ///
    /// ```
    /// use serde_json::json;
    /// use tool_agent::{Agent, Message, ModelFinish, ScriptedModel, ScriptedStep, Thread};
    /// use tool_core::{tool, ToolContext, ToolError};
    /// use tool_runtime::Runtime;
    ///
    /// #[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
    /// struct Question { text: String }
    /// #[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
    /// struct Answer { seats: u32 }
    ///
    /// /// Book a table, asking how many seats
    /// #[tool]
    /// async fn book(ctx: ToolContext<Question, Answer>) -> Result<String, ToolError> {
    ///     match ctx.resume_data() {
    ///         None => ctx.suspend(Question { text: "How many seats?".into() }),
    ///         Some(answer) => Ok(format!("booked {}", answer.seats)),
    ///     }
    /// }
    ///
    /// # tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap().block_on(async {
    /// let model = ScriptedModel::new([
    ///     ScriptedStep::new().tool_call("c1", "book", json!({})).finish(ModelFinish::ToolCalls),
    ///     ScriptedStep::answer("Booked"),
    /// ]);
    /// let agent = Agent::builder("host", model, Runtime::builder().tool(BookTool).build().unwrap()).build().unwrap();
    /// let paused = agent.generate(Thread::new("t1"), vec![Message::user("a table")]).await.unwrap();
    /// let done = agent.resume_as::<BookTool>(&paused.run_id, "c1", Answer { seats: 2 }).await.unwrap().output().await;
    /// assert_eq!(done.text, "Booked");
    /// # });
    /// ```
    pub async fn resume_as<T: TypedTool>(
        &self,
        run_id: &str,
        call_id: &str,
        data: T::Resume,
    ) -> Result<AgentStream, AgentError>
    where
        T::Resume: serde::Serialize,
    {
        let data = serde_json::to_value(&data).map_err(|error| RuntimeError::TypeMismatch {
            call_id: call_id.to_owned(),
            reason: format!("the value does not serialize to JSON: {error}"),
        })?;
        self.decide(run_id, call_id, Decision::Resume(data), Some(T::ID))
            .await
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
        let (record, revision) = self.inner.load(run_id).await?;
        let mut run = self.inner.machine(record);
        run.on_reply(run_id, text.into())?;
        Ok(self.go_on(run_id, run, revision))
    }

    /// Continues run `run_id`, which awaits background tasks (its stream
    /// ended with [`FinishReason::BackgroundTasks`], or this instance took
    /// over from one that died): every result that settled meanwhile, on
    /// any instance, enters the conversation (each once, whatever
    /// continuations race: the run's save decides) and the model takes the
    /// next step; when none settled yet, the run waits for them as a step
    /// does ([`AgentBuilder::background_wait`]). Steps count again from
    /// here.
    ///
    /// Continues too a run whose waiting calls were decided outside the
    /// agent, through the runtime (`runtime.approve("{run_id}/{call_id}")`,
    /// say, from an approval inbox on any instance sharing the store; such
    /// a call runs with the agent's `AgentContext`, stored with it): their
    /// recorded outcomes enter the run, each once whatever decisions race
    /// (the run's save decides), and the model reads them in the next step
    /// once no call of the step waits.
    ///
    /// Fails when the run awaits no task and none of its waiting calls was
    /// decided, or calls wait for a decision (which continues it).
    ///
    /// ```
    /// use std::time::Duration;
    /// use serde_json::json;
    /// use tool_agent::{Agent, AgentChunk, FinishReason, Message, ScriptedModel, ScriptedStep, Thread};
    /// use tool_core::{BackgroundConfig, Tool, ToolError};
    /// use tool_runtime::Runtime;
    ///
    /// # tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap().block_on(async {
    /// let (release, released) = tokio::sync::watch::channel(false);
    /// let report = Tool::builder("report").description("Builds a report")
    ///     .background(BackgroundConfig::new())
    ///     .execute(move |_input, _ctx| {
    ///         let mut released = released.clone();
    ///         async move {
    ///             let _ = released.wait_for(|go| *go).await;
    ///             Ok::<_, ToolError>(json!({ "pages": 12 }))
    ///         }
    ///     })
    ///     .build().unwrap();
    /// let model = ScriptedModel::new([
    ///     ScriptedStep::new().tool_call("c1", "report", json!({})),
    ///     ScriptedStep::answer("Started the report."),
    ///     ScriptedStep::answer("The report has 12 pages."),
    /// ]);
    /// let runtime = Runtime::builder().tool(report).build().unwrap();
    /// let agent = Agent::builder("reporter", model, runtime)
    ///     .background_wait(Duration::ZERO)
    ///     .build().unwrap();
    ///
    /// let first = agent.generate(Thread::new("t1"), vec![Message::user("report?")]).await.unwrap();
    /// assert_eq!(first.finish_reason, FinishReason::BackgroundTasks);
    /// assert_eq!(agent.background_tasks(&first.run_id).await.unwrap()[0].call_id, "c1");
    ///
    /// release.send(true).unwrap();
    /// agent.runtime().wait(&agent.background_tasks(&first.run_id).await.unwrap()[0].task_id).await.unwrap();
    /// let done = agent.continue_run(&first.run_id).await.unwrap().output().await;
    /// assert!(done.chunks.iter().any(|c| matches!(c, AgentChunk::ToolResult { call_id, .. } if call_id == "c1")));
    /// assert_eq!((done.text.as_str(), done.finish_reason), ("The report has 12 pages.", FinishReason::Stop));
    /// # });
    /// ```
    pub async fn continue_run(&self, run_id: &str) -> Result<AgentStream, AgentError> {
        let (record, revision) = self.inner.load(run_id).await?;
        let decided = self.inner.decided_outside(run_id, &record).await?;
        if !decided.is_empty() {
            let run_id = run_id.to_owned();
            return Ok(
                self.spawn(run_id.clone(), move |runner, chunks| async move {
                    chunks
                        .send(AgentChunk::Start {
                            run_id: run_id.clone(),
                        })
                        .await?;
                    runner.record_decided(&run_id, &decided, &chunks).await
                }),
            );
        }
        let mut run = self.inner.machine(record);
        run.on_continue(run_id)?;
        Ok(self.go_on(run_id, run, revision))
    }

    /// The background tasks run `run_id` awaits: started by its calls,
    /// their results not yet in its conversation.
    pub async fn background_tasks(&self, run_id: &str) -> Result<Vec<AwaitedTask>, AgentError> {
        let (record, _) = self.inner.load(run_id).await?;
        Ok(record.awaited_tasks())
    }

    /// Takes the next steps of the stored run `run_id` (read at `revision`).
    fn go_on(&self, run_id: &str, run: machine::RunMachine, revision: u64) -> AgentStream {
        let run_id = run_id.to_owned();
        self.spawn(run_id.clone(), move |runner, chunks| async move {
            chunks
                .send(AgentChunk::Start {
                    run_id: run_id.clone(),
                })
                .await?;
            runner
                .run_steps(&run_id, run, Some(revision), &chunks)
                .await
        })
    }

    /// The conversation of run `run_id` so far, as a thread's history
    /// keeps it: each tool's transcript transform applied to its calls'
    /// arguments and results (the model reads them raw).
    pub async fn transcript(&self, run_id: &str) -> Result<Vec<Message>, AgentError> {
        let (record, _) = self.inner.load(run_id).await?;
        Ok(self.transcript_of(record.messages).await)
    }

    /// Makes `decision` on the waiting call `call_id` of run `run_id`; with
    /// `tool_id`, only on a call of that tool (a typed decision).
    async fn decide(
        &self,
        run_id: &str,
        call_id: &str,
        decision: Decision,
        tool_id: Option<&str>,
    ) -> Result<AgentStream, AgentError> {
        let (record, _) = self.inner.load(run_id).await?;
        record.expect_waiting(run_id, call_id, &decision)?;
        if let Some(expected) = tool_id
            && let Some(waiting) = record.waiting.get(call_id)
            && waiting.tool_name != expected
        {
            return Err(RuntimeError::TypeMismatch {
                call_id: call_id.to_owned(),
                reason: format!(
                    "it is a call of tool {:?}, not of {expected:?}",
                    waiting.tool_name
                ),
            }
            .into());
        }
        let (run_id, call_id) = (run_id.to_owned(), call_id.to_owned());
        Ok(
            self.spawn(run_id.clone(), move |runner, chunks| async move {
                chunks
                    .send(AgentChunk::Start {
                        run_id: run_id.clone(),
                    })
                    .await?;
                runner
                    .continue_after(&run_id, &call_id, decision, &chunks)
                    .await
            }),
        )
    }

    /// `messages` with each tool's transcript transform applied to the
    /// arguments and results of its calls (a result's transformer sees its
    /// call's arguments as the input).
    async fn transcript_of(&self, messages: Vec<Message>) -> Vec<Message> {
        let runtime = &self.inner.runtime;
        let mut arguments = std::collections::HashMap::new();
        let mut transcript = Vec::with_capacity(messages.len());
        for message in messages {
            transcript.push(match message {
                Message::Assistant { text, tool_calls } => {
                    let mut shown = Vec::with_capacity(tool_calls.len());
                    for call in tool_calls {
                        let tool = runtime.tool(&call.tool_name);
                        let (id, name, raw) = (&call.call_id, &call.tool_name, &call.arguments);
                        let known = CallValues::default();
                        let projected = Payload::of(tool, id, name, Phase::Input, raw, known);
                        let arguments_shown = projected.await.transcript;
                        arguments.insert(call.call_id.clone(), call.arguments);
                        shown.push(ToolCallRequest {
                            arguments: arguments_shown,
                            ..call
                        });
                    }
                    Message::Assistant {
                        text,
                        tool_calls: shown,
                    }
                }
                Message::ToolResult {
                    call_id,
                    tool_name,
                    result,
                    model_output,
                    is_error,
                } => {
                    let phase = if is_error {
                        Phase::Error
                    } else {
                        Phase::Output
                    };
                    let tool = runtime.tool(&tool_name);
                    let known = CallValues {
                        input: arguments.get(&call_id),
                        ..CallValues::default()
                    };
                    let projected = Payload::of(tool, &call_id, &tool_name, phase, &result, known);
                    let shown = projected.await.transcript;
                    // As in the chunks: the model output only beside the
                    // output as it is.
                    let model_output = model_output.filter(|_| shown == result);
                    Message::ToolResult {
                        call_id,
                        tool_name,
                        result: shown,
                        model_output,
                        is_error,
                    }
                }
                other => other,
            });
        }
        transcript
    }

    /// Runs `work` as a task sending the stream's chunks.
    fn spawn<F, Fut>(&self, run_id: String, work: F) -> AgentStream
    where
        F: FnOnce(Arc<Runner>, Chunks) -> Fut + Send + 'static,
        Fut: Future<Output = Result<(), Gone>> + Send + 'static,
    {
        let (tx, rx) = mpsc::channel(CHUNK_BUFFER);
        let runner = Arc::clone(&self.inner);
        tokio::spawn(async move {
            // A reader that went away stops the run at its next chunk.
            let _ = work(runner, Chunks::new(tx)).await;
        });
        AgentStream { run_id, rx }
    }
}

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
            usage: Usage::default(),
            chunks: Vec::new(),
        };
        while let Some(chunk) = self.rx.recv().await {
            match &chunk {
                AgentChunk::TextDelta { text } => output.text.push_str(text),
                AgentChunk::StepFinish { usage, .. } => output.usage += *usage,
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
    /// The tokens its steps took, as the model reported them.
    pub usage: Usage,
    /// Every chunk, in order.
    pub chunks: Vec<AgentChunk>,
}
