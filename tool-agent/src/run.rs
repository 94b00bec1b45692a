//! The driver of a run: the I/O around the [`RunMachine`]. It streams the
//! model's answer, turns its tool-call events into runtime calls, runs
//! them as tasks, sends the chunks the machine says are due, and loads and
//! saves the run through `Runtime::runs`; the machine decides the rest.

use std::collections::{BTreeMap, HashSet};
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt as _;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio::task::{JoinHandle, JoinSet};
use tool_core::decode::ToolCallEvent;
use tool_core::provider::Export;
use tool_core::{AgentContext, ErrorKind, Excerpt, Extensions, ModelError, RequestContext};
use tool_runtime::{
    Assembled, CallHead, CallOutcome, CallState, CallWatch, CompleteCall, Decision, InputStream,
    Notice, Payload, Runtime, RuntimeError, StoredCall, ToolCallAssembler,
};

use crate::awaiting::ThreadIndex;
use crate::chunk::{AgentChunk, Due, FinishReason};
use crate::error::AgentError;
use crate::machine::{CallStart, Decided, Next, RunMachine, RunSettings, Step};
use crate::model::{Message, Model, ModelEvent, ModelRequest, ToolCallRequest};
use crate::record::{RunRecord, Thread};

/// How often a decision re-reads and saves a run another instance changed meanwhile.
const SAVE_ATTEMPTS: usize = 8;

/// What an agent runs with, and the driver of its runs.
pub(crate) struct Runner {
    pub(crate) id: String,
    pub(crate) instructions: String,
    pub(crate) model: Arc<dyn Model>,
    pub(crate) runtime: Runtime,
    pub(crate) settings: RunSettings,
    pub(crate) max_tokens: Option<u32>,
    /// The tools' exports for the model's provider, by name.
    pub(crate) exports: Arc<BTreeMap<String, Export>>,
    /// What every call the agent makes carries for its tool.
    pub(crate) extensions: Extensions,
    /// Shapes each call's envelope last (`AgentBuilder::on_call`).
    pub(crate) on_call: Option<CallShape>,
}

/// A per-call hook on the envelope of the calls an agent makes.
pub(crate) type CallShape = Arc<dyn Fn(CallHead) -> CallHead + Send + Sync>;

impl Runner {
    /// The machine of a run with `record`.
    pub(crate) fn machine(&self, record: RunRecord) -> RunMachine {
        RunMachine::new(record, self.settings)
    }

    /// Runs steps until the model stops, a call waits, or `max_steps`; then
    /// saves the run and ends the stream. The background tasks the run
    /// awaits are watched meanwhile: their results enter the conversation
    /// before the next step.
    pub(crate) async fn run_steps(
        &self,
        run_id: &str,
        mut run: RunMachine,
        mut revision: Option<u64>,
        chunks: &Chunks,
    ) -> Result<(), Gone> {
        let mut reports = Reports::new();
        self.look_up_tasks(&mut run, &mut reports, chunks).await?;
        let end = loop {
            match run.next_action() {
                Next::Step(step) => self.step(run_id, step, &mut reports, chunks).await?,
                Next::AwaitTasks(wait) => {
                    // Saved first: should this instance die while it
                    // waits, the run continues on another.
                    match self.save(run_id, revision, false, run.record()).await {
                        Ok(saved) => revision = Some(saved),
                        Err(error) => return chunks.fail(run_id, error.to_string()).await,
                    }
                    self.list_awaiting(run_id, run.record()).await;
                    self.await_tasks(&mut run, wait, &mut reports, chunks)
                        .await?;
                }
                Next::End(end) => break end,
            }
        };
        if let Err(error) = self
            .save(run_id, revision, end.finished, run.record())
            .await
        {
            return chunks.fail(run_id, error.to_string()).await;
        }
        self.list_awaiting(run_id, run.record()).await;
        chunks.finish(run_id, end.reason).await
    }

    /// Runs a new run of a thread, `record`: it takes over the background
    /// tasks the thread's earlier runs await (the results that settled
    /// meanwhile enter its conversation before its first step; it awaits
    /// the others).
    pub(crate) async fn start_run(
        &self,
        run_id: &str,
        mut record: RunRecord,
        chunks: &Chunks,
    ) -> Result<(), Gone> {
        let revision = match self.take_over_tasks(run_id, &mut record).await {
            Ok(revision) => revision,
            Err(error) => return chunks.fail(run_id, error.to_string()).await,
        };
        self.run_steps(run_id, self.machine(record), revision, chunks)
            .await
    }

    /// Moves the background tasks the earlier runs of `record`'s thread
    /// await into it, and saves it when there were some (the revision
    /// saved), before its first step.
    async fn take_over_tasks(
        &self,
        run_id: &str,
        record: &mut RunRecord,
    ) -> Result<Option<u64>, AgentError> {
        let index = ThreadIndex::new(self.runtime.runs(), &self.id, &record.thread);
        let mut taken = Vec::new();
        for earlier in index.awaiting().await? {
            if self.take_tasks(&earlier, record).await? {
                taken.push(earlier);
            }
        }
        if taken.is_empty() {
            return Ok(None);
        }
        index.remove(&taken).await?;
        self.save(run_id, None, false, record).await.map(Some)
    }

    /// Moves the background tasks run `earlier` awaits into `record` (the
    /// earlier run is saved without them first: of two streams on the
    /// thread, one takes them). True when `earlier` awaits no task now.
    async fn take_tasks(&self, earlier: &str, record: &mut RunRecord) -> Result<bool, AgentError> {
        for _ in 0..SAVE_ATTEMPTS {
            let (mut old, revision) = match self.load(earlier).await {
                Ok(loaded) => loaded,
                Err(AgentError::UnknownRun { .. }) => return Ok(true),
                Err(error) => return Err(error),
            };
            if old.tasks.is_empty() {
                return Ok(true);
            }
            let mut adopted = record.clone();
            adopted.adopt_tasks(&mut old);
            let finished = old.waiting.is_empty();
            match self.save(earlier, Some(revision), finished, &old).await {
                Ok(_) => {
                    *record = adopted;
                    return Ok(true);
                }
                Err(AgentError::Conflict { .. }) => {}
                Err(error) => return Err(error),
            }
        }
        Ok(false)
    }

    /// Lists the run in its thread's index when it awaits background tasks,
    /// for the next stream on the thread. A failure is logged: the run is
    /// saved, and `continue_run` goes on with it.
    async fn list_awaiting(&self, run_id: &str, record: &RunRecord) {
        if record.tasks.is_empty() {
            return;
        }
        let index = ThreadIndex::new(self.runtime.runs(), &self.id, &record.thread);
        if let Err(error) = index.add(run_id).await {
            tracing::warn!(%error, run_id, "could not list the run among its thread's runs awaiting background tasks");
        }
    }

    /// One step: the model's answer streamed into `step`, its calls started
    /// as their arguments complete (they run concurrently), then their
    /// outcomes in the order of the calls; what the calls and the run's
    /// background tasks report meanwhile is sent as it comes.
    async fn step(
        &self,
        run_id: &str,
        mut step: Step<'_>,
        reports: &mut Reports,
        chunks: &Chunks,
    ) -> Result<(), Gone> {
        let mut answer = self.model.stream(self.request(step.record()));
        let mut assembler = self.assembler(run_id, step.record());
        // The model's words the calls assembled so far carry.
        let mut said = String::new();
        let mut tasks = Vec::new();
        loop {
            let event = tokio::select! {
                biased;
                Some(report) = reports.rx.recv() => {
                    self.on_step_report(&mut step, report, chunks).await?;
                    continue;
                }
                event = answer.next() => event,
            };
            let Some(event) = event else { break };
            match event {
                Ok(ModelEvent::TextDelta(delta)) => chunks.send(step.on_text(delta)).await?,
                Ok(ModelEvent::ToolCall(event)) => {
                    if matches!(event, ToolCallEvent::Start { .. }) && step.text() != said {
                        // A call the model makes after saying something
                        // carries its words (why it calls) as the
                        // conversation's last message: what a person
                        // deciding the call reads beside it.
                        said = step.text().to_owned();
                        let said = Message::Assistant {
                            text: said.clone(),
                            tool_calls: Vec::new(),
                        };
                        let mut messages = conversation(step.record());
                        messages.extend(serde_json::to_value(said).ok());
                        assembler = assembler.with_messages(messages);
                    }
                    if let Some(assembled) = assembler.apply(event) {
                        let started = (&mut tasks, &*reports);
                        self.on_assembled(run_id, &mut step, assembled, started, chunks)
                            .await?;
                    }
                }
                Ok(ModelEvent::Usage(usage)) => step.on_usage(usage),
                Ok(ModelEvent::Finish(reason)) => step.on_finish(reason),
                Err(error) => {
                    chunks.send(step.on_model_error(error.to_string())).await?;
                    break;
                }
            }
        }
        // Calls the answer left open never completed their arguments.
        drop(assembler);
        chunks.send_all(step.end_answer()).await?;
        for task in tasks {
            let (call_id, tool_name) = (task.call_id.clone(), task.tool_name.clone());
            let mut handle = task.handle;
            let joined = loop {
                tokio::select! {
                    biased;
                    Some(report) = reports.rx.recv() => {
                        self.on_step_report(&mut step, report, chunks).await?;
                    }
                    joined = &mut handle => break joined,
                }
            };
            // What the call reported before it ended comes before its result.
            while let Ok(report) = reports.rx.try_recv() {
                self.on_step_report(&mut step, report, chunks).await?;
            }
            let (outcome, mut watch) = joined.unwrap_or_else(|error| {
                let message = format!("Tool {} did not finish: {error}", Excerpt::of(&tool_name));
                let error = ModelError::new(ErrorKind::Execution, message);
                (CallOutcome::Failed { error }, None)
            });
            // A background tool's notices wait in its watch: they come after
            // its task's `BackgroundTaskStarted`, or before its result.
            let started = matches!(outcome, CallOutcome::BackgroundStarted { .. });
            if let Some(watch) = watch.as_mut().filter(|_| !started) {
                while let Some(notice) = watch.try_next() {
                    if let Some(chunk) = notice_chunk(&call_id, &tool_name, notice) {
                        chunks.send(chunk).await?;
                    }
                }
            }
            self.send_due(step.on_outcome(&call_id, &outcome), chunks)
                .await?;
            if let Some(task) = step.record().tasks.get(&call_id) {
                let task_id = task.task_id.clone();
                reports.await_task(&self.runtime, call_id, tool_name, &task_id, watch);
            }
        }
        Ok(())
    }

    /// Sends the chunk of what a call or a background task reported while
    /// a step runs.
    async fn on_step_report(
        &self,
        step: &mut Step<'_>,
        report: Report,
        chunks: &Chunks,
    ) -> Result<(), Gone> {
        let due = match report {
            Report::Notice(chunk) => Some(Due::Chunk(chunk)),
            Report::Settled { call_id, outcome } => step.on_task_settled(&call_id, &outcome),
        };
        self.send_due(due, chunks).await
    }

    /// The model stopped while background tasks run: waits up to `wait`
    /// for one to settle, sending what they report, then takes every
    /// result already there.
    async fn await_tasks(
        &self,
        run: &mut RunMachine,
        wait: Duration,
        reports: &mut Reports,
        chunks: &Chunks,
    ) -> Result<(), Gone> {
        let deadline = tokio::time::Instant::now() + wait;
        let mut settled = false;
        while !settled {
            let report = tokio::select! {
                Some(report) = reports.rx.recv() => report,
                () = tokio::time::sleep_until(deadline) => break,
            };
            settled = self.on_report(run, report, chunks).await?;
        }
        while let Ok(report) = reports.rx.try_recv() {
            self.on_report(run, report, chunks).await?;
        }
        Ok(())
    }

    /// Sends the chunk of what a call or a background task reported
    /// between steps; true when a task settled.
    async fn on_report(
        &self,
        run: &mut RunMachine,
        report: Report,
        chunks: &Chunks,
    ) -> Result<bool, Gone> {
        match report {
            Report::Notice(chunk) => chunks.send(chunk).await.map(|()| false),
            Report::Settled { call_id, outcome } => match run.on_task_settled(&call_id, &outcome) {
                Some(due) => self.send_due([due], chunks).await.map(|()| true),
                None => Ok(false),
            },
        }
    }

    /// The background tasks the run awaits: those that settled meanwhile
    /// (on any instance: the store says) are given to the run now, the
    /// others are watched.
    async fn look_up_tasks(
        &self,
        run: &mut RunMachine,
        reports: &mut Reports,
        chunks: &Chunks,
    ) -> Result<(), Gone> {
        let awaited: Vec<(String, String, String)> = run
            .record()
            .tasks
            .iter()
            .filter(|(_, task)| task.settled.is_none())
            .map(|(id, task)| (id.clone(), task.tool_name.clone(), task.task_id.clone()))
            .collect();
        for (call_id, tool_name, task_id) in awaited {
            let outcome = match self.runtime.inbox().stored(&task_id).await {
                Ok(Some(StoredCall {
                    state: CallState::Settled { outcome, .. },
                    ..
                })) => CallOutcome::from(outcome),
                // Purged: settled longer ago than the store keeps outcomes.
                Ok(None) => CallOutcome::Failed {
                    error: ModelError::new(
                        ErrorKind::Execution,
                        format!("The outcome of background task {task_id} is no longer stored."),
                    ),
                },
                // Running, or not readable now: watched (`wait` reads the store again).
                _ => {
                    reports.await_task(&self.runtime, call_id, tool_name, &task_id, None);
                    continue;
                }
            };
            self.send_due(run.on_task_settled(&call_id, &outcome), chunks)
                .await?;
        }
        Ok(())
    }

    /// Feeds an assembled tool-call event to the step: chunks for the
    /// arguments as they stream, and a complete call started as the
    /// machine says.
    async fn on_assembled(
        &self,
        run_id: &str,
        step: &mut Step<'_>,
        assembled: Assembled,
        (tasks, reports): (&mut Vec<Task>, &Reports),
        chunks: &Chunks,
    ) -> Result<(), Gone> {
        match assembled {
            Assembled::Started { call_id, tool_id } => {
                chunks
                    .send(AgentChunk::ToolCallInputStart {
                        call_id,
                        tool_name: tool_id,
                    })
                    .await
            }
            Assembled::Delta {
                call_id,
                tool_id: tool_name,
                delta,
            } => {
                let tool = self.runtime.tool(&tool_name);
                match Payload::delta_display(tool, &call_id, &tool_name, &delta) {
                    Some(delta) => {
                        chunks
                            .send(AgentChunk::ToolCallInputDelta { call_id, delta })
                            .await
                    }
                    None => Ok(()),
                }
            }
            Assembled::Complete(call) => {
                let CompleteCall {
                    call_id,
                    tool_id: tool_name,
                    arguments,
                    input,
                    stream,
                    ..
                } = *call;
                let request = ToolCallRequest {
                    call_id: call_id.clone(),
                    tool_name: tool_name.clone(),
                    arguments,
                };
                let (start, due) = step.on_call_input(request, input);
                let chunk = self.show(due).await;
                let thread = &step.record().thread;
                let task = self.start(run_id, thread, (call_id, tool_name), start, stream);
                tasks.push(reports.watching(&self.runtime, task));
                chunks.send(chunk).await
            }
            Assembled::CutOff {
                call_id,
                tool_id,
                partial_text,
                error,
                ..
            } => {
                let message = error.message().to_owned();
                let chunk = step.on_call_cut_off(call_id, tool_id, partial_text, message);
                chunks.send(chunk).await
            }
            // A later kind of event changes no call the step knows of.
            _ => Ok(()),
        }
    }

    /// A call started as the machine said: what runs it, and the id of
    /// the runtime's call whose notices are its own.
    fn start(
        &self,
        run_id: &str,
        thread: &Thread,
        (call_id, tool_name): (String, String),
        start: CallStart,
        stream: InputStream,
    ) -> Started {
        let (runtime_id, run): (String, CallFuture) = match start {
            CallStart::Run(input) => (
                runtime_call_id(run_id, &call_id),
                Box::pin(stream.finish_with(input)),
            ),
            CallStart::Resume { suspended, data } => {
                drop(stream);
                let runtime = self.runtime.clone();
                let id = runtime_call_id(run_id, &suspended);
                let extensions = self.decided_with(run_id, thread, Some(&tool_name));
                let decided = runtime.decide(&id, Decision::Resume(data), extensions);
                let run = Box::pin(async move {
                    decided.await.unwrap_or_else(|error| CallOutcome::Failed {
                        error: ModelError::new(ErrorKind::Execution, error.to_string()),
                    })
                });
                (id, run)
            }
            CallStart::Refuse(outcome) => {
                drop(stream);
                (
                    runtime_call_id(run_id, &call_id),
                    Box::pin(async move { outcome }),
                )
            }
        };
        Started {
            call_id,
            tool_name,
            runtime_id,
            run,
        }
    }

    /// Makes the decision through the runtime, records it in the run (again
    /// on a concurrent change), and goes on when no call waits.
    pub(crate) async fn continue_after(
        &self,
        run_id: &str,
        call_id: &str,
        decision: Decision,
        chunks: &Chunks,
    ) -> Result<(), Gone> {
        let stored_id = runtime_call_id(run_id, call_id);
        let (thread, tool_name) = match self.load(run_id).await {
            Ok((record, _)) => {
                let tool_name = record.waiting.get(call_id).map(|w| w.tool_name.clone());
                (record.thread, tool_name)
            }
            Err(error) => return chunks.fail(run_id, error.to_string()).await,
        };
        let extensions = self.decided_with(run_id, &thread, tool_name.as_deref());
        let resume_data = match &decision {
            Decision::Resume(data) => Some(data.clone()),
            _ => None,
        };
        let decided = self.runtime.decide(&stored_id, decision, extensions);
        let tool_name = tool_name.unwrap_or_default();
        let outcome = match self
            .watched(&stored_id, (call_id, &tool_name), decided, chunks)
            .await?
        {
            Ok(outcome) => outcome,
            // Decided through the runtime meanwhile (an approval inbox), and
            // running there: its outcome enters the run by a continuation.
            Err(error @ RuntimeError::Running { .. }) => {
                let message = format!(
                    "{error}; once it settled, Agent::continue_run({:?}) takes its outcome into the run",
                    Excerpt::of(run_id)
                );
                return chunks.fail(run_id, message).await;
            }
            Err(error) => return chunks.fail(run_id, error.to_string()).await,
        };
        // Invalid resume data leaves the call waiting as it was: the run
        // still waits. (A call that suspended, approved or resumed, waits
        // anew: the machine records its new wait.)
        let still_pending = !matches!(outcome, CallOutcome::Suspended { .. })
            && matches!(
                self.runtime.inbox().stored(&stored_id).await,
                Ok(Some(stored)) if stored.state.is_pending()
            );
        let decided = DecidedCall {
            call_id: call_id.to_owned(),
            outcome,
            still_pending,
            resume_data,
        };
        self.record_decided(run_id, &[decided], chunks).await
    }

    /// The calls of run `run_id` that wait in its record but were decided
    /// outside the agent (through the runtime, on any instance sharing the
    /// store): settled there, with their recorded outcomes.
    pub(crate) async fn decided_outside(
        &self,
        run_id: &str,
        record: &RunRecord,
    ) -> Result<Vec<DecidedCall>, AgentError> {
        let mut decided = Vec::new();
        for call_id in record.waiting.keys() {
            let stored = self
                .runtime
                .inbox()
                .stored(&runtime_call_id(run_id, call_id))
                .await?;
            if let Some(StoredCall {
                state: CallState::Settled { outcome, .. },
                resume_data,
                ..
            }) = stored
            {
                decided.push(DecidedCall {
                    call_id: call_id.clone(),
                    outcome: outcome.into(),
                    still_pending: false,
                    resume_data,
                });
            }
        }
        Ok(decided)
    }

    /// Records the outcomes of `decided` calls in run `run_id` (again on a
    /// concurrent change: the run's save is compare-and-set, so each enters
    /// the run once, whoever else records it), and goes on when no call of
    /// the step waits any more.
    pub(crate) async fn record_decided(
        &self,
        run_id: &str,
        decided: &[DecidedCall],
        chunks: &Chunks,
    ) -> Result<(), Gone> {
        for _ in 0..SAVE_ATTEMPTS {
            let (record, revision) = match self.load(run_id).await {
                Ok(loaded) => loaded,
                Err(error) => return chunks.fail(run_id, error.to_string()).await,
            };
            let mut run = self.machine(record);
            let (mut reported, mut goes_on, mut still_pending) = (Vec::new(), false, false);
            for call in decided {
                let applied = run.on_decision(
                    &call.call_id,
                    &call.outcome,
                    call.still_pending,
                    call.resume_data.as_ref(),
                );
                match applied {
                    // Recorded by another decision meanwhile.
                    Decided::NotWaiting => {}
                    Decided::CallStillPending(due) => {
                        reported.push(self.show(due).await);
                        still_pending = true;
                    }
                    Decided::CallsWait(due) => reported.push(self.show(due).await),
                    Decided::StepSettled(due) => {
                        reported.push(self.show(due).await);
                        goes_on = true;
                    }
                }
            }
            if reported.is_empty() {
                let ids: Vec<&str> = decided.iter().map(|c| c.call_id.as_str()).collect();
                let message = format!("call {ids:?} was decided by another decision");
                return chunks.fail(run_id, message).await;
            }
            if still_pending {
                for chunk in reported {
                    chunks.send(chunk).await?;
                }
                return chunks.finish(run_id, FinishReason::Suspended).await;
            }
            // Reported once the run has it: a save that lost to a concurrent
            // decision is made again, and its result is not reported twice.
            match self.save(run_id, Some(revision), false, run.record()).await {
                Ok(saved) => {
                    for chunk in reported {
                        chunks.send(chunk).await?;
                    }
                    if goes_on {
                        return self.run_steps(run_id, run, Some(saved), chunks).await;
                    }
                    return chunks.finish(run_id, FinishReason::Suspended).await;
                }
                Err(AgentError::Conflict { .. }) => continue,
                Err(error) => return chunks.fail(run_id, error.to_string()).await,
            }
        }
        let message = AgentError::Conflict {
            run_id: run_id.to_owned(),
        }
        .to_string();
        chunks.fail(run_id, message).await
    }

    /// Runs `work`, the decided call `runtime_id`, sending its progress and
    /// custom chunks as they come (a background tool's: those of its task,
    /// when this instance runs it, until it started).
    async fn watched<T>(
        &self,
        runtime_id: &str,
        (call_id, tool_name): (&str, &str),
        work: impl Future<Output = T>,
        chunks: &Chunks,
    ) -> Result<T, Gone> {
        let mut watch = self.runtime.watch(runtime_id);
        let mut work = std::pin::pin!(work);
        let output = loop {
            let notice = tokio::select! {
                biased;
                output = &mut work => break output,
                notice = watch.next() => notice,
            };
            if let Some(chunk) = notice_chunk(call_id, tool_name, notice) {
                chunks.send(chunk).await?;
            }
        };
        while let Some(notice) = watch.try_next() {
            if let Some(chunk) = notice_chunk(call_id, tool_name, notice) {
                chunks.send(chunk).await?;
            }
        }
        Ok(output)
    }

    /// The chunk `due` is: a call's payload is shown through its tool's
    /// display transform (which may be async).
    async fn show(&self, due: Due) -> AgentChunk {
        match due {
            Due::Chunk(chunk) => chunk,
            Due::Show(show) => {
                let tool = self.runtime.tool(&show.tool_name);
                let (call_id, tool_name) = (&show.call_id, &show.tool_name);
                let phase = show.phase();
                let known = show.known.values();
                let payload = Payload::of(tool, call_id, tool_name, phase, &show.value, known);
                let shown = payload.await.display;
                show.chunk(shown)
            }
        }
    }

    /// Sends `due` in order, each shown first (see [`show`](Self::show)).
    async fn send_due(
        &self,
        due: impl IntoIterator<Item = Due>,
        chunks: &Chunks,
    ) -> Result<(), Gone> {
        for due in due {
            chunks.send(self.show(due).await).await?;
        }
        Ok(())
    }

    /// A step's request: the instructions, the conversation, the tools.
    fn request(&self, record: &RunRecord) -> ModelRequest {
        ModelRequest {
            max_tokens: self.max_tokens,
            ..ModelRequest::new(
                self.instructions(record),
                record.messages.clone(),
                self.tool_definitions(),
            )
        }
    }

    /// The system instructions, with the run's pending suspensions when the
    /// agent auto-resumes (never its approvals: approval is a consent boundary).
    fn instructions(&self, record: &RunRecord) -> String {
        if !self.settings.auto_resume || record.suspensions.is_empty() {
            return self.instructions.clone();
        }
        let mut text = self.instructions.clone();
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
        self.exports
            .values()
            .map(|export| export.definition().clone())
            .collect()
    }

    /// What a call the agent decides (approves, resumes) runs with: the
    /// agent's extensions and its context. (A paused call keeps its request
    /// context in the store; extensions are never stored.)
    fn decided_with(&self, run_id: &str, thread: &Thread, tool_name: Option<&str>) -> Extensions {
        let mut extensions = self.extensions.clone();
        extensions.insert(self.context(run_id, thread, tool_name));
        extensions
    }

    /// What a tool the agent runs reads with `ToolContext::agent`.
    fn context(&self, run_id: &str, thread: &Thread, tool_name: Option<&str>) -> AgentContext {
        agent_context(&self.runtime, &self.id, run_id, thread, tool_name)
    }

    /// Turns the model's decoded tool-call events of one step into runtime
    /// calls: named after the run, run for this agent, their arguments
    /// restored through the exports the model was offered.
    fn assembler(&self, run_id: &str, record: &RunRecord) -> ToolCallAssembler {
        let messages = conversation(record);
        let (runtime, agent_id) = (self.runtime.clone(), self.id.clone());
        let (run_id, thread) = (run_id.to_owned(), record.thread.clone());
        let request_context = RequestContext::from(record.request_context.clone());
        let (extensions, on_call) = (self.extensions.clone(), self.on_call.clone());
        ToolCallAssembler::new(&self.runtime, self.model.provider())
            .with_messages(messages)
            .with_exports(Arc::clone(&self.exports))
            .with_head(move |mut head| {
                let agent =
                    agent_context(&runtime, &agent_id, &run_id, &thread, Some(&head.tool_id));
                head.call_id = runtime_call_id(&run_id, &head.call_id);
                head.extensions.extend(extensions.clone());
                let head = head
                    .with_request_context(request_context.clone())
                    .with_agent(agent);
                match &on_call {
                    Some(shape) => shape(head),
                    None => head,
                }
            })
    }

    /// The stored run `run_id` of this agent, and its revision.
    pub(crate) async fn load(&self, run_id: &str) -> Result<(RunRecord, u64), AgentError> {
        let stored =
            self.runtime
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
        if record.agent_id != self.id {
            return Err(AgentError::OtherAgent {
                run_id: run_id.to_owned(),
                owner: record.agent_id,
                agent: self.id.clone(),
            });
        }
        Ok((record, stored.revision))
    }

    /// Saves the run: creates it (`revision` none) or replaces the revision read.
    async fn save(
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
        self.runtime
            .runs()
            .save(run_id, revision, finished, value)
            .await?
            .ok_or_else(|| AgentError::Conflict {
                run_id: run_id.to_owned(),
            })
    }
}

/// What runs a call of a step to its outcome.
type CallFuture = Pin<Box<dyn Future<Output = CallOutcome> + Send>>;

/// A call of a step about to run.
struct Started {
    call_id: String,
    tool_name: String,
    /// The runtime's call whose notices are the call's.
    runtime_id: String,
    run: CallFuture,
}

/// A call of the step, running as a task of its own: its outcome, and the
/// watch of its notices (for its background task, if it started one).
struct Task {
    call_id: String,
    tool_name: String,
    handle: JoinHandle<(CallOutcome, Option<CallWatch>)>,
}

/// What the calls and background tasks of a stream report while they run.
enum Report {
    /// A chunk of a notice of a call (progress, a custom chunk).
    Notice(AgentChunk),
    /// A background task the run awaits settled.
    Settled {
        call_id: String,
        outcome: CallOutcome,
    },
}

/// The reports of a stream's calls and background tasks, and the tasks
/// that wait for the background tasks (stopped with the stream).
struct Reports {
    tx: mpsc::UnboundedSender<Report>,
    rx: mpsc::UnboundedReceiver<Report>,
    waiters: JoinSet<()>,
    /// The calls whose background tasks are waited for.
    awaited: HashSet<String>,
}

impl Reports {
    fn new() -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        Reports {
            tx,
            rx,
            waiters: JoinSet::new(),
            awaited: HashSet::new(),
        }
    }

    /// Runs the call `started` as a task of its own (the step's calls run
    /// concurrently), reporting its notices as they come; watched before it
    /// starts, so nothing it reports is missed. A background tool's call
    /// returns at once: its notices are left in the watch, for the chunks
    /// of its task.
    fn watching(&self, runtime: &Runtime, started: Started) -> Task {
        let mut watch = runtime.watch(&started.runtime_id);
        let background = runs_in_background(runtime, &started.tool_name);
        let (tx, call_id, tool_name) = (
            self.tx.clone(),
            started.call_id.clone(),
            started.tool_name.clone(),
        );
        let handle = tokio::spawn(async move {
            let outcome = if background {
                started.run.await
            } else {
                forward(started.run, &mut watch, &tx, &call_id, &tool_name).await
            };
            (outcome, Some(watch))
        });
        Task {
            call_id: started.call_id,
            tool_name: started.tool_name,
            handle,
        }
    }

    /// Waits for the background task `task_id` of the call `call_id` (once
    /// per call), reporting its notices (those of this instance: the one
    /// running it, or `watch`, the call's) and then its outcome. An
    /// outcome that cannot be read is not reported: the run keeps
    /// awaiting the task, and its next continuation reads it again.
    fn await_task(
        &mut self,
        runtime: &Runtime,
        call_id: String,
        tool_name: String,
        task_id: &str,
        watch: Option<CallWatch>,
    ) {
        if !self.awaited.insert(call_id.clone()) {
            return;
        }
        let mut watch = watch.unwrap_or_else(|| runtime.watch(task_id));
        let (tx, wait, task_id) = (self.tx.clone(), runtime.wait(task_id), task_id.to_owned());
        self.waiters.spawn(async move {
            match forward(wait, &mut watch, &tx, &call_id, &tool_name).await {
                Ok(outcome) => {
                    let _ = tx.send(Report::Settled { call_id, outcome });
                }
                Err(error) => {
                    tracing::warn!(%error, task_id, "could not read the outcome of a background task; the run still awaits it");
                }
            }
        });
    }
}

/// Runs `work` while reporting the notices of `watch` as chunks of the
/// call `call_id`; those sent before it ended are reported before it returns.
async fn forward<T>(
    work: impl Future<Output = T>,
    watch: &mut CallWatch,
    tx: &mpsc::UnboundedSender<Report>,
    call_id: &str,
    tool_name: &str,
) -> T {
    let report = |notice| {
        if let Some(chunk) = notice_chunk(call_id, tool_name, notice) {
            let _ = tx.send(Report::Notice(chunk));
        }
    };
    let mut work = std::pin::pin!(work);
    let output = loop {
        tokio::select! {
            biased;
            output = &mut work => break output,
            notice = watch.next() => report(notice),
        }
    };
    while let Some(notice) = watch.try_next() {
        report(notice);
    }
    output
}

/// The chunk of a call's notice: its progress and custom chunks (its logs
/// are for the runtime's events and MCP clients).
fn notice_chunk(call_id: &str, tool_name: &str, notice: Notice) -> Option<AgentChunk> {
    let (call_id, tool_name) = (call_id.to_owned(), tool_name.to_owned());
    match notice {
        Notice::Progress(progress) => Some(AgentChunk::ToolProgress {
            call_id,
            tool_name,
            progress,
        }),
        Notice::Custom(data) => Some(AgentChunk::Custom {
            call_id,
            tool_name,
            data,
        }),
        _ => None,
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

    async fn send_all(&self, chunks: Vec<AgentChunk>) -> Result<(), Gone> {
        for chunk in chunks {
            self.send(chunk).await?;
        }
        Ok(())
    }

    /// Ends the stream.
    async fn finish(&self, run_id: &str, reason: FinishReason) -> Result<(), Gone> {
        self.send(AgentChunk::Finish {
            run_id: run_id.to_owned(),
            reason,
        })
        .await
    }

    /// Ends the stream with an error.
    async fn fail(&self, run_id: &str, message: String) -> Result<(), Gone> {
        self.send(AgentChunk::Error { message }).await?;
        self.finish(run_id, FinishReason::Error).await
    }
}

/// The stream's reader went away.
pub(crate) struct Gone;

/// A decision's outcome on a waiting call of a run, to record in the run.
pub(crate) struct DecidedCall {
    /// The call, as the model named it.
    call_id: String,
    outcome: CallOutcome,
    /// The runtime keeps the call waiting (refused resume data).
    still_pending: bool,
    /// The data it was resumed with, if it was.
    resume_data: Option<Value>,
}

/// The id of a run's call in the runtime (and its store): the provider's
/// call id within the run, so that calls of two runs never collide, even
/// when a provider reuses ids.
/// What a tool an agent runs reads with `ToolContext::agent` (with
/// The run's conversation as a call's head keeps it (JSON messages).
fn conversation(record: &RunRecord) -> Vec<Value> {
    record
        .messages
        .iter()
        .filter_map(|m| serde_json::to_value(m).ok())
        .collect()
}

/// `background` set for a tool that runs as a background task).
fn agent_context(
    runtime: &Runtime,
    agent_id: &str,
    run_id: &str,
    thread: &Thread,
    tool_name: Option<&str>,
) -> AgentContext {
    let background = tool_name.is_some_and(|name| runs_in_background(runtime, name));
    let mut context = AgentContext::new(agent_id, run_id)
        .with_thread(thread.thread_id.as_str())
        .with_background(background);
    if let Some(resource) = &thread.resource_id {
        context = context.with_resource(resource.as_str());
    }
    context
}

/// Whether the calls of `tool_name` run as background tasks.
fn runs_in_background(runtime: &Runtime, tool_name: &str) -> bool {
    runtime
        .tool(tool_name)
        .and_then(|tool| tool.definition().background.as_ref())
        .is_some_and(|b| b.enabled)
}

fn runtime_call_id(run_id: &str, call_id: &str) -> String {
    format!("{run_id}/{call_id}")
}
