//! OpenAI's size limits, checked on the converted schema.

use serde_json::Value;

use super::error::{StrictError, StrictRule};
use super::options::StrictOptions;
use crate::schema::escape_token;

#[derive(Default)]
struct Totals {
    properties: usize,
    enum_values: usize,
    string_length: usize,
}

/// Walks the converted schema without recursion (it may be as deep as
/// `max_json_depth`) and enforces the limits in `options`.
///
/// Counting conventions (OpenAI does not define them precisely): each declaration
/// counts once, where it is written; kept `$ref`s are not followed (recursive
/// schemas are allowed, so depth through them is unbounded by design). Nesting is
/// counted in object schemas: the root and every `$defs` entry are level 0, an
/// object schema under `properties`, `items` or `anyOf` of an object at level n is
/// at level n+1 (arrays and unions add no level).
pub(crate) fn check(schema: &Value, options: &StrictOptions) -> Result<(), StrictError> {
    let mut totals = Totals::default();
    // (schema, path, object level of the nearest enclosing object schema, or None)
    let mut stack: Vec<(&Value, String, Option<usize>)> = vec![(schema, String::new(), None)];
    while let Some((value, path, enclosing)) = stack.pop() {
        let Value::Object(object) = value else {
            continue;
        };
        let fail = |rule| Err(StrictError::new(path.clone(), rule));
        let is_object = match object.get("type") {
            Some(Value::String(t)) => t == "object",
            Some(Value::Array(ts)) => ts.iter().any(|t| t == "object"),
            _ => object.contains_key("properties"),
        };
        let level = if is_object {
            let level = enclosing.map_or(0, |l| l + 1);
            if level > options.max_object_nesting {
                return fail(StrictRule::NestingLimit(options.max_object_nesting));
            }
            Some(level)
        } else {
            enclosing
        };
        if let Some(Value::Object(properties)) = object.get("properties") {
            totals.properties += properties.len();
            if totals.properties > options.max_properties {
                return fail(StrictRule::PropertyLimit(options.max_properties));
            }
            for (name, child) in properties {
                totals.string_length += name.chars().count();
                stack.push((
                    child,
                    format!("{path}/properties/{}", escape_token(name)),
                    level,
                ));
            }
        }
        for keyword in ["$defs", "definitions"] {
            if let Some(Value::Object(defs)) = object.get(keyword) {
                for (name, child) in defs {
                    totals.string_length += name.chars().count();
                    stack.push((
                        child,
                        format!("{path}/{keyword}/{}", escape_token(name)),
                        None,
                    ));
                }
            }
        }
        if let Some(items) = object.get("items") {
            stack.push((items, format!("{path}/items"), level));
        }
        if let Some(Value::Array(branches)) = object.get("anyOf") {
            for (i, branch) in branches.iter().enumerate() {
                stack.push((branch, format!("{path}/anyOf/{i}"), level));
            }
        }
        if let Some(Value::Array(values)) = object.get("enum") {
            totals.enum_values += values.len();
            if totals.enum_values > options.max_enum_values {
                return fail(StrictRule::EnumValueLimit(options.max_enum_values));
            }
            let length: usize = values
                .iter()
                .filter_map(Value::as_str)
                .map(|s| s.chars().count())
                .sum();
            totals.string_length += length;
            let strings = values.iter().filter(|v| v.is_string()).count();
            if strings > options.large_enum_threshold && length > options.max_large_enum_length {
                return fail(StrictRule::LargeEnumLimit {
                    threshold: options.large_enum_threshold,
                    limit: options.max_large_enum_length,
                });
            }
        }
        if let Some(Value::String(constant)) = object.get("const") {
            totals.string_length += constant.chars().count();
        }
        if totals.string_length > options.max_string_length {
            return fail(StrictRule::StringLengthLimit(options.max_string_length));
        }
    }
    Ok(())
}
