//! Exact merging of `allOf` entries and `$ref` siblings into one schema object.

use serde_json::{Map, Value};

/// Keywords that annotate without constraining: when merging, the referring side wins.
const ANNOTATIONS: &[&str] = &[
    "$anchor",
    "$comment",
    "$defs",
    "$schema",
    "contentEncoding",
    "contentMediaType",
    "contentSchema",
    "default",
    "definitions",
    "deprecated",
    "description",
    "examples",
    "readOnly",
    "title",
    "writeOnly",
];

/// Keywords whose meaning depends on each other within one schema object: a merge
/// may not combine members of a group that come from different sides.
const INTERACTING: &[&[&str]] = &[
    &[
        "properties",
        "additionalProperties",
        "patternProperties",
        "unevaluatedProperties",
    ],
    &[
        "items",
        "prefixItems",
        "additionalItems",
        "unevaluatedItems",
    ],
    &["contains", "minContains", "maxContains"],
    &["if", "then", "else"],
];

/// Bounds whose combination within one schema is the tighter of the two:
/// `true` for lower bounds (the larger wins), `false` for upper bounds.
const BOUNDS: &[(&str, bool)] = &[
    ("minimum", true),
    ("exclusiveMinimum", true),
    ("minLength", true),
    ("minItems", true),
    ("minProperties", true),
    ("maximum", false),
    ("exclusiveMaximum", false),
    ("maxLength", false),
    ("maxItems", false),
    ("maxProperties", false),
];

/// The tighter of two values of the bound `keyword`, when it is one and both
/// are numbers.
fn tighter_bound<'v>(keyword: &str, a: &'v Value, b: &'v Value) -> Option<&'v Value> {
    let (_, lower) = BOUNDS.iter().find(|(bound, _)| *bound == keyword)?;
    let a_larger = match (a.as_number()?, b.as_number()?) {
        (x, y) if x.as_i64().is_some() && y.as_i64().is_some() => x.as_i64() >= y.as_i64(),
        (x, y) if x.as_u64().is_some() && y.as_u64().is_some() => x.as_u64() >= y.as_u64(),
        (x, y) => x.as_f64() >= y.as_f64(),
    };
    Some(if a_larger == *lower { a } else { b })
}

/// Whether `keyword` only annotates (`$id` does at the root).
pub(crate) fn is_annotation(keyword: &str, at_root: bool) -> bool {
    ANNOTATIONS.contains(&keyword) || (at_root && keyword == "$id")
}

/// Merges `entry` into `parent` as `allOf: [parent, entry]` would constrain.
///
/// Annotations: the parent wins. Keys on one side only: taken, unless a keyword of
/// the same [`INTERACTING`] group appears on the other side with a different value.
/// Keys on both sides: equal JSON values (numbers by value), `required` (union),
/// [`BOUNDS`] (the tighter) and trivially empty `properties`/`required` merge;
/// anything else is a conflict,
/// returned as the sorted list of conflicting keywords.
pub(crate) fn merge(
    parent: &Map<String, Value>,
    entry: &Map<String, Value>,
    at_root: bool,
) -> Result<Map<String, Value>, Vec<String>> {
    let trivial = |k: &str, v: &Value| {
        (k == "properties" && v.as_object().is_some_and(Map::is_empty))
            || (k == "required" && v.as_array().is_some_and(Vec::is_empty))
    };
    let mut merged = entry.clone();
    let mut conflicts = Vec::new();
    for (key, value) in parent {
        // Both bounds apply, so the tighter one alone says the same.
        let tighter = merged
            .get(key)
            .and_then(|existing| tighter_bound(key, existing, value))
            .cloned();
        if let Some(tighter) = tighter {
            merged.insert(key.clone(), tighter);
            continue;
        }
        match merged.get(key) {
            None => {
                merged.insert(key.clone(), value.clone());
            }
            Some(_) if is_annotation(key, at_root) => {
                merged.insert(key.clone(), value.clone());
            }
            Some(existing) if json_equal(existing, value) || trivial(key, value) => {}
            Some(existing) if trivial(key, existing) => {
                merged.insert(key.clone(), value.clone());
            }
            Some(Value::Array(existing)) if key == "required" => {
                let mut union = existing.clone();
                for name in value.as_array().into_iter().flatten() {
                    if !union.contains(name) {
                        union.push(name.clone());
                    }
                }
                merged.insert(key.clone(), Value::Array(union));
            }
            Some(_) => conflicts.push(key.clone()),
        }
    }
    for group in INTERACTING {
        let side = |m: &Map<String, Value>| -> Map<String, Value> {
            m.iter()
                .filter(|(k, v)| group.contains(&k.as_str()) && !trivial(k, v))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        };
        let (from_parent, from_entry) = (side(parent), side(entry));
        let differs = from_parent.len() != from_entry.len()
            || from_parent
                .iter()
                .any(|(k, v)| !from_entry.get(k).is_some_and(|e| json_equal(e, v)));
        if !from_parent.is_empty() && !from_entry.is_empty() && differs {
            conflicts.extend(from_parent.keys().chain(from_entry.keys()).cloned());
        }
    }
    if conflicts.is_empty() {
        Ok(merged)
    } else {
        conflicts.sort();
        conflicts.dedup();
        Err(conflicts)
    }
}

/// JSON equality with numbers compared by value (`1` equals `1.0`).
fn json_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64()) {
            (Some(x), Some(y)) => x == y,
            _ => match (x.as_u64(), y.as_u64()) {
                (Some(x), Some(y)) => x == y,
                _ => x.as_f64() == y.as_f64(),
            },
        },
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| json_equal(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_equal(v, w)))
        }
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Map, Value, json};

    use super::merge;

    fn object(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap()
    }

    /// Integer schemas carry their type's bounds, so a narrower bound next
    /// to a `$ref` (or in another `allOf` entry) meets a wider one: both
    /// apply, which the tighter says alone.
    #[test]
    fn bounds_on_both_sides_merge_to_the_tighter_one() {
        let parent = object(json!({"minimum": 1, "maximum": 10, "maxLength": 3}));
        let entry = object(
            json!({"type": "integer", "minimum": 0, "maximum": 4294967295_u64, "maxLength": 8}),
        );
        assert_eq!(
            Value::Object(merge(&parent, &entry, false).unwrap()),
            json!({"type": "integer", "minimum": 1, "maximum": 10, "maxLength": 3})
        );
        let wider = object(json!({"minimum": -5.5, "exclusiveMaximum": 100}));
        let narrower = object(json!({"minimum": -2, "exclusiveMaximum": 99.5}));
        assert_eq!(
            Value::Object(merge(&wider, &narrower, false).unwrap()),
            json!({"minimum": -2, "exclusiveMaximum": 99.5})
        );
        // Keywords that are not bounds still conflict.
        let err = merge(
            &object(json!({"pattern": "a"})),
            &object(json!({"pattern": "b"})),
            false,
        );
        assert_eq!(err.unwrap_err(), ["pattern"]);
    }
}
