//! Converting JSON Schemas to OpenAI's strict subset (Structured Outputs and
//! `strict: true` function calling).
//!
//! Input is any JSON Schema: what schemars 1.x emits (draft 2020-12, `$defs` and
//! `$ref`) or a hand-written one. The output accepts the same values where strict
//! mode can express them; where it cannot, conversion fails with a [`StrictError`]
//! naming the JSON Pointer of the offending keyword and the rule.
//!
//! # Rules
//!
//! * **Objects are closed.** Every object schema gets `additionalProperties: false`.
//!   A schema with `properties` but no `type` is typed `"object"`. Open maps are an
//!   error: `additionalProperties` that is `true`, `{}` or a schema (e.g. a
//!   `HashMap` field), non-empty `patternProperties`, `unevaluatedProperties` other
//!   than `false`. With [`StrictOptions::reject_open_objects`], an object that
//!   declares no properties and does not say `additionalProperties: false` is an
//!   error too, instead of being closed to `{}`.
//! * **Every property is required.** A property that was optional becomes
//!   nullable unless it already admitted `null`: a typed schema gets `"null"`
//!   added to `type` (and `null` to its `enum`; a `const` becomes `enum: [c, null]`),
//!   a union gets `{"type": "null"}` appended to its `anyOf`, anything else (a
//!   `$ref`, an untyped `enum`) is wrapped as `anyOf: [schema, {"type": "null"}]`
//!   with `title`/`description` moved to the wrapper. The [`NullMap`] in
//!   [`StrictSchema`] records these so [`NullMap::restore`] can turn the model's
//!   `null` back into an absent key before validating against the original schema.
//! * **Unions.** `oneOf` becomes `anyOf` (appended after an existing `anyOf`).
//!   `allOf` is merged into its parent, whatever its length, when the merge is
//!   exact (see below), and is an error otherwise.
//! * **`$ref`.** A `$ref` alone that points at the root (`#`) or at a root-level
//!   `$defs`/`definitions` entry stays; those definitions are converted in place.
//!   A `$ref` with sibling keywords (OpenAI rejects those), or pointing anywhere
//!   else, is replaced by its target merged with the siblings (siblings win for
//!   annotations such as `description`). JSON Pointer tokens are percent-decoded
//!   and `~1`/`~0`-unescaped. Errors: references that are not local (`#...`), that
//!   do not resolve, that sit in or pass through a nested `$id` resource, or that
//!   must be inlined through a cycle. (Recursion through an inlined `$ref` to a
//!   kept definition falls back to a plain `$ref`, dropping its annotations.)
//! * **Merging** (`allOf`, `$ref` siblings) is exact: keys present on one side
//!   are taken; keys on both must be annotations (the referring side wins), equal
//!   JSON values (numbers by value), or `required` (united). Keywords that interact
//!   within one schema (`properties`/`additionalProperties`/`patternProperties`,
//!   `items`/`prefixItems`, ...) may not come from both sides unless identical.
//! * **Keywords removed**, because OpenAI rejects them and removing them only
//!   widens what is accepted (validation against the original schema still
//!   enforces them): `default` (every property is required now, and some
//!   deployments reject it), `uniqueItems`, `propertyNames`, `minProperties`,
//!   `maxProperties`, `contains`, `minContains`, `maxContains`.
//! * **`format`** is kept only on string schemas and only for the formats OpenAI
//!   supports: `date-time`, `time`, `date`, `duration`, `email`, `hostname`,
//!   `ipv4`, `ipv6`, `uuid`. Others are removed: schemars' numeric formats
//!   (`int32`, `uint32`, `int64`, `uint`, `uint8`, `float`, `double`, ...) and
//!   string formats such as `uri` that OpenAI refuses. Numeric bounds schemars
//!   emits (`minimum: 0` for unsigned integers) are supported and kept.
//! * **Keywords rejected** (OpenAI does not support them and dropping them would
//!   change meaning too much): `not`, `if`/`then`/`else`, `dependentRequired`,
//!   `dependentSchemas`, `dependencies`, `prefixItems`, `additionalItems`, tuple
//!   `items: [...]`, `unevaluatedItems` other than `false`. Schemas accepting any
//!   value (`true`, `{}` below the root, no `type`/`enum`/`const`/union) and `false`
//!   are errors. Other keywords pass through unchanged.
//! * **Root.** It must be a non-nullable object schema without `anyOf`/`oneOf`; the
//!   empty schema `{}` at the root means "no parameters" and becomes an empty
//!   closed object.
//!
//! # Limits
//!
//! Defaults in [`StrictOptions`]; OpenAI's are from the Structured Outputs guide,
//! "Supported schemas" (platform.openai.com/docs/guides/structured-outputs):
//! at most 5000 object properties in total, 10 levels of object nesting, 1000 enum
//! values in total, 120,000 characters of property names, definition names, enum
//! and const string values in total, and 15,000 characters for one string enum of
//! more than 250 values. The converter's own safety limits: 100 levels of JSON
//! nesting (checked without recursion before converting, so deep input cannot
//! overflow the stack) and 100,000 schema nodes visited, counting `$ref`
//! expansion (so a reference fan-out cannot explode), as the reference converter
//! in openai-agents-python.
//!
//! ```
//! use tool_core::strict::openai_strict;
//! use serde_json::json;
//!
//! let strict = openai_strict(&json!({
//!     "type": "object",
//!     "properties": {
//!         "count": {"type": "integer", "format": "uint32", "minimum": 0},
//!         "tags": {"type": "array", "items": {"type": "string"}}
//!     },
//!     "required": ["count"]
//! }))
//! .unwrap();
//! assert_eq!(strict, json!({
//!     "type": "object",
//!     "properties": {
//!         "count": {"type": "integer", "minimum": 0},
//!         "tags": {"type": ["array", "null"], "items": {"type": "string"}}
//!     },
//!     "required": ["count", "tags"],
//!     "additionalProperties": false
//! }));
//! ```

pub(crate) mod convert;
mod error;
mod limits;
mod null_map;
mod nullable;
mod options;
#[cfg(test)]
mod tests;

use serde_json::Value;

pub use error::{StrictError, StrictRule};
pub use null_map::NullMap;
pub use options::{StrictOptions, StrictSchema};

impl StrictOptions {
    /// Converts `schema` with these options, returning the schema and its [`NullMap`].
    ///
    /// ```
    /// use tool_core::strict::StrictOptions;
    /// let mut options = StrictOptions::default();
    /// options.reject_open_objects = true;
    /// assert!(options.convert(&serde_json::json!({"type": "object"})).is_err());
    /// ```
    pub fn convert(&self, schema: &Value) -> Result<StrictSchema, StrictError> {
        convert::convert_root(schema, self)
    }
}

/// Converts a JSON Schema to OpenAI's strict form with the default [`StrictOptions`].
///
/// ```
/// use tool_core::strict::openai_strict;
/// use serde_json::json;
///
/// let strict = openai_strict(&json!({
///     "type": "object",
///     "properties": {"kind": {"oneOf": [{"const": "a"}, {"const": "b"}]}},
///     "required": ["kind"]
/// }))
/// .unwrap();
/// assert_eq!(strict["properties"]["kind"], json!({"anyOf": [{"const": "a"}, {"const": "b"}]}));
/// assert_eq!(strict["additionalProperties"], json!(false));
/// ```
pub fn openai_strict(schema: &Value) -> Result<Value, StrictError> {
    openai_strict_with(schema, &StrictOptions::default())
}

/// Converts with explicit [`StrictOptions`], returning only the schema.
///
/// ```
/// use tool_core::strict::{openai_strict, openai_strict_with, StrictOptions};
/// let schema = serde_json::json!({"type": "object", "properties": {}});
/// assert_eq!(
///     openai_strict_with(&schema, &StrictOptions::default()).unwrap(),
///     openai_strict(&schema).unwrap()
/// );
/// ```
pub fn openai_strict_with(schema: &Value, options: &StrictOptions) -> Result<Value, StrictError> {
    options.convert(schema).map(|strict| strict.schema)
}

/// Converts with the default [`StrictOptions`], also returning the [`NullMap`] of
/// properties made nullable.
///
/// ```
/// use tool_core::strict::openai_strict_with_map;
/// use serde_json::json;
///
/// let strict = openai_strict_with_map(&json!({
///     "type": "object",
///     "properties": {"inner": {"$ref": "#/$defs/Inner"}},
///     "$defs": {"Inner": {"type": "object", "properties": {"x": {"type": "number"}}, "required": ["x"]}}
/// }))
/// .unwrap();
/// assert_eq!(
///     strict.schema["properties"]["inner"],
///     json!({"anyOf": [{"$ref": "#/$defs/Inner"}, {"type": "null"}]})
/// );
/// let mut value = json!({"inner": null});
/// strict.relaxed.restore(&mut value);
/// assert_eq!(value, json!({}));
/// ```
pub fn openai_strict_with_map(schema: &Value) -> Result<StrictSchema, StrictError> {
    StrictOptions::default().convert(schema)
}
