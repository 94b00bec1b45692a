//! Validation of JSON values against a tool's schemas, with messages in the
//! reference's format: one `- path: message` line per problem, where `path`
//! is dotted (`items.0.tags`) and `root` stands for the value itself.

use std::fmt::Write as _;
use std::sync::{Arc, OnceLock};

use jsonschema::error::ValidationErrorKind;
use jsonschema::paths::LocationSegment;
use serde_json::Value;

use crate::Excerpt;
use crate::error::{ErrorKind, ModelError, ValidationErrors};

/// Longest dump of a value quoted in an error message, in characters.
const DUMP_LIMIT: usize = 200;

/// How many problems a validation error lists: a model acts on the first
/// ones, and a message must stay small however broken the value is (a
/// million wrong array items once made a 45 MB message).
pub(crate) const MAX_LISTED_ISSUES: usize = 20;

/// How many unexpected keys a message names: the model needs a few to see
/// what it did wrong, and an object of a million keys must not make a
/// message of a million names.
const MAX_LISTED_KEYS: usize = 10;

/// Request-context keys whose values never appear in error messages.
const SENSITIVE_KEYS: [&str; 7] = [
    "password",
    "secret",
    "token",
    "apikey",
    "api_key",
    "auth",
    "credential",
];

/// One problem found in a value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Issue {
    /// Property names and array indexes from the root to the problem.
    pub path: Vec<String>,
    /// What is wrong, for the model.
    pub message: String,
}

impl Issue {
    /// `items.0.tags`, or `root` for the value itself.
    pub fn dotted_path(&self) -> String {
        if self.path.is_empty() {
            "root".to_owned()
        } else {
            self.path.join(".")
        }
    }
}

/// Where a tool's schema came from, which decides what building checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SchemaOrigin {
    /// Derived from a Rust type by schemars: valid by construction.
    Derived,
    /// Written by hand: checked against its meta-schema when the tool is
    /// built, so that a malformed one fails the build.
    Given,
}

/// A schema's validator, compiled on first use: a runtime with a thousand
/// tools starts without compiling validators it may not need yet. The
/// schema's JSON stays in the tool's definition, not copied here.
pub(crate) struct LazyValidator {
    validator: OnceLock<Result<jsonschema::Validator, Arc<jsonschema::ValidationError<'static>>>>,
    /// Whether the schema describes objects, looked up once: every call asks.
    expects_object: bool,
}

impl LazyValidator {
    /// The validator of `schema`, left for first use; a given schema is
    /// checked against its meta-schema now.
    pub(crate) fn new(
        schema: &Value,
        origin: SchemaOrigin,
    ) -> Result<Self, jsonschema::ValidationError<'static>> {
        if origin == SchemaOrigin::Given {
            let meta = jsonschema::meta::validator_for(schema)?;
            // The yes-or-no check is the cheap one; the error only when it fails.
            if !meta.is_valid(schema) {
                meta.validate(schema)
                    .map_err(jsonschema::ValidationError::to_owned)?;
            }
        }
        Ok(LazyValidator {
            validator: OnceLock::new(),
            expects_object: crate::schema::expects_object(schema),
        })
    }

    /// The validator of `schema` (the one this was made for), compiled on
    /// the first call; the compiler's error when the schema passed its
    /// meta-schema and still does not compile (a `$ref` that resolves
    /// nowhere, a pattern that is no regex).
    pub(crate) fn compiled(
        &self,
        schema: &Value,
    ) -> Result<&jsonschema::Validator, &Arc<jsonschema::ValidationError<'static>>> {
        self.validator
            .get_or_init(|| {
                jsonschema::options()
                    .should_validate_formats(false)
                    .build(schema)
                    .map_err(Arc::new)
            })
            .as_ref()
    }
}

/// A tool's schema as a call checks values against it: its JSON and its
/// validator.
#[derive(Clone, Copy)]
pub(crate) struct Schema<'a> {
    json: &'a Value,
    validator: &'a LazyValidator,
}

impl<'a> Schema<'a> {
    /// The pair, when the tool has the schema and its validator.
    pub(crate) fn pair(
        json: Option<&'a Value>,
        validator: Option<&'a LazyValidator>,
    ) -> Option<Self> {
        Some(Schema {
            json: json?,
            validator: validator?,
        })
    }

    pub(crate) fn expects_object(self) -> bool {
        self.validator.expects_object
    }

    /// Compiles the validator (once); the compiler's error if it failed.
    pub(crate) fn compile_error(self) -> Option<&'a Arc<jsonschema::ValidationError<'static>>> {
        self.validator.compiled(self.json).err()
    }

    pub(crate) fn schema(self) -> &'a Value {
        self.json
    }

    /// Whether `instance` is valid; never, under a schema that does not
    /// compile (calls are refused before they get here, see
    /// `Tool::config_error`).
    pub(crate) fn is_valid(self, instance: &Value) -> bool {
        self.validator
            .compiled(self.json)
            .is_ok_and(|validator| validator.is_valid(instance))
    }

    /// The problems in `instance`, at most [`MAX_LISTED_ISSUES`] + 1 (one
    /// more than a message lists, so it can say there are more); empty when
    /// it is valid.
    pub(crate) fn issues(self, instance: &Value) -> Vec<Issue> {
        let validator = match self.validator.compiled(self.json) {
            Ok(validator) if validator.is_valid(instance) => return Vec::new(),
            Ok(validator) => validator,
            Err(error) => {
                return vec![Issue {
                    path: Vec::new(),
                    message: format!("the schema does not compile: {error}"),
                }];
            }
        };
        validator
            .iter_errors(instance)
            .flat_map(|error| issues_of(&error))
            .take(MAX_LISTED_ISSUES + 1)
            .collect()
    }
}

/// The problems one validation error stands for: itself, or for a value
/// that matches none of a `oneOf`/`anyOf`'s shapes, the problems within the
/// one shape it was meant for when its tag or type picks one out.
fn issues_of(error: &jsonschema::ValidationError<'_>) -> Vec<Issue> {
    if let ValidationErrorKind::AnyOf { context } | ValidationErrorKind::OneOfNotValid { context } =
        error.kind()
        && let Some(branch) = intended_branch(&instance_tokens(error), context)
    {
        return branch.iter().flat_map(issues_of).collect();
    }
    vec![issue_of(error)]
}

/// The one branch of a `oneOf`/`anyOf` whose errors do not say that the
/// value is of another shape: of another type (an error on the value
/// itself), or with another tag (a `const` or `enum` error on one of its
/// own properties, as serde's tagged enums derive). `None` when no branch or
/// several remain: the value then gets the generic message.
fn intended_branch<'a>(
    at: &[String],
    branches: &'a [Vec<jsonschema::ValidationError<'static>>],
) -> Option<&'a [jsonschema::ValidationError<'static>]> {
    let mut candidates = branches.iter().filter(|errors| {
        !errors.iter().any(|error| {
            let path = instance_tokens(error);
            match error.kind() {
                ValidationErrorKind::Type { .. } => path == at,
                ValidationErrorKind::Constant { .. } | ValidationErrorKind::Enum { .. } => {
                    path.len() == at.len() + 1 && path.starts_with(at)
                }
                _ => false,
            }
        })
    });
    match (candidates.next(), candidates.next()) {
        (Some(branch), None) => Some(branch),
        _ => None,
    }
}

/// Property names (as an [`Excerpt`]: they come from the value and are
/// quoted to the model) and array indexes from the root to the error's value.
fn instance_tokens(error: &jsonschema::ValidationError<'_>) -> Vec<String> {
    error
        .instance_path()
        .segments()
        .map(|segment| match segment {
            LocationSegment::Property(name) => Excerpt::of(&name).to_string(),
            LocationSegment::Index(index) => index.to_string(),
        })
        .collect()
}

fn issue_of(error: &jsonschema::ValidationError<'_>) -> Issue {
    let mut path = instance_tokens(error);
    let instance = error.instance();
    let message = match error.kind() {
        ValidationErrorKind::Required { property } => {
            path.push(
                property
                    .as_str()
                    .map_or_else(|| property.to_string(), str::to_owned),
            );
            "Required".to_owned()
        }
        ValidationErrorKind::Type { kind } => {
            let expected = match kind {
                jsonschema::error::TypeKind::Single(t) => t.to_string(),
                jsonschema::error::TypeKind::Multiple(set) => set
                    .iter()
                    .map(|t| t.to_string())
                    .collect::<Vec<_>>()
                    .join(" | "),
            };
            format!("Expected {expected}, received {}", json_type(instance))
        }
        ValidationErrorKind::AdditionalProperties { unexpected } => {
            format!("Unrecognized key(s) in object: {}", quoted_keys(unexpected))
        }
        ValidationErrorKind::Enum { options } => {
            let expected = options
                .as_array()
                .map(|values| values.iter().map(literal).collect::<Vec<_>>().join(" | "))
                .unwrap_or_else(|| options.to_string());
            format!(
                "Invalid enum value. Expected {expected}, received {}",
                received(instance)
            )
        }
        ValidationErrorKind::Constant { expected_value } => format!(
            "Invalid literal value, expected {}",
            literal(expected_value)
        ),
        ValidationErrorKind::Minimum { limit } => {
            format!("Number must be greater than or equal to {limit}")
        }
        ValidationErrorKind::ExclusiveMinimum { limit } => {
            format!("Number must be greater than {limit}")
        }
        ValidationErrorKind::Maximum { limit } => {
            format!("Number must be less than or equal to {limit}")
        }
        ValidationErrorKind::ExclusiveMaximum { limit } => {
            format!("Number must be less than {limit}")
        }
        ValidationErrorKind::MinLength { limit } => {
            format!("String must contain at least {limit} character(s)")
        }
        ValidationErrorKind::MaxLength { limit } => {
            format!("String must contain at most {limit} character(s)")
        }
        ValidationErrorKind::MinItems { limit } => {
            format!("Array must contain at least {limit} element(s)")
        }
        ValidationErrorKind::MaxItems { limit } => {
            format!("Array must contain at most {limit} element(s)")
        }
        ValidationErrorKind::Pattern { pattern } => {
            format!("Invalid string: must match pattern {pattern}")
        }
        ValidationErrorKind::AnyOf { context } | ValidationErrorKind::OneOfNotValid { context } => {
            match allowed_values(context) {
                // An enum written as one `const` per variant (schemars does
                // so for documented variants): name the values, as `enum` does.
                Some(values) => format!(
                    "Invalid enum value. Expected {}, received {}",
                    values.join(" | "),
                    received(instance)
                ),
                None => format!(
                    "Invalid input: {} matches none of the allowed shapes",
                    json_type(instance)
                ),
            }
        }
        ValidationErrorKind::OneOfMultipleValid { .. } => {
            "Invalid input: matches more than one of the allowed shapes".to_owned()
        }
        // The validator's own wording may quote the value (`uniqueItems`
        // quotes the whole array).
        _ => Excerpt::of(&error.to_string()).to_string(),
    };
    Issue { path, message }
}

/// The values a `oneOf`/`anyOf` allows when each of its shapes is one
/// `const` or `enum` (each branch refused the value with that error alone).
fn allowed_values(context: &[Vec<jsonschema::ValidationError<'static>>]) -> Option<Vec<String>> {
    let mut values = Vec::new();
    for branch in context {
        let [error] = branch.as_slice() else {
            return None;
        };
        match error.kind() {
            ValidationErrorKind::Constant { expected_value } => {
                values.push(literal(expected_value))
            }
            ValidationErrorKind::Enum { options } => {
                values.extend(options.as_array()?.iter().map(literal));
            }
            _ => return None,
        }
    }
    (!values.is_empty()).then_some(values)
}

pub(crate) fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn literal(value: &Value) -> String {
    match value {
        Value::String(s) => format!("'{s}'"),
        other => other.to_string(),
    }
}

/// A value the model sent, quoted as [`literal`] quotes the schema's, as an
/// [`Excerpt`].
fn received(value: &Value) -> String {
    match value {
        Value::String(s) => format!("'{}'", Excerpt::of(s)),
        other => Excerpt::of(&other.to_string()).to_string(),
    }
}

/// The first [`MAX_LISTED_KEYS`] keys, each as an [`Excerpt`], and how many
/// more there are.
fn quoted_keys(keys: &[String]) -> String {
    let mut listed = keys
        .iter()
        .take(MAX_LISTED_KEYS)
        .map(|key| format!("'{}'", Excerpt::of(key)))
        .collect::<Vec<_>>()
        .join(", ");
    if keys.len() > MAX_LISTED_KEYS {
        let _ = write!(listed, " and {} more", keys.len() - MAX_LISTED_KEYS);
    }
    listed
}

/// The value pretty-printed as the reference does (`JSON.stringify(v, null, 2)`),
/// cut at 200 characters with `... (truncated)`.
pub(crate) fn dump(value: &Value) -> String {
    let text = serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string());
    match text.char_indices().nth(DUMP_LIMIT) {
        Some((cut, _)) => format!("{}... (truncated)", &text[..cut]),
        None => text,
    }
}

/// A copy of `value` with the values of sensitive keys replaced by `[REDACTED]`.
pub(crate) fn redact(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(key, v)| {
                    let lower = key.to_lowercase();
                    if SENSITIVE_KEYS.iter().any(|s| lower.contains(s)) {
                        (key.clone(), Value::String("[REDACTED]".to_owned()))
                    } else {
                        (key.clone(), redact(v))
                    }
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(redact).collect()),
        other => other.clone(),
    }
}

/// Which schema a failure is about; selects the reference's message format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Subject {
    Input,
    RequestContext,
    Suspend,
    Resume,
    Output,
    /// The workflow state a host gave.
    WorkflowState,
    /// The workflow state a tool set.
    NewWorkflowState,
    /// A reviewer's edit of the input.
    Edit,
}

/// Builds the model-facing error for `issues` found in `value`; `value` is
/// quoted after the list when given.
pub(crate) fn failure(
    subject: Subject,
    tool_id: &str,
    issues: &[Issue],
    value: Option<&Value>,
) -> ModelError {
    const FIX: &str = "Please fix the following errors and try again:";
    let (kind, headline, quoted_as) = match subject {
        Subject::Input => (
            ErrorKind::InputValidation,
            format!("Tool input validation failed for {tool_id}. {FIX}"),
            "Provided arguments",
        ),
        Subject::RequestContext => (
            ErrorKind::RequestContextValidation,
            format!("Request context validation failed for {tool_id}. {FIX}"),
            "Provided request context",
        ),
        Subject::Suspend => (
            ErrorKind::SuspendValidation,
            format!("Tool suspension data validation failed for {tool_id}. {FIX}"),
            "Provided arguments",
        ),
        Subject::Resume => (
            ErrorKind::ResumeValidation,
            format!("Tool resume data validation failed for {tool_id}. {FIX}"),
            "Provided resume data",
        ),
        Subject::Output => (
            ErrorKind::OutputValidation,
            format!(
                "Tool output validation failed for {tool_id}. The tool returned invalid output:"
            ),
            "Returned output",
        ),
        Subject::WorkflowState => (
            ErrorKind::WorkflowStateValidation,
            format!(
                "Workflow state validation failed for {tool_id}. The workflow state given to the tool does not match its state schema:"
            ),
            "Provided workflow state",
        ),
        Subject::NewWorkflowState => (
            ErrorKind::WorkflowStateValidation,
            format!(
                "Workflow state validation failed for {tool_id}. The tool set an invalid workflow state:"
            ),
            "New workflow state",
        ),
        Subject::Edit => (
            ErrorKind::InputValidation,
            format!("Edit validation failed for {tool_id}. {FIX}"),
            "Provided edit",
        ),
    };
    let mut message = headline;
    let listed = &issues[..issues.len().min(MAX_LISTED_ISSUES)];
    for issue in listed {
        let _ = write!(message, "\n- {}: {}", issue.dotted_path(), issue.message);
    }
    if issues.len() > listed.len() {
        let _ = write!(
            message,
            "\n- ...: more errors of the same kind are not listed; fix these first"
        );
    }
    if let Some(value) = value {
        let shown = if subject == Subject::RequestContext {
            dump(&redact(value))
        } else {
            dump(value)
        };
        let _ = write!(message, "\n\n{quoted_as}: {shown}");
    }
    let mut grouped = ValidationErrors::default();
    for issue in listed {
        grouped.add(&issue.path, issue.message.clone());
    }
    ModelError::new(kind, message).with_validation_errors(grouped)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn dump_cuts_at_200_characters() {
        let long = json!({ "text": "é".repeat(300) });
        let text = dump(&long);
        assert!(text.ends_with("... (truncated)"));
        assert_eq!(text.chars().count(), DUMP_LIMIT + "... (truncated)".len());
    }

    #[test]
    fn redaction_is_case_insensitive_and_nested() {
        let value = json!({ "apiKey": "k", "nested": { "Authorization": "a" }, "user": "ann" });
        assert_eq!(
            redact(&value),
            json!({ "apiKey": "[REDACTED]", "nested": { "Authorization": "[REDACTED]" }, "user": "ann" })
        );
    }

    #[test]
    fn issues_name_nested_paths() {
        let json = json!({
            "type": "object",
            "properties": { "items": { "type": "array", "items": {
                "type": "object",
                "properties": { "tags": { "type": "array" } },
                "required": ["tags", "name"]
            } } }
        });
        let validator = LazyValidator::new(&json, SchemaOrigin::Given).unwrap();
        let schema = Schema::pair(Some(&json), Some(&validator)).unwrap();
        let issues = schema.issues(&json!({ "items": [{ "tags": "a" }] }));
        let lines: Vec<String> = issues
            .iter()
            .map(|i| format!("{}: {}", i.dotted_path(), i.message))
            .collect();
        assert!(
            lines.contains(&"items.0.name: Required".to_owned()),
            "{lines:?}"
        );
        assert!(
            lines.contains(&"items.0.tags: Expected array, received string".to_owned()),
            "{lines:?}"
        );
    }

    /// A documented unit enum, as schemars writes it (one `const` per
    /// variant), or a mix of `const` and `enum`: the message names the
    /// values, as for `enum`; other unions keep the shapes message.
    #[test]
    fn a_value_outside_an_enum_of_consts_names_the_allowed_values() {
        let json = json!({
            "type": "object",
            "properties": {
                "unit": { "oneOf": [
                    { "const": "celsius", "description": "Degrees Celsius" },
                    { "const": "fahrenheit", "description": "Degrees Fahrenheit" },
                    { "enum": ["kelvin", 0] }
                ] },
                "place": { "anyOf": [{ "type": "string" }, { "type": "integer" }] }
            }
        });
        let validator = LazyValidator::new(&json, SchemaOrigin::Given).unwrap();
        let schema = Schema::pair(Some(&json), Some(&validator)).unwrap();
        let messages = |value: Value| -> Vec<String> {
            schema
                .issues(&value)
                .iter()
                .map(|i| format!("{}: {}", i.dotted_path(), i.message))
                .collect()
        };
        assert_eq!(
            messages(json!({ "unit": "rankine" })),
            [
                "unit: Invalid enum value. Expected 'celsius' | 'fahrenheit' | 'kelvin' | 0, received 'rankine'"
            ]
        );
        assert_eq!(
            messages(json!({ "place": true })),
            ["place: Invalid input: boolean matches none of the allowed shapes"]
        );
    }
}
