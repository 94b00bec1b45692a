//! Arguments as they arrive, and the safe repairs applied before validation:
//! empty text or top-level `null` become `{}` for object schemas, a
//! stringified object or array where the schema expects one is parsed, and
//! `null` on a key that rejects it is treated as absent.

use serde_json::{Map, Value};

use crate::schema::{admits, resolve};
use crate::validate::Issue;

/// How deep repairs look into a value; deeper values are left as they are.
const REPAIR_DEPTH: usize = 32;

/// A call's arguments: raw text from a model, or an already parsed value.
///
/// ```
/// use tool_core::RawInput;
///
/// let from_model: RawInput = r#"{"location":"Paris"}"#.into();
/// let from_code: RawInput = serde_json::json!({ "location": "Paris" }).into();
/// assert!(matches!(from_model, RawInput::Text(_)));
/// assert!(matches!(from_code, RawInput::Json(_)));
/// ```
#[derive(Debug, Clone, PartialEq)]
pub enum RawInput {
    /// JSON text, parsed (and repaired) by the tool.
    Text(String),
    /// A JSON value.
    Json(Value),
}

impl From<&str> for RawInput {
    fn from(text: &str) -> Self {
        RawInput::Text(text.to_owned())
    }
}

impl From<String> for RawInput {
    fn from(text: String) -> Self {
        RawInput::Text(text)
    }
}

impl From<Value> for RawInput {
    fn from(value: Value) -> Self {
        RawInput::Json(value)
    }
}

/// Parses argument text; `None` when it is not JSON even after repairs.
pub(crate) fn parse_text(text: &str, expects_object: bool) -> Option<Value> {
    let trimmed = text.trim();
    if trimmed.is_empty() && expects_object {
        // Providers stream no argument text at all for tools without parameters.
        return Some(Value::Object(Map::new()));
    }
    if let Ok(value) = serde_json::from_str(trimmed) {
        return Some(value);
    }
    // Some models wrap arguments in a Markdown code fence.
    let fenced = trimmed
        .strip_prefix("```json")
        .or_else(|| trimmed.strip_prefix("```"))
        .and_then(|rest| rest.strip_suffix("```"))?;
    serde_json::from_str(fenced.trim()).ok()
}

/// First repair, always applied: a `null` or stringified top-level object
/// where the schema expects an object. Returns the value to validate and,
/// when it was repaired, the value as provided (quoted in error messages).
pub(crate) fn normalize_top(value: Value, expects_object: bool) -> (Value, Option<Value>) {
    if !expects_object {
        return (value, None);
    }
    match value {
        Value::Null => (Value::Object(Map::new()), Some(Value::Null)),
        Value::String(text) => match serde_json::from_str::<Value>(text.trim()) {
            Ok(parsed @ Value::Object(_)) => (parsed, Some(Value::String(text))),
            _ => (Value::String(text), None),
        },
        other => (other, None),
    }
}

/// Second repair: properties holding a JSON string where the schema expects
/// an object or array (some models stringify nested arguments).
/// Returns `None` when nothing changed.
pub(crate) fn coerce_stringified(value: &Value, root: &Value) -> Option<Value> {
    let mut copy = value.clone();
    coerce_in(&mut copy, root, root, 0).then_some(copy)
}

fn coerce_in(value: &mut Value, schema: &Value, root: &Value, depth: usize) -> bool {
    if depth > REPAIR_DEPTH {
        return false;
    }
    let schema = resolve(root, schema);
    let mut changed = false;
    match value {
        Value::Object(map) => {
            let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
                return false;
            };
            for (key, field) in map.iter_mut() {
                let Some(field_schema) = properties.get(key) else {
                    continue;
                };
                if let Value::String(text) = field
                    && let Some(parsed) = parse_stringified(text, field_schema, root)
                {
                    *field = parsed;
                    changed = true;
                    continue;
                }
                changed |= coerce_in(field, field_schema, root, depth + 1);
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items") {
                for item in items {
                    changed |= coerce_in(item, item_schema, root, depth + 1);
                }
            }
        }
        _ => {}
    }
    changed
}

fn parse_stringified(text: &str, schema: &Value, root: &Value) -> Option<Value> {
    if admits(root, schema, "string") {
        return None;
    }
    let trimmed = text.trim();
    let wants_object = trimmed.starts_with('{') && admits(root, schema, "object");
    let wants_array = trimmed.starts_with('[') && admits(root, schema, "array");
    if !wants_object && !wants_array {
        return None;
    }
    match serde_json::from_str::<Value>(trimmed) {
        Ok(parsed @ Value::Object(_)) if wants_object => Some(parsed),
        Ok(parsed @ Value::Array(_)) if wants_array => Some(parsed),
        _ => None,
    }
}

/// Third repair: `null` on keys whose schema rejects it means "not given".
/// Only keys named by a failing issue are removed. Returns `None` when
/// nothing changed.
pub(crate) fn strip_failing_nulls(value: &Value, issues: &[Issue]) -> Option<Value> {
    let mut copy = value.clone();
    let mut changed = false;
    for issue in issues {
        let Some((key, parents)) = issue.path.split_last() else {
            continue;
        };
        let Some(Value::Object(parent)) =
            parents
                .iter()
                .try_fold(&mut copy, |node, segment| match node {
                    Value::Object(map) => map.get_mut(segment.as_str()),
                    Value::Array(items) => {
                        segment.parse::<usize>().ok().and_then(|i| items.get_mut(i))
                    }
                    _ => None,
                })
        else {
            continue;
        };
        if parent.get(key.as_str()).is_some_and(Value::is_null) {
            parent.remove(key.as_str());
            changed = true;
        }
    }
    changed.then_some(copy)
}

/// Rewrites every float with no fractional part that fits an integer as
/// that integer (`3.0` → `3`); true when something changed. Harmless for
/// float fields: serde reads integers into `f64` too.
pub(crate) fn integral_floats_to_integers(value: &mut Value) -> bool {
    match value {
        Value::Number(number) if number.is_f64() => {
            let Some(float) = number.as_f64() else {
                return false;
            };
            // The range checks keep the casts exact.
            let integer = if float.fract() != 0.0 {
                None
            } else if (0.0..1.8e19).contains(&float) {
                Some(serde_json::Number::from(float as u64))
            } else if (-9.2e18..0.0).contains(&float) {
                Some(serde_json::Number::from(float as i64))
            } else {
                None
            };
            match integer {
                Some(integer) => {
                    *number = integer;
                    true
                }
                None => false,
            }
        }
        Value::Array(items) => items.iter_mut().fold(false, |changed, item| {
            integral_floats_to_integers(item) | changed
        }),
        Value::Object(map) => map.values_mut().fold(false, |changed, item| {
            integral_floats_to_integers(item) | changed
        }),
        _ => false,
    }
}

/// How deeply a call's arguments and request-context values may nest: at
/// most this many levels of objects and arrays inside each other, counting
/// the arguments object itself. Deeper input is refused at
/// admission with a model-readable error: no tool needs more, and a bound
/// well inside what JSON parsers read back (serde_json: 127) keeps every
/// stored call readable.
///
/// ```
/// use serde_json::json;
/// use tool_core::{ErrorKind, MAX_NESTING, Tool, ToolError};
///
/// let echo = Tool::builder("echo").description("Echo")
///     .execute(|input, _ctx| async move { Ok::<_, ToolError>(input) })
///     .build().unwrap();
/// // `levels` levels in all: the arguments object and `levels - 1` arrays.
/// let nested = |levels: usize| json!({ "v": (1..levels).fold(json!(1), |inner, _| json!([inner])) });
/// assert!(echo.validate_input(nested(MAX_NESTING)).is_ok());
/// let error = echo.validate_input(nested(MAX_NESTING + 1)).unwrap_err();
/// assert_eq!(error.kind(), ErrorKind::InputValidation);
/// assert!(error.message().contains("Nested deeper than 64 levels"));
/// ```
pub const MAX_NESTING: usize = 64;

/// The deepest nesting of a tool's schemas (JSON levels). `Tool::builder`
/// refuses a deeper schema with `BuildError::SchemaTooDeep` naming where,
/// and every schema rewrite (strict mode, provider exports) refuses deeper
/// ones too, so no schema walker can overflow the stack. 100 levels, as the
/// reference converter in openai-agents-python; schemas derived from Rust
/// types are far shallower.
///
/// ```
/// use serde_json::{Map, Value, json};
/// use tool_core::{BuildError, MAX_SCHEMA_DEPTH, Tool, ToolError};
///
/// let deep = (0..3000).fold(json!({ "type": "string" }), |inner, _| {
///     let properties = Value::Object(Map::from_iter([("a".to_owned(), inner)]));
///     Value::Object(Map::from_iter([("type".to_owned(), json!("object")), ("properties".to_owned(), properties)]))
/// });
/// let error = Tool::builder("deep").description("Too deep")
///     .input_schema(deep)
///     .execute(|input, _ctx| async move { Ok::<_, ToolError>(input) })
///     .build()
///     .unwrap_err();
/// assert!(matches!(error, BuildError::SchemaTooDeep { limit: MAX_SCHEMA_DEPTH, .. }));
/// assert!(error.to_string().contains("/properties/a/properties/a"));
/// ```
pub const MAX_SCHEMA_DEPTH: usize = 100;

/// Drops `value` without recursing (serde_json's own drop recurses once per
/// level, which a deep enough value overflows).
pub(crate) fn drop_iteratively(value: Value) {
    let mut stack = vec![value];
    while let Some(value) = stack.pop() {
        match value {
            Value::Array(items) => stack.extend(items),
            Value::Object(map) => stack.extend(map.into_iter().map(|(_, v)| v)),
            _ => {}
        }
    }
}

/// The path to the first place where `value` nests deeper than `limit`
/// (found without recursion), or `None`.
///
/// Depth first, keeping only the containers being walked: the path is built
/// only when the walk finds one too deep. (Every call's input and every
/// hand-written schema passes through here.)
pub(crate) fn too_deep(value: &Value, limit: usize) -> Option<Vec<String>> {
    let root = Children::of(value)?;
    if limit == 0 {
        return Some(Vec::new());
    }
    // `walking[i]` is the container at depth `i`, `keys[i]` the key of the
    // one at depth `i + 1` within it.
    let mut walking = vec![root];
    let mut keys: Vec<Key<'_>> = Vec::new();
    while let Some(container) = walking.last_mut() {
        let Some((key, child)) = container.next() else {
            walking.pop();
            keys.pop();
            continue;
        };
        let Some(grandchildren) = Children::of(child) else {
            continue;
        };
        keys.push(key);
        if walking.len() >= limit {
            return Some(keys.iter().map(Key::to_string).collect());
        }
        walking.push(grandchildren);
    }
    None
}

/// The entries of a container being walked by [`too_deep`].
enum Children<'a> {
    Object(serde_json::map::Iter<'a>),
    Array(std::iter::Enumerate<std::slice::Iter<'a, Value>>),
}

impl<'a> Children<'a> {
    fn of(value: &'a Value) -> Option<Self> {
        match value {
            Value::Object(map) => Some(Children::Object(map.iter())),
            Value::Array(items) => Some(Children::Array(items.iter().enumerate())),
            _ => None,
        }
    }

    fn next(&mut self) -> Option<(Key<'a>, &'a Value)> {
        match self {
            Children::Object(entries) => entries.next().map(|(k, v)| (Key::Name(k), v)),
            Children::Array(items) => items.next().map(|(i, v)| (Key::Index(i), v)),
        }
    }
}

/// Where a child sits in its container.
enum Key<'a> {
    Name(&'a str),
    Index(usize),
}

impl std::fmt::Display for Key<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Key::Name(name) => f.write_str(name),
            Key::Index(index) => write!(f, "{index}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::too_deep;

    /// `{"a": [{"a": [...]}]}`, `levels` containers deep.
    fn nested(levels: usize) -> Value {
        (1..levels).fold(json!({}), |inner, level| {
            if level % 2 == 0 {
                json!({ "a": inner })
            } else {
                json!([1, inner])
            }
        })
    }

    #[test]
    fn a_value_as_deep_as_the_limit_passes_and_one_level_more_is_located() {
        assert_eq!(too_deep(&nested(4), 4), None);
        assert_eq!(too_deep(&json!(1), 0), None);
        assert_eq!(too_deep(&json!({}), 0), Some(vec![]));
        // Depth 4 (the fifth container) is the first one beyond the limit.
        let path = too_deep(&nested(5), 4).expect("too deep");
        assert_eq!(path, ["a", "1", "a", "1"]);
        // Siblings before and after a deep branch do not confuse the path.
        let value = json!({ "x": [[]], "deep": nested(5), "y": {} });
        assert_eq!(
            too_deep(&value, 5).expect("too deep"),
            ["deep", "a", "1", "a", "1"]
        );
    }
}
