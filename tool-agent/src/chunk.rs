//! What an agent's stream yields.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use tool_core::transform::{OwnedCallValues, Phase};
use tool_core::{ModelOutput, Progress};

use super::model::{ModelFinish, Usage};

/// Why a run's stream ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum FinishReason {
    /// The model finished its answer.
    Stop,
    /// The last step allowed (`max_steps`) ended with tool calls.
    ToolCalls,
    /// The model ran out of tokens.
    Length,
    /// Calls wait for approval, resume data or their output: the run is
    /// stored, and continues when they are decided.
    Suspended,
    /// Background tasks the run's calls started were still running when
    /// the step's wait for them ([`AgentBuilder::background_wait`](super::AgentBuilder::background_wait))
    /// ran out: the run is stored listing them
    /// ([`Agent::background_tasks`](super::Agent::background_tasks)), and
    /// [`Agent::continue_run`](super::Agent::continue_run) (or the next
    /// [`Agent::stream`](super::Agent::stream) on its thread) takes every
    /// result that settled meanwhile, on any instance.
    BackgroundTasks,
    /// The model could not be called, or its answer broke off.
    Error,
    /// The model refused to answer (its refusal's text came as
    /// [`AgentChunk::TextDelta`]).
    Refusal,
    /// A content filter stopped the model's answer.
    ContentFilter,
    /// The provider paused a long turn (Anthropic's `pause_turn`).
    PauseTurn,
    /// Another reason the model's answer ended, as the model said it
    /// ([`ModelFinish::Other`]).
    Other(String),
}

/// The schema of an approval decision (`{approved, reason?}`), as
/// `tool-call-approval` chunks carry it.
pub fn approval_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "approved": { "type": "boolean" },
            "reason": { "type": "string" }
        },
        "required": ["approved"],
        "additionalProperties": false
    })
}

/// One chunk of an agent's stream. Arguments and results are their display
/// projections (a tool's display transform applied); the model and the
/// tools see raw values.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum AgentChunk {
    /// The run started (or continued): its id, for decisions on it.
    Start {
        /// The run.
        run_id: String,
    },
    /// A piece of the model's text.
    TextDelta {
        /// The text.
        text: String,
    },
    /// The model started a tool call.
    ToolCallInputStart {
        /// The call.
        call_id: String,
        /// Its tool.
        tool_name: String,
    },
    /// A fragment of a tool call's arguments (display transform applied;
    /// none when the transform suppresses it).
    ToolCallInputDelta {
        /// The call.
        call_id: String,
        /// The fragment.
        delta: Value,
    },
    /// A complete tool call, about to run.
    ToolCall {
        /// The call.
        call_id: String,
        /// Its tool.
        tool_name: String,
        /// Its arguments.
        args: Value,
    },
    /// A call waits for approval: decide it with
    /// [`Agent::approve_tool_call`](super::Agent::approve_tool_call) or
    /// [`decline_tool_call`](super::Agent::decline_tool_call).
    ToolCallApproval {
        /// The call.
        call_id: String,
        /// Its tool.
        tool_name: String,
        /// Its arguments.
        args: Value,
        /// The decision's schema ([`approval_schema`]).
        resume_schema: Value,
    },
    /// A call of a declaration-only tool (no execute function) waits for
    /// its output from the application: give it with
    /// [`Agent::respond_tool_call`](super::Agent::respond_tool_call) (or
    /// decline it with [`decline_tool_call`](super::Agent::decline_tool_call)).
    ToolCallAwaitingOutput {
        /// The call.
        call_id: String,
        /// Its tool.
        tool_name: String,
        /// Its arguments.
        args: Value,
        /// The schema the output must match, if declared.
        output_schema: Option<Value>,
    },
    /// A call suspended: resume it with [`Agent::resume`](super::Agent::resume)
    /// (or, with auto-resume, from the user's next message).
    ToolCallSuspended {
        /// The call.
        call_id: String,
        /// Its tool.
        tool_name: String,
        /// What it suspended with.
        payload: Value,
        /// Its arguments.
        args: Value,
        /// The schema of the data that resumes it, if declared.
        resume_schema: Option<Value>,
    },
    /// A call's result.
    ToolResult {
        /// The call.
        call_id: String,
        /// Its tool.
        tool_name: String,
        /// The tool's output (its display projection).
        result: Value,
        /// What the model read instead, when the tool maps its output
        /// (`to_model_output`). Given only where `result` is the output as
        /// it is: the model output derives from it, so a display transform
        /// that hides part of the output hides the model output too.
        model_output: Option<ModelOutput>,
    },
    /// A call runs as a background task: the model reads that it started,
    /// and the run goes on. Its progress comes as [`ToolProgress`](Self::ToolProgress),
    /// its end as the call's [`ToolResult`](Self::ToolResult) or
    /// [`ToolError`](Self::ToolError), once the task settles (on this
    /// instance or another), before the next model step.
    BackgroundTaskStarted {
        /// The call.
        call_id: String,
        /// Its tool.
        tool_name: String,
        /// The runtime's task (`Runtime::wait` takes it).
        task_id: String,
    },
    /// A running call (or its background task) reported progress
    /// (`ctx.progress`), on the instance that runs it.
    ToolProgress {
        /// The call.
        call_id: String,
        /// Its tool.
        tool_name: String,
        /// The progress.
        progress: Progress,
    },
    /// A running call wrote a custom chunk (`ctx.writer().write(..)`, see
    /// [`tool_core::Writer`]): for the application and its UI, never the
    /// model; sent as written (no display transform applies), in order
    /// with the call's other chunks, on the instance that runs it.
    Custom {
        /// The call.
        call_id: String,
        /// Its tool.
        tool_name: String,
        /// What the tool wrote.
        data: Value,
    },
    /// A call failed, was declined or aborted: what the model reads.
    ToolError {
        /// The call.
        call_id: String,
        /// Its tool.
        tool_name: String,
        /// The error.
        error: Value,
    },
    /// A step (one model answer and its calls) ended.
    StepFinish {
        /// The step, from 1.
        step: usize,
        /// Why the model's answer ended.
        reason: ModelFinish,
        /// The tokens the model's answer took, as it reported them (0 where
        /// it did not).
        usage: Usage,
    },
    /// The model could not be called, or its answer broke off.
    Error {
        /// What went wrong.
        message: String,
    },
    /// The stream ends.
    Finish {
        /// The run.
        run_id: String,
        /// Why.
        reason: FinishReason,
    },
}

/// A chunk a run's transition hands out: whole, or still to show a call's
/// payload. Showing may await the tool's display transformers, so the
/// driver does it (`Payload::of`), keeping the transitions free of I/O.
// `allow`, not `expect`: whether the lint fires depends on how large
// serde_json's `Value` is in the build (dev-dependencies change it).
#[allow(
    clippy::large_enum_variant,
    reason = "returned by a transition and taken apart by the driver at once"
)]
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Due {
    /// The chunk, as sent.
    Chunk(AgentChunk),
    /// The chunk a call's payload completes, once shown.
    Show(Show),
}

/// A call's payload to show through its tool's display transform, and the
/// chunk the shown value completes.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Show {
    /// The call.
    pub(crate) call_id: String,
    /// Its tool, whose transform shows the payload.
    pub(crate) tool_name: String,
    /// The payload, raw.
    pub(crate) value: Value,
    /// What the call gave in its other phases (its transformers see it).
    pub(crate) known: OwnedCallValues,
    /// The chunk, less the call and the payload.
    pub(crate) slot: Slot,
}

/// Which chunk a shown payload completes, with the rest of that chunk.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Slot {
    /// [`AgentChunk::ToolCall`]: the payload is its arguments.
    Call,
    /// [`AgentChunk::ToolCallApproval`]: its arguments.
    Approval,
    /// [`AgentChunk::ToolCallAwaitingOutput`]: its arguments.
    AwaitingOutput { output_schema: Option<Value> },
    /// [`AgentChunk::ToolCallSuspended`]: what it suspended with.
    Suspended {
        args: Value,
        resume_schema: Option<Value>,
    },
    /// [`AgentChunk::ToolError`]: the error.
    Error,
    /// [`AgentChunk::ToolResult`]: the output; `model_output` derives from
    /// it, so it is sent only where the output is shown as it is.
    Result { model_output: Option<ModelOutput> },
}

impl Show {
    /// The phase of the call the payload belongs to.
    pub(crate) fn phase(&self) -> Phase {
        match self.slot {
            Slot::Call | Slot::AwaitingOutput { .. } => Phase::Input,
            Slot::Approval => Phase::Approval,
            Slot::Suspended { .. } => Phase::Suspend,
            Slot::Error => Phase::Error,
            Slot::Result { .. } => Phase::Output,
        }
    }

    /// The chunk, with `shown`, the payload as its tool's display shows it.
    pub(crate) fn chunk(self, shown: Value) -> AgentChunk {
        let Show {
            call_id,
            tool_name,
            value,
            slot,
            ..
        } = self;
        match slot {
            Slot::Call => AgentChunk::ToolCall {
                call_id,
                tool_name,
                args: shown,
            },
            Slot::Approval => AgentChunk::ToolCallApproval {
                call_id,
                tool_name,
                args: shown,
                resume_schema: approval_schema(),
            },
            Slot::AwaitingOutput { output_schema } => AgentChunk::ToolCallAwaitingOutput {
                call_id,
                tool_name,
                args: shown,
                output_schema,
            },
            Slot::Suspended {
                args,
                resume_schema,
            } => AgentChunk::ToolCallSuspended {
                call_id,
                tool_name,
                payload: shown,
                args,
                resume_schema,
            },
            Slot::Error => AgentChunk::ToolError {
                call_id,
                tool_name,
                error: shown,
            },
            Slot::Result { model_output } => AgentChunk::ToolResult {
                call_id,
                tool_name,
                model_output: model_output.filter(|_| shown == value),
                result: shown,
            },
        }
    }
}
