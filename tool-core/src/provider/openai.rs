//! OpenAI Chat Completions and Responses: the tool shapes and the schema
//! without strict mode. (Strict mode is [`crate::strict`].)
//!
//! Sources: OpenAI's function calling guide (Chat Completions nests the
//! function, `{"type": "function", "function": {name, description,
//! parameters, strict}}`; Responses flattens it, `{"type": "function", name,
//! description, parameters, strict}`) and the Structured Outputs guide for
//! strict mode. `strict` is always sent explicitly, since the two APIs do not
//! share a default.
//!
//! Without strict mode OpenAI takes most of JSON Schema, so the schema goes
//! out as derived, with only what is noise or trouble removed:
//!
//! * `$schema` at the root (a dialect marker the model does not need);
//! * schemars' numeric `format`s (`int32`, `uint32`, `double`, ...), which are
//!   not JSON Schema formats; standard formats stay;
//! * boolean subschemas are spelled as objects (`true` → `{}`, `false` →
//!   `{"not": {}}`), same meaning;
//! * the root must be an object schema: `{}` becomes an empty object schema,
//!   an untyped root with `properties` gets `"type": "object"`, anything else
//!   is an error (OpenAI rejects non-object parameters).

use serde_json::{Map, Value, json};

use super::error::{SchemaError, SchemaRule};
use super::schema::NUMERIC_FORMATS;
use crate::schema_rewrite::{MAX_DEPTH, check_depth, declared_types};

/// Keywords holding one subschema.
const SINGLE: &[&str] = &[
    "additionalProperties",
    "items",
    "additionalItems",
    "contains",
    "propertyNames",
    "not",
    "if",
    "then",
    "else",
    "unevaluatedItems",
    "unevaluatedProperties",
];
/// Keywords holding a list of subschemas.
const LISTS: &[&str] = &["allOf", "anyOf", "oneOf", "prefixItems", "items"];
/// Keywords holding a map of subschemas.
const MAPS: &[&str] = &[
    "properties",
    "patternProperties",
    "$defs",
    "definitions",
    "dependentSchemas",
];

/// Checks a function name against OpenAI's rule, `^[a-zA-Z0-9_-]{1,64}$`
/// (Anthropic uses the same one).
pub(crate) fn check_name(name: &str) -> Result<(), String> {
    if crate::is_valid_tool_id(name) {
        Ok(())
    } else {
        Err("names must match ^[a-zA-Z0-9_-]{1,64}$".into())
    }
}

/// The input schema for a tool without strict mode (see the module docs).
pub(crate) fn loose_schema(schema: &Value) -> Result<Value, SchemaError> {
    check_depth::<SchemaRule>(schema, MAX_DEPTH)?;
    let Value::Object(root) = schema else {
        return Err(SchemaError::new("", SchemaRule::NonObjectRoot));
    };
    if root.is_empty() {
        return Ok(json!({"type": "object", "properties": {}}));
    }
    match declared_types(root) {
        Some(types) if types == ["object"] => {}
        None if root.get("properties").is_some_and(Value::is_object) => {}
        _ => return Err(SchemaError::new("", SchemaRule::NonObjectRoot)),
    }
    let mut out = schema.clone();
    if let Some(map) = out.as_object_mut() {
        map.remove("$schema");
        if !map.contains_key("type") {
            map.insert("type".into(), json!("object"));
        }
    }
    clean(&mut out);
    Ok(out)
}

/// Cleans one schema and its subschemas (depth already checked).
fn clean(schema: &mut Value) {
    match schema {
        Value::Bool(true) => *schema = json!({}),
        Value::Bool(false) => *schema = json!({"not": {}}),
        Value::Object(map) => clean_object(map),
        _ => {}
    }
}

fn clean_object(map: &mut Map<String, Value>) {
    if map
        .get("format")
        .and_then(Value::as_str)
        .is_some_and(|f| NUMERIC_FORMATS.contains(&f))
    {
        map.remove("format");
    }
    for (key, value) in map.iter_mut() {
        let key = key.as_str();
        if SINGLE.contains(&key) && (value.is_object() || value.is_boolean()) {
            clean(value);
        } else if LISTS.contains(&key) {
            if let Value::Array(items) = value {
                items.iter_mut().for_each(clean);
            }
        } else if MAPS.contains(&key)
            && let Value::Object(children) = value
        {
            children.values_mut().for_each(clean);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loose_schema_keeps_the_schema_minus_noise() {
        let schema = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": {
                "count": {"type": "integer", "format": "uint32", "minimum": 0},
                "email": {"type": "string", "format": "email"},
                "any": true,
                "inner": {"$ref": "#/$defs/Inner"},
                "map": {"type": "object", "additionalProperties": {"type": "number", "format": "double"}}
            },
            "$defs": {"Inner": {"type": "object", "properties": {"n": {"type": "integer", "format": "int64"}}}}
        });
        let out = loose_schema(&schema).unwrap();
        assert_eq!(
            out,
            json!({
                "type": "object",
                "properties": {
                    "count": {"type": "integer", "minimum": 0},
                    "email": {"type": "string", "format": "email"},
                    "any": {},
                    "inner": {"$ref": "#/$defs/Inner"},
                    "map": {"type": "object", "additionalProperties": {"type": "number"}}
                },
                "$defs": {"Inner": {"type": "object", "properties": {"n": {"type": "integer"}}}}
            })
        );
    }

    #[test]
    fn root_must_be_an_object() {
        assert_eq!(
            loose_schema(&json!({})).unwrap(),
            json!({"type": "object", "properties": {}})
        );
        assert_eq!(
            loose_schema(&json!({"properties": {}})).unwrap(),
            json!({"properties": {}, "type": "object"})
        );
        for bad in [
            json!({"type": "string"}),
            json!(true),
            json!({"type": ["object", "null"]}),
        ] {
            assert_eq!(
                loose_schema(&bad).unwrap_err().rule,
                SchemaRule::NonObjectRoot,
                "{bad}"
            );
        }
    }

    #[test]
    fn names() {
        assert!(check_name("weather-tool").is_ok());
        assert!(check_name("has space").is_err());
        assert!(check_name("").is_err());
    }

    #[test]
    fn deep_input_is_refused_with_its_path_without_recursion() {
        let schema = crate::schema_rewrite::test_support::DeepSchema::new(3000);
        let err = loose_schema(&schema.0).unwrap_err();
        assert_eq!(
            err.rule,
            SchemaRule::TooDeep(crate::schema_rewrite::MAX_DEPTH)
        );
        assert!(err.path.starts_with("/properties/a/properties/a"));
    }
}
