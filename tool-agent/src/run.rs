//! A run: the steps of one conversation turn (model answer, tool calls,
//! results) until the model stops, and its record in the store while it
//! waits for decisions.

use std::collections::{BTreeMap, HashMap};

use futures_util::StreamExt as _;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use tokio::sync::mpsc;
use tool_core::AgentContext;
use tool_core::decode::ToolCallEvent;
use tool_core::provider::Export;
use tool_core::transform::Phase;

use super::chunk::{AgentChunk, FinishReason, approval_schema};
use super::model::{Message, ModelEvent, ModelFinish, ModelRequest, ToolCallRequest};
use super::{Agent, AgentError, Thread};
use tool_runtime::{CallOutcome, Decision, InputStream, Payload};

/// The input fields that route a new call as the resume of a suspended one
/// (auto-resume), stripped before the tool sees its input.
pub(crate) const SUSPENDED_CALL_FIELD: &str = "suspendedToolCallId";
pub(crate) const RESUME_DATA_FIELD: &str = "resumeData";

/// What a call waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum WaitingFor {
    Approval,
    ResumeData,
}

/// A call of the run that waits for a decision.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Waiting {
    pub(crate) tool_name: String,
    pub(crate) waiting_for: WaitingFor,
    pub(crate) args: Value,
    #[serde(default)]
    pub(crate) payload: Option<Value>,
    #[serde(default)]
    pub(crate) resume_schema: Option<Value>,
}

/// A call's result, as the conversation will hold it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Settled {
    pub(crate) tool_name: String,
    pub(crate) content: Value,
    pub(crate) is_error: bool,
}

/// Everything needed to go on with a run, on any instance: what the store keeps.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct RunRecord {
    pub(crate) agent_id: String,
    pub(crate) thread: Thread,
    /// The conversation up to the last assistant message.
    pub(crate) messages: Vec<Message>,
    /// Steps taken.
    pub(crate) steps: usize,
    /// Results of the last step's calls that settled, by call id.
    pub(crate) settled: BTreeMap<String, Settled>,
    /// The last step's calls that wait, by call id.
    pub(crate) waiting: BTreeMap<String, Waiting>,
    /// Suspensions the conversation moved on from (a reply came): resumed
    /// by a call that names them (auto-resume).
    #[serde(default)]
    pub(crate) suspensions: BTreeMap<String, Waiting>,
}

impl RunRecord {
    pub(crate) fn new(agent_id: &str, thread: Thread, messages: Vec<Message>) -> Self {
        RunRecord {
            agent_id: agent_id.to_owned(),
            thread,
            messages,
            steps: 0,
            settled: BTreeMap::new(),
            waiting: BTreeMap::new(),
            suspensions: BTreeMap::new(),
        }
    }

    /// Appends the last step's results in the order of its calls, once none waits.
    pub(crate) fn close_step(&mut self) {
        let Some(Message::Assistant { tool_calls, .. }) = self.messages.last() else {
            return;
        };
        let order: Vec<String> = tool_calls.iter().map(|c| c.call_id.clone()).collect();
        for call_id in order {
            if let Some(settled) = self.settled.remove(&call_id) {
                self.messages.push(Message::ToolResult {
                    call_id,
                    tool_name: settled.tool_name,
                    content: settled.content,
                    is_error: settled.is_error,
                });
            }
        }
        self.settled.clear();
    }

    /// Settles `call_id` with `outcome` (or keeps it waiting, suspended
    /// again), as a decision or an auto-resume found it.
    pub(crate) fn apply(&mut self, agent: &Agent, call_id: &str, outcome: &CallOutcome) {
        let Some(mut waiting) = self
            .waiting
            .remove(call_id)
            .or_else(|| self.suspensions.remove(call_id))
        else {
            return;
        };
        if let CallOutcome::Suspended {
            payload,
            resume_schema,
            ..
        } = outcome
        {
            waiting.payload = Some(payload.clone());
            waiting.resume_schema.clone_from(resume_schema);
            self.waiting.insert(call_id.to_owned(), waiting);
            return;
        }
        let settled = agent.settled(&waiting.tool_name, outcome);
        self.settled.insert(call_id.to_owned(), settled);
    }
}

/// Sends chunks to the run's stream; a stream that was dropped stops the run
/// at its next chunk (calls already running settle in the runtime).
pub(crate) struct Chunks {
    tx: mpsc::Sender<AgentChunk>,
}

impl Chunks {
    pub(crate) fn new(tx: mpsc::Sender<AgentChunk>) -> Self {
        Chunks { tx }
    }

    pub(crate) async fn send(&self, chunk: AgentChunk) -> Result<(), Gone> {
        self.tx.send(chunk).await.map_err(|_| Gone)
    }
}

/// The stream's reader went away.
pub(crate) struct Gone;

/// A call of the current step, running.
struct Running {
    call_id: String,
    tool_name: String,
    /// Whether it resumes a suspension (auto-resume): its result is this
    /// call's, and the suspension settles with it.
    resumes: Option<String>,
    handle: tokio::task::JoinHandle<CallOutcome>,
}

impl Agent {
    /// Runs steps until the model stops, a call waits, or `max_steps`; then
    /// stores the run and ends the stream.
    pub(crate) async fn run_steps(
        &self,
        run_id: &str,
        mut record: RunRecord,
        revision: Option<u64>,
        chunks: &Chunks,
    ) -> Result<(), Gone> {
        let reason = loop {
            if record.steps >= self.inner.max_steps {
                break FinishReason::ToolCalls;
            }
            record.steps += 1;
            match self.step(run_id, &mut record, chunks).await? {
                StepEnd::Calls => {}
                StepEnd::Waiting => break FinishReason::Suspended,
                StepEnd::Done(reason) => break reason,
            }
            record.close_step();
        };
        let finished = reason != FinishReason::Suspended;
        if let Err(error) = self.save(run_id, revision, finished, &record).await {
            return self.fail(run_id, chunks, error.to_string()).await;
        }
        chunks
            .send(AgentChunk::Finish {
                run_id: run_id.to_owned(),
                reason,
            })
            .await
    }

    /// One step: the model's answer, streamed, its calls run concurrently as
    /// they complete, then their outcomes.
    async fn step(
        &self,
        run_id: &str,
        record: &mut RunRecord,
        chunks: &Chunks,
    ) -> Result<StepEnd, Gone> {
        let inner = &self.inner;
        let request = ModelRequest {
            max_tokens: inner.max_tokens,
            ..ModelRequest::new(
                self.instructions(record),
                record.messages.clone(),
                self.tool_definitions(),
            )
        };
        let messages_json: Vec<Value> = record
            .messages
            .iter()
            .filter_map(|m| serde_json::to_value(m).ok())
            .collect();
        let mut answer = inner.model.stream(request);
        let (mut text, mut calls) = (String::new(), Vec::<ToolCallRequest>::new());
        let mut open: HashMap<String, InputStream> = HashMap::new();
        let mut running = Vec::<Running>::new();
        let mut finish = None;
        let mut failed = false;
        while let Some(event) = answer.next().await {
            let event = match event {
                Ok(event) => event,
                Err(error) => {
                    chunks
                        .send(AgentChunk::Error {
                            message: error.to_string(),
                        })
                        .await?;
                    failed = true;
                    break;
                }
            };
            match event {
                ModelEvent::TextDelta(delta) => {
                    text.push_str(&delta);
                    chunks.send(AgentChunk::TextDelta { text: delta }).await?;
                }
                ModelEvent::ToolCall(ToolCallEvent::Start { call_id, tool_name }) => {
                    let stream =
                        self.begin(run_id, &record.thread, &call_id, &tool_name, &messages_json);
                    open.insert(call_id.clone(), stream);
                    chunks
                        .send(AgentChunk::ToolCallInputStart { call_id, tool_name })
                        .await?;
                }
                ModelEvent::ToolCall(ToolCallEvent::InputDelta { call_id, delta }) => {
                    let Some(stream) = open.get_mut(&call_id) else {
                        continue;
                    };
                    stream.push(&delta);
                    let tool = inner.runtime.tool(stream.tool_id());
                    if let Some(shown) =
                        Payload::delta_display(tool, &call_id, stream.tool_id(), &delta)
                    {
                        chunks
                            .send(AgentChunk::ToolCallInputDelta {
                                call_id,
                                delta: shown,
                            })
                            .await?;
                    }
                }
                ModelEvent::ToolCall(ToolCallEvent::InputEnd { call_id, input }) => {
                    let Some(stream) = open.remove(&call_id) else {
                        continue;
                    };
                    let tool_name = stream.tool_id().to_owned();
                    calls.push(ToolCallRequest {
                        call_id: call_id.clone(),
                        tool_name: tool_name.clone(),
                        arguments: input.clone(),
                    });
                    let call = self.start_call(run_id, record, &call_id, stream, input);
                    chunks
                        .send(AgentChunk::ToolCall {
                            call_id: call_id.clone(),
                            tool_name: tool_name.clone(),
                            args: call.shown,
                        })
                        .await?;
                    running.push(Running {
                        call_id,
                        tool_name,
                        resumes: call.resumes,
                        handle: call.handle,
                    });
                }
                ModelEvent::ToolCall(ToolCallEvent::Incomplete {
                    call_id,
                    tool_name,
                    partial_text,
                    reason,
                }) => {
                    open.remove(&call_id);
                    let message = format!(
                        "Tool call {call_id} to {tool_name} was cut off before its arguments were complete ({reason}); it did not run."
                    );
                    calls.push(ToolCallRequest {
                        call_id: call_id.clone(),
                        tool_name: tool_name.clone(),
                        arguments: Value::String(partial_text),
                    });
                    record.settled.insert(
                        call_id.clone(),
                        Settled {
                            tool_name: tool_name.clone(),
                            content: Value::String(message.clone()),
                            is_error: true,
                        },
                    );
                    chunks
                        .send(AgentChunk::ToolError {
                            call_id,
                            tool_name,
                            error: Value::String(message),
                        })
                        .await?;
                }
                ModelEvent::Finish(reason) => finish = Some(reason),
            }
        }
        // Calls the answer left open never completed their arguments.
        drop(open);
        let made_calls = !calls.is_empty();
        record.messages.push(Message::Assistant {
            text,
            tool_calls: calls,
        });
        for call in running {
            let outcome = call
                .handle
                .await
                .unwrap_or_else(|error| CallOutcome::Failed {
                    error: tool_core::ModelError::new(
                        tool_core::ErrorKind::Execution,
                        format!("Tool {} did not finish: {error}", call.tool_name),
                    ),
                });
            if let Some(suspended) = &call.resumes {
                record.apply(self, suspended, &outcome);
                // The resumed call's result is this call's.
                if let Some(settled) = record.settled.remove(suspended) {
                    record.settled.insert(call.call_id.clone(), settled);
                }
            }
            self.report(record, &call.call_id, &call.tool_name, outcome, chunks)
                .await?;
        }
        let reason = finish.clone().unwrap_or(ModelFinish::Stop);
        chunks
            .send(AgentChunk::StepFinish {
                step: record.steps,
                reason: reason.clone(),
            })
            .await?;
        if failed {
            return Ok(StepEnd::Done(FinishReason::Error));
        }
        if !record.waiting.is_empty() {
            return Ok(StepEnd::Waiting);
        }
        if made_calls {
            return Ok(StepEnd::Calls);
        }
        Ok(StepEnd::Done(match reason {
            ModelFinish::Length => FinishReason::Length,
            _ => FinishReason::Stop,
        }))
    }

    /// Records a call's outcome in the step and sends its chunk.
    pub(crate) async fn report(
        &self,
        record: &mut RunRecord,
        call_id: &str,
        tool_name: &str,
        outcome: CallOutcome,
        chunks: &Chunks,
    ) -> Result<(), Gone> {
        let tool = self.inner.runtime.tool(tool_name);
        let shown =
            |phase, value: &Value| Payload::of(tool, call_id, tool_name, phase, value).display;
        let chunk = match &outcome {
            CallOutcome::ApprovalRequired { input, .. } => {
                record.waiting.insert(
                    call_id.to_owned(),
                    Waiting {
                        tool_name: tool_name.to_owned(),
                        waiting_for: WaitingFor::Approval,
                        args: input.clone(),
                        payload: None,
                        resume_schema: Some(approval_schema()),
                    },
                );
                AgentChunk::ToolCallApproval {
                    call_id: call_id.to_owned(),
                    tool_name: tool_name.to_owned(),
                    args: shown(Phase::Approval, input),
                    resume_schema: approval_schema(),
                }
            }
            CallOutcome::Suspended {
                input,
                payload: suspended,
                resume_schema,
                ..
            } => {
                // Kept waiting unless it resumed a suspension already there.
                if !record.waiting.contains_key(call_id) {
                    record.waiting.insert(
                        call_id.to_owned(),
                        Waiting {
                            tool_name: tool_name.to_owned(),
                            waiting_for: WaitingFor::ResumeData,
                            args: input.clone(),
                            payload: Some(suspended.clone()),
                            resume_schema: resume_schema.clone(),
                        },
                    );
                }
                AgentChunk::ToolCallSuspended {
                    call_id: call_id.to_owned(),
                    tool_name: tool_name.to_owned(),
                    payload: shown(Phase::Suspend, suspended),
                    args: input.clone(),
                    resume_schema: resume_schema.clone(),
                }
            }
            other => {
                let settled = record
                    .settled
                    .entry(call_id.to_owned())
                    .or_insert_with(|| self.settled(tool_name, other))
                    .clone();
                if settled.is_error {
                    AgentChunk::ToolError {
                        call_id: call_id.to_owned(),
                        tool_name: tool_name.to_owned(),
                        error: shown(Phase::Error, &settled.content),
                    }
                } else {
                    AgentChunk::ToolResult {
                        call_id: call_id.to_owned(),
                        tool_name: tool_name.to_owned(),
                        result: shown(Phase::Output, &settled.content),
                    }
                }
            }
        };
        chunks.send(chunk).await
    }

    /// What the conversation keeps of a settled call: what the model reads
    /// (raw; [`Agent::transcript`] applies the transcript transforms).
    pub(crate) fn settled(&self, tool_name: &str, outcome: &CallOutcome) -> Settled {
        let is_error = !matches!(
            outcome,
            CallOutcome::Completed { .. } | CallOutcome::BackgroundStarted { .. }
        );
        Settled {
            tool_name: tool_name.to_owned(),
            content: outcome.to_model_value(),
            is_error,
        }
    }

    /// `messages` with each tool's transcript transform applied to the
    /// arguments and results of its calls.
    pub(crate) fn transcript_of(&self, messages: Vec<Message>) -> Vec<Message> {
        let runtime = &self.inner.runtime;
        messages
            .into_iter()
            .map(|message| match message {
                Message::Assistant { text, tool_calls } => Message::Assistant {
                    text,
                    tool_calls: tool_calls
                        .into_iter()
                        .map(|call| {
                            let tool = runtime.tool(&call.tool_name);
                            let arguments = Payload::of(
                                tool,
                                &call.call_id,
                                &call.tool_name,
                                Phase::Input,
                                &call.arguments,
                            )
                            .transcript;
                            ToolCallRequest { arguments, ..call }
                        })
                        .collect(),
                },
                Message::ToolResult {
                    call_id,
                    tool_name,
                    content,
                    is_error,
                } => {
                    let phase = if is_error {
                        Phase::Error
                    } else {
                        Phase::Output
                    };
                    let tool = runtime.tool(&tool_name);
                    let content =
                        Payload::of(tool, &call_id, &tool_name, phase, &content).transcript;
                    Message::ToolResult {
                        call_id,
                        tool_name,
                        content,
                        is_error,
                    }
                }
                other => other,
            })
            .collect()
    }

    /// The system instructions, with the run's pending suspensions when the
    /// agent auto-resumes (never its approvals: approval is a consent boundary).
    fn instructions(&self, record: &RunRecord) -> String {
        let inner = &self.inner;
        if !inner.auto_resume || record.suspensions.is_empty() {
            return inner.instructions.clone();
        }
        let mut text = inner.instructions.clone();
        text.push_str(
            "\n\nThese tool calls are suspended, waiting for data from the user. When the user's latest message provides \
             the data one of them waits for, call that same tool again with its original arguments plus \
             `suspendedToolCallId` (the suspended call's id) and `resumeData` (the data, matching the resume schema). \
             Do not make up data the user did not give.\n",
        );
        for (call_id, waiting) in &record.suspensions {
            let entry = json!({
                "suspendedToolCallId": call_id,
                "toolName": waiting.tool_name,
                "args": waiting.args,
                "suspendPayload": waiting.payload,
                "resumeSchema": waiting.resume_schema,
            });
            text.push_str(&format!("- {entry}\n"));
        }
        text
    }

    /// The tools' definitions for the model (with the auto-resume fields on
    /// the tools that can suspend).
    fn tool_definitions(&self) -> Vec<Value> {
        self.inner
            .exports
            .values()
            .map(|export| export.definition().clone())
            .collect()
    }

    /// Starts receiving a call's arguments (hooks fire as they stream).
    fn begin(
        &self,
        run_id: &str,
        thread: &Thread,
        call_id: &str,
        tool_name: &str,
        messages: &[Value],
    ) -> InputStream {
        self.inner
            .runtime
            .begin(
                runtime_call_id(run_id, call_id),
                tool_name,
                messages.to_vec(),
            )
            .with_agent(self.context(run_id, thread, Some(tool_name)))
    }

    /// Runs a call whose arguments are complete, as a task of its own (the
    /// step's calls run concurrently); an auto-resume is routed to the
    /// suspended call it names.
    fn start_call(
        &self,
        run_id: &str,
        record: &RunRecord,
        call_id: &str,
        stream: InputStream,
        mut input: Value,
    ) -> StartedCall {
        let tool_name = stream.tool_id().to_owned();
        if let Some(export) = self.inner.exports.get(&tool_name) {
            export.restore_value(&mut input);
        }
        let (suspended, resume_data) = take_resume_fields(&mut input);
        let shown = Payload::of(
            self.inner.runtime.tool(&tool_name),
            call_id,
            &tool_name,
            Phase::Input,
            &input,
        )
        .display;
        let runtime = self.inner.runtime.clone();
        if let Some(suspended) = suspended.filter(|_| self.inner.auto_resume) {
            let error = match record
                .suspensions
                .get(&suspended)
                .or_else(|| record.waiting.get(&suspended))
            {
                Some(waiting)
                    if waiting.tool_name == tool_name
                        && waiting.waiting_for == WaitingFor::ResumeData =>
                {
                    None
                }
                Some(_) => Some(format!(
                    "Call {suspended} is not a suspended call of tool {tool_name} in this run: it was not resumed."
                )),
                None => Some(format!(
                    "No suspended call {suspended} waits in this run: nothing was resumed."
                )),
            };
            drop(stream);
            let resumes = error.is_none().then(|| suspended.clone());
            let handle = match error {
                None => {
                    let id = runtime_call_id(run_id, &suspended);
                    let resume = Decision::Resume(resume_data.unwrap_or(Value::Null));
                    let agent = Some(self.context(run_id, &record.thread, Some(&tool_name)));
                    tokio::spawn(async move {
                        runtime
                            .decide(&id, resume, agent)
                            .await
                            .unwrap_or_else(|error| CallOutcome::Failed {
                                error: tool_core::ModelError::new(
                                    tool_core::ErrorKind::Execution,
                                    error.to_string(),
                                ),
                            })
                    })
                }
                Some(message) => tokio::spawn(async move {
                    CallOutcome::Failed {
                        error: tool_core::ModelError::new(
                            tool_core::ErrorKind::InputValidation,
                            message,
                        ),
                    }
                }),
            };
            return StartedCall {
                shown,
                resumes,
                handle,
            };
        }
        StartedCall {
            shown,
            resumes: None,
            handle: tokio::spawn(stream.finish_with(input)),
        }
    }

    /// What a tool the agent runs reads with `ToolContext::agent` (with
    /// `background` set for a tool that runs as a background task).
    pub(crate) fn context(
        &self,
        run_id: &str,
        thread: &Thread,
        tool_name: Option<&str>,
    ) -> AgentContext {
        let background = tool_name
            .and_then(|name| self.inner.runtime.tool(name))
            .and_then(|tool| tool.definition().background.as_ref())
            .is_some_and(|b| b.enabled);
        let mut context = AgentContext::new(self.inner.id.as_str(), run_id)
            .with_thread(thread.thread_id.as_str())
            .with_background(background);
        if let Some(resource) = &thread.resource_id {
            context = context.with_resource(resource.as_str());
        }
        context
    }

    /// Saves the run: creates it (`revision` none) or replaces the revision read.
    pub(crate) async fn save(
        &self,
        run_id: &str,
        revision: Option<u64>,
        finished: bool,
        record: &RunRecord,
    ) -> Result<u64, AgentError> {
        let value = serde_json::to_value(record).map_err(|e| AgentError::Record {
            run_id: run_id.to_owned(),
            reason: e.to_string(),
        })?;
        self.inner
            .runtime
            .runs()
            .save(run_id, revision, finished, value)
            .await?
            .ok_or_else(|| AgentError::Conflict {
                run_id: run_id.to_owned(),
            })
    }
}

/// A call started by [`Agent::start_call`].
struct StartedCall {
    shown: Value,
    resumes: Option<String>,
    handle: tokio::task::JoinHandle<CallOutcome>,
}

/// How a step ended.
enum StepEnd {
    /// Its calls settled: the next step goes on.
    Calls,
    /// A call waits.
    Waiting,
    /// The model stopped (or failed).
    Done(FinishReason),
}

/// The id of a run's call in the runtime (and its store): the provider's
/// call id within the run, so that calls of two runs never collide, even
/// when a provider reuses ids.
pub(crate) fn runtime_call_id(run_id: &str, call_id: &str) -> String {
    format!("{run_id}/{call_id}")
}

/// Takes the auto-resume fields out of a call's input.
fn take_resume_fields(input: &mut Value) -> (Option<String>, Option<Value>) {
    let Some(object) = input.as_object_mut() else {
        return (None, None);
    };
    let suspended = match object.remove(SUSPENDED_CALL_FIELD) {
        Some(Value::String(id)) => Some(id),
        _ => None,
    };
    let data = object.remove(RESUME_DATA_FIELD).filter(|v| !v.is_null());
    (suspended, data)
}

/// `definition`'s export with the auto-resume fields added to its input
/// schema (optional; nullable where strict mode needs every field required).
pub(crate) fn with_resume_fields(
    mut definition: tool_core::ToolDefinition,
    provider: tool_core::provider::Provider,
) -> Result<Export, tool_core::provider::ExportError> {
    let mut resume = definition
        .resume_schema
        .clone()
        .unwrap_or_else(|| json!({}));
    // The resume schema's definitions move to the input schema's root,
    // where its references (`#/$defs/..`) then point.
    if let Some(resume) = resume.as_object_mut() {
        resume.remove("$schema");
        if let (Some(Value::Object(defs)), Some(input)) = (
            resume.remove("$defs"),
            definition.input_schema.as_object_mut(),
        ) {
            let root = input
                .entry("$defs")
                .or_insert_with(|| Value::Object(Map::new()));
            if let Some(root) = root.as_object_mut() {
                for (name, schema) in defs {
                    root.entry(name).or_insert(schema);
                }
            }
        }
    }
    if let Some(properties) = definition
        .input_schema
        .get_mut("properties")
        .and_then(Value::as_object_mut)
    {
        properties.insert(
            SUSPENDED_CALL_FIELD.to_owned(),
            json!({ "type": "string", "description": "The id of the suspended call this call resumes, when the user's message gives the data it waits for." }),
        );
        properties.insert(RESUME_DATA_FIELD.to_owned(), resume);
    } else {
        let mut properties = Map::new();
        properties.insert(SUSPENDED_CALL_FIELD.to_owned(), json!({ "type": "string" }));
        properties.insert(RESUME_DATA_FIELD.to_owned(), resume);
        definition.input_schema = json!({ "type": "object", "properties": properties });
    }
    Export::from_definition(&definition, provider)
}
