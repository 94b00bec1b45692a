//! What can go wrong when exporting tools: a schema a provider cannot take,
//! bad provider options, a name the provider refuses, or a request over a
//! provider's limits.

use std::fmt;

use crate::schema_rewrite::{RewriteError, display_path, engine_rule};
use crate::strict::StrictError;

use super::Provider;

/// Why a schema could not be converted to a provider's subset (Anthropic
/// strict mode, Gemini, or the OpenAI shape checks). OpenAI strict mode
/// reports [`StrictRule`](crate::strict::StrictRule)s instead.
///
/// ```
/// use tool_core::provider::SchemaRule;
///
/// assert_eq!(
///     SchemaRule::RecursiveSchema("#/$defs/Node".into()).to_string(),
///     "recursive schemas are not supported (`#/$defs/Node` refers back to itself)"
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SchemaRule {
    /// A schema position holds something other than a JSON object or boolean.
    #[error("a schema must be a JSON object")]
    NotASchema,
    /// `true`, `{}` or a schema without `type`/`enum`/`const`/union: "any value".
    #[error("a schema that accepts any value (`true`, `{{}}`, no `type`) cannot be expressed")]
    AnyValue,
    /// `false`: a schema that accepts nothing.
    #[error("the schema `false` accepts no value and cannot be expressed")]
    NoValue,
    /// The root is not an object schema.
    #[error("the root must be an object schema")]
    NonObjectRoot,
    /// An open map: `additionalProperties` that is not `false`, or `patternProperties`.
    #[error("open map (`{0}`) is not allowed: objects must be closed")]
    OpenMap(String),
    /// A keyword the provider rejects and that cannot be dropped without
    /// accepting very different values.
    #[error("keyword `{0}` is not supported")]
    UnsupportedKeyword(String),
    /// A keyword whose value has the wrong JSON type.
    #[error("keyword `{0}` has an invalid value")]
    InvalidKeyword(String),
    /// An `enum` or `const` holding an object or array.
    #[error("`enum`/`const` values must be strings, numbers, booleans or null")]
    ComplexEnum,
    /// A `$ref` that leads back to a schema being expanded.
    #[error("recursive schemas are not supported (`{0}` refers back to itself)")]
    RecursiveSchema(String),
    /// A `$ref` that is not local or does not resolve.
    #[error("invalid $ref `{reference}`: {reason}")]
    InvalidRef {
        /// The `$ref` as written.
        reference: String,
        /// What is wrong with it.
        reason: String,
    },
    /// `allOf` entries or `$ref` siblings constrain the same keywords differently.
    #[error("cannot be merged: conflicting keyword(s) {}", .0.join(", "))]
    MergeConflict(Vec<String>),
    /// JSON nesting (or `$ref` expansion) deeper than the converter processes.
    #[error("schema is nested too deeply to process safely (more than {0} levels)")]
    TooDeep(usize),
    /// More schema nodes than the converter processes, counting `$ref` expansion.
    #[error("schema is too large to convert (more than {0} schema nodes after `$ref` expansion)")]
    TooManyNodes(usize),
}

/// One of Anthropic's request-wide strict-mode limits.
///
/// From Anthropic's structured outputs guide, "Schema complexity limits":
/// they apply to the combined total across all strict schemas of one request.
///
/// ```
/// use tool_core::provider::AnthropicLimit;
///
/// assert_eq!(AnthropicLimit::StrictTools.to_string(), "strict tools per request");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AnthropicLimit {
    /// Tools with `strict: true` (Anthropic: 20).
    #[error("strict tools per request")]
    StrictTools,
    /// Properties not listed in `required`, across all strict schemas (Anthropic: 24).
    #[error("optional parameters across strict schemas")]
    OptionalParameters,
    /// Schemas using `anyOf` or a type array, across all strict schemas (Anthropic: 16).
    #[error("parameters with union types across strict schemas")]
    UnionParameters,
}

/// A request-wide limit a set of tools would break.
///
/// ```
/// use serde_json::json;
/// use tool_core::provider::{AnthropicLimit, AnthropicLimits, ExportError, Provider, ProviderTools};
/// use tool_core::{Tool, ToolError};
///
/// let tool = Tool::builder("note")
///     .description("Take a note")
///     .strict(true)
///     .input_schema(json!({ "type": "object", "properties": { "text": { "type": ["string", "null"] } } }))
///     .execute(|input, _ctx| async move { Ok::<_, ToolError>(input) })
///     .build()
///     .unwrap();
/// let mut limits = AnthropicLimits::default();
/// limits.union_parameters = 0;
/// let Err(ExportError::Limits { violations, .. }) = ProviderTools::with_limits(Provider::Anthropic, [tool], limits) else {
///     panic!("within limits")
/// };
/// assert_eq!(violations[0].limit, AnthropicLimit::UnionParameters);
/// assert_eq!(
///     violations[0].to_string(),
///     "parameters with union types across strict schemas: 1, Anthropic allows 0 (from note (1))"
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct LimitViolation {
    /// The limit.
    pub limit: AnthropicLimit,
    /// What the provider allows.
    pub allowed: usize,
    /// What the request would have.
    pub found: usize,
    /// The tools contributing to the count, each with its share.
    pub tools: Vec<(String, usize)>,
}

impl fmt::Display for LimitViolation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {}, Anthropic allows {}",
            self.limit, self.found, self.allowed
        )?;
        if !self.tools.is_empty() {
            let shares: Vec<String> = self
                .tools
                .iter()
                .map(|(tool, n)| format!("{tool} ({n})"))
                .collect();
            write!(f, " (from {})", shares.join(", "))?;
        }
        Ok(())
    }
}

/// Why a tool (or a set of tools) could not be exported for a provider.
///
/// Every message names the provider and the tool; schema errors also name the
/// JSON Pointer into the tool's input schema and the rule broken.
///
/// ```
/// use serde_json::json;
/// use tool_core::provider::{ExportError, Provider};
/// use tool_core::{Tool, ToolError};
///
/// let tool = Tool::builder("tag")
///     .description("Tag things")
///     .strict(true)
///     .input_schema(json!({
///         "type": "object",
///         "properties": { "labels": { "type": "object", "additionalProperties": { "type": "string" } } }
///     }))
///     .execute(|input, _ctx| async move { Ok::<_, ToolError>(input) })
///     .build()
///     .unwrap();
/// let err = tool.export(Provider::OpenAiChat).unwrap_err();
/// assert_eq!(err.path(), Some("/properties/labels/additionalProperties"));
/// assert_eq!(
///     err.to_string(),
///     "OpenAI Chat Completions: tool `tag`: cannot make schema strict at \
///      /properties/labels/additionalProperties: open map (additionalProperties) is not allowed in strict mode"
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ExportError {
    /// OpenAI strict mode: the schema cannot be made strict.
    #[error("{provider}: tool `{tool}`: {source}")]
    Strict {
        /// The provider.
        provider: Provider,
        /// The tool.
        tool: String,
        /// Where and why.
        #[source]
        source: StrictError,
    },
    /// The schema cannot be converted to the provider's subset.
    #[error("{provider}: tool `{tool}`: cannot convert the input schema at {}: {rule}", display_path(.path))]
    Schema {
        /// The provider.
        provider: Provider,
        /// The tool.
        tool: String,
        /// JSON Pointer into the tool's input schema (`""` is the root).
        path: String,
        /// The rule broken.
        rule: SchemaRule,
    },
    /// The tool's `provider_options` for this provider are not usable.
    #[error("{provider}: tool `{tool}`: provider_options.{key}: {reason}")]
    ProviderOptions {
        /// The provider.
        provider: Provider,
        /// The tool.
        tool: String,
        /// The option, e.g. `openai` or `anthropic.name`.
        key: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The provider does not accept the tool's name.
    #[error("{provider}: tool `{tool}`: invalid name: {reason}")]
    InvalidName {
        /// The provider.
        provider: Provider,
        /// The tool.
        tool: String,
        /// The provider's naming rule.
        reason: String,
    },
    /// Two tools of one request share a name.
    #[error("{provider}: two tools are named `{tool}`")]
    DuplicateName {
        /// The provider.
        provider: Provider,
        /// The name.
        tool: String,
    },
    /// The tools together break the provider's request-wide limits.
    #[error("{provider}: the request would break strict-mode limits: {}", join(.violations))]
    Limits {
        /// The provider.
        provider: Provider,
        /// Every limit broken.
        violations: Vec<LimitViolation>,
    },
}

impl ExportError {
    /// The JSON Pointer into the input schema, for schema errors.
    ///
    /// ```
    /// use serde_json::json;
    /// use tool_core::provider::{Provider, SchemaRule};
    /// use tool_core::{Tool, ToolError};
    ///
    /// let tool = Tool::builder("count")
    ///     .description("Count")
    ///     .strict(true)
    ///     .input_schema(json!({ "type": "object", "properties": { "anything": true } }))
    ///     .execute(|input, _ctx| async move { Ok::<_, ToolError>(input) })
    ///     .build()
    ///     .unwrap();
    /// let err = tool.export(Provider::Anthropic).unwrap_err();
    /// assert_eq!(err.path(), Some("/properties/anything"));
    /// assert_eq!(err.schema_rule(), Some(&SchemaRule::AnyValue));
    /// ```
    pub fn path(&self) -> Option<&str> {
        match self {
            ExportError::Strict { source, .. } => Some(source.path()),
            ExportError::Schema { path, .. } => Some(path),
            _ => None,
        }
    }

    /// The rule broken, for errors from the Anthropic and Gemini converters.
    pub fn schema_rule(&self) -> Option<&SchemaRule> {
        match self {
            ExportError::Schema { rule, .. } => Some(rule),
            _ => None,
        }
    }

    /// The provider the export was for.
    pub fn provider(&self) -> Provider {
        match self {
            ExportError::Strict { provider, .. }
            | ExportError::Schema { provider, .. }
            | ExportError::ProviderOptions { provider, .. }
            | ExportError::InvalidName { provider, .. }
            | ExportError::DuplicateName { provider, .. }
            | ExportError::Limits { provider, .. } => *provider,
        }
    }
}

/// A schema error before the provider and tool are known.
pub(crate) type SchemaError = RewriteError<SchemaRule>;

impl SchemaError {
    pub(crate) fn for_tool(self, provider: Provider, tool: &str) -> ExportError {
        ExportError::Schema {
            provider,
            tool: tool.to_owned(),
            path: self.path,
            rule: self.rule,
        }
    }
}

engine_rule!(SchemaRule);

fn join(violations: &[LimitViolation]) -> String {
    violations
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}
