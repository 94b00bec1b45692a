//! Anthropic Messages: the tool shape and the strict-mode schema subset.
//!
//! Source: Anthropic's structured outputs guide ("JSON Schema limitations",
//! "Schema complexity limits", platform.claude.com/docs/en/build-with-claude/
//! structured-outputs) and the schema transform in Anthropic's Python SDK
//! (`anthropic/lib/_parse/_transform.py`), which moves unsupported constraints
//! into the description.
//!
//! Strict mode supports: all basic types, `enum` of primitives, `const`,
//! `anyOf`, `allOf` (not with `$ref`), local `$ref`/`$defs`, `default`,
//! `required`, `additionalProperties: false` (required on objects), string
//! formats `date-time`, `time`, `date`, `duration`, `email`, `hostname`, `uri`,
//! `ipv4`, `ipv6`, `uuid`, simple `pattern`s and `minItems` of 0 or 1. Not
//! supported: recursive schemas, complex enum values, external `$ref`,
//! numeric bounds, string length bounds, other array constraints, open maps.

use serde_json::{Map, Value, json};

use super::error::{AnthropicLimit, LimitViolation, SchemaError, SchemaRule};
use super::schema::{Expander, Inlining, NUMERIC_FORMATS, Recursive, convert, start};
use crate::schema_rewrite::keywords::{Action, Dialect, Out, Table, rewrite};
use crate::schema_rewrite::{declared_types, is_object_schema};

/// String formats Anthropic strict mode accepts.
const SUPPORTED_FORMATS: &[&str] = &[
    "date-time",
    "time",
    "date",
    "duration",
    "email",
    "hostname",
    "uri",
    "ipv4",
    "ipv6",
    "uuid",
];

/// Anthropic strict mode's keyword rules; the value-dependent ones are in
/// [`Anthropic::action`].
const TABLE: Table = Table {
    keep: &["description", "title", "default", "pattern", "required"],
    // `$defs` are inlined; `$schema`, `$id`, `$comment`, `examples` and other
    // annotations or extensions are not part of the subset (unlisted).
    drop: &[],
    // Constraints strict mode rejects; removing them only widens what the
    // model may send, and validation against the original schema still
    // enforces them.
    note: &[
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "multipleOf",
        "minLength",
        "maxLength",
        "maxItems",
        "uniqueItems",
        "contains",
        "minContains",
        "maxContains",
        "minProperties",
        "maxProperties",
        "propertyNames",
    ],
    // Keywords that would change the accepted values too much to drop: the
    // ones OpenAI's strict mode refuses (and dynamic references, in `action`).
    reject: crate::strict::convert::REJECTED,
};

/// Request-wide strict-mode limits (Anthropic's structured outputs guide,
/// "Explicit limits"); `Default` gives Anthropic's values.
///
/// ```
/// use tool_core::provider::AnthropicLimits;
///
/// let limits = AnthropicLimits::default();
/// assert_eq!((limits.strict_tools, limits.optional_parameters, limits.union_parameters), (20, 24, 16));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct AnthropicLimits {
    /// Tools with `strict: true` per request.
    pub strict_tools: usize,
    /// Properties not listed in `required`, across all strict schemas.
    pub optional_parameters: usize,
    /// Schemas using `anyOf` or a type array, across all strict schemas.
    pub union_parameters: usize,
}

impl Default for AnthropicLimits {
    fn default() -> Self {
        AnthropicLimits {
            strict_tools: 20,
            optional_parameters: 24,
            union_parameters: 16,
        }
    }
}

impl AnthropicLimits {
    /// No limits: nothing is checked.
    ///
    /// ```
    /// use tool_core::provider::AnthropicLimits;
    /// assert_eq!(AnthropicLimits::unlimited().strict_tools, usize::MAX);
    /// ```
    pub fn unlimited() -> Self {
        AnthropicLimits {
            strict_tools: usize::MAX,
            optional_parameters: usize::MAX,
            union_parameters: usize::MAX,
        }
    }
}

/// Converts a JSON Schema to Anthropic's strict subset.
///
/// `$ref`s are inlined (strict mode does not take recursive schemas, and
/// inlining sidesteps `$ref` siblings and `allOf` with `$ref`); `allOf` is
/// merged; `oneOf` becomes `anyOf`; every object is closed; optional
/// properties stay optional (Anthropic allows them), so values need no
/// restoring. Unsupported constraints move to the description.
pub(crate) fn strict_schema(schema: &Value) -> Result<Value, SchemaError> {
    let mut walk = start(schema)?;
    if schema.as_object().is_some_and(Map::is_empty) {
        return Ok(json!({"type": "object", "properties": {}, "additionalProperties": false}));
    }
    let out = convert(&mut walk, &mut Anthropic, schema, true, 0)?;
    let is_object = out.as_object().is_some_and(is_object_schema);
    let nullable = out
        .as_object()
        .and_then(declared_types)
        .is_some_and(|types| types.contains(&"null"));
    if !is_object || nullable || out.get("anyOf").is_some() {
        return Err(SchemaError::new("", SchemaRule::NonObjectRoot));
    }
    Ok(out)
}

/// The Anthropic strict-mode dialect.
struct Anthropic;

/// One schema object being converted.
struct Node {
    depth: usize,
    is_string: bool,
    is_object: bool,
}

impl Inlining for Anthropic {
    fn any_value(&self, walk: &Expander<'_>) -> Result<Value, SchemaError> {
        Err(walk.error(SchemaRule::AnyValue))
    }

    fn recursion(&self, walk: &Expander<'_>, recursive: Recursive) -> Result<Value, SchemaError> {
        Err(walk.error_at("$ref", SchemaRule::RecursiveSchema(recursive.reference)))
    }

    fn plain(
        &mut self,
        walk: &mut Expander<'_>,
        object: &Map<String, Value>,
        depth: usize,
    ) -> Result<Value, SchemaError> {
        walk.spend()?;
        let types = match object.get("type") {
            None => None,
            Some(Value::String(_)) => declared_types(object),
            Some(Value::Array(ts)) if ts.iter().all(Value::is_string) => declared_types(object),
            Some(_) => {
                return Err(walk.error_at("type", SchemaRule::InvalidKeyword("type".into())));
            }
        };
        let is_object = is_object_schema(object);
        let has_union = object.contains_key("anyOf") || object.contains_key("oneOf");
        if types.is_none()
            && !is_object
            && !has_union
            && !object.contains_key("enum")
            && !object.contains_key("const")
        {
            return Err(walk.error(SchemaRule::AnyValue));
        }
        if object.contains_key("anyOf") && object.contains_key("oneOf") {
            return Err(walk.error_at(
                "oneOf",
                SchemaRule::UnsupportedKeyword("oneOf next to anyOf".into()),
            ));
        }
        let mut out = Out::default();
        if is_object && !object.contains_key("type") {
            out.schema.insert("type".into(), json!("object"));
        }
        let node = Node {
            depth,
            is_string: types.is_some_and(|types| types.contains(&"string")),
            is_object,
        };
        rewrite(walk, self, object, node, out).map(|(out, ())| Value::Object(out))
    }
}

impl Dialect for Anthropic {
    type Rule = SchemaRule;
    type Node = Node;
    type Built = ();
    const TABLE: Table = TABLE;

    fn action(&self, node: &Node, keyword: &str, value: &Value) -> Option<Action<SchemaRule>> {
        let complex = |v: &Value| v.is_object() || v.is_array();
        let open_map = || Action::Reject(SchemaRule::OpenMap(keyword.to_owned()));
        Some(match keyword {
            "type" => Action::Keep,
            "properties" => Action::Schemas,
            "additionalProperties" | "unevaluatedProperties" if value != &Value::Bool(false) => {
                open_map()
            }
            "patternProperties" if value.as_object().is_none_or(|m| !m.is_empty()) => open_map(),
            "items" if !value.is_object() && !value.is_boolean() => {
                Action::Reject(SchemaRule::UnsupportedKeyword("items (tuple)".into()))
            }
            "items" => Action::Schema,
            "unevaluatedItems" if value != &Value::Bool(false) => {
                Action::Reject(SchemaRule::UnsupportedKeyword(keyword.to_owned()))
            }
            "$dynamicRef" | "$recursiveRef" => {
                Action::Reject(SchemaRule::UnsupportedKeyword(keyword.to_owned()))
            }
            "anyOf" | "oneOf" => Action::Rewrite,
            "enum" => match value.as_array() {
                None => Action::Invalid,
                Some(values) if values.iter().any(complex) => {
                    Action::Reject(SchemaRule::ComplexEnum)
                }
                Some(_) => Action::Keep,
            },
            "const" if complex(value) => Action::Reject(SchemaRule::ComplexEnum),
            "const" => Action::Keep,
            "format" => match value.as_str() {
                Some(format) if node.is_string && SUPPORTED_FORMATS.contains(&format) => {
                    Action::Keep
                }
                Some(format) if NUMERIC_FORMATS.contains(&format) => Action::Drop,
                _ => Action::Note,
            },
            "minItems" if matches!(value.as_u64(), Some(0 | 1)) => Action::Keep,
            "minItems" => Action::Note,
            _ => return None,
        })
    }

    fn subschema(
        &mut self,
        walk: &mut Expander<'_>,
        node: &mut Node,
        _keyword: &str,
        schema: &Value,
    ) -> Result<Value, SchemaError> {
        convert(walk, self, schema, false, node.depth + 1)
    }

    /// `anyOf`, or `oneOf` as `anyOf` (never both: refused before).
    fn rewrite(
        &mut self,
        walk: &mut Expander<'_>,
        node: &mut Node,
        _object: &Map<String, Value>,
        keyword: &str,
        value: &Value,
        out: &mut Out,
    ) -> Result<(), SchemaError> {
        let Some(branches) = value.as_array() else {
            return Err(walk.error_at(keyword, SchemaRule::InvalidKeyword(keyword.to_owned())));
        };
        let mut converted = Vec::with_capacity(branches.len());
        for (i, branch) in branches.iter().enumerate() {
            let index = i.to_string();
            converted.push(walk.nested(&[keyword, &index], |w| {
                convert(w, self, branch, false, node.depth + 1)
            })?);
        }
        out.schema.insert("anyOf".into(), Value::Array(converted));
        Ok(())
    }

    /// Every object is closed, with `properties` even when empty.
    fn finish(
        &mut self,
        _walk: &mut Expander<'_>,
        node: Node,
        _object: &Map<String, Value>,
        out: &mut Out,
    ) -> Result<(), SchemaError> {
        if node.is_object {
            out.schema.entry("properties").or_insert_with(|| json!({}));
            out.schema
                .insert("additionalProperties".into(), Value::Bool(false));
        }
        Ok(())
    }
}

/// What one converted strict schema counts towards Anthropic's limits:
/// `(optional parameters, union parameters)`.
///
/// Counting convention (Anthropic does not define it further): every object
/// schema contributes its properties not listed in `required`; every schema
/// with `anyOf` or a `type` array counts once. `$ref`s are already inlined,
/// so a definition used twice counts twice, as its grammar does.
pub(crate) fn complexity(schema: &Value) -> (usize, usize) {
    let mut optional = 0;
    let mut unions = 0;
    let mut stack = vec![schema];
    while let Some(value) = stack.pop() {
        let Value::Object(object) = value else {
            continue;
        };
        if object.contains_key("anyOf") || object.get("type").is_some_and(Value::is_array) {
            unions += 1;
        }
        if let Some(Value::Object(properties)) = object.get("properties") {
            let required: Vec<&str> = object
                .get("required")
                .and_then(Value::as_array)
                .map(|names| names.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            optional += properties
                .keys()
                .filter(|name| !required.contains(&name.as_str()))
                .count();
            stack.extend(properties.values());
        }
        if let Some(items) = object.get("items") {
            stack.push(items);
        }
        if let Some(Value::Array(branches)) = object.get("anyOf") {
            stack.extend(branches);
        }
    }
    (optional, unions)
}

/// Checks a request's strict tools against `limits`. `strict` lists, per
/// strict tool, its name and converted input schema.
pub(crate) fn check_limits(
    strict: &[(&str, &Value)],
    limits: &AnthropicLimits,
) -> Vec<LimitViolation> {
    let mut violations = Vec::new();
    if strict.len() > limits.strict_tools {
        violations.push(LimitViolation {
            limit: AnthropicLimit::StrictTools,
            allowed: limits.strict_tools,
            found: strict.len(),
            tools: strict
                .iter()
                .map(|(name, _)| ((*name).to_owned(), 1))
                .collect(),
        });
    }
    let counts: Vec<(&str, (usize, usize))> = strict
        .iter()
        .map(|(name, schema)| (*name, complexity(schema)))
        .collect();
    for (limit, allowed, pick) in [
        (
            AnthropicLimit::OptionalParameters,
            limits.optional_parameters,
            (|c: (usize, usize)| c.0) as fn((usize, usize)) -> usize,
        ),
        (
            AnthropicLimit::UnionParameters,
            limits.union_parameters,
            |c| c.1,
        ),
    ] {
        let found: usize = counts.iter().map(|(_, c)| pick(*c)).sum();
        if found > allowed {
            violations.push(LimitViolation {
                limit,
                allowed,
                found,
                tools: counts
                    .iter()
                    .filter(|(_, c)| pick(*c) > 0)
                    .map(|(name, c)| ((*name).to_owned(), pick(*c)))
                    .collect(),
            });
        }
    }
    violations
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objects_are_closed_optional_kept_and_bounds_described() {
        let schema = json!({
            "type": "object",
            "properties": {
                "count": {"type": "integer", "format": "uint32", "minimum": 0, "description": "How many"},
                "name": {"type": "string", "minLength": 2, "format": "uri"},
                "tags": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 3},
                "when": {"type": "string", "format": "date-time"},
                "note": {"type": ["string", "null"]}
            },
            "required": ["count"],
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": "Input"
        });
        let out = strict_schema(&schema).unwrap();
        assert_eq!(
            out,
            json!({
                "type": "object",
                "properties": {
                    "count": {"type": "integer", "description": "How many\n\n{minimum: 0}"},
                    "name": {"type": "string", "format": "uri", "description": "{minLength: 2}"},
                    "tags": {"type": "array", "items": {"type": "string"}, "minItems": 1, "description": "{maxItems: 3}"},
                    "when": {"type": "string", "format": "date-time"},
                    "note": {"type": ["string", "null"]}
                },
                "required": ["count"],
                "title": "Input",
                "additionalProperties": false
            })
        );
    }

    #[test]
    fn refs_are_inlined_one_of_becomes_any_of() {
        let schema = json!({
            "type": "object",
            "properties": {
                "inner": {"$ref": "#/$defs/Inner", "description": "the inner"},
                "shape": {"oneOf": [{"const": "a"}, {"const": "b"}]}
            },
            "required": ["inner", "shape"],
            "$defs": {"Inner": {"type": "object", "properties": {"x": {"type": "number"}}, "required": ["x"]}}
        });
        let out = strict_schema(&schema).unwrap();
        assert_eq!(
            out["properties"]["inner"],
            json!({
                "description": "the inner",
                "type": "object",
                "properties": {"x": {"type": "number"}},
                "required": ["x"],
                "additionalProperties": false
            })
        );
        assert_eq!(
            out["properties"]["shape"],
            json!({"anyOf": [{"const": "a"}, {"const": "b"}]})
        );
        assert!(out.get("$defs").is_none());
    }

    #[test]
    fn recursion_open_maps_any_values_and_complex_enums_are_errors() {
        let cases = [
            (
                json!({"type": "object", "properties": {"node": {"$ref": "#/$defs/Node"}},
                       "$defs": {"Node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/Node"}}}}}),
                "/properties/node/properties/next/$ref",
                SchemaRule::RecursiveSchema("#/$defs/Node".into()),
            ),
            (
                json!({"type": "object", "properties": {"m": {"type": "object", "additionalProperties": {"type": "string"}}}}),
                "/properties/m/additionalProperties",
                SchemaRule::OpenMap("additionalProperties".into()),
            ),
            (
                json!({"type": "object", "properties": {"v": true}}),
                "/properties/v",
                SchemaRule::AnyValue,
            ),
            (
                json!({"type": "object", "properties": {"e": {"enum": [{"a": 1}]}}}),
                "/properties/e/enum",
                SchemaRule::ComplexEnum,
            ),
            (
                json!({"type": "object", "properties": {"n": {"type": "string", "not": {"const": "x"}}}}),
                "/properties/n/not",
                SchemaRule::UnsupportedKeyword("not".into()),
            ),
            (json!({"type": "string"}), "", SchemaRule::NonObjectRoot),
            (
                json!({"type": ["object", "null"]}),
                "",
                SchemaRule::NonObjectRoot,
            ),
        ];
        for (schema, path, rule) in cases {
            let err = strict_schema(&schema).unwrap_err();
            assert_eq!((err.path.as_str(), &err.rule), (path, &rule), "{schema}");
        }
    }

    #[test]
    fn empty_root_is_a_closed_object() {
        assert_eq!(
            strict_schema(&json!({})).unwrap(),
            json!({"type": "object", "properties": {}, "additionalProperties": false})
        );
    }

    #[test]
    fn complexity_counts_optional_and_union_parameters() {
        let schema = json!({
            "type": "object",
            "properties": {
                "a": {"type": ["string", "null"]},
                "b": {"anyOf": [{"type": "string"}, {"type": "object", "properties": {"c": {"type": "integer"}}}]},
                "d": {"type": "string"}
            },
            "required": ["d"]
        });
        assert_eq!(complexity(&schema), (3, 2));
    }

    #[test]
    fn limits_name_the_tools() {
        let schema = json!({"type": "object", "properties": {"a": {"type": ["string", "null"]}}});
        let tools: Vec<(&str, &Value)> = vec![("one", &schema), ("two", &schema)];
        let limits = AnthropicLimits {
            strict_tools: 1,
            optional_parameters: 24,
            union_parameters: 1,
        };
        let violations = check_limits(&tools, &limits);
        assert_eq!(violations.len(), 2);
        assert_eq!(violations[0].limit, AnthropicLimit::StrictTools);
        assert_eq!(
            violations[1].to_string(),
            "parameters with union types across strict schemas: 2, Anthropic allows 1 (from one (1), two (1))"
        );
        assert!(check_limits(&tools, &AnthropicLimits::default()).is_empty());
    }

    #[test]
    fn the_keyword_table_is_consistent() {
        assert!(TABLE.overlaps().is_empty());
    }

    #[test]
    fn deep_input_is_refused_with_its_path_without_recursion() {
        let schema = crate::schema_rewrite::test_support::DeepSchema::new(3000);
        let err = strict_schema(&schema.0).unwrap_err();
        assert_eq!(
            err.rule,
            SchemaRule::TooDeep(crate::schema_rewrite::MAX_DEPTH)
        );
        assert!(err.path.starts_with("/properties/a/properties/a"));
    }
}
