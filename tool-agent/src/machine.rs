//! A run's transitions, without I/O: whether another step comes or the run
//! ends (and why), what the model's answer and its calls' outcomes change
//! in the [`RunRecord`], which calls wait and which settled, when a step
//! ends, what a decision or a reply does to a stored run, what must be
//! saved before going on, and which chunks are due.
//!
//! The driver (`run.rs`) streams the model's answer, turns its tool-call
//! events into runtime calls, runs them, shows the chunks' payloads through
//! the tools' display transforms, sends the chunks and saves the record; it
//! asks this module what each event means. Every transition is synchronous:
//! nothing here awaits, spawns or reads a store, and a chunk whose payload
//! is still to show comes as a [`Due::Show`], so the tests below need no
//! executor, model, runtime or store.

use std::time::Duration;

use serde_json::{Value, json};

use tool_core::transform::OwnedCallValues;
use tool_core::{ContentPart, ErrorKind, Excerpt, ModelError, ModelOutput};
use tool_runtime::CallOutcome;

use crate::chunk::{AgentChunk, Due, FinishReason, Show, Slot, approval_schema};
use crate::error::AgentError;
use crate::model::{Message, ModelFinish, ToolCallRequest, Usage};
use crate::record::{BackgroundTask, RunRecord, Settled, Waiting, WaitingFor};
use crate::resume_fields::take_resume_fields;

/// The agent's settings a run's transitions depend on.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RunSettings {
    /// Steps (model answers) a run takes at most, counted from its start or
    /// from the user's last reply.
    pub(crate) max_steps: usize,
    /// Whether a call naming a suspended call resumes it, and a reply gets
    /// past calls waiting for resume data.
    pub(crate) auto_resume: bool,
    /// How long the run waits for its running background tasks once the
    /// model stopped, before the stream ends with
    /// [`FinishReason::BackgroundTasks`].
    pub(crate) background_wait: Duration,
}

/// A run as a state machine: its [`RunRecord`] and where it stands.
/// [`next_action`](Self::next_action) says what to do next; the [`Step`]
/// it hands out takes the model's answer and its calls' outcomes;
/// [`on_decision`](Self::on_decision) and [`on_reply`](Self::on_reply)
/// continue a stored run.
#[derive(Debug)]
pub(crate) struct RunMachine {
    record: RunRecord,
    settings: RunSettings,
    progress: Progress,
}

/// Where a run stands between two transitions.
#[derive(Debug)]
enum Progress {
    /// No step runs: the next may start.
    BetweenSteps,
    /// The last step ended so.
    StepEnded(StepEnd),
    /// The model stopped while background tasks run: the next step waits
    /// for one to settle (once: `waited` after the driver's wait).
    ForTasks { waited: bool },
    /// The run ended.
    Ended(FinishReason),
}

/// How a step ended.
#[derive(Debug)]
enum StepEnd {
    /// Its calls settled: the next step goes on.
    Calls,
    /// A call waits.
    Waiting,
    /// The model stopped (or failed).
    Done(FinishReason),
}

/// What the driver does next.
#[derive(Debug)]
pub(crate) enum Next<'a> {
    /// Ask the model for this step's answer; feed the answer, then its
    /// calls' outcomes, to the step.
    Step(Step<'a>),
    /// Save the run (so that it continues elsewhere should this instance
    /// die), then wait up to this long for a background task to settle,
    /// giving the machine what settles; then ask again.
    AwaitTasks(Duration),
    /// Save the run, then end the stream.
    End(RunEnd),
}

/// How a run's stream ends.
#[derive(Debug)]
pub(crate) struct RunEnd {
    /// Why (the `finish` chunk's reason).
    pub(crate) reason: FinishReason,
    /// Whether the run is saved as finished (purged with settled calls):
    /// all but a suspended run, which decisions continue, and one that
    /// awaits background tasks, which a continuation goes on with.
    pub(crate) finished: bool,
}

/// What a decision on a waiting call did to the run.
#[derive(Debug, PartialEq)]
pub(crate) enum Decided {
    /// The call no longer waits: another decision on it was recorded first.
    NotWaiting,
    /// The call still waits (its resume data was refused): the chunk says
    /// why, the stored run stays as it is, and the stream ends suspended.
    CallStillPending(Due),
    /// The call settled or suspended again, and calls of its step wait:
    /// the chunk shows it; save the run, then the stream ends suspended.
    CallsWait(Due),
    /// The step's last waiting call settled and the step is closed: the
    /// chunk shows it; save the run, then take the next steps. The save
    /// claims the continuation: of concurrent last decisions, the one whose
    /// save wins goes on.
    StepSettled(Due),
}

/// How a call whose arguments are complete starts.
#[derive(Debug, PartialEq)]
pub(crate) enum CallStart {
    /// Run it on this input (the auto-resume fields taken out).
    Run(Value),
    /// Resume the run's suspended call `suspended` with `data` instead
    /// (auto-resume): that call's result is this call's.
    Resume {
        /// The suspended call.
        suspended: String,
        /// Its resume data.
        data: Value,
    },
    /// Do not run it (it names a suspension it cannot resume): this is its
    /// outcome.
    Refuse(CallOutcome),
}

/// A call of the step that runs: its outcome is still to come.
#[derive(Debug)]
struct RunningCall {
    call_id: String,
    tool_name: String,
    /// The suspension it resumes (auto-resume).
    resumes: Option<String>,
    /// What its outcome's chunk is shown with: its input, and a resumed
    /// suspension's payload and resume data.
    known: OwnedCallValues,
}

/// The step under way: the model's answer, then its calls' outcomes. It
/// borrows the machine, so the run moves on only once the step is over.
#[derive(Debug)]
pub(crate) struct Step<'a> {
    run: &'a mut RunMachine,
    text: String,
    calls: Vec<ToolCallRequest>,
    running: Vec<RunningCall>,
    finish: Option<ModelFinish>,
    /// What the answer took, as the model last reported it.
    usage: Usage,
    failed: bool,
    /// Whether the answer made calls, once it ended.
    made_calls: Option<bool>,
}

impl RunMachine {
    pub(crate) fn new(record: RunRecord, settings: RunSettings) -> Self {
        RunMachine {
            record,
            settings,
            progress: Progress::BetweenSteps,
        }
    }

    /// The run as the store keeps it.
    pub(crate) fn record(&self) -> &RunRecord {
        &self.record
    }

    /// The next step, or how the run ends: suspended when a call waits,
    /// with the model's reason when it stopped, `ToolCalls` at `max_steps`.
    /// A step whose calls all settled is closed first (its results join the
    /// conversation). When the model stopped while background tasks run,
    /// the run waits for them once (`AwaitTasks`), and goes on with a step
    /// if one settled, or ends with `BackgroundTasks`. The results of the
    /// tasks that settled join the conversation before the next step.
    pub(crate) fn next_action(&mut self) -> Next<'_> {
        let progress = match std::mem::replace(&mut self.progress, Progress::BetweenSteps) {
            Progress::StepEnded(StepEnd::Done(FinishReason::Stop))
                if !self.record.tasks.is_empty() =>
            {
                Progress::ForTasks { waited: false }
            }
            other => other,
        };
        match progress {
            Progress::BetweenSteps => {}
            Progress::StepEnded(StepEnd::Calls) => self.close_step(),
            Progress::StepEnded(StepEnd::Waiting) => return self.end(FinishReason::Suspended),
            Progress::ForTasks { waited } => {
                if !self.record.tasks.values().any(|t| t.settled.is_some()) {
                    if waited {
                        return self.end(FinishReason::BackgroundTasks);
                    }
                    self.progress = Progress::ForTasks { waited: true };
                    return Next::AwaitTasks(self.settings.background_wait);
                }
            }
            Progress::StepEnded(StepEnd::Done(reason)) | Progress::Ended(reason) => {
                return self.end(reason);
            }
        }
        self.take_task_results();
        if self.record.steps >= self.settings.max_steps {
            return self.end(FinishReason::ToolCalls);
        }
        self.record.steps += 1;
        Next::Step(Step {
            run: self,
            text: String::new(),
            calls: Vec::new(),
            running: Vec::new(),
            finish: None,
            usage: Usage::default(),
            failed: false,
            made_calls: None,
        })
    }

    fn end(&mut self, reason: FinishReason) -> Next<'_> {
        self.progress = Progress::Ended(reason.clone());
        Next::End(RunEnd {
            finished: reason != FinishReason::Suspended && self.record.tasks.is_empty(),
            reason,
        })
    }

    /// The background task of the call `call_id` settled with `outcome`:
    /// its result is kept for the next step, and its chunk (the call's
    /// result or error) is due. `None` when the run no longer awaits it
    /// (its result was taken already).
    pub(crate) fn on_task_settled(&mut self, call_id: &str, outcome: &CallOutcome) -> Option<Due> {
        let task = self.record.tasks.get_mut(call_id)?;
        if task.settled.is_some() {
            return None;
        }
        let settled = Settled::of(&task.tool_name, outcome);
        let known = OwnedCallValues {
            input: task.input.clone(),
            ..OwnedCallValues::default()
        };
        let show = result_chunk(call_id, &task.tool_name, &settled, known);
        task.settled = Some(settled);
        Some(Due::Show(show))
    }

    /// Continues a stored run for its background tasks (its calls wait
    /// for no decision): the next step takes the results that settled
    /// meanwhile, or waits for one; steps count again from here.
    pub(crate) fn on_continue(&mut self, run_id: &str) -> Result<(), AgentError> {
        if self.record.tasks.is_empty() || !self.record.waiting.is_empty() {
            return Err(AgentError::NoBackgroundTasks {
                run_id: run_id.to_owned(),
                waiting: self.record.waiting_calls(),
            });
        }
        self.record.steps = 0;
        self.progress = Progress::ForTasks { waited: false };
        Ok(())
    }

    /// Moves the results of the background tasks that settled into the
    /// conversation, each as a message that names its task and call (its
    /// call's result already told the model the task started).
    fn take_task_results(&mut self) {
        let record = &mut self.record;
        let tasks = std::mem::take(&mut record.tasks);
        for (call_id, mut task) in tasks {
            match task.settled.take() {
                Some(settled) => record.messages.push(task_message(&call_id, &task, settled)),
                None => {
                    record.tasks.insert(call_id, task);
                }
            }
        }
    }

    /// A decision on the waiting call `call_id` ended with `outcome`;
    /// `still_pending` when the runtime keeps the call waiting (refused
    /// resume data); `resume_data` the data it was resumed with.
    pub(crate) fn on_decision(
        &mut self,
        call_id: &str,
        outcome: &CallOutcome,
        still_pending: bool,
        resume_data: Option<&Value>,
    ) -> Decided {
        let Some(waiting) = self.record.waiting.get(call_id) else {
            return Decided::NotWaiting;
        };
        let tool_name = waiting.tool_name.clone();
        let known = OwnedCallValues {
            input: Some(waiting.args.clone()),
            suspend_payload: waiting.payload.clone(),
            resume_data: resume_data.cloned(),
            ..OwnedCallValues::default()
        };
        if still_pending {
            self.progress = Progress::Ended(FinishReason::Suspended);
            return Decided::CallStillPending(
                self.outcome_chunk(call_id, &tool_name, outcome, known),
            );
        }
        self.apply(call_id, outcome);
        let chunk = self.outcome_chunk(call_id, &tool_name, outcome, known);
        if !self.record.waiting.is_empty() {
            self.progress = Progress::Ended(FinishReason::Suspended);
            return Decided::CallsWait(chunk);
        }
        self.close_step();
        self.progress = Progress::BetweenSteps;
        Decided::StepSettled(chunk)
    }

    /// The user's next message: the conversation goes on, unless calls
    /// wait for approval (a consent boundary only a decision crosses) or,
    /// without auto-resume, for resume data. With auto-resume, the
    /// suspended calls get a result saying so, so the conversation reads
    /// as a whole, and stay resumable by a call that names them.
    pub(crate) fn on_reply(&mut self, run_id: &str, text: String) -> Result<(), AgentError> {
        let waiting_for = |what: WaitingFor| -> Vec<String> {
            let waiting = self.record.waiting.iter();
            waiting
                .filter(|(_, w)| w.waiting_for == what)
                .map(|(id, _)| id.clone())
                .collect()
        };
        let approvals = waiting_for(WaitingFor::Approval);
        if !approvals.is_empty() {
            return Err(AgentError::ApprovalPending {
                run_id: run_id.to_owned(),
                call_ids: approvals,
            });
        }
        let outputs = waiting_for(WaitingFor::Output);
        if !outputs.is_empty() {
            return Err(AgentError::OutputPending {
                run_id: run_id.to_owned(),
                call_ids: outputs,
            });
        }
        if !self.record.waiting.is_empty() && !self.settings.auto_resume {
            let expected = WaitingFor::ResumeData.describe();
            return Err(self.record.not_waiting(run_id, "", expected));
        }
        for (call_id, waiting) in std::mem::take(&mut self.record.waiting) {
            self.record.settled.insert(
                call_id.clone(),
                Settled {
                    tool_name: waiting.tool_name.clone(),
                    result: json!({ "status": "suspended", "waitingFor": "resume data", "payload": waiting.payload }),
                    model_output: None,
                    is_error: false,
                },
            );
            self.record.suspensions.insert(call_id, waiting);
        }
        self.close_step();
        self.record.messages.push(Message::user(text));
        self.record.steps = 0;
        self.progress = Progress::BetweenSteps;
        Ok(())
    }

    /// Appends the last step's results in the order of its calls, once none waits.
    fn close_step(&mut self) {
        let record = &mut self.record;
        let Some(Message::Assistant { tool_calls, .. }) = record.messages.last() else {
            return;
        };
        let order: Vec<String> = tool_calls.iter().map(|c| c.call_id.clone()).collect();
        for call_id in order {
            if let Some(settled) = record.settled.remove(&call_id) {
                record.messages.push(settled.into_message(call_id));
            }
        }
        record.settled.clear();
    }

    /// Settles the waiting or suspended call `call_id` with `outcome` (or
    /// keeps it waiting, suspended again), as a decision or an auto-resume
    /// found it.
    fn apply(&mut self, call_id: &str, outcome: &CallOutcome) {
        let record = &mut self.record;
        let Some(mut waiting) = record
            .waiting
            .remove(call_id)
            .or_else(|| record.suspensions.remove(call_id))
        else {
            return;
        };
        if let CallOutcome::Suspended {
            payload,
            resume_schema,
            ..
        } = outcome
        {
            // An approved call that suspended now waits for resume data.
            waiting.waiting_for = WaitingFor::ResumeData;
            waiting.payload = Some(payload.clone());
            waiting.resume_schema.clone_from(resume_schema);
            record.waiting.insert(call_id.to_owned(), waiting);
            return;
        }
        awaits_task(
            record,
            call_id,
            (&waiting.tool_name, Some(&waiting.args)),
            outcome,
        );
        let settled = Settled::of(&waiting.tool_name, outcome);
        record.settled.insert(call_id.to_owned(), settled);
    }

    /// Records the outcome of a call of the step: it waits for approval, or
    /// for resume data (unless it resumed a suspension already waiting), or
    /// it settled (unless its result is already there).
    fn record_outcome(&mut self, call_id: &str, tool_name: &str, outcome: &CallOutcome) {
        let record = &mut self.record;
        match outcome {
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
            }
            CallOutcome::AwaitingOutput {
                input,
                output_schema,
                ..
            } => {
                record.waiting.insert(
                    call_id.to_owned(),
                    Waiting {
                        tool_name: tool_name.to_owned(),
                        waiting_for: WaitingFor::Output,
                        args: input.clone(),
                        payload: None,
                        // The schema of what the decision gives: the output's.
                        resume_schema: output_schema.clone(),
                    },
                );
            }
            CallOutcome::Suspended {
                input,
                payload,
                resume_schema,
                ..
            } => {
                record
                    .waiting
                    .entry(call_id.to_owned())
                    .or_insert_with(|| Waiting {
                        tool_name: tool_name.to_owned(),
                        waiting_for: WaitingFor::ResumeData,
                        args: input.clone(),
                        payload: Some(payload.clone()),
                        resume_schema: resume_schema.clone(),
                    });
            }
            other => {
                awaits_task(record, call_id, (tool_name, None), other);
                record
                    .settled
                    .entry(call_id.to_owned())
                    .or_insert_with(|| Settled::of(tool_name, other));
            }
        }
    }

    /// The chunk that shows a call's outcome (a result already recorded for
    /// it wins over `outcome`'s); `known`: what the call gave before.
    fn outcome_chunk(
        &self,
        call_id: &str,
        tool_name: &str,
        outcome: &CallOutcome,
        known: OwnedCallValues,
    ) -> Due {
        let show = |value: &Value, known, slot| {
            Due::Show(Show {
                call_id: call_id.to_owned(),
                tool_name: tool_name.to_owned(),
                value: value.clone(),
                known,
                slot,
            })
        };
        match outcome {
            CallOutcome::ApprovalRequired { input, .. } => show(input, known, Slot::Approval),
            CallOutcome::AwaitingOutput {
                input,
                output_schema,
                ..
            } => {
                let output_schema = output_schema.clone();
                show(input, known, Slot::AwaitingOutput { output_schema })
            }
            CallOutcome::Suspended {
                input,
                payload,
                resume_schema,
                ..
            } => {
                let known = OwnedCallValues {
                    input: Some(input.clone()),
                    ..known
                };
                let slot = Slot::Suspended {
                    args: input.clone(),
                    resume_schema: resume_schema.clone(),
                };
                show(payload, known, slot)
            }
            CallOutcome::BackgroundStarted { task_id } => {
                Due::Chunk(AgentChunk::BackgroundTaskStarted {
                    call_id: call_id.to_owned(),
                    tool_name: tool_name.to_owned(),
                    task_id: task_id.clone(),
                })
            }
            other => {
                let fresh;
                let settled = match self.record.settled.get(call_id) {
                    Some(settled) => settled,
                    None => {
                        fresh = Settled::of(tool_name, other);
                        &fresh
                    }
                };
                Due::Show(result_chunk(call_id, tool_name, settled, known))
            }
        }
    }

    /// Why a call of `tool_name` cannot resume `suspended`, if it cannot:
    /// only a suspension of the same tool in this run is resumed.
    fn resume_refusal(&self, suspended: &str, tool_name: &str) -> Option<String> {
        let record = &self.record;
        match record
            .suspensions
            .get(suspended)
            .or_else(|| record.waiting.get(suspended))
        {
            Some(waiting)
                if waiting.tool_name == tool_name
                    && waiting.waiting_for == WaitingFor::ResumeData =>
            {
                None
            }
            Some(_) => Some(format!(
                "Call {} is not a suspended call of tool {} in this run: it was not resumed.",
                Excerpt::of(suspended),
                Excerpt::of(tool_name)
            )),
            None => Some(format!(
                "No suspended call {} waits in this run: nothing was resumed.",
                Excerpt::of(suspended)
            )),
        }
    }
}

/// Records the background task the call `call_id` started, if `outcome`
/// says it started one: the run awaits it (its result is shown with
/// `input`, the call's, when known).
fn awaits_task(
    record: &mut RunRecord,
    call_id: &str,
    (tool_name, input): (&str, Option<&Value>),
    outcome: &CallOutcome,
) {
    if let CallOutcome::BackgroundStarted { task_id } = outcome {
        record
            .tasks
            .entry(call_id.to_owned())
            .or_insert_with(|| BackgroundTask {
                tool_name: tool_name.to_owned(),
                task_id: task_id.clone(),
                input: input.cloned(),
                settled: None,
            });
    }
}

/// The chunk of a call's result or error, `settled`, to show with what the
/// call gave before (`known`).
fn result_chunk(call_id: &str, tool_name: &str, settled: &Settled, known: OwnedCallValues) -> Show {
    let slot = if settled.is_error {
        Slot::Error
    } else {
        Slot::Result {
            model_output: settled.model_output.clone(),
        }
    };
    Show {
        call_id: call_id.to_owned(),
        tool_name: tool_name.to_owned(),
        value: settled.result.clone(),
        known,
        slot,
    }
}

/// The message that gives the model the result of the background task of
/// the call `call_id`. A user message: the call's own result (that the task
/// started) is already in the conversation, and no provider takes a second
/// result for one call.
/// The model reads the tool's model output when it has one, as text: the
/// text parts of a content list, and a note for each part a user message
/// in text does not carry.
fn task_message(call_id: &str, task: &BackgroundTask, settled: Settled) -> Message {
    let text_of = |value: Value| match value {
        Value::String(text) => text,
        other => other.to_string(),
    };
    let content = match settled.model_output {
        None => text_of(settled.result),
        Some(ModelOutput::Text(text)) => text,
        Some(ModelOutput::Json(value)) => value.to_string(),
        Some(ModelOutput::Content(parts)) => parts
            .into_iter()
            .map(|part| match part {
                ContentPart::Text { text } => text,
                other => {
                    let kind =
                        serde_json::to_value(&other).map_or(Value::Null, |v| v["type"].clone());
                    format!(
                        "[a {} part, not given with a background task's result]",
                        text_of(kind)
                    )
                }
            })
            .collect::<Vec<_>>()
            .join("\n"),
    };
    let (ended, label) = if settled.is_error {
        ("failed", "Error")
    } else {
        ("completed", "Result")
    };
    Message::user(format!(
        "Background task {} of tool {} (call {}) {ended}. {label}: {content}",
        task.task_id,
        task.tool_name,
        Excerpt::of(call_id)
    ))
}

impl Step<'_> {
    /// The run as it stands (the conversation the model answers).
    pub(crate) fn record(&self) -> &RunRecord {
        &self.run.record
    }

    /// What the model said in this answer so far.
    pub(crate) fn text(&self) -> &str {
        &self.text
    }

    /// A background task of the run settled while the step runs: see
    /// [`RunMachine::on_task_settled`] (the next step takes its result).
    pub(crate) fn on_task_settled(&mut self, call_id: &str, outcome: &CallOutcome) -> Option<Due> {
        self.run.on_task_settled(call_id, outcome)
    }

    /// A piece of the model's text.
    pub(crate) fn on_text(&mut self, delta: String) -> AgentChunk {
        self.text.push_str(&delta);
        AgentChunk::TextDelta { text: delta }
    }

    /// The model could not be called, or its answer broke off: the run ends
    /// with an error once the calls already running settled.
    pub(crate) fn on_model_error(&mut self, message: String) -> AgentChunk {
        self.failed = true;
        AgentChunk::Error { message }
    }

    /// The model said why its answer ended.
    pub(crate) fn on_finish(&mut self, reason: ModelFinish) {
        self.finish = Some(reason);
    }

    /// The model said what its answer took so far (replacing what it said
    /// before).
    pub(crate) fn on_usage(&mut self, usage: Usage) {
        self.usage = usage;
    }

    /// A call's arguments are complete: `request` as the model wrote them
    /// (the conversation keeps it), `input` as the tool reads them. How the
    /// call starts (the driver starts it before sending the chunk), and its
    /// `tool-call` chunk.
    pub(crate) fn on_call_input(
        &mut self,
        request: ToolCallRequest,
        mut input: Value,
    ) -> (CallStart, Due) {
        let (call_id, tool_name) = (request.call_id.clone(), request.tool_name.clone());
        let (suspended, resume_data) = take_resume_fields(&mut input);
        // The chunk shows the input the tool reads.
        let show = Show {
            call_id: call_id.clone(),
            tool_name: tool_name.clone(),
            value: input.clone(),
            known: OwnedCallValues::default(),
            slot: Slot::Call,
        };
        let start = match suspended.filter(|_| self.run.settings.auto_resume) {
            None => CallStart::Run(input),
            Some(suspended) => match self.run.resume_refusal(&suspended, &tool_name) {
                None => CallStart::Resume {
                    suspended,
                    data: resume_data.unwrap_or(Value::Null),
                },
                Some(message) => CallStart::Refuse(CallOutcome::Failed {
                    error: ModelError::new(ErrorKind::InputValidation, message),
                }),
            },
        };
        let (resumes, known) = match &start {
            CallStart::Resume { suspended, data } => {
                let resumed = self.run.record.suspensions.get(suspended);
                let known = OwnedCallValues {
                    input: resumed.map(|s| s.args.clone()),
                    suspend_payload: resumed.and_then(|s| s.payload.clone()),
                    resume_data: Some(data.clone()),
                    ..OwnedCallValues::default()
                };
                (Some(suspended.clone()), known)
            }
            _ => {
                // The outcome is shown with the input as the runtime's
                // transformers see it.
                let known = OwnedCallValues {
                    input: Some(show.value.clone()),
                    ..OwnedCallValues::default()
                };
                (None, known)
            }
        };
        self.calls.push(request);
        self.running.push(RunningCall {
            call_id,
            tool_name,
            resumes,
            known,
        });
        (start, Due::Show(show))
    }

    /// A call was cut off before its arguments were complete: it never
    /// runs, and the model reads `message` as its result.
    pub(crate) fn on_call_cut_off(
        &mut self,
        call_id: String,
        tool_name: String,
        partial_text: String,
        message: String,
    ) -> AgentChunk {
        self.calls.push(ToolCallRequest {
            call_id: call_id.clone(),
            tool_name: tool_name.clone(),
            arguments: Value::String(partial_text),
        });
        self.run.record.settled.insert(
            call_id.clone(),
            Settled {
                tool_name: tool_name.clone(),
                result: Value::String(message.clone()),
                model_output: None,
                is_error: true,
            },
        );
        AgentChunk::ToolError {
            call_id,
            tool_name,
            error: Value::String(message),
        }
    }

    /// The answer ended (its last event, or a failure): it joins the
    /// conversation. The step ends now, with its `step-finish` chunk,
    /// unless calls still run.
    pub(crate) fn end_answer(&mut self) -> Vec<AgentChunk> {
        self.made_calls = Some(!self.calls.is_empty());
        self.run.record.messages.push(Message::Assistant {
            text: std::mem::take(&mut self.text),
            tool_calls: std::mem::take(&mut self.calls),
        });
        self.end_if_settled().into_iter().collect()
    }

    /// The running call `call_id` ended with `outcome`: its chunk, then the
    /// `step-finish` chunk if it was the step's last. An outcome of a call
    /// that does not run (already reported) changes nothing.
    pub(crate) fn on_outcome(&mut self, call_id: &str, outcome: &CallOutcome) -> Vec<Due> {
        let Some(index) = self.running.iter().position(|c| c.call_id == call_id) else {
            return Vec::new();
        };
        let call = self.running.remove(index);
        let run = &mut *self.run;
        if let Some(suspended) = &call.resumes {
            run.apply(suspended, outcome);
            // The resumed call's result is this call's.
            if let Some(settled) = run.record.settled.remove(suspended) {
                run.record.settled.insert(call.call_id.clone(), settled);
            }
        }
        run.record_outcome(&call.call_id, &call.tool_name, outcome);
        if let Some(task) = run.record.tasks.get_mut(&call.call_id) {
            // What its result is shown with, as the call's.
            task.input.clone_from(&call.known.input);
        }
        let chunk = run.outcome_chunk(&call.call_id, &call.tool_name, outcome, call.known);
        let mut due = vec![chunk];
        due.extend(self.end_if_settled().map(Due::Chunk));
        due
    }

    /// Ends the step once its answer ended and no call runs: how it ended
    /// decides the run's next action.
    fn end_if_settled(&mut self) -> Option<AgentChunk> {
        let made_calls = self.made_calls?;
        if !self.running.is_empty() {
            return None;
        }
        let reason = self.finish.clone().unwrap_or(ModelFinish::Stop);
        let end = if self.failed {
            StepEnd::Done(FinishReason::Error)
        } else if !self.run.record.waiting.is_empty() {
            StepEnd::Waiting
        } else if made_calls {
            StepEnd::Calls
        } else {
            StepEnd::Done(match &reason {
                ModelFinish::Length => FinishReason::Length,
                ModelFinish::Refusal => FinishReason::Refusal,
                ModelFinish::ContentFilter => FinishReason::ContentFilter,
                ModelFinish::PauseTurn => FinishReason::PauseTurn,
                ModelFinish::Other(other) => FinishReason::Other(other.clone()),
                ModelFinish::Stop | ModelFinish::ToolCalls => FinishReason::Stop,
            })
        };
        self.run.progress = Progress::StepEnded(end);
        Some(AgentChunk::StepFinish {
            step: self.run.record.steps,
            reason,
            usage: self.usage,
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::record::Thread;

    /// The chunk `due` is, a payload shown tagged with its phase, so the
    /// tests see which projection each chunk asks for.
    fn shown(due: Due) -> AgentChunk {
        match due {
            Due::Chunk(chunk) => chunk,
            Due::Show(show) => {
                let tagged = json!({ format!("{:?}", show.phase()): show.value });
                show.chunk(tagged)
            }
        }
    }

    /// The chunks `due` are (see [`shown`]).
    fn all_shown(due: Vec<Due>) -> Vec<AgentChunk> {
        due.into_iter().map(shown).collect()
    }

    fn machine(max_steps: usize, auto_resume: bool) -> RunMachine {
        let record = RunRecord::new("banker", Thread::new("t1"), vec![Message::user("go")]);
        let settings = RunSettings {
            max_steps,
            auto_resume,
            background_wait: WAIT,
        };
        RunMachine::new(record, settings)
    }

    /// The tests' wait for background tasks.
    const WAIT: Duration = Duration::from_secs(7);

    fn next_step(run: &mut RunMachine) -> Step<'_> {
        match run.next_action() {
            Next::Step(step) => step,
            Next::AwaitTasks(wait) => panic!("a step, not a wait of {wait:?}"),
            Next::End(end) => panic!("a step, not the end {end:?}"),
        }
    }

    fn run_end(run: &mut RunMachine) -> RunEnd {
        match run.next_action() {
            Next::End(end) => end,
            Next::AwaitTasks(wait) => panic!("the end, not a wait of {wait:?}"),
            Next::Step(step) => panic!("the end, not step {}", step.record().steps),
        }
    }

    fn wait_for_tasks(run: &mut RunMachine) -> Duration {
        match run.next_action() {
            Next::AwaitTasks(wait) => wait,
            Next::End(end) => panic!("a wait, not the end {end:?}"),
            Next::Step(step) => panic!("a wait, not step {}", step.record().steps),
        }
    }

    fn request(call_id: &str, tool_name: &str, arguments: Value) -> ToolCallRequest {
        ToolCallRequest {
            call_id: call_id.into(),
            tool_name: tool_name.into(),
            arguments,
        }
    }

    /// Starts the call: its arguments are complete, and need no restoring.
    fn call(step: &mut Step<'_>, call_id: &str, tool_name: &str, args: Value) -> CallStart {
        let (start, _) = step.on_call_input(request(call_id, tool_name, args.clone()), args);
        start
    }

    fn completed(output: Value) -> CallOutcome {
        CallOutcome::Completed {
            output,
            model_output: None,
            state: None,
        }
    }

    fn approval(call_id: &str, input: Value) -> CallOutcome {
        CallOutcome::ApprovalRequired {
            call_id: call_id.into(),
            input,
            resume_schema: Some(approval_schema()),
        }
    }

    fn suspended(call_id: &str, input: Value) -> CallOutcome {
        CallOutcome::Suspended {
            call_id: call_id.into(),
            input,
            payload: json!({ "question": "how many seats?" }),
            resume_schema: Some(json!({ "type": "object" })),
        }
    }

    fn declined(reason: &str) -> CallOutcome {
        CallOutcome::Declined {
            reason: Some(reason.into()),
        }
    }

    fn results(record: &RunRecord) -> Vec<(String, Value, bool)> {
        record
            .messages
            .iter()
            .filter_map(|m| match m {
                Message::ToolResult {
                    call_id,
                    result,
                    is_error,
                    ..
                } => Some((call_id.clone(), result.clone(), *is_error)),
                _ => None,
            })
            .collect()
    }

    fn step_finish(step: usize, reason: ModelFinish) -> AgentChunk {
        AgentChunk::StepFinish {
            step,
            reason,
            usage: Usage::default(),
        }
    }

    /// A run whose first step waits on `transfer`'s approval while `lookup` completed.
    fn waiting_on_transfer() -> RunMachine {
        let mut run = machine(10, false);
        let mut step = next_step(&mut run);
        call(&mut step, "c-transfer", "transfer", json!({ "amount": 10 }));
        call(&mut step, "c-lookup", "lookup", json!({}));
        step.on_finish(ModelFinish::ToolCalls);
        step.end_answer();
        step.on_outcome(
            "c-transfer",
            &approval("c-transfer", json!({ "amount": 10 })),
        );
        step.on_outcome("c-lookup", &completed(json!({ "balance": 100 })));
        assert_eq!(run_end(&mut run).reason, FinishReason::Suspended);
        run
    }

    #[test]
    fn an_answer_without_calls_ends_the_run_with_the_models_reason() {
        for (finish, reason) in [
            (ModelFinish::Stop, FinishReason::Stop),
            (ModelFinish::Length, FinishReason::Length),
            (ModelFinish::Refusal, FinishReason::Refusal),
            (ModelFinish::ContentFilter, FinishReason::ContentFilter),
            (ModelFinish::PauseTurn, FinishReason::PauseTurn),
            (
                ModelFinish::Other("recitation".into()),
                FinishReason::Other("recitation".into()),
            ),
        ] {
            let mut run = machine(10, false);
            let mut step = next_step(&mut run);
            assert_eq!(step.record().steps, 1);
            assert_eq!(
                step.on_text("Hello".into()),
                AgentChunk::TextDelta {
                    text: "Hello".into()
                }
            );
            step.on_text(", world".into());
            step.on_finish(finish.clone());
            assert_eq!(step.end_answer(), [step_finish(1, finish)]);
            let end = run_end(&mut run);
            assert_eq!((end.reason, end.finished), (reason, true));
            assert_eq!(
                run.record().messages.last(),
                Some(&Message::Assistant {
                    text: "Hello, world".into(),
                    tool_calls: vec![],
                })
            );
        }
    }

    #[test]
    fn an_answer_that_does_not_say_why_it_ended_stopped() {
        let mut run = machine(10, false);
        let mut step = next_step(&mut run);
        step.on_text("hi".into());
        assert_eq!(step.end_answer(), [step_finish(1, ModelFinish::Stop)]);
        assert_eq!(run_end(&mut run).reason, FinishReason::Stop);
    }

    #[test]
    fn parallel_calls_where_one_waits_for_approval_and_one_completes_end_suspended() {
        let mut run = machine(10, false);
        let mut step = next_step(&mut run);
        let (start, due) = step.on_call_input(
            request("c-transfer", "transfer", json!({ "amount": 10 })),
            json!({ "amount": 10 }),
        );
        assert_eq!(start, CallStart::Run(json!({ "amount": 10 })));
        assert_eq!(
            shown(due),
            AgentChunk::ToolCall {
                call_id: "c-transfer".into(),
                tool_name: "transfer".into(),
                args: json!({ "Input": { "amount": 10 } }),
            }
        );
        call(&mut step, "c-lookup", "lookup", json!({}));
        step.on_finish(ModelFinish::ToolCalls);
        assert_eq!(step.end_answer(), [], "the calls still run");
        let waits = all_shown(step.on_outcome(
            "c-transfer",
            &approval("c-transfer", json!({ "amount": 10 })),
        ));
        assert_eq!(
            waits,
            [AgentChunk::ToolCallApproval {
                call_id: "c-transfer".into(),
                tool_name: "transfer".into(),
                args: json!({ "Approval": { "amount": 10 } }),
                resume_schema: approval_schema(),
            }]
        );
        let settles = all_shown(step.on_outcome("c-lookup", &completed(json!({ "balance": 100 }))));
        assert_eq!(
            settles,
            [
                AgentChunk::ToolResult {
                    call_id: "c-lookup".into(),
                    tool_name: "lookup".into(),
                    result: json!({ "Output": { "balance": 100 } }),
                    model_output: None,
                },
                step_finish(1, ModelFinish::ToolCalls),
            ]
        );
        let end = run_end(&mut run);
        assert_eq!((end.reason, end.finished), (FinishReason::Suspended, false));
        let record = run.record();
        assert_eq!(
            record.waiting["c-transfer"],
            Waiting {
                tool_name: "transfer".into(),
                waiting_for: WaitingFor::Approval,
                args: json!({ "amount": 10 }),
                payload: None,
                resume_schema: Some(approval_schema()),
            }
        );
        assert_eq!(record.settled["c-lookup"].result, json!({ "balance": 100 }));
        assert!(
            results(record).is_empty(),
            "the step stays open while a call waits"
        );
    }

    #[test]
    fn once_every_call_settled_the_next_step_reads_their_results_in_call_order() {
        let mut run = machine(10, false);
        let mut step = next_step(&mut run);
        call(&mut step, "c1", "lookup", json!({}));
        call(&mut step, "c2", "transfer", json!({ "amount": 1 }));
        step.end_answer();
        step.on_outcome("c2", &declined("no"));
        let last = all_shown(step.on_outcome("c1", &completed(json!(1))));
        assert_eq!(last[1], step_finish(1, ModelFinish::Stop));
        let next = next_step(&mut run);
        assert_eq!(next.record().steps, 2);
        assert_eq!(
            results(next.record()),
            [
                ("c1".to_owned(), json!(1), false),
                ("c2".to_owned(), json!("no"), true),
            ]
        );
        assert!(next.record().settled.is_empty());
    }

    #[test]
    fn a_decision_settling_the_last_waiting_call_closes_the_step_and_goes_on() {
        let mut run = waiting_on_transfer();
        let decided = run.on_decision("c-transfer", &completed(json!({ "sent": 10 })), false, None);
        let Decided::StepSettled(due) = decided else {
            panic!("the step settles: {decided:?}");
        };
        assert_eq!(
            due,
            Due::Show(Show {
                call_id: "c-transfer".into(),
                tool_name: "transfer".into(),
                value: json!({ "sent": 10 }),
                known: OwnedCallValues {
                    input: Some(json!({ "amount": 10 })),
                    ..OwnedCallValues::default()
                },
                slot: Slot::Result { model_output: None },
            }),
            "the result, shown with the call's input"
        );
        assert_eq!(
            shown(due),
            AgentChunk::ToolResult {
                call_id: "c-transfer".into(),
                tool_name: "transfer".into(),
                result: json!({ "Output": { "sent": 10 } }),
                model_output: None,
            }
        );
        assert!(run.record().waiting.is_empty());
        assert_eq!(
            results(run.record()),
            [
                ("c-transfer".to_owned(), json!({ "sent": 10 }), false),
                ("c-lookup".to_owned(), json!({ "balance": 100 }), false),
            ],
            "both results, in the order of the calls"
        );
        assert_eq!(next_step(&mut run).record().steps, 2);
    }

    #[test]
    fn a_decision_while_another_call_waits_keeps_the_run_suspended() {
        let mut run = machine(10, false);
        let mut step = next_step(&mut run);
        call(&mut step, "c-a", "transfer", json!({ "amount": 1 }));
        call(&mut step, "c-b", "transfer", json!({ "amount": 2 }));
        step.end_answer();
        step.on_outcome("c-a", &approval("c-a", json!({ "amount": 1 })));
        step.on_outcome("c-b", &approval("c-b", json!({ "amount": 2 })));
        run_end(&mut run);

        let decided = run.on_decision("c-a", &completed(json!({ "sent": 1 })), false, None);
        assert!(matches!(
            decided,
            Decided::CallsWait(Due::Show(show)) if matches!(show.slot, Slot::Result { .. })
        ));
        assert_eq!(run.record().settled["c-a"].result, json!({ "sent": 1 }));
        assert_eq!(run.record().waiting.keys().collect::<Vec<_>>(), ["c-b"]);
        assert_eq!(run_end(&mut run).reason, FinishReason::Suspended);

        let decided = run.on_decision("c-b", &declined("no"), false, None);
        assert!(matches!(
            decided,
            Decided::StepSettled(Due::Show(show)) if show.slot == Slot::Error
        ));
        assert_eq!(
            results(run.record()),
            [
                ("c-a".to_owned(), json!({ "sent": 1 }), false),
                ("c-b".to_owned(), json!("no"), true),
            ]
        );
    }

    #[test]
    fn refused_resume_data_keeps_the_call_waiting_and_the_stored_run_unchanged() {
        let mut run = machine(10, false);
        let mut step = next_step(&mut run);
        call(&mut step, "c-book", "book", json!({ "restaurant": "Roma" }));
        step.end_answer();
        step.on_outcome(
            "c-book",
            &suspended("c-book", json!({ "restaurant": "Roma" })),
        );
        run_end(&mut run);
        let before = run.record().clone();

        let refused = CallOutcome::Failed {
            error: ModelError::new(ErrorKind::InputValidation, "seats: 0 is less than 1"),
        };
        let decided = run.on_decision("c-book", &refused, true, None);
        let Decided::CallStillPending(due) = decided else {
            panic!("the refusal's error: {decided:?}");
        };
        let AgentChunk::ToolError { call_id, error, .. } = shown(due) else {
            panic!("the refusal's error, not another chunk");
        };
        assert_eq!(call_id, "c-book");
        assert_eq!(error["Error"], refused.to_model_value());
        assert_eq!(run.record(), &before);
        assert_eq!(run_end(&mut run).reason, FinishReason::Suspended);
    }

    #[test]
    fn a_call_suspended_again_by_its_resume_waits_with_the_new_payload() {
        let mut run = machine(10, false);
        let mut step = next_step(&mut run);
        call(&mut step, "c-book", "book", json!({ "restaurant": "Roma" }));
        step.end_answer();
        step.on_outcome(
            "c-book",
            &suspended("c-book", json!({ "restaurant": "Roma" })),
        );
        run_end(&mut run);

        let again = CallOutcome::Suspended {
            call_id: "c-book".into(),
            input: json!({ "restaurant": "Roma" }),
            payload: json!({ "question": "which day?" }),
            resume_schema: None,
        };
        let decided = run.on_decision("c-book", &again, false, None);
        assert!(matches!(
            decided,
            Decided::CallsWait(Due::Show(show)) if matches!(show.slot, Slot::Suspended { .. })
        ));
        let waiting = &run.record().waiting["c-book"];
        assert_eq!(waiting.payload, Some(json!({ "question": "which day?" })));
        assert_eq!(waiting.resume_schema, None);
    }

    #[test]
    fn a_decision_on_a_call_that_no_longer_waits_changes_nothing() {
        let mut run = waiting_on_transfer();
        let before = run.record().clone();
        for call_id in ["c-lookup", "c-unknown"] {
            let decided = run.on_decision(call_id, &completed(json!(1)), false, None);
            assert_eq!(decided, Decided::NotWaiting);
        }
        assert_eq!(run.record(), &before);
    }

    #[test]
    fn a_suspension_without_auto_resume_ends_the_run_suspended_after_the_other_calls_settle() {
        let mut run = machine(10, false);
        let mut step = next_step(&mut run);
        call(&mut step, "c-book", "book", json!({ "restaurant": "Roma" }));
        call(&mut step, "c-lookup", "lookup", json!({}));
        step.on_finish(ModelFinish::ToolCalls);
        step.end_answer();
        let suspends = all_shown(step.on_outcome(
            "c-book",
            &suspended("c-book", json!({ "restaurant": "Roma" })),
        ));
        assert_eq!(
            suspends,
            [AgentChunk::ToolCallSuspended {
                call_id: "c-book".into(),
                tool_name: "book".into(),
                payload: json!({ "Suspend": { "question": "how many seats?" } }),
                args: json!({ "restaurant": "Roma" }),
                resume_schema: Some(json!({ "type": "object" })),
            }],
            "the step goes on while c-lookup runs"
        );
        let last = all_shown(step.on_outcome("c-lookup", &completed(json!(1))));
        assert_eq!(last.last(), Some(&step_finish(1, ModelFinish::ToolCalls)));
        let end = run_end(&mut run);
        assert_eq!((end.reason, end.finished), (FinishReason::Suspended, false));
        assert_eq!(
            run.record().waiting["c-book"].waiting_for,
            WaitingFor::ResumeData
        );

        let reply = run.on_reply("run-1", "4 people".into());
        assert!(
            matches!(&reply, Err(AgentError::NotWaiting { expected: "resume data", waiting, .. }) if waiting == &[("c-book".to_owned(), "resume data")]),
            "{reply:?}"
        );
    }

    #[test]
    fn a_reply_gets_past_no_approval() {
        let mut run = waiting_on_transfer();
        let before = run.record().clone();
        let reply = run.on_reply("run-1", "yes, do it".into());
        assert!(
            matches!(&reply, Err(AgentError::ApprovalPending { call_ids, .. }) if call_ids == &["c-transfer"]),
            "{reply:?}"
        );
        assert_eq!(run.record(), &before);
    }

    /// A run whose `book` call c1 is suspended, with auto-resume.
    fn suspended_booking() -> RunMachine {
        let mut run = machine(10, true);
        let mut step = next_step(&mut run);
        call(&mut step, "c1", "book", json!({ "restaurant": "Roma" }));
        step.end_answer();
        step.on_outcome("c1", &suspended("c1", json!({ "restaurant": "Roma" })));
        run_end(&mut run);
        run
    }

    #[test]
    fn a_reply_with_auto_resume_answers_the_suspension_and_keeps_it_resumable() {
        let mut run = suspended_booking();
        run.on_reply("run-1", "4 people".into()).unwrap();
        let record = run.record();
        assert!(record.waiting.is_empty());
        assert_eq!(record.suspensions["c1"].tool_name, "book");
        assert_eq!(
            results(record),
            [(
                "c1".to_owned(),
                json!({ "status": "suspended", "waitingFor": "resume data", "payload": { "question": "how many seats?" } }),
                false
            )]
        );
        assert_eq!(record.messages.last(), Some(&Message::user("4 people")));
        assert_eq!(
            next_step(&mut run).record().steps,
            1,
            "a reply starts counting steps anew"
        );
    }

    #[test]
    fn a_call_naming_a_suspension_resumes_it_and_its_result_is_the_calls() {
        let mut run = suspended_booking();
        run.on_reply("run-1", "4 people".into()).unwrap();
        let mut step = next_step(&mut run);
        let args = json!({ "restaurant": "Roma", "suspendedToolCallId": "c1", "resumeData": { "seats": 4 } });
        let (start, due) = step.on_call_input(request("c2", "book", args.clone()), args.clone());
        assert_eq!(
            start,
            CallStart::Resume {
                suspended: "c1".into(),
                data: json!({ "seats": 4 }),
            }
        );
        assert_eq!(
            shown(due),
            AgentChunk::ToolCall {
                call_id: "c2".into(),
                tool_name: "book".into(),
                args: json!({ "Input": { "restaurant": "Roma" } }),
            },
            "the chunk shows the input the tool reads"
        );
        step.end_answer();
        let booked = json!({ "booked": 4 });
        let due = step.on_outcome("c2", &completed(booked.clone()));
        assert_eq!(
            due[0],
            Due::Show(Show {
                call_id: "c2".into(),
                tool_name: "book".into(),
                value: booked.clone(),
                known: OwnedCallValues {
                    input: Some(json!({ "restaurant": "Roma" })),
                    suspend_payload: Some(json!({ "question": "how many seats?" })),
                    resume_data: Some(json!({ "seats": 4 })),
                    ..OwnedCallValues::default()
                },
                slot: Slot::Result { model_output: None },
            }),
            "shown with what the resumed suspension gave"
        );
        let chunks = all_shown(due);
        assert!(matches!(&chunks[0], AgentChunk::ToolResult { call_id, .. } if call_id == "c2"));
        assert!(
            step.record().suspensions.is_empty(),
            "the suspension settled"
        );
        assert!(
            next_step(&mut run)
                .record()
                .messages
                .contains(&Message::Assistant {
                    text: String::new(),
                    tool_calls: vec![request("c2", "book", args)],
                })
        );
        assert_eq!(
            results(run.record()).last(),
            Some(&("c2".to_owned(), booked, false))
        );
    }

    #[test]
    fn a_call_naming_a_suspension_it_cannot_resume_is_refused_and_without_auto_resume_just_runs() {
        let mut run = suspended_booking();
        run.on_reply("run-1", "4 people".into()).unwrap();
        let mut step = next_step(&mut run);
        let other_tool = call(
            &mut step,
            "c2",
            "lookup",
            json!({ "suspendedToolCallId": "c1" }),
        );
        let unknown = call(
            &mut step,
            "c3",
            "book",
            json!({ "suspendedToolCallId": "c9" }),
        );
        for (start, message) in [
            (
                other_tool,
                "Call c1 is not a suspended call of tool lookup in this run: it was not resumed.",
            ),
            (
                unknown,
                "No suspended call c9 waits in this run: nothing was resumed.",
            ),
        ] {
            let CallStart::Refuse(CallOutcome::Failed { error }) = start else {
                panic!("a refusal: {start:?}");
            };
            assert_eq!(
                (error.kind(), error.message()),
                (ErrorKind::InputValidation, message)
            );
        }

        let mut run = machine(10, false);
        let mut step = next_step(&mut run);
        let start = call(
            &mut step,
            "c1",
            "book",
            json!({ "restaurant": "Roma", "suspendedToolCallId": "c0", "resumeData": null }),
        );
        assert_eq!(start, CallStart::Run(json!({ "restaurant": "Roma" })));
    }

    #[test]
    fn a_call_cut_off_never_runs_and_the_model_reads_why() {
        let mut run = machine(10, false);
        let mut step = next_step(&mut run);
        let message = "Tool call c1 to transfer was cut off (the stream ended); it did not run.";
        let chunk = step.on_call_cut_off(
            "c1".into(),
            "transfer".into(),
            "{\"amou".into(),
            message.into(),
        );
        assert_eq!(
            chunk,
            AgentChunk::ToolError {
                call_id: "c1".into(),
                tool_name: "transfer".into(),
                error: json!(message),
            },
            "the message as the model reads it"
        );
        step.on_finish(ModelFinish::Length);
        assert_eq!(
            step.end_answer(),
            [step_finish(1, ModelFinish::Length)],
            "nothing runs: the step ends with the answer"
        );
        let next = next_step(&mut run);
        assert_eq!(
            next.record().messages[1..],
            [
                Message::Assistant {
                    text: String::new(),
                    tool_calls: vec![request("c1", "transfer", json!("{\"amou"))],
                },
                Message::ToolResult {
                    call_id: "c1".into(),
                    tool_name: "transfer".into(),
                    result: json!(message),
                    model_output: None,
                    is_error: true,
                },
            ]
        );
    }

    #[test]
    fn max_steps_ends_the_run_with_tool_calls_and_the_last_results_kept() {
        let mut run = machine(2, false);
        for n in 1..=2 {
            let mut step = next_step(&mut run);
            call(&mut step, &format!("c{n}"), "lookup", json!({}));
            step.on_finish(ModelFinish::ToolCalls);
            step.end_answer();
            step.on_outcome(&format!("c{n}"), &completed(json!(n)));
        }
        let end = run_end(&mut run);
        assert_eq!((end.reason, end.finished), (FinishReason::ToolCalls, true));
        assert_eq!(run.record().steps, 2);
        assert_eq!(results(run.record()).len(), 2, "the last step is closed");
        assert_eq!(
            run_end(&mut run).reason,
            FinishReason::ToolCalls,
            "it stays ended"
        );
    }

    #[test]
    fn a_model_failure_ends_the_run_with_an_error_once_the_running_calls_settle() {
        let mut run = machine(10, false);
        let mut step = next_step(&mut run);
        call(&mut step, "c1", "lookup", json!({}));
        assert_eq!(
            step.on_model_error("provider down".into()),
            AgentChunk::Error {
                message: "provider down".into()
            }
        );
        assert_eq!(step.end_answer(), []);
        let last = all_shown(step.on_outcome("c1", &completed(json!(1))));
        assert_eq!(last.last(), Some(&step_finish(1, ModelFinish::Stop)));
        let end = run_end(&mut run);
        assert_eq!((end.reason, end.finished), (FinishReason::Error, true));
        assert!(
            run.record().settled.contains_key("c1"),
            "a failed step is not closed: a reply closes it"
        );
    }

    #[test]
    fn the_same_outcome_reported_twice_is_reported_once() {
        let mut run = machine(10, false);
        let mut step = next_step(&mut run);
        call(&mut step, "c1", "lookup", json!({}));
        call(&mut step, "c2", "lookup", json!({}));
        step.end_answer();
        assert_eq!(step.on_outcome("c1", &completed(json!(1))).len(), 1);
        assert_eq!(step.on_outcome("c1", &completed(json!(2))), []);
        assert_eq!(step.record().settled["c1"].result, json!(1));
        assert_eq!(step.on_outcome("c2", &completed(json!(2))).len(), 2);
        assert_eq!(
            step.on_outcome("c2", &completed(json!(2))),
            [],
            "no second step-finish"
        );
    }

    fn started(task_id: &str) -> CallOutcome {
        CallOutcome::BackgroundStarted {
            task_id: task_id.into(),
        }
    }

    /// Step 1 of a run that calls `report`, which starts background task
    /// `task-1`; the step goes on to step 2.
    fn run_with_a_task(max_steps: usize) -> RunMachine {
        let mut run = machine(max_steps, false);
        let mut step = next_step(&mut run);
        call(&mut step, "c1", "report", json!({}));
        step.end_answer();
        assert_eq!(
            all_shown(step.on_outcome("c1", &started("task-1"))),
            [
                AgentChunk::BackgroundTaskStarted {
                    call_id: "c1".into(),
                    tool_name: "report".into(),
                    task_id: "task-1".into(),
                },
                step_finish(1, ModelFinish::Stop),
            ]
        );
        run
    }

    fn answer(step: &mut Step<'_>, text: &str) {
        step.on_text(text.into());
        step.on_finish(ModelFinish::Stop);
        step.end_answer();
    }

    fn user_texts(record: &RunRecord) -> Vec<String> {
        record
            .messages
            .iter()
            .filter_map(|m| match m {
                Message::User { text } => Some(text.clone()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn a_background_tasks_result_enters_the_conversation_before_the_next_step() {
        let mut run = run_with_a_task(10);
        let mut step = next_step(&mut run);
        // The model read that the task started, as the call's result.
        let (_, started_text, is_error) = results(step.record()).pop().unwrap();
        assert!(
            started_text
                .as_str()
                .unwrap()
                .starts_with("Background task started. Task ID: task-1."),
            "{started_text}"
        );
        assert!(!is_error);
        assert_eq!(
            step.record().awaited_tasks(),
            [crate::record::AwaitedTask {
                call_id: "c1".into(),
                tool_name: "report".into(),
                task_id: "task-1".into(),
                settled: false,
            }]
        );
        // It settles while step 2 runs: the call's result is reported once.
        let done = completed(json!({ "pages": 12 }));
        let due = step.on_task_settled("c1", &done);
        assert!(
            matches!(&due, Some(Due::Show(show)) if show.known.input == Some(json!({}))),
            "shown with the call's input: {due:?}"
        );
        assert_eq!(
            due.map(shown),
            Some(AgentChunk::ToolResult {
                call_id: "c1".into(),
                tool_name: "report".into(),
                result: json!({ "Output": { "pages": 12 } }),
                model_output: None,
            })
        );
        assert_eq!(step.on_task_settled("c1", &done), None);
        assert_eq!(
            step.on_task_settled("c9", &done),
            None,
            "not a task of the run"
        );
        answer(&mut step, "Working on it.");
        // Step 3 reads the result; nothing is awaited any more.
        let step = next_step(&mut run);
        assert_eq!(step.record().steps, 3);
        assert_eq!(
            user_texts(step.record()).last().unwrap(),
            r#"Background task task-1 of tool report (call c1) completed. Result: {"pages":12}"#
        );
        assert!(step.record().tasks.is_empty());
    }

    #[test]
    fn the_model_stopping_while_a_task_runs_waits_once_then_ends_awaiting_it() {
        let mut run = run_with_a_task(10);
        let mut step = next_step(&mut run);
        answer(&mut step, "Started it.");
        assert_eq!(wait_for_tasks(&mut run), WAIT);
        let end = run_end(&mut run);
        assert_eq!(
            (end.reason, end.finished),
            (FinishReason::BackgroundTasks, false),
            "kept: a continuation goes on with it"
        );
        assert_eq!(run.record().tasks.len(), 1);

        // Continued: nothing settled yet, so it waits; a failure settles it.
        let mut run = RunMachine::new(run.record().clone(), run.settings);
        run.on_continue("run-1").unwrap();
        assert_eq!(wait_for_tasks(&mut run), WAIT);
        let failed = CallOutcome::Failed {
            error: ModelError::new(ErrorKind::Execution, "printer on fire"),
        };
        let chunk = shown(run.on_task_settled("c1", &failed).unwrap());
        assert!(
            matches!(chunk, AgentChunk::ToolError { ref call_id, .. } if call_id == "c1"),
            "{chunk:?}"
        );
        let step = next_step(&mut run);
        assert_eq!(
            step.record().steps,
            1,
            "steps count again from a continuation"
        );
        let last = user_texts(step.record()).pop().unwrap();
        assert!(
            last.starts_with("Background task task-1 of tool report (call c1) failed. Error: "),
            "{last}"
        );
    }

    #[test]
    fn a_task_that_settled_before_the_model_stopped_is_taken_without_waiting() {
        let mut run = run_with_a_task(10);
        let mut step = next_step(&mut run);
        step.on_task_settled("c1", &completed(json!("ready")));
        answer(&mut step, "Started it.");
        let step = next_step(&mut run);
        assert!(
            user_texts(step.record())
                .last()
                .unwrap()
                .ends_with("Result: ready")
        );
    }

    #[test]
    fn the_model_reads_a_tasks_model_output_as_text() {
        let mut run = run_with_a_task(10);
        let mut step = next_step(&mut run);
        let chart = CallOutcome::Completed {
            output: json!({ "rows": 3 }),
            model_output: Some(ModelOutput::Content(vec![
                ContentPart::text("Three rows."),
                ContentPart::image_url("https://example.com/chart.png"),
            ])),
            state: None,
        };
        step.on_task_settled("c1", &chart);
        answer(&mut step, "Started it.");
        let step = next_step(&mut run);
        assert_eq!(
            user_texts(step.record()).last().unwrap(),
            "Background task task-1 of tool report (call c1) completed. Result: Three rows.\n[a image-url part, not given with a background task's result]"
        );
    }

    #[test]
    fn a_run_at_max_steps_or_waiting_for_a_decision_keeps_awaiting_its_tasks() {
        let mut run = run_with_a_task(1);
        let end = run_end(&mut run);
        assert_eq!((end.reason, end.finished), (FinishReason::ToolCalls, false));

        let mut run = machine(10, false);
        let mut step = next_step(&mut run);
        call(&mut step, "c1", "report", json!({}));
        call(&mut step, "c2", "transfer", json!({ "amount": 5 }));
        step.end_answer();
        step.on_outcome("c1", &started("task-1"));
        step.on_outcome("c2", &approval("c2", json!({ "amount": 5 })));
        let end = run_end(&mut run);
        assert_eq!((end.reason, end.finished), (FinishReason::Suspended, false));
        let refused = run.on_continue("run-1").unwrap_err();
        assert_eq!(
            refused.to_string(),
            r#"run "run-1" cannot continue for background tasks: calls wait for a decision; waiting: c2 (approval)"#
        );
        let idle = machine(10, false).on_continue("run-2").unwrap_err();
        assert_eq!(
            idle.to_string(),
            r#"run "run-2" cannot continue for background tasks: it awaits none; no call waits in it"#
        );
    }

    #[test]
    fn an_approved_background_call_starts_a_task_the_run_awaits() {
        let mut run = machine(10, false);
        let mut step = next_step(&mut run);
        call(&mut step, "c1", "report", json!({}));
        step.end_answer();
        step.on_outcome("c1", &approval("c1", json!({})));
        assert_eq!(run_end(&mut run).reason, FinishReason::Suspended);
        let mut run = RunMachine::new(run.record().clone(), run.settings);
        assert_eq!(
            run.on_decision("c1", &started("task-1"), false, None),
            Decided::StepSettled(Due::Chunk(AgentChunk::BackgroundTaskStarted {
                call_id: "c1".into(),
                tool_name: "report".into(),
                task_id: "task-1".into(),
            }))
        );
        assert_eq!(run.record().awaited_tasks()[0].task_id, "task-1");
        assert_eq!(
            run.record().tasks["c1"].input,
            Some(json!({})),
            "shown with"
        );
        let mut step = next_step(&mut run);
        answer(&mut step, "Started it.");
        assert_eq!(wait_for_tasks(&mut run), WAIT);
    }
}
