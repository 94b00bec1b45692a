//! The call pipeline of one tool: parse and repair the arguments, validate
//! input and request context (resume data on resume), execute with panics
//! and aborts contained, then validate the suspend payload or the output and
//! map the output for the model.

use std::any::Any;
use std::future::{Future, poll_fn};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::pin;
use std::sync::{Arc, Mutex};
use std::task::Poll;

use serde_json::Value;

use crate::abort::AbortSignal;
use crate::context::{CallContext, CallState};
use crate::definition::OutputValidation;
use crate::error::{ErrorKind, ModelError};
use crate::input::{RawInput, coerce_stringified, normalize_top, parse_text, strip_failing_nulls};
use crate::outcome::Outcome;
use crate::request_context::RequestContext;
use crate::tool::{Exec, ExecFailure, ExecFuture, Executed, Tool};
use crate::validate::{CompiledSchema, Issue, Subject, failure};

/// One safe repair: the repaired value, or `None` when it changes nothing.
type Repair<'a> = &'a dyn Fn(&Value, &[Issue]) -> Option<Value>;

/// How the execute step ended.
enum Run {
    Done(Exec),
    Panicked(String),
    Aborted,
}

impl Tool {
    /// Runs one call through the whole pipeline and returns its outcome.
    ///
    /// `input` is the model's argument text or a JSON value. On a resume
    /// (`CallContext::resuming`) the input is the one stored at suspension:
    /// it is not validated again; the resume data is, instead.
    ///
    /// Never panics: bad arguments, failing or panicking tools and invalid
    /// output all end as [`Outcome::Failed`] with a model-facing error.
    ///
    /// ```
    /// use serde_json::json;
    /// use tool_core::{CallContext, ErrorKind, Tool, ToolError};
    ///
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let tool = Tool::builder("weather-tool")
    ///     .description("Get the weather")
    ///     .input_schema(json!({ "type": "object", "properties": { "location": { "type": "string" } }, "required": ["location"] }))
    ///     .execute(|input, _ctx| async move { Ok::<_, ToolError>(json!({ "at": input["location"] })) })
    ///     .build()
    ///     .unwrap();
    /// let outcome = tool.execute("{}", CallContext::new("c1")).await;
    /// let error = outcome.error().unwrap();
    /// assert_eq!(error.kind(), ErrorKind::InputValidation);
    /// assert!(error.message().contains("- location: Required"));
    /// # });
    /// ```
    pub fn execute(
        &self,
        input: impl Into<RawInput>,
        ctx: CallContext,
    ) -> impl Future<Output = Outcome> + Send + '_ {
        // Everything up to execute is synchronous and happens here, so the
        // returned future holds only what the await needs.
        let input = if ctx.resume.is_some() {
            match input.into() {
                RawInput::Json(value) => Ok(value),
                RawInput::Text(text) => serde_json::from_str(&text)
                    .map_err(|_| ModelError::invalid_json(&self.inner.id)),
            }
        } else {
            self.validate_input(input)
        };
        let started = input.and_then(|value| self.start(value, ctx));
        async move {
            match started {
                Ok(running) => running.finish().await,
                Err(error) => Outcome::Failed { error },
            }
        }
    }

    /// Parses, repairs and validates arguments against the input schema.
    ///
    /// Repairs, tried in order while validation fails: empty text or `null`
    /// to `{}` for object schemas, stringified objects and arrays parsed,
    /// `null` on keys that reject it removed. The errors reported are those
    /// of the last attempt; the arguments quoted are the ones provided.
    ///
    /// ```
    /// use serde_json::json;
    /// use tool_core::{Tool, ToolError};
    ///
    /// let tool = Tool::builder("tag")
    ///     .description("Tag items")
    ///     .input_schema(json!({ "type": "object", "properties": { "tags": { "type": "array", "items": { "type": "string" } } } }))
    ///     .execute(|input, _ctx| async move { Ok::<_, ToolError>(input) })
    ///     .build()
    ///     .unwrap();
    /// // A model sent the array as a string: repaired.
    /// assert_eq!(tool.validate_input(r#"{"tags": "[\"a\"]"}"#).unwrap(), json!({ "tags": ["a"] }));
    /// ```
    pub fn validate_input(&self, input: impl Into<RawInput>) -> Result<Value, ModelError> {
        let id = &self.inner.id;
        let Some(schema) = &self.inner.input else {
            return Err(self.configuration_error());
        };
        let provided = match input.into() {
            RawInput::Json(value) => value,
            RawInput::Text(text) => parse_text(&text, schema.expects_object())
                .ok_or_else(|| ModelError::invalid_json(id))?,
        };
        let (first, repaired_from) = normalize_top(provided, schema.expects_object());
        if schema.is_valid(&first) {
            return Ok(first);
        }
        let provided = repaired_from.unwrap_or_else(|| first.clone());
        let mut attempt = first;
        let mut issues = schema.issues(&attempt);
        let repairs: [Repair<'_>; 2] = [
            &|value, _| coerce_stringified(value, schema.schema()),
            &|value, issues| strip_failing_nulls(value, issues),
        ];
        for repair in repairs {
            if let Some(repaired) = repair(&attempt, &issues) {
                if schema.is_valid(&repaired) {
                    return Ok(repaired);
                }
                issues = schema.issues(&repaired);
                attempt = repaired;
            }
        }
        Err(failure(Subject::Input, id, &issues, Some(&provided)))
    }

    /// Validates a request context against the tool's request-context schema.
    pub fn validate_request_context(
        &self,
        request_context: &RequestContext,
    ) -> Result<(), ModelError> {
        let Some(schema) = &self.inner.request_context else {
            return Ok(());
        };
        let values = request_context.to_value();
        check(schema, Subject::RequestContext, &self.inner.id, &values)
    }

    /// Runs a call whose input is already validated (after approval, on
    /// resume): request context and resume data are still validated.
    pub fn execute_validated(
        &self,
        input: Value,
        ctx: CallContext,
    ) -> impl Future<Output = Outcome> + Send + '_ {
        let started = self.start(input, ctx);
        async move {
            match started {
                Ok(running) => running.finish().await,
                Err(error) => Outcome::Failed { error },
            }
        }
    }

    fn configuration_error(&self) -> ModelError {
        let reason = self.inner.config_error.as_ref().map_or_else(
            || "the tool is misconfigured".to_owned(),
            ToString::to_string,
        );
        ModelError::new(ErrorKind::Configuration, reason)
    }

    /// Checks before execute: configuration, request context, resume data.
    fn prepare(&self, ctx: &CallContext) -> Result<(), ModelError> {
        if self.inner.config_error.is_some() {
            return Err(self.configuration_error());
        }
        self.validate_request_context(&ctx.request_context)?;
        if let (Some(resume), Some(schema)) = (&ctx.resume, &self.inner.resume) {
            // Nullish, not truthy: false, 0 and "" are resume data too.
            if !resume.data.is_null() {
                check(schema, Subject::Resume, &self.inner.id, &resume.data)?;
            }
        }
        Ok(())
    }

    /// Checks the context and starts the execute function (it runs when
    /// the returned call is awaited).
    fn start(&self, input: Value, ctx: CallContext) -> Result<Running<'_>, ModelError> {
        self.prepare(&ctx)?;
        let inner = &self.inner;
        let span = match &ctx.parent_span {
            Some(parent) => {
                tracing::info_span!(parent: &**parent, "tool.execute", tool_id = %inner.id, call_id = %ctx.call_id)
            }
            None => {
                tracing::info_span!("tool.execute", tool_id = %inner.id, call_id = %ctx.call_id)
            }
        };
        let abort = ctx.abort.clone();
        let state = Arc::new(CallState {
            tool_id: Arc::clone(&inner.id),
            ctx,
            span,
            suspended: Mutex::new(None),
        });
        let future = if abort.is_aborted() {
            None
        } else {
            let _entered = state.span.enter();
            Some(
                catch_unwind(AssertUnwindSafe(|| {
                    (inner.executor)(input, Arc::clone(&state))
                }))
                .map_err(|panic| panic_message(&*panic)),
            )
        };
        Ok(Running {
            tool: self,
            state,
            abort,
            future,
        })
    }

    /// Maps how the execute step ended to the call's outcome.
    fn conclude(&self, state: &CallState, run: Run) -> Outcome {
        let inner = &self.inner;
        let _entered = state.span.enter();
        let Exec { result, input } = match run {
            Run::Done(exec) => exec,
            Run::Panicked(message) => {
                tracing::error!(panic = %message, "tool panicked; the call failed");
                return Outcome::Failed {
                    error: ModelError::new(
                        ErrorKind::Panic,
                        format!("Tool {} failed unexpectedly: {message}", inner.id),
                    ),
                };
            }
            Run::Aborted => {
                tracing::warn!("tool call aborted");
                return Outcome::Aborted;
            }
        };
        if let Some(suspension) = state.take_suspension() {
            let Some(input) = input else {
                return Outcome::Failed {
                    error: ModelError::new(
                        ErrorKind::SuspendValidation,
                        format!(
                            "Tool {} suspended, but it declares no suspend payload or resume data type to resume with: take its context as ToolContext<Suspend, Resume>",
                            inner.id
                        ),
                    ),
                };
            };
            return self.suspended(state.ctx.call_id.clone(), input, suspension);
        }
        match result {
            Ok(executed) => self.completed(executed),
            Err(ExecFailure::Tool(error)) => Outcome::Failed {
                error: ModelError::new(ErrorKind::Execution, error.message())
                    .with_data(error.data().cloned()),
            },
            Err(ExecFailure::Input(reason)) => {
                let issue = Issue {
                    path: Vec::new(),
                    message: reason,
                };
                Outcome::Failed {
                    error: failure(Subject::Input, &inner.id, &[issue], input.as_ref()),
                }
            }
            Err(ExecFailure::Output(reason)) => Outcome::Failed {
                error: ModelError::new(
                    ErrorKind::OutputValidation,
                    format!(
                        "Tool output validation failed for {}. The output could not be serialized: {reason}",
                        inner.id
                    ),
                ),
            },
            Err(ExecFailure::Context(reason)) => Outcome::Failed {
                error: ModelError::new(
                    ErrorKind::ResumeValidation,
                    format!("Tool {} could not resume: stored {reason}", inner.id),
                ),
            },
        }
    }

    fn suspended(
        &self,
        call_id: String,
        input: Value,
        suspension: Result<Value, String>,
    ) -> Outcome {
        let id = &self.inner.id;
        let payload = match suspension {
            Ok(payload) => payload,
            Err(reason) => {
                return Outcome::Failed {
                    error: ModelError::new(
                        ErrorKind::SuspendValidation,
                        format!(
                            "Tool suspension data validation failed for {id}. The payload could not be serialized: {reason}"
                        ),
                    ),
                };
            }
        };
        if let Some(schema) = &self.inner.suspend {
            if let Err(error) = check(schema, Subject::Suspend, id, &payload) {
                return Outcome::Failed { error };
            }
        }
        Outcome::Suspended {
            call_id,
            input,
            payload,
            resume_schema: self.inner.definition.resume_schema.clone(),
        }
    }

    fn completed(&self, executed: Executed) -> Outcome {
        let Executed {
            output,
            model_output,
        } = executed;
        if let Some(schema) = &self.inner.output {
            if let Err(error) = check(schema, Subject::Output, &self.inner.id, &output) {
                match self.inner.definition.output_validation {
                    OutputValidation::Strict => return Outcome::Failed { error },
                    OutputValidation::Warn => {
                        tracing::warn!(error = %error, "tool output does not match its schema");
                    }
                }
            }
        }
        let model_output = match (model_output, &self.inner.to_model_output) {
            (Some(mapped), _) => Some(mapped),
            (None, Some(map)) => match catch_unwind(AssertUnwindSafe(|| map(&output))) {
                Ok(mapped) => Some(mapped),
                Err(panic) => {
                    let message = panic_message(&*panic);
                    return Outcome::Failed {
                        error: ModelError::new(
                            ErrorKind::Panic,
                            format!(
                                "Tool {} failed unexpectedly in to_model_output: {message}",
                                self.inner.id
                            ),
                        ),
                    };
                }
            },
            (None, None) => None,
        };
        Outcome::Completed {
            output,
            model_output,
        }
    }
}

fn check(
    schema: &CompiledSchema,
    subject: Subject,
    tool_id: &str,
    value: &Value,
) -> Result<(), ModelError> {
    if schema.is_valid(value) {
        return Ok(());
    }
    Err(failure(
        subject,
        tool_id,
        &schema.issues(value),
        Some(value),
    ))
}

/// A started call: the execute future and what concluding it needs.
struct Running<'a> {
    tool: &'a Tool,
    state: Arc<CallState>,
    abort: AbortSignal,
    /// `None` when the call was aborted before it started; `Err` when
    /// starting the execute function panicked.
    future: Option<Result<ExecFuture, String>>,
}

impl Running<'_> {
    /// Drives the execute future to its end, turning a panic into
    /// [`Run::Panicked`] and a fired abort signal into [`Run::Aborted`].
    async fn finish(self) -> Outcome {
        let Running {
            tool,
            state,
            abort,
            future,
        } = self;
        let run = match future {
            None => Run::Aborted,
            Some(Err(message)) => Run::Panicked(message),
            Some(Ok(mut running)) => {
                let mut aborted = pin!(abort.aborted());
                poll_fn(|cx| {
                    let _entered = state.span.enter();
                    // The tool first: a tool that finishes at once never pays
                    // for registering with the abort signal.
                    match catch_unwind(AssertUnwindSafe(|| running.as_mut().poll(cx))) {
                        Ok(Poll::Ready(result)) => return Poll::Ready(Run::Done(result)),
                        Ok(Poll::Pending) => {}
                        Err(panic) => return Poll::Ready(Run::Panicked(panic_message(&*panic))),
                    }
                    match aborted.as_mut().poll(cx) {
                        Poll::Ready(()) => Poll::Ready(Run::Aborted),
                        Poll::Pending => Poll::Pending,
                    }
                })
                .await
            }
        };
        tool.conclude(&state, run)
    }
}

fn panic_message(panic: &(dyn Any + Send)) -> String {
    if let Some(text) = panic.downcast_ref::<&str>() {
        (*text).to_owned()
    } else if let Some(text) = panic.downcast_ref::<String>() {
        text.clone()
    } else {
        "the tool panicked".to_owned()
    }
}
