//! The call pipeline of one tool, in two typed stages.
//!
//! 1. [`Tool::admit`]: parse and repair the arguments, validate them against
//!    the input schema, validate the request context (and, on resume, the
//!    resume data). Only this produces an [`Admitted`] call.
//! 2. [`Admitted::run`]: execute with panics and aborts contained, then
//!    validate the suspend payload or the output and map the output for the
//!    model.
//!
//! A runtime puts its own stages (hooks, the approval gate, storing a
//! suspension) between and after these two; it cannot skip them.

use std::fmt;
use std::future::{Future, poll_fn};
use std::pin::{Pin, pin};
use std::sync::{Arc, Mutex};
use std::task::Poll;

use serde_json::Value;

use crate::Excerpt;
use crate::app_state::missing_state_message;
use crate::context::{CallContext, CallShared};
use crate::definition::OutputValidation;
use crate::error::{ErrorKind, ModelError};
use crate::host::DecodedState;
use crate::idempotency::IdempotencyKey;
use crate::input::{
    MAX_NESTING, RawInput, coerce_stringified, integral_floats_to_integers, normalize_top,
    parse_text, strip_failing_nulls, too_deep,
};
use crate::model_output::ModelOutput;
use crate::outcome::Outcome;
use crate::panic::catch_panic;
use crate::reconcile::Reconciled;
use crate::tool::{Exec, ExecFailure, Executed, ReconcileExec, Tool};
use crate::validate::{Issue, Schema, Subject, failure};

/// One safe repair: the repaired value, or `None` when it changes nothing.
type Repair<'a> = &'a dyn Fn(&Value, &[Issue]) -> Option<Value>;

/// How the execute step (or the reconcile step) ended.
enum Run<T = Exec> {
    Done(T),
    Panicked(String),
    Aborted,
}

/// Which of the tool's functions a call runs: names its span.
#[derive(Clone, Copy)]
enum Step {
    Execute,
    Reconcile,
}

/// A call that passed validation and may run: its arguments fit the input
/// schema, its request context the request-context schema, and on resume its
/// resume data the resume schema. Only [`Tool::admit`] makes one, so no
/// execute function ever sees arguments that skipped validation.
///
/// Between admitting and running, a caller reads the validated arguments
/// (hooks, approval policies, a store) and decides whether to run.
///
/// ```
/// use serde_json::json;
/// use tool_core::{CallContext, Tool, ToolError};
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let tool = Tool::builder("count").description("Count items")
///     .input_schema(json!({ "type": "object", "properties": { "items": { "type": "array" } }, "required": ["items"] }))
///     .execute(|input, _ctx| async move { Ok::<_, ToolError>(json!(input["items"].as_array().map_or(0, Vec::len))) })
///     .build().unwrap();
/// // A model sent the array as a string: repaired, then validated.
/// let admitted = tool.admit(r#"{"items": "[1, 2]"}"#, CallContext::new("c1")).unwrap();
/// assert_eq!(admitted.input(), &json!({ "items": [1, 2] }));
/// assert_eq!(admitted.run().await.output(), Some(&json!(2)));
///
/// let refused = tool.admit("{}", CallContext::new("c2")).unwrap_err();
/// assert!(refused.message().contains("- items: Required"));
/// # });
/// ```
#[must_use = "an admitted call does nothing until it is run"]
#[derive(Clone)]
pub struct Admitted {
    tool: Tool,
    input: Value,
    ctx: CallContext,
    /// The workflow state, deserialized into the tool's state type.
    workflow_state: Option<DecodedState>,
}

impl fmt::Debug for Admitted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Admitted")
            .field("tool_id", &self.tool.id())
            .field("call_id", &self.ctx.call_id)
            .field("input", &self.input)
            .finish_non_exhaustive()
    }
}

impl Admitted {
    /// The tool to run.
    pub fn tool(&self) -> &Tool {
        &self.tool
    }

    /// The validated (and repaired) arguments.
    pub fn input(&self) -> &Value {
        &self.input
    }

    /// The call's context.
    pub fn call_context(&self) -> &CallContext {
        &self.ctx
    }

    /// The call's idempotency key (see [`IdempotencyKey`]), the one its
    /// tool reads from [`ToolContext::idempotency_key`](crate::ToolContext::idempotency_key).
    ///
    /// ```
    /// use serde_json::json;
    /// use tool_core::{CallContext, IdempotencyKey, Tool, ToolError};
    ///
    /// let tool = Tool::builder("charge").description("Charge a card")
    ///     .execute(|input, _ctx| async move { Ok::<_, ToolError>(input) })
    ///     .build().unwrap();
    /// let admitted = tool.admit("{}", CallContext::new("call-1")).unwrap();
    /// assert_eq!(admitted.idempotency_key(), IdempotencyKey::derive("charge", "call-1"));
    /// ```
    pub fn idempotency_key(&self) -> IdempotencyKey {
        self.ctx.idempotency_key(self.tool.id())
    }

    /// Runs the call under `abort` instead of the abort signal it was
    /// admitted with (a runtime gives each attempt of a retried call its own).
    pub fn with_abort_signal(mut self, abort: crate::AbortSignal) -> Self {
        self.ctx.abort = abort;
        self
    }

    /// Runs the call as its `attempt`-th run (a runtime counts the retries
    /// of a background task); the tool reads it from its context.
    pub fn with_attempt(mut self, attempt: u32) -> Self {
        self.ctx.attempt = attempt;
        self
    }

    /// Gives up the call, keeping its validated arguments (to store it until
    /// a human approves it, say; it is admitted again when it runs).
    pub fn into_input(self) -> Value {
        self.input
    }

    /// Runs the call: execute with panics and aborts contained, then the
    /// suspend payload or the output validated and the output mapped for the
    /// model. The tool starts when the future is first polled.
    pub fn run(self) -> impl Future<Output = Outcome> + Send + 'static {
        let Admitted {
            tool,
            input,
            ctx,
            workflow_state,
        } = self;
        async move { tool.run_admitted(input, ctx, workflow_state).await }
    }
}

impl Tool {
    /// Runs one call through the whole pipeline ([`admit`](Self::admit),
    /// then [`Admitted::run`]) and returns its outcome.
    ///
    /// `input` is the model's argument text or a JSON value. On a resume
    /// (`CallContext::resuming`) it is the input the call suspended with.
    /// Nothing happens until the returned future is first polled; it owns
    /// what it needs, so it can be spawned.
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
    ) -> impl Future<Output = Outcome> + Send + 'static {
        let tool = self.clone();
        let input = input.into();
        async move {
            match tool.admit(input, ctx) {
                Ok(admitted) => admitted.run().await,
                Err(error) => Outcome::Failed { error },
            }
        }
    }

    /// The first stage of a call: parses and repairs the arguments,
    /// validates them, the request context and, on resume, the resume data.
    ///
    /// Integral floats (`3.0`) are read as integers in tools whose input
    /// schema has integers: JSON Schema counts them as integers, and Rust's
    /// integer types (and many JSON consumers) do not.
    ///
    /// # Errors
    ///
    /// The model-facing error of the first stage that failed.
    pub fn admit(
        &self,
        input: impl Into<RawInput>,
        ctx: CallContext,
    ) -> Result<Admitted, ModelError> {
        if self.config_error().is_some() {
            return Err(self.configuration_error());
        }
        let mut input = self.validate_input(input)?;
        self.check_state(&ctx)?;
        self.validate_request_context(&ctx)?;
        self.validate_resume_data(&ctx)?;
        let workflow_state = self.validate_workflow_state(&ctx)?;
        if self.inner.has_integers {
            integral_floats_to_integers(&mut input);
        }
        Ok(Admitted {
            tool: self.clone(),
            input,
            ctx,
            workflow_state,
        })
    }

    /// Refuses a call that lacks application state the tool needs
    /// ([`Tool::required_state`]): a configuration error naming the types,
    /// before the tool runs.
    fn check_state(&self, ctx: &CallContext) -> Result<(), ModelError> {
        let missing: Vec<_> = self
            .inner
            .required_state
            .iter()
            .filter(|required| !ctx.state.satisfies(required))
            .collect();
        if missing.is_empty() {
            return Ok(());
        }
        Err(ModelError::new(
            ErrorKind::Configuration,
            missing_state_message(&self.inner.id, &missing),
        ))
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
        let Some(schema) = self.inner.input_schema() else {
            return Err(self.configuration_error());
        };
        let provided = match input.into() {
            RawInput::Json(value) => value,
            RawInput::Text(text) => parse_text(&text, schema.expects_object())
                .ok_or_else(|| ModelError::invalid_json(id))?,
        };
        if let Some(path) = too_deep(&provided, MAX_NESTING) {
            return Err(nesting_failure(Subject::Input, id, path, &provided));
        }
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

    /// Checks an output given from outside the tool, in place of running
    /// it (a declaration-only tool's result, or an answer instead of
    /// running: `Runtime::respond`), as an execution's output is checked:
    /// against the output schema, always strictly (the value comes from
    /// outside the tool, whatever its [`OutputValidation`]), with the same
    /// model-readable errors as inputs. Returns its model-facing form (the
    /// tool's `to_model_output`), which the model reads as the result.
    ///
    /// # Errors
    ///
    /// The model-facing error: an output that does not fit the schema (or
    /// nests too deep), a failing `to_model_output`, or the tool's
    /// configuration error.
    ///
    /// ```
    /// use serde_json::json;
    /// use tool_core::{ErrorKind, Tool};
    ///
    /// // Declaration-only: no execute function; the application supplies the result.
    /// let pick = Tool::builder("pick-color").description("Ask the user to pick a color")
    ///     .output_schema(json!({ "type": "object", "properties": { "color": { "type": "string" } }, "required": ["color"] }))
    ///     .build().unwrap();
    /// assert!(!pick.has_execute());
    /// assert_eq!(pick.check_output(&json!({ "color": "teal" })), Ok(None));
    /// let error = pick.check_output(&json!({ "colour": "teal" })).unwrap_err();
    /// assert_eq!(error.kind(), ErrorKind::OutputValidation);
    /// assert!(error.message().contains("color"), "{}", error.message());
    /// ```
    pub fn check_output(&self, output: &Value) -> Result<Option<ModelOutput>, ModelError> {
        if self.config_error().is_some() {
            return Err(self.configuration_error());
        }
        let id = &self.inner.id;
        if let Some(path) = too_deep(output, MAX_NESTING) {
            return Err(nesting_failure(Subject::Output, id, path, output));
        }
        if let Some(schema) = self.inner.output_schema() {
            check(schema, Subject::Output, id, output)?;
        }
        let Some(map) = &self.inner.to_model_output else {
            return Ok(None);
        };
        catch_panic(|| map(output)).map(Some).map_err(|message| {
            ModelError::new(
                ErrorKind::Panic,
                format!("Tool {id} failed unexpectedly in to_model_output: {message}"),
            )
        })
    }

    fn validate_request_context(&self, ctx: &CallContext) -> Result<(), ModelError> {
        let schema = self.inner.request_context_schema();
        if ctx.request_context.is_empty() && schema.is_none() {
            return Ok(());
        }
        // Built once, for both checks.
        let values = ctx.request_context.to_value();
        if let Some(path) = too_deep(&values, MAX_NESTING) {
            return Err(nesting_failure(
                Subject::RequestContext,
                &self.inner.id,
                path,
                &values,
            ));
        }
        match schema {
            Some(schema) => check(schema, Subject::RequestContext, &self.inner.id, &values),
            None => Ok(()),
        }
    }

    fn validate_resume_data(&self, ctx: &CallContext) -> Result<(), ModelError> {
        match &ctx.resume {
            Some(resume) => self.check_resume_data(&resume.data),
            None => Ok(()),
        }
    }

    /// Checks resume data given for a suspended call against the resume
    /// schema, as admission does when the call runs again (`null` is no
    /// data, and passes): what a decision checks before it claims the call,
    /// so that data that does not fit leaves the call waiting.
    ///
    /// # Errors
    ///
    /// The model-facing error: data that does not fit the resume schema.
    ///
    /// ```
    /// use serde_json::json;
    /// use tool_core::{ErrorKind, Tool, ToolError};
    ///
    /// let ask = Tool::builder("ask").description("Asks a person")
    ///     .resume_schema(json!({ "type": "boolean" }))
    ///     .execute(|_input, _ctx| async move { Ok::<_, ToolError>(json!("asked")) })
    ///     .build().unwrap();
    /// assert!(ask.check_resume_data(&json!(true)).is_ok());
    /// assert!(ask.check_resume_data(&json!(null)).is_ok());
    /// assert_eq!(ask.check_resume_data(&json!("yes")).unwrap_err().kind(), ErrorKind::ResumeValidation);
    /// ```
    pub fn check_resume_data(&self, data: &Value) -> Result<(), ModelError> {
        match self.inner.resume_schema() {
            // Nullish, not truthy: false, 0 and "" are resume data too.
            Some(schema) if !data.is_null() => check(schema, Subject::Resume, &self.inner.id, data),
            _ => Ok(()),
        }
    }

    /// Validates the workflow state against the state schema and
    /// deserializes it into the tool's state type, when both are there.
    fn validate_workflow_state(
        &self,
        ctx: &CallContext,
    ) -> Result<Option<DecodedState>, ModelError> {
        let Some(workflow) = &ctx.workflow else {
            return Ok(None);
        };
        let id = &self.inner.id;
        let state = &workflow.state;
        if let Some(path) = too_deep(state, MAX_NESTING) {
            return Err(nesting_failure(Subject::WorkflowState, id, path, state));
        }
        if let Some(schema) = self.inner.workflow_state_schema() {
            check(schema, Subject::WorkflowState, id, state)?;
        }
        let Some(workflow_state_type) = &self.inner.workflow_state_type else {
            return Ok(None);
        };
        (workflow_state_type.decode)(state)
            .map(Some)
            .map_err(|(path, message)| {
                failure(
                    Subject::WorkflowState,
                    id,
                    &[Issue { path, message }],
                    Some(state),
                )
            })
    }

    pub(crate) fn configuration_error(&self) -> ModelError {
        let reason = self.config_error().map_or_else(
            || "the tool is misconfigured".to_owned(),
            ToString::to_string,
        );
        ModelError::new(ErrorKind::Configuration, reason)
    }

    /// The second stage: starts the execute function and drives it to its
    /// end, then concludes.
    async fn run_admitted(
        &self,
        input: Value,
        ctx: CallContext,
        workflow_state: Option<DecodedState>,
    ) -> Outcome {
        let state = self.call_state(Step::Execute, ctx, workflow_state);
        let Some(executor) = &self.inner.executor else {
            // Declaration-only: the application gives the result
            // (`check_output` checks it); nothing here can produce one.
            let error = ModelError::new(
                ErrorKind::Execution,
                format!(
                    "Tool {} has no execute function: its result is supplied by the application, not run here",
                    self.inner.id
                ),
            );
            return Outcome::Failed { error };
        };
        let run = drive(&state, || executor(input, Arc::clone(&state))).await;
        self.conclude(&state, run)
    }

    /// What the call's functions share: its context, its span (a child of
    /// the context's parent span, named after `step`), what it suspends
    /// with and the workflow state.
    fn call_state(
        &self,
        step: Step,
        ctx: CallContext,
        workflow_state: Option<DecodedState>,
    ) -> Arc<CallShared> {
        let inner = &self.inner;
        let span = match (step, &ctx.parent_span) {
            (Step::Execute, Some(parent)) => {
                tracing::info_span!(parent: &**parent, "tool.execute", tool_id = %inner.id, call_id = %ctx.call_id)
            }
            (Step::Execute, None) => {
                tracing::info_span!("tool.execute", tool_id = %inner.id, call_id = %ctx.call_id)
            }
            (Step::Reconcile, Some(parent)) => {
                tracing::info_span!(parent: &**parent, "tool.reconcile", tool_id = %inner.id, call_id = %ctx.call_id)
            }
            (Step::Reconcile, None) => {
                tracing::info_span!("tool.reconcile", tool_id = %inner.id, call_id = %ctx.call_id)
            }
        };
        Arc::new(CallShared {
            tool_id: Arc::clone(&inner.id),
            ctx,
            span,
            suspended: Mutex::new(None),
            workflow_state,
            workflow_state_type: inner.workflow_state_type,
            new_state: Mutex::new(None),
        })
    }

    /// Runs the recovery question of an interrupted call: whether its effect
    /// happened, as the tool's reconcile hook finds out
    /// ([`ToolBuilder::reconcile`](crate::ToolBuilder::reconcile),
    /// `#[tool(reconcile = path)]`). `None` when the tool has no hook.
    ///
    /// For a runtime recovering a call that is not retry-safe: `input` is
    /// the input the call was stored with, `ctx` the context it would run
    /// with (its call id is the stored call's, so the hook sees the key the
    /// interrupted run gave the systems it called). The input, the request
    /// context and the resume data are validated as [`admit`](Self::admit)
    /// does, and the hook runs as execute does: in a span of its own
    /// (`tool.reconcile`), with panics and the abort signal contained.
    ///
    /// Resolves to:
    /// - `Ok(Reconciled::Happened(outcome))`: the effect happened, and
    ///   `outcome` is [`Outcome::Completed`] with the output the hook gave,
    ///   validated against the output schema and mapped for the model as an
    ///   executed call's output is (and the workflow state it set);
    /// - `Ok(Reconciled::NotHappened)`: it did not;
    /// - `Err(error)`: the hook could not tell. It failed, panicked, was
    ///   aborted or suspended, its input did not validate, or its output
    ///   did not fit the output schema (an
    ///   [`ErrorKind::OutputValidation`] error, as for execute; under
    ///   [`OutputValidation::Warn`] the mismatch is logged instead).
    ///
    /// Nothing happens until the future is first polled; it owns what it
    /// needs, so it can be spawned.
    ///
    /// ```
    /// use serde_json::json;
    /// use tool_core::{CallContext, ErrorKind, Reconciled, Tool, ToolError};
    ///
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// let send = Tool::builder("send-email").description("Send an email")
    ///     .output_schema(json!({ "type": "string" }))
    ///     .execute(|_input, _ctx| async move { Ok::<_, ToolError>(json!("sent")) })
    ///     .reconcile(|input, _key, _ctx| async move {
    ///         Ok::<_, ToolError>(match input["to"].as_str() {
    ///             Some("ann@example.com") => Reconciled::Happened(json!("sent")),
    ///             Some("bad@example.com") => Reconciled::Happened(json!(42)),
    ///             _ => Reconciled::NotHappened,
    ///         })
    ///     })
    ///     .build().unwrap();
    /// let ask = |to: &str| send.reconcile(json!({ "to": to }), CallContext::new("c1")).unwrap();
    /// let found = ask("ann@example.com").await.unwrap();
    /// assert_eq!(found.output().and_then(|outcome| outcome.output()), Some(&json!("sent")));
    /// assert_eq!(ask("bob@example.com").await.unwrap(), Reconciled::NotHappened);
    /// assert_eq!(ask("bad@example.com").await.unwrap_err().kind(), ErrorKind::OutputValidation);
    /// # });
    /// ```
    pub fn reconcile(
        &self,
        input: impl Into<RawInput>,
        ctx: CallContext,
    ) -> Option<impl Future<Output = Result<Reconciled<Outcome>, ModelError>> + Send + 'static>
    {
        let reconciler = Arc::clone(self.inner.reconciler.as_ref()?);
        let tool = self.clone();
        let input = input.into();
        Some(async move {
            let Admitted {
                input,
                ctx,
                workflow_state,
                ..
            } = tool.admit(input, ctx)?;
            let key = ctx.idempotency_key(&tool.inner.id);
            let state = tool.call_state(Step::Reconcile, ctx, workflow_state);
            let run = drive(&state, || reconciler(input, key, Arc::clone(&state))).await;
            tool.reconciled(&state, run)
        })
    }

    /// Maps how the reconcile step ended to its answer.
    fn reconciled(
        &self,
        state: &CallShared,
        run: Run<ReconcileExec>,
    ) -> Result<Reconciled<Outcome>, ModelError> {
        let id = &self.inner.id;
        let _entered = state.span.enter();
        let Exec { result, input } = match run {
            Run::Done(exec) => exec,
            Run::Panicked(message) => {
                tracing::error!(panic = %message, "reconcile panicked");
                return Err(ModelError::new(
                    ErrorKind::Panic,
                    format!("Tool {id} failed unexpectedly while reconciling: {message}"),
                ));
            }
            Run::Aborted => {
                return Err(ModelError::new(
                    ErrorKind::Execution,
                    format!("Tool {id} was aborted while reconciling"),
                ));
            }
        };
        if state.take_suspension().is_some() {
            return Err(ModelError::new(
                ErrorKind::Execution,
                format!("Tool {id} suspended while reconciling: a reconcile hook cannot suspend"),
            ));
        }
        match result {
            Ok(Reconciled::NotHappened) => Ok(Reconciled::NotHappened),
            Ok(Reconciled::Happened(executed)) => self
                .completed(executed, state.take_new_state())
                .map(Reconciled::Happened),
            Err(failure) => Err(self.failed(failure, &input)),
        }
    }

    /// Maps how the execute step ended to the call's outcome.
    fn conclude(&self, state: &CallShared, run: Run) -> Outcome {
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
            return self.suspended(state.ctx.call_id.clone(), input, suspension);
        }
        let result = match result {
            Ok(executed) => self.completed(executed, state.take_new_state()),
            Err(exec_failure) => Err(self.failed(exec_failure, &input)),
        };
        result.unwrap_or_else(|error| Outcome::Failed { error })
    }

    /// The model-facing error of a function that produced no output;
    /// `input` is what it ran on.
    fn failed(&self, exec_failure: ExecFailure, input: &Value) -> ModelError {
        let id = &self.inner.id;
        match exec_failure {
            ExecFailure::Tool(error) => {
                if let Some(source) = error.source() {
                    tracing::info!(error = source, "tool returned an error");
                }
                ModelError::new(ErrorKind::Execution, error.message())
                    .with_data(error.data().cloned())
            }
            ExecFailure::Input { path, reason } => {
                let issue = Issue {
                    path,
                    message: reason,
                };
                failure(Subject::Input, id, &[issue], Some(input))
            }
            ExecFailure::Output(reason) => ModelError::new(
                ErrorKind::OutputValidation,
                format!(
                    "Tool output validation failed for {id}. The output could not be serialized: {reason}"
                ),
            ),
            ExecFailure::Context(reason) => ModelError::new(
                ErrorKind::ResumeValidation,
                format!(
                    "Tool {id} could not resume: stored {}",
                    Excerpt::of(&reason)
                ),
            ),
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
        if let Some(schema) = self.inner.suspend_schema()
            && let Err(error) = check(schema, Subject::Suspend, id, &payload)
        {
            return Outcome::Failed { error };
        }
        Outcome::Suspended {
            call_id,
            input,
            payload,
            resume_schema: self.inner.definition.resume_schema.clone(),
        }
    }

    /// The output validated against the output schema and mapped for the
    /// model, with the new workflow state validated: the call's
    /// [`Outcome::Completed`], or the error it fails with.
    fn completed(
        &self,
        executed: Executed,
        new_state: Option<Result<Value, String>>,
    ) -> Result<Outcome, ModelError> {
        let Executed {
            output,
            model_output,
        } = executed;
        if let Some(schema) = self.inner.output_schema()
            && let Err(error) = check(schema, Subject::Output, &self.inner.id, &output)
        {
            match self.inner.definition.output_validation {
                OutputValidation::Strict => return Err(error),
                OutputValidation::Warn => {
                    tracing::warn!(error = %error, "tool output does not match its schema");
                }
            }
        }
        let model_output = match (model_output, &self.inner.to_model_output) {
            (Some(mapped), _) => Some(mapped),
            (None, Some(map)) => match catch_panic(|| map(&output)) {
                Ok(mapped) => Some(mapped),
                Err(message) => {
                    return Err(ModelError::new(
                        ErrorKind::Panic,
                        format!(
                            "Tool {} failed unexpectedly in to_model_output: {message}",
                            self.inner.id
                        ),
                    ));
                }
            },
            (None, None) => None,
        };
        let state = match new_state {
            None => None,
            Some(Err(reason)) => {
                return Err(ModelError::new(
                    ErrorKind::WorkflowStateValidation,
                    format!(
                        "Workflow state validation failed for {}. The state the tool set could not be serialized: {reason}",
                        self.inner.id
                    ),
                ));
            }
            Some(Ok(state)) => {
                if let Some(path) = too_deep(&state, MAX_NESTING) {
                    return Err(nesting_failure(
                        Subject::NewWorkflowState,
                        &self.inner.id,
                        path,
                        &state,
                    ));
                }
                if let Some(schema) = self.inner.workflow_state_schema() {
                    check(schema, Subject::NewWorkflowState, &self.inner.id, &state)?;
                }
                Some(state)
            }
        };
        Ok(Outcome::Completed {
            output,
            model_output,
            state,
        })
    }
}

/// Starts a function of the call with `start` and drives it to its end,
/// turning a panic into [`Run::Panicked`] and a fired abort signal into
/// [`Run::Aborted`].
async fn drive<T>(
    state: &Arc<CallShared>,
    start: impl FnOnce() -> Pin<Box<dyn Future<Output = T> + Send>>,
) -> Run<T> {
    let abort = state.ctx.abort.clone();
    if abort.is_aborted() {
        return Run::Aborted;
    }
    let started = {
        let _entered = state.span.enter();
        catch_panic(start)
    };
    let mut running = match started {
        Err(message) => return Run::Panicked(message),
        Ok(running) => running,
    };
    let mut aborted = pin!(abort.aborted());
    poll_fn(|cx| {
        let _entered = state.span.enter();
        // The tool first: a tool that finishes at once never
        // registers with the abort signal.
        match catch_panic(|| running.as_mut().poll(cx)) {
            Ok(Poll::Ready(result)) => return Poll::Ready(Run::Done(result)),
            Ok(Poll::Pending) => {}
            Err(message) => return Poll::Ready(Run::Panicked(message)),
        }
        match aborted.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Run::Aborted),
            Poll::Pending => Poll::Pending,
        }
    })
    .await
}

/// The model-facing error for a value that nests beyond [`MAX_NESTING`].
pub(crate) fn nesting_failure(
    subject: Subject,
    tool_id: &str,
    path: Vec<String>,
    value: &Value,
) -> ModelError {
    let issue = Issue {
        path,
        message: format!("Nested deeper than {MAX_NESTING} levels; flatten the value"),
    };
    failure(subject, tool_id, &[issue], Some(value))
}

fn check(
    schema: Schema<'_>,
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
