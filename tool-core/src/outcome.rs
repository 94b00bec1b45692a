//! How a call of one tool ends, and what the model is told about it.

use serde_json::{Value, json};

use crate::error::ModelError;
use crate::model_output::ModelOutput;

/// How a call of a tool ends: everything a tool call alone can produce.
///
/// The four states are the whole set, so a `match` needs no catch-all arm.
/// A runtime adds its own states (waiting for approval, declined, running
/// in the background) in a type of its own that converts from this one.
///
/// ```
/// use serde_json::json;
/// use tool_core::{ModelFacing, Outcome};
///
/// let outcome = Outcome::Completed { output: json!({ "celsius": 21 }), model_output: None, state: None };
/// assert_eq!(outcome.output(), Some(&json!({ "celsius": 21 })));
/// assert_eq!(Outcome::Aborted.to_model_value(), "Tool call was aborted.");
/// ```
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// The tool returned output.
    Completed {
        /// The raw output, validated against the output schema.
        output: Value,
        /// The model-facing form, when the tool defines `to_model_output`.
        model_output: Option<ModelOutput>,
        /// The workflow state the tool set (`Workflow::set_state`),
        /// validated against its state schema: the host replaces the
        /// workflow's state with it. `None` when the tool set none.
        state: Option<Value>,
    },
    /// The call failed; the model receives the error object.
    Failed {
        /// The model-facing error.
        error: ModelError,
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
    /// The call was cancelled through its abort signal.
    Aborted,
}

impl Outcome {
    /// What the model is told (see [`ModelFacing::to_model_value`]).
    pub fn to_model_value(&self) -> Value {
        ModelFacing::to_model_value(self)
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

    /// The new workflow state, when the call completed after the tool set
    /// one (see [`Workflow::set_state`](crate::Workflow::set_state)).
    ///
    /// ```
    /// use serde_json::json;
    /// use tool_core::Outcome;
    ///
    /// let outcome = Outcome::Completed { output: json!("ok"), model_output: None, state: Some(json!({ "step": 2 })) };
    /// assert_eq!(outcome.state(), Some(&json!({ "step": 2 })));
    /// assert_eq!(Outcome::Aborted.state(), None);
    /// ```
    pub fn state(&self) -> Option<&Value> {
        match self {
            Outcome::Completed { state, .. } => state.as_ref(),
            _ => None,
        }
    }
}

/// What a model is told about how a call ended. Implemented by
/// [`Outcome`] and by a runtime's richer outcome, so that encoders (provider
/// tool results, MCP results) take whichever they are given.
///
/// ```
/// use serde_json::json;
/// use tool_core::{ModelFacing, ModelOutput, Outcome};
///
/// fn as_text(outcome: &impl ModelFacing) -> String {
///     match outcome.completed() {
///         Some((_, Some(ModelOutput::Text(text)))) => text.clone(),
///         Some((output, _)) => output.to_string(),
///         None => outcome.to_model_value().to_string(),
///     }
/// }
/// let done = Outcome::Completed { output: json!(1), model_output: Some(ModelOutput::Text("one".into())), state: None };
/// assert_eq!(as_text(&done), "one");
/// assert_eq!(as_text(&Outcome::Aborted), "\"Tool call was aborted.\"");
/// ```
pub trait ModelFacing {
    /// The output and its model-facing form, when the call completed.
    fn completed(&self) -> Option<(&Value, Option<&ModelOutput>)>;

    /// The model-facing error, when the call failed.
    fn failure(&self) -> Option<&ModelError>;

    /// What the model is told: the model output or output of a completed
    /// call, the error object of a failed one, a sentence otherwise.
    fn to_model_value(&self) -> Value;
}

impl ModelFacing for Outcome {
    fn completed(&self) -> Option<(&Value, Option<&ModelOutput>)> {
        match self {
            Outcome::Completed {
                output,
                model_output,
                ..
            } => Some((output, model_output.as_ref())),
            _ => None,
        }
    }

    fn failure(&self) -> Option<&ModelError> {
        self.error()
    }

    fn to_model_value(&self) -> Value {
        match self {
            Outcome::Completed {
                model_output: Some(model_output),
                ..
            } => serde_json::to_value(model_output).unwrap_or(Value::Null),
            Outcome::Completed { output, .. } => output.clone(),
            Outcome::Failed { error } => error.to_json(),
            Outcome::Suspended { payload, .. } => json!({ "suspended": true, "payload": payload }),
            Outcome::Aborted => Value::String("Tool call was aborted.".to_owned()),
        }
    }
}
