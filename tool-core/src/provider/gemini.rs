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
use super::schema::{Expander, Inlining, Recursive, convert, start};
use crate::schema_rewrite::keywords::{Action, Dialect, Out, Table, append_description, rewrite};
use crate::schema_rewrite::{declared_types, is_object_schema};

/// Gemini's keyword rules; the value-dependent ones are in [`Gemini::action`].
const TABLE: Table = Table {
    // Keywords of Gemini's `Schema` kept as they are.
    keep: &[
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
    ],
    // Written before (`type`) and after (`required`) the other keywords.
    drop: &["type", "required"],
    // Constraints Gemini does not have.
    note: &[
        "exclusiveMinimum",
        "exclusiveMaximum",
        "multipleOf",
        "uniqueItems",
    ],
    reject: &[],
    // `$ref`/`$defs`/`allOf` are expanded; `additionalProperties`,
    // `patternProperties`, `not`, `if`/`then`/`else`, tuple `items`,
    // `$schema`, `examples` and other keywords are not in the subset.
};

/// Formats Gemini documents per type; others are dropped (string formats
/// are noted in the description).
fn keeps_format(has: impl Fn(&str) -> bool, format: &str) -> bool {
    (has("string") && matches!(format, "date-time" | "enum"))
        || (has("integer") && matches!(format, "int32" | "int64"))
        || (has("number") && matches!(format, "float" | "double"))
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
    let mut walk = start(schema)?;
    if schema.as_object().is_some_and(Map::is_empty) {
        return Ok(None);
    }
    let out = convert(&mut walk, &mut Gemini, schema, true, 0)?;
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

/// The Gemini dialect.
struct Gemini;

/// One schema object being converted.
struct Node {
    depth: usize,
    /// Its types other than `null` (Gemini spells `null` as `nullable`).
    types: Vec<String>,
    nullable: bool,
    /// Union branches: from `anyOf`/`oneOf`, or from a type array (Gemini's
    /// `type` is one type).
    branches: Vec<Value>,
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

impl Inlining for Gemini {
    /// "Any value": Gemini's `type` is optional, so an untyped schema says it.
    fn any_value(&self, _walk: &Expander<'_>) -> Result<Value, SchemaError> {
        Ok(json!({}))
    }

    /// Where a schema refers back to itself: a plain schema of the target's
    /// type (an object, for the usual recursive struct) whose contents are not
    /// spelled out again.
    fn recursion(&self, _walk: &Expander<'_>, recursive: Recursive) -> Result<Value, SchemaError> {
        let kind = match recursive.target_type {
            Some(Value::String(t)) if t != "null" => t,
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
        if let Some(description) = recursive
            .siblings
            .get("description")
            .filter(|d| d.is_string())
        {
            out.insert("description".into(), description.clone());
        }
        append_description(
            &mut out,
            "(Recursive: same structure as its enclosing value.)",
        );
        Ok(Value::Object(out))
    }

    fn plain(
        &mut self,
        walk: &mut Expander<'_>,
        object: &Map<String, Value>,
        depth: usize,
    ) -> Result<Value, SchemaError> {
        walk.spend()?;
        if object
            .get("type")
            .is_some_and(|t| !t.is_string() && !t.is_array())
        {
            return Err(walk.error_at("type", SchemaRule::InvalidKeyword("type".into())));
        }
        let declared: Vec<&str> = declared_types(object).unwrap_or_default();
        let mut types: Vec<String> = declared
            .iter()
            .filter(|t| **t != "null")
            .map(|t| (*t).to_owned())
            .collect();
        if types.is_empty() && is_object_schema(object) {
            types.push("object".into());
        }
        let mut out = Out::default();
        let mut branches = Vec::new();
        match types.as_slice() {
            [] => {}
            [single] => {
                out.schema.insert("type".into(), json!(single));
            }
            several => branches.extend(several.iter().map(|t| json!({ "type": t }))),
        }
        let node = Node {
            depth,
            types,
            nullable: declared.contains(&"null"),
            branches,
        };
        rewrite(walk, self, object, node, out).map(|(out, ())| Value::Object(out))
    }
}

impl Dialect for Gemini {
    type Rule = SchemaRule;
    type Node = Node;
    type Built = ();
    const TABLE: Table = TABLE;
    const OMIT_EMPTY_PROPERTIES: bool = true;

    fn action(&self, node: &Node, keyword: &str, value: &Value) -> Option<Action<SchemaRule>> {
        let has = |t: &str| node.types.iter().any(|own| own == t);
        Some(match keyword {
            "properties" => Action::Schemas,
            "items" if value.is_object() || value.is_boolean() => Action::Schema,
            "anyOf" | "oneOf" | "enum" | "const" => Action::Rewrite,
            "format" => match value.as_str() {
                Some(format) if keeps_format(has, format) => Action::Keep,
                Some(_) if has("string") => Action::Note,
                _ => Action::Drop,
            },
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

    /// Unions become branches (a `null` one makes the schema nullable);
    /// `enum` keeps its strings and `const` becomes a one-value `enum`.
    fn rewrite(
        &mut self,
        walk: &mut Expander<'_>,
        node: &mut Node,
        _object: &Map<String, Value>,
        keyword: &str,
        value: &Value,
        out: &mut Out,
    ) -> Result<(), SchemaError> {
        let invalid = |walk: &Expander<'_>| {
            walk.error_at(keyword, SchemaRule::InvalidKeyword(keyword.to_owned()))
        };
        match keyword {
            "const" => match value {
                Value::String(_) => {
                    out.schema.insert("enum".into(), json!([value]));
                }
                Value::Null => node.nullable = true,
                other => out.note("const", other),
            },
            "enum" => {
                let Some(values) = value.as_array() else {
                    return Err(invalid(walk));
                };
                node.nullable |= values.contains(&Value::Null);
                let rest: Vec<&Value> = values.iter().filter(|v| !v.is_null()).collect();
                if rest.iter().all(|v| v.is_string()) {
                    out.schema.insert(
                        keyword.into(),
                        Value::Array(rest.into_iter().cloned().collect()),
                    );
                } else {
                    out.note(keyword, value);
                }
            }
            _ => {
                let Some(list) = value.as_array() else {
                    return Err(invalid(walk));
                };
                for (i, branch) in list.iter().enumerate() {
                    if is_null_schema(branch) {
                        node.nullable = true;
                        continue;
                    }
                    let index = i.to_string();
                    let branch = walk.nested(&[keyword, &index], |w| {
                        convert(w, self, branch, false, node.depth + 1)
                    })?;
                    node.branches.push(branch);
                }
            }
        }
        Ok(())
    }

    /// `required` lists only the properties kept; an `enum` is of strings; a
    /// union of one is its branch.
    fn finish(
        &mut self,
        _walk: &mut Expander<'_>,
        mut node: Node,
        object: &Map<String, Value>,
        out: &mut Out,
    ) -> Result<(), SchemaError> {
        let out = &mut out.schema;
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
        match node.branches.len() {
            0 => {}
            1 => {
                // A union of one (e.g. `Option<T>` as `anyOf: [T, null]`) is T.
                if let Some(Value::Object(branch)) = node.branches.pop() {
                    for (key, value) in branch {
                        if key == "description" && out.contains_key("description") {
                            continue;
                        }
                        out.insert(key, value);
                    }
                }
            }
            _ => {
                out.insert("anyOf".into(), Value::Array(node.branches));
            }
        }
        if node.nullable {
            out.insert("nullable".into(), Value::Bool(true));
        }
        Ok(())
    }
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

    #[test]
    fn the_keyword_table_is_consistent() {
        assert!(TABLE.overlaps().is_empty());
    }

    #[test]
    fn deep_input_is_refused_with_its_path_without_recursion() {
        let schema = crate::schema_rewrite::test_support::DeepSchema::new(3000);
        let err = parameters(&schema.0).unwrap_err();
        assert_eq!(
            err.rule,
            SchemaRule::TooDeep(crate::schema_rewrite::MAX_DEPTH)
        );
        assert!(err.path.starts_with("/properties/a/properties/a"));
    }
}
