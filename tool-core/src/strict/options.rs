//! What a conversion takes ([`StrictOptions`]) and gives ([`StrictSchema`]),
//! shared by the entry points in the parent module, the converter and the
//! limit checks.

use serde_json::Value;

use super::null_map::NullMap;

/// A strict schema and the record of properties made nullable.
///
/// ```
/// use tool_core::strict::openai_strict_with_map;
/// let strict = openai_strict_with_map(&serde_json::json!({
///     "type": "object", "properties": {"a": {"type": "string"}}
/// }))
/// .unwrap();
/// assert_eq!(strict.schema["required"], serde_json::json!(["a"]));
/// assert_eq!(strict.relaxed.relaxed_paths(), ["/properties/a"]);
/// ```
#[derive(Debug, Clone)]
pub struct StrictSchema {
    /// The schema to send with `strict: true`.
    pub schema: Value,
    /// Which optional properties were made nullable; see [`NullMap::restore`].
    pub relaxed: NullMap,
}

/// Limits and switches for the conversion. `Default` gives OpenAI's documented
/// limits and the converter's safety limits (see the [module docs](super)).
///
/// ```
/// use tool_core::strict::{openai_strict_with, StrictOptions, StrictRule};
/// use serde_json::json;
///
/// let mut options = StrictOptions::default();
/// options.max_enum_values = 2;
/// let schema = json!({
///     "type": "object",
///     "properties": {"c": {"type": "string", "enum": ["r", "g", "b"]}},
///     "required": ["c"]
/// });
/// let err = openai_strict_with(&schema, &options).unwrap_err();
/// assert_eq!(err.rule(), &StrictRule::EnumValueLimit(2));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct StrictOptions {
    /// Object nesting below the root (OpenAI: 10).
    pub max_object_nesting: usize,
    /// Object properties in total (OpenAI: 5000).
    pub max_properties: usize,
    /// Enum values in total (OpenAI: 1000).
    pub max_enum_values: usize,
    /// Characters of property names, definition names, enum and const strings (OpenAI: 120,000).
    pub max_string_length: usize,
    /// Number of values above which a string enum is "large" (OpenAI: 250).
    pub large_enum_threshold: usize,
    /// Characters in one large string enum (OpenAI: 15,000).
    pub max_large_enum_length: usize,
    /// JSON nesting the converter processes (safety: 100, the limit every
    /// provider's conversion uses).
    pub max_json_depth: usize,
    /// Schema nodes visited, counting `$ref` expansion (safety: 100,000, as
    /// for every provider).
    pub max_schema_nodes: usize,
    /// Refuse objects that declare no properties instead of closing them (default: false).
    pub reject_open_objects: bool,
}

impl Default for StrictOptions {
    fn default() -> Self {
        Self {
            max_object_nesting: 10,
            max_properties: 5000,
            max_enum_values: 1000,
            max_string_length: 120_000,
            large_enum_threshold: 250,
            max_large_enum_length: 15_000,
            max_json_depth: crate::schema_rewrite::MAX_DEPTH,
            max_schema_nodes: crate::schema_rewrite::MAX_NODES,
            reject_open_objects: false,
        }
    }
}
