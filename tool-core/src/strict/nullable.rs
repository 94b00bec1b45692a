//! Deciding whether a schema admits `null`, and making it admit `null`.

use serde_json::{Map, Value, json};

use crate::schema::resolve_ref;

/// Whether a (converted) schema already admits `null`. References are followed
/// in the input document, a few levels at most.
pub(crate) fn allows_null(schema: &Value, root: &Value, depth: usize) -> bool {
    if depth > 16 {
        return false;
    }
    let Value::Object(object) = schema else {
        return schema == &Value::Bool(true);
    };
    if let Some(reference) = object.get("$ref").and_then(Value::as_str)
        && let Ok(target) = resolve_ref(root, reference, true)
        && !target.crosses_id
        && allows_null(target.value, root, depth + 1)
    {
        return true;
    }
    let type_ok = match object.get("type") {
        Some(Value::String(t)) => t == "null",
        Some(Value::Array(ts)) => ts.iter().any(|t| t == "null"),
        _ => !object.contains_key("$ref"),
    };
    let enum_ok = match object.get("enum") {
        Some(Value::Array(values)) => values.contains(&Value::Null),
        _ => true,
    };
    let const_ok = object.get("const").is_none_or(Value::is_null);
    let union_ok = ["anyOf", "oneOf"].iter().all(|k| match object.get(*k) {
        Some(Value::Array(branches)) => branches.iter().any(|b| allows_null(b, root, depth + 1)),
        _ => true,
    });
    let all_ok = match object.get("allOf") {
        Some(Value::Array(entries)) => entries.iter().all(|e| allows_null(e, root, depth + 1)),
        _ => true,
    };
    type_ok && enum_ok && const_ok && union_ok && all_ok
}

/// Lets a converted schema also accept `null`: extend `type` (and `enum`/`const`)
/// when the schema is a plain typed one, append to an existing `anyOf`, or wrap
/// anything else (notably a `$ref`) as `anyOf: [schema, {"type": "null"}]`.
pub(crate) fn make_nullable(schema: &mut Value) {
    let Value::Object(object) = schema else {
        return;
    };
    let composite = object.contains_key("$ref") || object.contains_key("anyOf");
    if !composite {
        let typed = match object.get("type") {
            Some(Value::String(t)) => {
                let t = t.clone();
                object.insert("type".into(), json!([t, "null"]));
                true
            }
            Some(Value::Array(_)) => {
                if let Some(Value::Array(types)) = object.get_mut("type") {
                    types.push(json!("null"));
                }
                true
            }
            _ => false,
        };
        if typed {
            if let Some(Value::Array(values)) = object.get_mut("enum") {
                values.push(Value::Null);
            }
            if let Some(constant) = object.remove("const") {
                object.insert("enum".into(), json!([constant, null]));
            }
            return;
        }
    }
    if !object.contains_key("$ref")
        && !object.contains_key("type")
        && let Some(Value::Array(branches)) = object.get_mut("anyOf")
    {
        branches.push(json!({"type": "null"}));
        return;
    }
    let mut wrapper = Map::new();
    for keyword in ["title", "description"] {
        if let Some(v) = object.remove(keyword) {
            wrapper.insert(keyword.into(), v);
        }
    }
    let inner = std::mem::take(object);
    wrapper.insert(
        "anyOf".into(),
        json!([Value::Object(inner), {"type": "null"}]),
    );
    *object = wrapper;
}
