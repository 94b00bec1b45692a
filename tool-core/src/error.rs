//! Errors: what a tool's execute function returns ([`ToolError`]), what the
//! model receives ([`ModelError`]), and what building a tool can fail with
//! ([`BuildError`]).

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use serde::ser::SerializeMap;
use serde::{Deserialize as _, Serialize, Serializer};
use serde_json::Value;

use crate::Excerpt;

/// The error a tool's execute function returns.
///
/// Any `std::error::Error + Send + Sync + 'static` converts into it, so `?`
/// works inside a tool on I/O, parse and HTTP errors alike: its message
/// becomes what the model reads, and the error itself is kept as the
/// [`source`](ToolError::source), for logs (the pipeline logs it when the
/// call fails). Attach structured details with [`ToolError::with_data`].
///
/// (`ToolError` does not implement `std::error::Error` itself: that would
/// make the blanket conversion overlap with `From<T> for T`, the same
/// trade-off `anyhow::Error` makes.)
///
/// ```
/// use tool_core::ToolError;
///
/// fn parse_port(text: &str) -> Result<u16, ToolError> {
///     let port: u16 = text.parse()?; // ParseIntError converts
///     if port == 0 {
///         return Err(ToolError::new("port 0 is reserved").with_data(serde_json::json!({ "port": port })));
///     }
///     Ok(port)
/// }
/// assert_eq!(parse_port("0").unwrap_err().message(), "port 0 is reserved");
/// let error = parse_port("x").unwrap_err();
/// assert_eq!(error.message(), "invalid digit found in string");
/// assert!(error.source().unwrap().is::<std::num::ParseIntError>());
/// ```
pub struct ToolError {
    message: String,
    data: Option<Value>,
    source: Option<Box<dyn std::error::Error + Send + Sync>>,
}

impl ToolError {
    /// An error with a message for the model.
    pub fn new(message: impl Into<String>) -> Self {
        ToolError {
            message: message.into(),
            data: None,
            source: None,
        }
    }

    /// Keeps `source` as the underlying error (for logs; the model reads
    /// the message only).
    #[must_use]
    pub fn with_source(
        mut self,
        source: impl Into<Box<dyn std::error::Error + Send + Sync>>,
    ) -> Self {
        self.source = Some(source.into());
        self
    }

    /// The underlying error, when the error came from one.
    pub fn source(&self) -> Option<&(dyn std::error::Error + Send + Sync + 'static)> {
        self.source.as_deref()
    }

    /// Attaches structured data, sent to the model beside the message.
    #[must_use]
    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }

    /// The message the model reads.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// Structured data attached with [`ToolError::with_data`].
    pub fn data(&self) -> Option<&Value> {
        self.data.as_ref()
    }

    /// The marker `ToolContext::suspend` returns: the call suspended, it did not fail.
    pub(crate) fn suspension() -> Self {
        ToolError::new("tool call suspended")
    }
}

impl<E: std::error::Error + Send + Sync + 'static> From<E> for ToolError {
    fn from(error: E) -> Self {
        ToolError::new(error.to_string()).with_source(error)
    }
}

impl fmt::Debug for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolError")
            .field("message", &self.message)
            .field("data", &self.data)
            .field("source", &self.source)
            .finish()
    }
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// Which stage of the call produced a [`ModelError`]. Serializes as its
/// snake_case name (`"input_validation"`), as stores record it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum ErrorKind {
    /// The arguments were not JSON, even after safe repairs.
    InvalidJson,
    /// The arguments did not match the input schema.
    InputValidation,
    /// The request context did not match the request-context schema.
    RequestContextValidation,
    /// The payload given to `suspend` did not match the suspend schema.
    SuspendValidation,
    /// The data given to `resume` did not match the resume schema.
    ResumeValidation,
    /// The tool returned output that does not match its output schema.
    OutputValidation,
    /// The workflow state the host gave (`CallContext::with_workflow`), or
    /// the one the tool set (`Workflow::set_state`), does not match the
    /// tool's state schema or type.
    WorkflowStateValidation,
    /// No tool with the requested id exists.
    UnknownTool,
    /// The execute function returned an error.
    Execution,
    /// The execute function panicked.
    Panic,
    /// The tool itself is misconfigured (for example its schema does not compile).
    Configuration,
}

/// Validation problems grouped by field, like the reference's `validationErrors`:
/// `errors` at this level, `fields` for nested properties and array indexes.
///
/// ```
/// use tool_core::ValidationErrors;
///
/// let mut errors = ValidationErrors::default();
/// errors.add(&["items", "0", "tags"], "Expected array, received string");
/// let json = serde_json::to_value(&errors).unwrap();
/// assert_eq!(json["fields"]["items"]["fields"]["0"]["fields"]["tags"]["errors"][0], "Expected array, received string");
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(default)]
pub struct ValidationErrors {
    /// Messages about the value at this level.
    pub errors: Vec<String>,
    /// Messages about nested values, by property name or array index.
    pub fields: BTreeMap<String, ValidationErrors>,
}

impl ValidationErrors {
    /// Records `message` at `path` (empty path: this level).
    pub fn add<S: AsRef<str>>(&mut self, path: &[S], message: impl Into<String>) {
        let mut node = self;
        for segment in path {
            node = node.fields.entry(segment.as_ref().to_owned()).or_default();
        }
        node.errors.push(message.into());
    }

    /// True when no message was recorded anywhere.
    pub fn is_empty(&self) -> bool {
        self.errors.is_empty() && self.fields.values().all(ValidationErrors::is_empty)
    }
}

/// The error object the model receives when a call fails:
/// `{ "error": true, "message": ..., "validationErrors": {...} }`.
///
/// The message follows the reference's formats so a model can correct its
/// arguments, e.g. `Tool input validation failed for weather-tool. Please fix
/// the following errors and try again:\n- location: Required\n\nProvided
/// arguments: {}`.
///
/// ```
/// use tool_core::{ErrorKind, ModelError};
///
/// let error = ModelError::unknown_tool("wether", ["weather-tool", "search"]);
/// assert_eq!(error.kind(), ErrorKind::UnknownTool);
/// assert_eq!(error.message(), r#"Tool "wether" not found. Available tools: weather-tool, search."#);
/// assert_eq!(error.to_json()["error"], true);
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct ModelError {
    kind: ErrorKind,
    message: String,
    // Boxed: errors travel inside `Result`s and outcomes on the hot path,
    // where a small error keeps the success case cheap to move.
    validation_errors: Option<Box<ValidationErrors>>,
    data: Option<Box<Value>>,
}

impl ModelError {
    /// An error of `kind` with a message for the model.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        ModelError {
            kind,
            message: message.into(),
            validation_errors: None,
            data: None,
        }
    }

    pub(crate) fn with_validation_errors(mut self, errors: ValidationErrors) -> Self {
        self.validation_errors = Some(Box::new(errors));
        self
    }

    pub(crate) fn with_data(mut self, data: Option<Value>) -> Self {
        self.data = data.map(Box::new);
        self
    }

    /// `Tool "x" not found. Available tools: a, b.`, the requested name
    /// quoted as an [`Excerpt`]: it comes from the model.
    ///
    /// ```
    /// use tool_core::ModelError;
    ///
    /// let error = ModelError::unknown_tool("wether", ["weather"]);
    /// assert_eq!(error.message(), "Tool \"wether\" not found. Available tools: weather.");
    /// let huge = "x".repeat(1 << 20);
    /// assert!(ModelError::unknown_tool(&huge, ["weather"]).message().len() < 300);
    /// ```
    pub fn unknown_tool<I, S>(tool_id: &str, available: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let names: Vec<String> = available
            .into_iter()
            .map(|s| s.as_ref().to_owned())
            .collect();
        ModelError::new(
            ErrorKind::UnknownTool,
            format!(
                "Tool \"{}\" not found. Available tools: {}.",
                Excerpt::of(tool_id),
                names.join(", ")
            ),
        )
    }

    /// The message for arguments that are not JSON, the tool's name quoted
    /// as an [`Excerpt`].
    ///
    /// ```
    /// use tool_core::{ErrorKind, ModelError};
    ///
    /// let error = ModelError::invalid_json("weather");
    /// assert_eq!(error.kind(), ErrorKind::InvalidJson);
    /// assert!(error.message().starts_with("Tool \"weather\" received invalid arguments"));
    /// ```
    pub fn invalid_json(tool_id: &str) -> Self {
        ModelError::new(
            ErrorKind::InvalidJson,
            format!(
                "Tool \"{}\" received invalid arguments \u{2014} the provided JSON could not be parsed. Please provide valid JSON arguments.",
                Excerpt::of(tool_id)
            ),
        )
    }

    /// Which stage failed.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The message the model reads.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// Validation problems by field, when the failure was a validation.
    pub fn validation_errors(&self) -> Option<&ValidationErrors> {
        self.validation_errors.as_deref()
    }

    /// Structured data the tool attached to its error.
    pub fn data(&self) -> Option<&Value> {
        self.data.as_deref()
    }

    /// The JSON object sent to the model.
    pub fn to_json(&self) -> Value {
        serde_json::to_value(self).unwrap_or_else(|_| Value::String(self.message.clone()))
    }

    /// The error whose [`to_json`](Self::to_json) is `json`, of `kind` (which
    /// the model-facing object does not carry): how a recorded error is read
    /// back. `None` when `json` has no string `message`.
    ///
    /// ```
    /// use tool_core::{ErrorKind, ModelError};
    ///
    /// let error = ModelError::invalid_json("weather");
    /// let back = ModelError::from_json(error.kind(), &error.to_json()).unwrap();
    /// assert_eq!(back, error);
    /// assert!(ModelError::from_json(ErrorKind::Execution, &serde_json::json!(1)).is_none());
    /// ```
    pub fn from_json(kind: ErrorKind, json: &Value) -> Option<Self> {
        let message = json.get("message")?.as_str()?;
        let validation_errors = json
            .get("validationErrors")
            .and_then(|errors| ValidationErrors::deserialize(errors).ok());
        let mut error = ModelError::new(kind, message).with_data(json.get("data").cloned());
        if let Some(errors) = validation_errors {
            error = error.with_validation_errors(errors);
        }
        Some(error)
    }
}

impl fmt::Display for ModelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ModelError {}

impl Serialize for ModelError {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let len =
            2 + usize::from(self.validation_errors.is_some()) + usize::from(self.data.is_some());
        let mut map = serializer.serialize_map(Some(len))?;
        map.serialize_entry("error", &true)?;
        map.serialize_entry("message", &self.message)?;
        if let Some(errors) = &self.validation_errors {
            map.serialize_entry("validationErrors", errors)?;
        }
        if let Some(data) = &self.data {
            map.serialize_entry("data", data)?;
        }
        map.end()
    }
}

/// Why a tool could not be built.
///
/// Two errors are equal when they say the same: an invalid schema's
/// `source` is not compared (its message is the `reason`).
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// The id does not match `^[a-zA-Z0-9_-]{1,64}$`.
    #[error(
        "invalid tool id {:?}: ids must match ^[a-zA-Z0-9_-]{{1,64}}$ (letters, digits, '_' and '-', 1 to 64 characters)",
        Excerpt::of(.id)
    )]
    InvalidId {
        /// The rejected id.
        id: String,
    },
    /// A tool needs a description for the model.
    #[error("tool {id:?} has no description: the model needs one to know when to call it")]
    MissingDescription {
        /// The tool's id.
        id: String,
    },
    /// A tool without an execute function (declaration-only: its result
    /// is supplied by the application) was given an option about running
    /// it: `background`, `transactional` or `reconcile`.
    #[error(
        "tool {id:?} has no execute function (its result is supplied by the application), so it cannot be {option}: give it an execute function or drop that option"
    )]
    NotExecutable {
        /// The tool's id.
        id: String,
        /// The option: "background", "transactional" or "reconcile".
        option: &'static str,
    },
    /// A schema is not a valid JSON Schema.
    #[error("tool {id:?} has an invalid {which} schema: {reason}")]
    InvalidSchema {
        /// The tool's id.
        id: String,
        /// Which schema: input, output, suspend, resume or request context.
        which: &'static str,
        /// What the schema compiler reported.
        reason: String,
        /// The schema compiler's error, shared so that the error stays
        /// `Clone`, and type-erased so that the compiler's types are not
        /// part of this API.
        #[source]
        source: Arc<dyn std::error::Error + Send + Sync>,
    },
    /// A schema nests deeper than [`MAX_SCHEMA_DEPTH`](crate::MAX_SCHEMA_DEPTH)
    /// levels; it is refused before anything walks it.
    #[error(
        "tool {id:?}: its {which} schema nests deeper than {limit} levels (at {path:?}); schemas deeper than that are refused"
    )]
    SchemaTooDeep {
        /// The tool's id.
        id: String,
        /// Which schema: input, output, suspend, resume or request context.
        which: &'static str,
        /// JSON Pointer to the first place beyond the limit.
        path: String,
        /// The limit.
        limit: usize,
    },
    /// Two tools in one collection share an id.
    #[error("duplicate tool id {id:?}: every tool in a set needs its own id")]
    DuplicateId {
        /// The repeated id.
        id: String,
    },
    /// An editable field ([`ToolBuilder::editable`](crate::ToolBuilder::editable),
    /// `#[tool(require_approval(editable(..)))]`) that is not a top-level
    /// property of the input schema. The message quotes the field and the
    /// properties (at most 20, each as an [`Excerpt`]).
    ///
    /// ```
    /// use serde_json::json;
    /// use tool_core::{BuildError, Tool};
    ///
    /// let error = Tool::builder("transfer").description("Move money")
    ///     .input_schema(json!({ "type": "object", "properties": { "amount": { "type": "integer" }, "to": { "type": "string" } } }))
    ///     .editable(["amout"])
    ///     .build().unwrap_err();
    /// assert_eq!(error.to_string(), r#"tool "transfer" declares "amout" editable, but it is not a top-level property of its input schema: its properties are: amount, to"#);
    /// ```
    #[error(
        "tool {id:?} declares {:?} editable, but it is not a top-level property of its input schema: {}",
        Excerpt::of(.field),
        properties_sentence(.properties)
    )]
    UnknownEditableField {
        /// The tool's id.
        id: String,
        /// The field as declared.
        field: String,
        /// The input schema's top-level properties.
        properties: Vec<String>,
    },
    /// An editable field listed twice.
    #[error(
        "tool {id:?} lists the editable field {:?} twice: each field is listed once",
        Excerpt::of(.field)
    )]
    DuplicateEditableField {
        /// The tool's id.
        id: String,
        /// The repeated field.
        field: String,
    },
    /// An editable field named by the empty string.
    #[error(
        "tool {id:?} lists an empty name among its editable fields: name top-level properties of its input schema"
    )]
    EmptyEditableField {
        /// The tool's id.
        id: String,
    },
}

impl PartialEq for BuildError {
    fn eq(&self, other: &Self) -> bool {
        use BuildError::*;
        match (self, other) {
            (InvalidId { id: a }, InvalidId { id: b })
            | (MissingDescription { id: a }, MissingDescription { id: b })
            | (DuplicateId { id: a }, DuplicateId { id: b })
            | (EmptyEditableField { id: a }, EmptyEditableField { id: b }) => a == b,
            (
                DuplicateEditableField { id: a, field: x },
                DuplicateEditableField { id: b, field: y },
            ) => a == b && x == y,
            (
                UnknownEditableField {
                    id: a,
                    field: x,
                    properties: p,
                },
                UnknownEditableField {
                    id: b,
                    field: y,
                    properties: q,
                },
            ) => a == b && x == y && p == q,
            (NotExecutable { id: a, option: x }, NotExecutable { id: b, option: y }) => {
                a == b && x == y
            }
            (
                InvalidSchema {
                    id: a,
                    which: which_a,
                    reason: reason_a,
                    source: _,
                },
                InvalidSchema {
                    id: b,
                    which: which_b,
                    reason: reason_b,
                    source: _,
                },
            ) => a == b && which_a == which_b && reason_a == reason_b,
            (
                SchemaTooDeep {
                    id: a,
                    which: which_a,
                    path: path_a,
                    limit: limit_a,
                },
                SchemaTooDeep {
                    id: b,
                    which: which_b,
                    path: path_b,
                    limit: limit_b,
                },
            ) => a == b && which_a == which_b && path_a == path_b && limit_a == limit_b,
            _ => false,
        }
    }
}

impl Eq for BuildError {}

/// How many names of properties an error lists: a schema of a thousand
/// properties must not make an error of a thousand names.
const MAX_LISTED_PROPERTIES: usize = 20;

/// `a, b, c` (each an [`Excerpt`]), at most [`MAX_LISTED_PROPERTIES`] of
/// them and how many more.
pub(crate) fn listed_names(names: &[String]) -> String {
    let mut listed = names
        .iter()
        .take(MAX_LISTED_PROPERTIES)
        .map(|name| Excerpt::of(name).to_string())
        .collect::<Vec<_>>()
        .join(", ");
    if names.len() > MAX_LISTED_PROPERTIES {
        listed.push_str(&format!(
            " and {} more",
            names.len() - MAX_LISTED_PROPERTIES
        ));
    }
    listed
}

/// What a build error says of the input schema's properties.
pub(crate) fn properties_sentence(properties: &[String]) -> String {
    if properties.is_empty() {
        "it has no properties".to_owned()
    } else {
        format!("its properties are: {}", listed_names(properties))
    }
}

/// True when `id` is a valid tool id: `^[a-zA-Z0-9_-]{1,64}$`, the pattern
/// every provider accepts.
///
/// ```
/// assert!(tool_core::is_valid_tool_id("weather-tool"));
/// assert!(!tool_core::is_valid_tool_id("weather tool"));
/// ```
pub fn is_valid_tool_id(id: &str) -> bool {
    (1..=64).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

#[cfg(test)]
mod tests {
    use std::error::Error as _;

    use serde_json::json;

    use super::{BuildError, ToolError};
    use crate::Tool;

    #[test]
    fn an_invalid_schema_keeps_the_compilers_error_as_its_source() {
        let build = || {
            Tool::builder("broken")
                .description("A tool with a schema that does not compile")
                .input_schema(json!({ "type": "object", "properties": { "n": { "type": 5 } } }))
                .execute(|input, _ctx| async move { Ok::<_, ToolError>(input) })
                .build()
                .unwrap_err()
        };
        let error = build();
        let BuildError::InvalidSchema { reason, .. } = &error else {
            panic!("{error:?}");
        };
        let source = error.source().expect("the schema compiler's error");
        assert_eq!(&source.to_string(), reason);
        // Equal when they say the same, though each has its own source.
        assert_eq!(error, build());
        assert_eq!(error.clone(), error);
        assert!(
            BuildError::DuplicateId { id: "a".into() }
                .source()
                .is_none()
        );
    }
}
