//! Gemini function declarations: the OpenAPI 3.0 subset of `Schema`.
//!
//! Source: the Gemini API reference, `Schema` ("a select subset of an OpenAPI
//! 3.0 schema object": `type`, `format`, `title`, `description`, `nullable`,
//! `enum` (strings), `maxItems`, `minItems`, `properties`, `required`,
//! `minProperties`, `maxProperties`, `minLength`, `maxLength`, `pattern`,
//! `example`, `anyOf`, `propertyOrdering`, `default`, `items`, `minimum`,
//! `maximum`) and `FunctionDeclaration` (the name must start with a letter or
//! an underscore and use `a-z A-Z 0-9 _ . : -`, at most 64 characters).
//!
//! Gemini has no strict mode; its schema is a hint, and the tool validates
//! the arguments against the original schema. So where Gemini cannot express
//! a constraint the converter drops it (widening what the model may send) and
//! notes it in the description, rather than failing.

use serde_json::{Map, Value, json};

use super::error::{SchemaError, SchemaRule};
use super::schema::{
    Expander, Flat, MAX_DEPTH, append_description, check_depth, declared_types, describe_dropped,
    is_object_schema,
};

/// Keywords of Gemini's `Schema` kept as they are.
const KEPT: &[&str] = &[
    "title",
    "description",
    "default",
    "example",
    "pattern",
    "minimum",
    "maximum",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "minProperties",
    "maxProperties",
];

/// Constraints Gemini does not have; dropped and noted in the description.
const DESCRIBED: &[&str] = &[
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "uniqueItems",
];

/// Formats Gemini documents per type; others are dropped (string formats
/// are noted in the description).
fn keeps_format(types: &[&str], format: &str) -> bool {
    (types.contains(&"string") && matches!(format, "date-time" | "enum"))
        || (types.contains(&"integer") && matches!(format, "int32" | "int64"))
        || (types.contains(&"number") && matches!(format, "float" | "double"))
}

/// Checks a function name against Gemini's rule.
pub(crate) fn check_name(name: &str) -> Result<(), String> {
    let mut chars = name.chars();
    let first_ok = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
    let rest_ok = chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | ':' | '-'));
    if first_ok && rest_ok && name.len() <= 64 {
        Ok(())
    } else {
        Err(
            "Gemini function names start with a letter or `_`, use only `a-z A-Z 0-9 _ . : -`, \
             and have at most 64 characters"
                .into(),
        )
    }
}

/// Converts a tool's input schema to Gemini's subset. `None` means "no
/// parameters" (an object schema without properties), which Gemini wants
/// left out rather than sent as an empty object.
pub(crate) fn parameters(schema: &Value) -> Result<Option<Value>, SchemaError> {
    check_depth(schema, MAX_DEPTH)?;
    if schema.as_object().is_some_and(Map::is_empty) {
        return Ok(None);
    }
    let mut walk = Expander::new(schema);
    let out = convert(&mut walk, schema, true, 0)?;
    let Value::Object(mut out) = out else {
        return Err(SchemaError::new("", SchemaRule::NonObjectRoot));
    };
    if out.get("type") != Some(&json!("object")) || out.contains_key("anyOf") {
        return Err(SchemaError::new("", SchemaRule::NonObjectRoot));
    }
    out.remove("nullable");
    if !out.contains_key("properties") {
        return Ok(None);
    }
    Ok(Some(Value::Object(out)))
}

fn convert(
    walk: &mut Expander<'_>,
    schema: &Value,
    at_root: bool,
    depth: usize,
) -> Result<Value, SchemaError> {
    if depth > MAX_DEPTH {
        return Err(walk.error(SchemaRule::TooDeep(MAX_DEPTH)));
    }
    let object = match schema {
        Value::Object(object) => object,
        // "Any value": Gemini's `type` is optional, so an untyped schema says it.
        Value::Bool(true) => return Ok(json!({})),
        Value::Bool(false) => return Err(walk.error(SchemaRule::NoValue)),
        _ => return Err(walk.error(SchemaRule::NotASchema)),
    };
    let (flat, pushed) = walk.flatten(object, at_root, depth)?;
    let result = match flat {
        Flat::Plain(object) => convert_plain(walk, &object, depth),
        Flat::Recursive {
            siblings,
            target_type,
            ..
        } => Ok(cut_recursion(&siblings, target_type.as_ref())),
    };
    walk.pop(pushed);
    result
}

/// Where a schema refers back to itself: a plain schema of the target's type
/// (an object, for the usual recursive struct) whose contents are not spelled
/// out again.
fn cut_recursion(siblings: &Map<String, Value>, target_type: Option<&Value>) -> Value {
    let kind = match target_type {
        Some(Value::String(t)) if t != "null" => t.clone(),
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .find(|t| *t != "null")
            .unwrap_or("object")
            .to_owned(),
        _ => "object".to_owned(),
    };
    let mut out = Map::new();
    out.insert("type".into(), Value::String(kind));
    if let Some(description) = siblings.get("description").filter(|d| d.is_string()) {
        out.insert("description".into(), description.clone());
    }
    append_description(
        &mut out,
        "(Recursive: same structure as its enclosing value.)",
    );
    Value::Object(out)
}

/// A union branch that only admits `null`.
fn is_null_schema(schema: &Value) -> bool {
    match schema {
        Value::Object(object) => {
            let only_null_type = match object.get("type") {
                Some(Value::String(t)) => t == "null",
                Some(Value::Array(ts)) => !ts.is_empty() && ts.iter().all(|t| t == "null"),
                _ => false,
            };
            only_null_type || object.get("const") == Some(&Value::Null)
        }
        _ => false,
    }
}

fn convert_plain(
    walk: &mut Expander<'_>,
    object: &Map<String, Value>,
    depth: usize,
) -> Result<Value, SchemaError> {
    walk.spend()?;
    let mut out = Map::new();
    let mut dropped: Vec<(String, Value)> = Vec::new();
    let mut nullable = false;
    let declared: Vec<&str> = declared_types(object).unwrap_or_default();
    if object
        .get("type")
        .is_some_and(|t| !t.is_string() && !t.is_array())
    {
        return Err(walk.error_at("type", SchemaRule::InvalidKeyword("type".into())));
    }
    let mut types: Vec<&str> = declared.iter().copied().filter(|t| *t != "null").collect();
    if declared.contains(&"null") {
        nullable = true;
    }
    if types.is_empty() && is_object_schema(object) {
        types.push("object");
    }
    let mut branches: Vec<Value> = Vec::new();
    match types.as_slice() {
        [] => {}
        [single] => {
            out.insert("type".into(), json!(single));
        }
        several => {
            // Gemini's `type` is one type: a type array becomes a union.
            branches.extend(several.iter().map(|t| json!({ "type": t })));
        }
    }
    for (key, value) in object {
        match key.as_str() {
            "type" => {}
            "properties" => {
                let Some(properties) = value.as_object() else {
                    return Err(walk.error_at(key, SchemaRule::InvalidKeyword(key.clone())));
                };
                let mut converted = Map::new();
                for (name, child) in properties {
                    let child = walk.nested(&["properties", name], |w| {
                        convert(w, child, false, depth + 1)
                    })?;
                    converted.insert(name.clone(), child);
                }
                if !converted.is_empty() {
                    out.insert(key.clone(), Value::Object(converted));
                }
            }
            "items" if value.is_object() || value.is_boolean() => {
                let items = walk.nested(&["items"], |w| convert(w, value, false, depth + 1))?;
                out.insert(key.clone(), items);
            }
            "anyOf" | "oneOf" => {
                let Some(list) = value.as_array() else {
                    return Err(walk.error_at(key, SchemaRule::InvalidKeyword(key.clone())));
                };
                for (i, branch) in list.iter().enumerate() {
                    if is_null_schema(branch) {
                        nullable = true;
                        continue;
                    }
                    let index = i.to_string();
                    branches.push(
                        walk.nested(&[key, &index], |w| convert(w, branch, false, depth + 1))?,
                    );
                }
            }
            "enum" => {
                let Some(values) = value.as_array() else {
                    return Err(walk.error_at(key, SchemaRule::InvalidKeyword(key.clone())));
                };
                nullable |= values.contains(&Value::Null);
                let rest: Vec<&Value> = values.iter().filter(|v| !v.is_null()).collect();
                if rest.iter().all(|v| v.is_string()) {
                    out.insert(
                        key.clone(),
                        Value::Array(rest.into_iter().cloned().collect()),
                    );
                } else {
                    dropped.push((key.clone(), value.clone()));
                }
            }
            "const" => match value {
                Value::String(_) => {
                    out.insert("enum".into(), json!([value]));
                }
                Value::Null => nullable = true,
                other => dropped.push(("const".into(), other.clone())),
            },
            "format" => {
                if let Some(format) = value.as_str() {
                    if keeps_format(&types, format) {
                        out.insert(key.clone(), value.clone());
                    } else if types.contains(&"string") {
                        dropped.push((key.clone(), value.clone()));
                    }
                }
            }
            "required" => {}
            k if KEPT.contains(&k) => {
                out.insert(key.clone(), value.clone());
            }
            k if DESCRIBED.contains(&k) => dropped.push((key.clone(), value.clone())),
            // `$ref`/`$defs`/`allOf` are expanded; `additionalProperties`,
            // `patternProperties`, `not`, `if`/`then`/`else`, tuple `items`,
            // `$schema`, `examples` and other keywords are not in the subset.
            _ => {}
        }
    }
    if let (Some(Value::Array(required)), Some(Value::Object(properties))) =
        (object.get("required"), out.get("properties"))
    {
        let present: Vec<Value> = required
            .iter()
            .filter(|name| name.as_str().is_some_and(|n| properties.contains_key(n)))
            .cloned()
            .collect();
        if !present.is_empty() {
            out.insert("required".into(), Value::Array(present));
        }
    }
    if out.contains_key("enum") && !out.contains_key("type") {
        out.insert("type".into(), json!("string"));
    }
    match branches.len() {
        0 => {}
        1 => {
            // A union of one (e.g. `Option<T>` as `anyOf: [T, null]`) is T.
            if let Some(Value::Object(branch)) = branches.pop() {
                for (key, value) in branch {
                    if key == "description" && out.contains_key("description") {
                        continue;
                    }
                    out.insert(key, value);
                }
            }
        }
        _ => {
            out.insert("anyOf".into(), Value::Array(branches));
        }
    }
    if nullable {
        out.insert("nullable".into(), Value::Bool(true));
    }
    describe_dropped(&mut out, &dropped);
    Ok(Value::Object(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refs_inlined_nullable_and_unsupported_keywords_dropped() {
        let schema = json!({
            "type": "object",
            "title": "Input",
            "properties": {
                "count": {"type": "integer", "format": "uint32", "minimum": 0},
                "opt": {"type": ["string", "null"]},
                "inner": {"anyOf": [{"$ref": "#/$defs/Inner"}, {"type": "null"}], "description": "maybe"},
                "kind": {"$ref": "#/$defs/Kind"},
                "map": {"type": "object", "additionalProperties": {"type": "integer"}},
                "level": {"type": "integer", "enum": [1, 2, 3]},
                "tag": {"type": "string", "const": "x"},
                "ratio": {"type": "number", "format": "double", "exclusiveMinimum": 0}
            },
            "required": ["count", "kind", "gone"],
            "additionalProperties": false,
            "$defs": {
                "Inner": {"type": "object", "properties": {"x": {"type": "number"}}, "required": ["x"]},
                "Kind": {"type": "string", "enum": ["A", "B"]}
            }
        });
        let out = parameters(&schema).unwrap().unwrap();
        assert_eq!(
            out,
            json!({
                "type": "object",
                "title": "Input",
                "properties": {
                    "count": {"type": "integer", "minimum": 0},
                    "opt": {"type": "string", "nullable": true},
                    "inner": {
                        "description": "maybe",
                        "type": "object",
                        "properties": {"x": {"type": "number"}},
                        "required": ["x"],
                        "nullable": true
                    },
                    "kind": {"type": "string", "enum": ["A", "B"]},
                    "map": {"type": "object"},
                    "level": {"type": "integer", "description": "{enum: [1,2,3]}"},
                    "tag": {"type": "string", "enum": ["x"]},
                    "ratio": {"type": "number", "format": "double", "description": "{exclusiveMinimum: 0}"}
                },
                "required": ["count", "kind"]
            })
        );
    }

    #[test]
    fn recursion_is_cut_to_a_plain_object() {
        let schema = json!({
            "type": "object",
            "properties": {"root": {"$ref": "#/$defs/Node"}},
            "$defs": {"Node": {"type": "object", "properties": {
                "name": {"type": "string"},
                "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}
            }}}
        });
        let out = parameters(&schema).unwrap().unwrap();
        assert_eq!(
            out["properties"]["root"]["properties"]["children"]["items"],
            json!({"type": "object", "description": "(Recursive: same structure as its enclosing value.)"})
        );
    }

    #[test]
    fn unions_and_type_arrays() {
        let schema = json!({
            "type": "object",
            "properties": {
                "shape": {"oneOf": [
                    {"type": "object", "properties": {"r": {"type": "number"}}, "required": ["r"]},
                    {"type": "object", "properties": {"s": {"type": "number"}}, "required": ["s"]}
                ]},
                "either": {"type": ["string", "integer", "null"]}
            }
        });
        let out = parameters(&schema).unwrap().unwrap();
        assert_eq!(
            out["properties"]["shape"]["anyOf"].as_array().map(Vec::len),
            Some(2)
        );
        assert_eq!(
            out["properties"]["either"],
            json!({"anyOf": [{"type": "string"}, {"type": "integer"}], "nullable": true})
        );
    }

    #[test]
    fn no_properties_means_no_parameters_and_non_objects_are_refused() {
        assert_eq!(parameters(&json!({})).unwrap(), None);
        assert_eq!(
            parameters(&json!({"type": "object", "properties": {}})).unwrap(),
            None
        );
        let err = parameters(&json!({"type": "string"})).unwrap_err();
        assert_eq!(err.rule, SchemaRule::NonObjectRoot);
        let err = parameters(&json!({"type": "object", "properties": {"x": false}})).unwrap_err();
        assert_eq!(
            (err.path.as_str(), err.rule),
            ("/properties/x", SchemaRule::NoValue)
        );
    }

    #[test]
    fn names() {
        assert!(check_name("get_weather").is_ok());
        assert!(check_name("_x.y:z-1").is_ok());
        assert!(check_name("1st").is_err());
        assert!(check_name("-dash").is_err());
        assert!(check_name(&"a".repeat(65)).is_err());
    }
}
