//! How a call ends.

use serde_json::{Value, json};

use crate::error::ModelError;
use crate::model_output::ModelOutput;

/// The end of a call (or of one step of it: approval and suspension pause it).
///
/// [`Tool::execute`](crate::Tool::execute) ends in `Completed`, `Failed`,
/// `Suspended` or `Aborted`; a runtime adds the approval, decline and
/// background states.
///
/// ```
/// use tool_core::Outcome;
///
/// let outcome = Outcome::Declined { reason: None };
/// assert_eq!(outcome.to_model_value(), "Tool call was not approved by the user");
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Outcome {
    /// The tool returned output.
    Completed {
        /// The raw output, validated against the output schema.
        output: Value,
        /// The model-facing form, when the tool defines `to_model_output`.
        model_output: Option<ModelOutput>,
    },
    /// The call failed; the model receives the error object.
    Failed {
        /// The model-facing error.
        error: ModelError,
    },
    /// The call waits for a human decision (`approve` / `decline`).
    ApprovalRequired {
        /// The call to approve or decline.
        call_id: String,
        /// The validated arguments awaiting approval.
        input: Value,
        /// Schema of the data a resume may carry, when the tool has one.
        resume_schema: Option<Value>,
    },
    /// The tool suspended itself; resume it with data matching `resume_schema`.
    Suspended {
        /// The suspended call.
        call_id: String,
        /// The validated arguments it ran on: store them with the call, and
        /// resume with them.
        input: Value,
        /// What the tool suspended with, validated against its suspend schema.
        payload: Value,
        /// Schema of the resume data.
        resume_schema: Option<Value>,
    },
    /// A human declined the call; it never ran.
    Declined {
        /// Why, when given.
        reason: Option<String>,
    },
    /// The call runs in the background.
    Started {
        /// The background task to wait for.
        task_id: String,
    },
    /// The call was cancelled through its abort signal.
    Aborted,
}

impl Outcome {
    /// What the model is told about this outcome.
    pub fn to_model_value(&self) -> Value {
        match self {
            Outcome::Completed {
                model_output: Some(model_output),
                ..
            } => serde_json::to_value(model_output).unwrap_or(Value::Null),
            Outcome::Completed { output, .. } => output.clone(),
            Outcome::Failed { error } => error.to_json(),
            Outcome::ApprovalRequired { .. } => {
                Value::String("Tool call is waiting for human approval.".to_owned())
            }
            Outcome::Suspended { payload, .. } => json!({ "suspended": true, "payload": payload }),
            Outcome::Declined { reason } => Value::String(
                reason
                    .clone()
                    .unwrap_or_else(|| "Tool call was not approved by the user".to_owned()),
            ),
            Outcome::Started { task_id } => Value::String(format!(
                "Background task started. Task ID: {task_id}. The result will be available when the task completes."
            )),
            Outcome::Aborted => Value::String("Tool call was aborted.".to_owned()),
        }
    }

    /// The output, when the call completed.
    pub fn output(&self) -> Option<&Value> {
        match self {
            Outcome::Completed { output, .. } => Some(output),
            _ => None,
        }
    }

    /// The error, when the call failed.
    pub fn error(&self) -> Option<&ModelError> {
        match self {
            Outcome::Failed { error } => Some(error),
            _ => None,
        }
    }
}
