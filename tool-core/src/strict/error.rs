//! The error returned when a schema cannot be made strict.

use crate::schema_rewrite::{RewriteError, display_path, engine_rule};

/// Why a schema could not be converted; carried by [`StrictError`].
///
/// Each variant names one rule of OpenAI's strict subset (or one safety limit of
/// the converter). The `Display` text is the human-readable rule.
///
/// ```
/// use tool_core::strict::{openai_strict, StrictRule};
///
/// let err = openai_strict(&serde_json::json!({"type": "string"})).unwrap_err();
/// assert_eq!(err.rule(), &StrictRule::NonObjectRoot);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StrictRule {
    /// A schema position holds something other than a JSON object (or boolean).
    #[error("a schema must be a JSON object")]
    NotASchema,
    /// `true`, `{}` or a schema with no type: strict mode cannot express "any value".
    #[error(
        "a schema that accepts any value (`true`, `{{}}`, no `type`) cannot be expressed in strict mode"
    )]
    AnyValue,
    /// `false`: a schema that accepts nothing.
    #[error("the schema `false` accepts no value and cannot be expressed in strict mode")]
    NoValue,
    /// The root is not an object schema.
    #[error("the root must be an object schema")]
    NonObjectRoot,
    /// The root is an object schema that also allows `null`.
    #[error("the root must be a non-nullable object schema")]
    NullableRoot,
    /// The root uses `anyOf`/`oneOf`.
    #[error("the root must not use `anyOf`/`oneOf`")]
    RootUnion,
    /// `additionalProperties` is `true`, `{}` or a schema.
    #[error("open map (additionalProperties) is not allowed in strict mode")]
    OpenMap,
    /// `patternProperties` admits keys that are not declared.
    #[error("open map (patternProperties) is not allowed in strict mode")]
    PatternProperties,
    /// An object without declared properties that does not say `additionalProperties: false`
    /// (only with [`StrictOptions::reject_open_objects`](super::StrictOptions::reject_open_objects)).
    #[error("object permits undeclared properties; closing it would change the values it accepts")]
    OpenObject,
    /// A keyword OpenAI rejects and that cannot be dropped without changing meaning.
    #[error("keyword `{0}` is not supported in strict mode")]
    UnsupportedKeyword(String),
    /// A keyword has a value of the wrong JSON type (e.g. `anyOf` that is not an array).
    #[error("keyword `{0}` has an invalid value")]
    InvalidKeyword(String),
    /// `allOf` entries (or the parent) constrain the same keywords differently.
    #[error("`allOf` cannot be merged: conflicting keyword(s) {}", .0.join(", "))]
    AllOfConflict(Vec<String>),
    /// `$ref` has constraining siblings that cannot be merged into its target.
    #[error("`$ref` has sibling keyword(s) {} that cannot be merged with its target", .0.join(", "))]
    RefSiblingConflict(Vec<String>),
    /// `$ref` has sibling constraints strict mode cannot express (`minLength`,
    /// `maxLength`, `uniqueItems`...): merged into the inlined target they
    /// would be dropped, and the model would see a looser schema.
    #[error(
        "`$ref` has sibling constraint(s) {} that strict mode cannot express; dropping them would accept values the schema refuses",
        .0.join(", ")
    )]
    RefSiblingUnsupported(Vec<String>),
    /// A `$ref` that is not a local JSON Pointer or does not resolve.
    #[error("invalid $ref `{reference}`: {reason}")]
    InvalidRef {
        /// The `$ref` value as written.
        reference: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A `$ref` inside, or resolving through, a nested `$id` resource.
    #[error(
        "`$ref` owned by or crossing a nested `$id` resource cannot be resolved against the root"
    )]
    NestedIdRef,
    /// A chain or recursion of `$ref`s that must be inlined but never ends.
    #[error("`$ref` cycle through `{0}` cannot be inlined")]
    RefCycle(String),
    /// More schema nodes visited (including `$ref` expansion) than the budget allows.
    #[error("schema is too large to convert (more than {0} schema nodes after `$ref` expansion)")]
    TooManyNodes(usize),
    /// JSON nesting deeper than the converter processes safely.
    #[error("schema is nested too deeply to process safely (more than {0} levels)")]
    TooDeep(usize),
    /// Object nesting deeper than OpenAI allows.
    #[error("objects are nested more than {0} levels deep (OpenAI limit)")]
    NestingLimit(usize),
    /// More object properties in total than OpenAI allows.
    #[error("more than {0} object properties in total (OpenAI limit)")]
    PropertyLimit(usize),
    /// More enum values in total than OpenAI allows.
    #[error("more than {0} enum values in total (OpenAI limit)")]
    EnumValueLimit(usize),
    /// Property names, definition names, enum and const strings longer in total than OpenAI allows.
    #[error(
        "more than {0} characters of property names, definition names, enum and const values (OpenAI limit)"
    )]
    StringLengthLimit(usize),
    /// One large string enum whose values are longer in total than OpenAI allows.
    #[error(
        "a string enum with more than {threshold} values has more than {limit} characters (OpenAI limit)"
    )]
    LargeEnumLimit {
        /// Number of values above which the limit applies.
        threshold: usize,
        /// Maximum total characters of such an enum.
        limit: usize,
    },
}

/// A schema that cannot be made strict: where (a JSON Pointer into the input) and why.
///
/// ```
/// use tool_core::strict::openai_strict;
/// use serde_json::json;
///
/// let err = openai_strict(&json!({
///     "type": "object",
///     "properties": {"meta": {"type": "object", "additionalProperties": {"type": "string"}}}
/// }))
/// .unwrap_err();
/// assert_eq!(err.path(), "/properties/meta/additionalProperties");
/// assert_eq!(
///     err.to_string(),
///     "cannot make schema strict at /properties/meta/additionalProperties: \
///      open map (additionalProperties) is not allowed in strict mode"
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot make schema strict at {}: {}", display_path(&.0.path), .0.rule)]
pub struct StrictError(RewriteError<StrictRule>);

impl StrictError {
    pub(crate) fn new(path: impl Into<String>, rule: StrictRule) -> Self {
        StrictError(RewriteError::new(path, rule))
    }

    /// JSON Pointer (RFC 6901) into the input schema; `""` is the root.
    ///
    /// ```
    /// use tool_core::strict::openai_strict;
    /// let err = openai_strict(&serde_json::json!([])).unwrap_err();
    /// assert_eq!(err.path(), "");
    /// ```
    pub fn path(&self) -> &str {
        &self.0.path
    }

    /// The rule that was broken.
    ///
    /// ```
    /// use tool_core::strict::{openai_strict, StrictRule};
    /// let err = openai_strict(&serde_json::json!({"anyOf": [{"type": "object"}]})).unwrap_err();
    /// assert_eq!(err.rule(), &StrictRule::RootUnion);
    /// ```
    pub fn rule(&self) -> &StrictRule {
        &self.0.rule
    }
}

/// The engine's error, in OpenAI strict mode's terms.
impl From<RewriteError<StrictRule>> for StrictError {
    fn from(error: RewriteError<StrictRule>) -> Self {
        StrictError(error)
    }
}

engine_rule!(StrictRule);
