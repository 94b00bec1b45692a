//! JSON Schemas derived from Rust types with `schemars`.

use std::any::TypeId;

use schemars::JsonSchema;
use serde_json::Value;

/// The JSON Schema (draft 2020-12) of `T`, as the model is shown it.
///
/// Returns `None` for `()` (a tool with unit output has no output schema)
/// and for [`NoSuspend`](crate::NoSuspend) (a tool that does not suspend has
/// no suspend or resume schema).
///
/// ```
/// #[derive(schemars::JsonSchema)]
/// struct Input {
///     /// City name
///     location: String,
/// }
///
/// let schema = tool_core::schema_for::<Input>().unwrap();
/// assert_eq!(schema["properties"]["location"]["description"], "City name");
/// assert_eq!(schema["required"][0], "location");
/// assert!(tool_core::schema_for::<()>().is_none());
/// assert!(tool_core::schema_for::<tool_core::NoSuspend>().is_none());
/// ```
pub fn schema_for<T: JsonSchema + ?Sized + 'static>() -> Option<Value> {
    let id = TypeId::of::<T>();
    if id == TypeId::of::<()>() || id == TypeId::of::<crate::NoSuspend>() {
        return None;
    }
    let mut schema = schemars::SchemaGenerator::default()
        .into_root_schema_for::<T>()
        .to_value();
    // The dialect marker is noise for models and rejected by some providers.
    if let Some(map) = schema.as_object_mut() {
        map.remove("$schema");
    }
    Some(schema)
}

/// True when the schema describes objects (the reference turns a `null`
/// argument into `{}` for such tools).
pub(crate) fn expects_object(schema: &Value) -> bool {
    match schema.get("type") {
        Some(Value::String(t)) => t == "object",
        Some(Value::Array(types)) => types.iter().any(|t| t == "object"),
        _ => schema.get("properties").is_some(),
    }
}

/// Follows a local `$ref` (`#/$defs/X`, `#/definitions/X`) to its target.
pub(crate) fn resolve<'a>(root: &'a Value, schema: &'a Value) -> &'a Value {
    let mut current = schema;
    // Bounded so a ref cycle cannot loop forever.
    for _ in 0..32 {
        let Some(pointer) = current
            .get("$ref")
            .and_then(Value::as_str)
            .and_then(|r| r.strip_prefix('#'))
        else {
            return current;
        };
        match root.pointer(pointer) {
            Some(target) => current = target,
            None => return current,
        }
    }
    current
}

/// True when a value of `json_type` may match `schema`, looking through
/// local `$ref`s and `anyOf`/`oneOf` branches.
pub(crate) fn admits(root: &Value, schema: &Value, json_type: &str) -> bool {
    admits_within(root, schema, json_type, 0)
}

fn admits_within(root: &Value, schema: &Value, json_type: &str, depth: usize) -> bool {
    // Bounded so recursive schemas cannot recurse forever.
    if depth > 16 {
        return false;
    }
    let schema = resolve(root, schema);
    match schema.get("type") {
        Some(Value::String(t)) => return t == json_type,
        Some(Value::Array(types)) => return types.iter().any(|t| t == json_type),
        _ => {}
    }
    ["anyOf", "oneOf"].iter().any(|key| {
        schema
            .get(*key)
            .and_then(Value::as_array)
            .is_some_and(|branches| {
                branches
                    .iter()
                    .any(|b| admits_within(root, b, json_type, depth + 1))
            })
    })
}

/// True when any part of the schema admits integers (`"type": "integer"`,
/// alone or in a type array).
pub(crate) fn mentions_integers(schema: &Value) -> bool {
    match schema {
        Value::Object(map) => {
            let typed = match map.get("type") {
                Some(Value::String(t)) => t == "integer",
                Some(Value::Array(types)) => types.iter().any(|t| t == "integer"),
                _ => false,
            };
            typed || map.values().any(mentions_integers)
        }
        Value::Array(items) => items.iter().any(mentions_integers),
        _ => false,
    }
}
