//! How a call through the runtime ends: a tool's own outcome, or one of the
//! states only the runtime produces (approval, decline, background).

use serde_json::Value;
use tool_core::{ModelError, ModelFacing, ModelOutput, Outcome};

/// The end of a call through the [`Runtime`](crate::Runtime), or of one step
/// of it (approval and suspension pause it).
///
/// The first four variants are what the tool itself produced
/// ([`tool_core::Outcome`], which converts into this type); the runtime
/// adds the approval gate's states and background tasks.
///
/// ```
/// use tool_core::ModelFacing;
/// use tool_runtime::CallOutcome;
///
/// let outcome = CallOutcome::Declined { reason: None };
/// assert_eq!(outcome.to_model_value(), "Tool call was not approved by the user");
/// assert_eq!(CallOutcome::from(tool_core::Outcome::Aborted), CallOutcome::Aborted);
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum CallOutcome {
    /// The tool returned output.
    Completed {
        /// The raw output, validated against the output schema.
        output: Value,
        /// The model-facing form, when the tool defines `to_model_output`.
        model_output: Option<ModelOutput>,
        /// The workflow state the tool set, validated against its state
        /// schema (see [`tool_core::Outcome::state`]); `None` when it set none.
        state: Option<Value>,
    },
    /// The call failed; the model receives the error object.
    Failed {
        /// The model-facing error.
        error: ModelError,
    },
    /// The tool suspended itself and the call is stored; resume it with
    /// [`Runtime::resume`](crate::Runtime::resume) and data matching `resume_schema`.
    Suspended {
        /// The suspended call.
        call_id: String,
        /// The validated arguments it ran on.
        input: Value,
        /// What the tool suspended with, validated against its suspend schema.
        payload: Value,
        /// Schema of the resume data.
        resume_schema: Option<Value>,
    },
    /// The call was cancelled through its abort signal (or timed out).
    Aborted,
    /// The call is stored and waits for a human decision
    /// ([`Runtime::approve`](crate::Runtime::approve) /
    /// [`Runtime::decline`](crate::Runtime::decline)).
    ApprovalRequired {
        /// The call to approve or decline.
        call_id: String,
        /// The validated arguments awaiting approval.
        input: Value,
        /// Schema of the decision.
        resume_schema: Option<Value>,
    },
    /// The call is to a declaration-only tool (no execute function): it is
    /// stored and waits for the application to give its output
    /// ([`Runtime::respond`](crate::Runtime::respond)) or to decline it.
    AwaitingOutput {
        /// The call to respond to.
        call_id: String,
        /// The validated arguments.
        input: Value,
        /// The schema the output must match, when the tool has one.
        output_schema: Option<Value>,
    },
    /// A human declined the call; it never ran.
    Declined {
        /// Why, when given.
        reason: Option<String>,
    },
    /// The call runs as a background task; [`Runtime::wait`](crate::Runtime::wait)
    /// gives its final outcome.
    BackgroundStarted {
        /// The background task to wait for.
        task_id: String,
    },
}

impl From<Outcome> for CallOutcome {
    fn from(outcome: Outcome) -> Self {
        match outcome {
            Outcome::Completed {
                output,
                model_output,
                state,
            } => CallOutcome::Completed {
                output,
                model_output,
                state,
            },
            Outcome::Failed { error } => CallOutcome::Failed { error },
            Outcome::Suspended {
                call_id,
                input,
                payload,
                resume_schema,
            } => CallOutcome::Suspended {
                call_id,
                input,
                payload,
                resume_schema,
            },
            Outcome::Aborted => CallOutcome::Aborted,
        }
    }
}

impl CallOutcome {
    /// What the model is told (see [`ModelFacing::to_model_value`]).
    pub fn to_model_value(&self) -> Value {
        ModelFacing::to_model_value(self)
    }

    /// The output, when the call completed.
    pub fn output(&self) -> Option<&Value> {
        match self {
            CallOutcome::Completed { output, .. } => Some(output),
            _ => None,
        }
    }

    /// The error, when the call failed.
    pub fn error(&self) -> Option<&ModelError> {
        match self {
            CallOutcome::Failed { error } => Some(error),
            _ => None,
        }
    }

    /// The new workflow state, when the call completed after the tool set
    /// one (see [`tool_core::Workflow::set_state`]).
    ///
    /// ```
    /// use serde_json::json;
    /// use tool_runtime::CallOutcome;
    ///
    /// let outcome = CallOutcome::from(tool_core::Outcome::Completed {
    ///     output: json!("ok"),
    ///     model_output: None,
    ///     state: Some(json!({ "step": 2 })),
    /// });
    /// assert_eq!(outcome.state(), Some(&json!({ "step": 2 })));
    /// ```
    pub fn state(&self) -> Option<&Value> {
        match self {
            CallOutcome::Completed { state, .. } => state.as_ref(),
            _ => None,
        }
    }

    /// What to tell the model about a call left pending in the runtime's
    /// store ([`ApprovalRequired`](CallOutcome::ApprovalRequired),
    /// [`Suspended`](CallOutcome::Suspended) or
    /// [`AwaitingOutput`](CallOutcome::AwaitingOutput)) by a host that cannot ask the
    /// user now, `why` saying why not: the tool, that it waits, and how the
    /// application settles it (with the call id); `None` for other outcomes.
    /// The MCP server and the rig adapter tell their models this.
    ///
    /// ```
    /// use serde_json::json;
    /// use tool_runtime::CallOutcome;
    ///
    /// let outcome = CallOutcome::ApprovalRequired {
    ///     call_id: "c1".into(),
    ///     input: json!({ "amount": 10 }),
    ///     resume_schema: None,
    /// };
    /// let notice = outcome.pending_notice("transfer", "the agent cannot ask the user").unwrap();
    /// assert!(notice.starts_with("Tool \"transfer\" needs human approval before it runs, and the agent cannot ask the user."));
    /// assert!(notice.contains("Runtime::approve(\"c1\")"));
    /// assert_eq!(CallOutcome::Aborted.pending_notice("transfer", "no user"), None);
    /// ```
    pub fn pending_notice(&self, tool_id: &str, why: &str) -> Option<String> {
        match self {
            CallOutcome::ApprovalRequired { call_id, .. } => {
                Some(Self::approval_notice(tool_id, call_id, why))
            }
            CallOutcome::Suspended {
                call_id,
                payload,
                resume_schema,
                ..
            } => Some(Self::suspension_notice(
                tool_id,
                call_id,
                payload,
                resume_schema.as_ref(),
                why,
            )),
            CallOutcome::AwaitingOutput { call_id, .. } => Some(format!(
                "Tool \"{tool_id}\" has no execute function here: its result is supplied by the application, and {why}. \
                 The call is pending with call id \"{call_id}\": the application gives its result with \
                 Runtime::respond(\"{call_id}\", output) or declines it with Runtime::decline(\"{call_id}\", reason)."
            )),
            _ => None,
        }
    }

    /// The notice of a call `call_id` to `tool_id` waiting for approval, for
    /// a caller that cannot ask for it (see [`pending_notice`](Self::pending_notice)):
    /// a transport that answers with text builds it from the call's parts.
    ///
    /// ```
    /// use tool_runtime::CallOutcome;
    ///
    /// let text = CallOutcome::approval_notice("transfer", "c1", "the client cannot ask the user");
    /// assert!(text.contains("Runtime::approve(\"c1\")"));
    /// ```
    pub fn approval_notice(tool_id: &str, call_id: &str, why: &str) -> String {
        format!(
            "Tool \"{tool_id}\" needs human approval before it runs, and {why}. \
             The call is pending with call id \"{call_id}\": the application approves it with \
             Runtime::approve(\"{call_id}\") or declines it with Runtime::decline(\"{call_id}\", reason)."
        )
    }

    /// The notice of a call `call_id` to `tool_id` suspended with `payload`,
    /// waiting for data matching `resume_schema` (see
    /// [`pending_notice`](Self::pending_notice)).
    ///
    /// ```
    /// use serde_json::json;
    /// use tool_runtime::CallOutcome;
    ///
    /// let text = CallOutcome::suspension_notice("book", "c1", &json!("Which seat?"), None, "no user is here");
    /// assert!(text.starts_with("Tool \"book\" is suspended, waiting for input: Which seat?"));
    /// assert!(text.contains("Runtime::resume(\"c1\", data), data matching any JSON value"));
    /// ```
    pub fn suspension_notice(
        tool_id: &str,
        call_id: &str,
        payload: &Value,
        resume_schema: Option<&Value>,
        why: &str,
    ) -> String {
        let payload = value_text(payload);
        let schema = resume_schema.map_or_else(
            || "any JSON value".to_owned(),
            |s| format!("the schema {s}"),
        );
        format!(
            "Tool \"{tool_id}\" is suspended, waiting for input: {payload}\nIt was not asked for because {why}. \
             The call is pending with call id \"{call_id}\": the application resumes it with \
             Runtime::resume(\"{call_id}\", data), data matching {schema}."
        )
    }

    /// A failure with `error`.
    /// What a caller of the call path reads when the outcome of call
    /// `call_id` is not what the store records (or cannot be read): why,
    /// and the id to ask again with; never an outcome the store did not
    /// record.
    pub(crate) fn not_recorded(call_id: &str, why: impl std::fmt::Display) -> Self {
        CallOutcome::failed(ModelError::new(
            tool_core::ErrorKind::Execution,
            format!(
                "The outcome of call {call_id} is not recorded here: {why}. Ask again with its id for the outcome the store records."
            ),
        ))
    }

    pub(crate) fn failed(error: ModelError) -> Self {
        CallOutcome::Failed { error }
    }
}

/// A string as its text, any other value as JSON.
pub(crate) fn value_text(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

impl ModelFacing for CallOutcome {
    fn completed(&self) -> Option<(&Value, Option<&ModelOutput>)> {
        match self {
            CallOutcome::Completed {
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
        let text = match self {
            CallOutcome::Completed {
                model_output: Some(model_output),
                ..
            } => return serde_json::to_value(model_output).unwrap_or(Value::Null),
            CallOutcome::Completed { output, .. } => return output.clone(),
            CallOutcome::Failed { error } => return error.to_json(),
            CallOutcome::Suspended { payload, .. } => {
                return serde_json::json!({ "suspended": true, "payload": payload });
            }
            CallOutcome::Aborted => "Tool call was aborted.".to_owned(),
            CallOutcome::ApprovalRequired { .. } => {
                "Tool call is waiting for human approval.".to_owned()
            }
            CallOutcome::AwaitingOutput { .. } => {
                "Tool call is waiting for its result from the application.".to_owned()
            }
            CallOutcome::Declined { reason } => reason
                .clone()
                .unwrap_or_else(|| "Tool call was not approved by the user".to_owned()),
            CallOutcome::BackgroundStarted { task_id } => format!(
                "Background task started. Task ID: {task_id}. The result will be available when the task completes."
            ),
        };
        Value::String(text)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use tool_core::provider::Provider;

    use super::*;

    #[test]
    fn the_tool_states_read_as_tool_core_reads_them() {
        let outcomes = [
            Outcome::Completed {
                output: json!({ "t": 1 }),
                model_output: None,
                state: None,
            },
            Outcome::Completed {
                output: json!(1),
                model_output: Some(ModelOutput::Text("one".into())),
                state: Some(json!({ "step": 1 })),
            },
            Outcome::Failed {
                error: ModelError::new(tool_core::ErrorKind::Execution, "boom"),
            },
            Outcome::Suspended {
                call_id: "c".into(),
                input: json!({}),
                payload: json!({ "q": 1 }),
                resume_schema: None,
            },
            Outcome::Aborted,
        ];
        for outcome in outcomes {
            let call = CallOutcome::from(outcome.clone());
            assert_eq!(call.to_model_value(), outcome.to_model_value());
            for provider in Provider::ALL {
                assert_eq!(
                    provider.tool_result("c1", "t", &call),
                    provider.tool_result("c1", "t", &outcome)
                );
            }
        }
    }

    #[test]
    fn runtime_states_send_their_model_text() {
        let declined = CallOutcome::Declined { reason: None };
        assert_eq!(
            Provider::Anthropic.tool_result("t1", "w", &declined),
            json!({ "type": "tool_result", "tool_use_id": "t1", "content": "Tool call was not approved by the user" })
        );
        assert_eq!(
            Provider::Gemini.tool_result("", "w", &declined)["functionResponse"]["response"],
            json!({ "output": "Tool call was not approved by the user" })
        );
        let started = CallOutcome::BackgroundStarted {
            task_id: "task-1".into(),
        };
        assert!(
            started
                .to_model_value()
                .as_str()
                .unwrap()
                .starts_with("Background task started. Task ID: task-1.")
        );
    }
}
