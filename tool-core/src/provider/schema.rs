//! What the provider dialects (Anthropic strict mode, Gemini) add to the
//! [schema-rewriting engine](crate::schema_rewrite): every `$ref` is inlined
//! and `allOf` merged before a schema's keywords are rewritten, and each
//! dialect decides what a recursive `$ref` and the schema `true` become.

use serde_json::{Map, Value};

use super::error::{SchemaError, SchemaRule};
use crate::schema_rewrite::keywords::Dialect;
use crate::schema_rewrite::{Limits, Walker, merge};

/// `format` values schemars emits for Rust numbers: not JSON Schema formats,
/// and no provider does anything with them.
pub(crate) const NUMERIC_FORMATS: &[&str] = &[
    "int", "int8", "int16", "int32", "int64", "int128", "uint", "uint8", "uint16", "uint32",
    "uint64", "uint128", "float", "double",
];

/// The walker the provider dialects use, with the engine's limits.
pub(crate) type Expander<'a> = Walker<'a, SchemaRule>;

/// Starts a walk over a tool's input schema (refusing deep input first).
pub(crate) fn start(schema: &Value) -> Result<Expander<'_>, SchemaError> {
    Walker::start(schema, Limits::default())
}

/// A provider dialect: the keyword rules of [`Dialect`], and what the shapes
/// every `$ref` inlining meets become.
pub(crate) trait Inlining: Dialect<Rule = SchemaRule> {
    /// What the schema `true` ("any value") becomes.
    fn any_value(&self, walk: &Expander<'_>) -> Result<Value, SchemaError>;

    /// What a `$ref` back to a schema being expanded becomes.
    fn recursion(&self, walk: &Expander<'_>, recursive: Recursive) -> Result<Value, SchemaError>;

    /// Rewrites a schema object free of `$ref` and `allOf`.
    fn plain(
        &mut self,
        walk: &mut Expander<'_>,
        object: &Map<String, Value>,
        depth: usize,
    ) -> Result<Value, SchemaError>;
}

/// Rewrites one schema for a provider: `$ref`s inlined, `allOf` merged, then
/// the dialect's rules.
pub(crate) fn convert<D: Inlining>(
    walk: &mut Expander<'_>,
    dialect: &mut D,
    schema: &Value,
    at_root: bool,
    depth: usize,
) -> Result<Value, SchemaError> {
    walk.enter(depth)?;
    let object = match schema {
        Value::Object(object) => object,
        Value::Bool(true) => return dialect.any_value(walk),
        Value::Bool(false) => return Err(walk.error(SchemaRule::NoValue)),
        _ => return Err(walk.error(SchemaRule::NotASchema)),
    };
    let (flat, pushed) = flatten(walk, object, at_root, depth)?;
    let result = match flat {
        Flat::Plain(object) => dialect.plain(walk, &object, depth),
        Flat::Recursive(recursive) => dialect.recursion(walk, recursive),
    };
    walk.unexpand(pushed);
    result
}

/// A `$ref` that refers back to a schema being expanded.
pub(crate) struct Recursive {
    /// The `$ref` that closes the cycle.
    pub(crate) reference: String,
    /// Annotations and keywords next to it.
    pub(crate) siblings: Map<String, Value>,
    /// The `type` of its target.
    pub(crate) target_type: Option<Value>,
}

/// A schema object with the `$ref`s and `allOf`s at its top merged away.
enum Flat {
    /// The merged schema.
    Plain(Map<String, Value>),
    /// The schema refers back to one being expanded.
    Recursive(Recursive),
}

/// Merges `$ref` targets and `allOf` entries into `object`. Returns the
/// result and how many `$ref`s were marked as expanding (to
/// [`unexpand`](Walker::unexpand) after converting the result's children).
///
/// `$ref` siblings win over the target for annotations; other keywords
/// must agree ([`merge`]). A `$ref` already being expanded is reported as
/// [`Flat::Recursive`] (or as an error inside `allOf`, where it cannot be
/// cut).
fn flatten(
    walk: &mut Expander<'_>,
    object: &Map<String, Value>,
    at_root: bool,
    depth: usize,
) -> Result<(Flat, usize), SchemaError> {
    let mut pushed = 0;
    let mut current = object.clone();
    loop {
        let step = walk.enter(depth + pushed).and_then(|()| walk.spend());
        let step = step.and_then(|()| {
            if current.contains_key("$ref") {
                follow_ref(walk, &current, at_root).map(Some)
            } else if current.contains_key("allOf") {
                merge_all_of(walk, &current, at_root, depth + pushed).map(Some)
            } else {
                Ok(None)
            }
        });
        match step {
            Ok(None) => return Ok((Flat::Plain(current), pushed)),
            Ok(Some(Step::Merged(next, n))) => {
                current = next;
                pushed += n;
            }
            Ok(Some(Step::Recursive(recursive))) => {
                return Ok((Flat::Recursive(recursive), pushed));
            }
            Err(error) => {
                walk.unexpand(pushed);
                return Err(error);
            }
        }
    }
}

fn follow_ref(
    walk: &mut Expander<'_>,
    current: &Map<String, Value>,
    at_root: bool,
) -> Result<Step, SchemaError> {
    let Some(reference) = current.get("$ref").and_then(Value::as_str) else {
        return Err(walk.error_at("$ref", SchemaRule::InvalidKeyword("$ref".into())));
    };
    let reference = reference.to_owned();
    let mut siblings = current.clone();
    siblings.remove("$ref");
    let target = match walk.resolve(&reference, false)?.value {
        Value::Object(map) => map.clone(),
        Value::Bool(true) => Map::new(),
        Value::Bool(false) => return Err(walk.error_at("$ref", SchemaRule::NoValue)),
        _ => {
            let reason = "does not point at a schema".into();
            return Err(walk.error_at("$ref", SchemaRule::InvalidRef { reference, reason }));
        }
    };
    if walk.is_expanding(&reference) {
        return Ok(Step::Recursive(Recursive {
            reference,
            siblings,
            target_type: target.get("type").cloned(),
        }));
    }
    let merged = merge(&siblings, &target, at_root)
        .map_err(|keys| walk.error(SchemaRule::MergeConflict(keys)))?;
    walk.expand(reference);
    Ok(Step::Merged(merged, 1))
}

fn merge_all_of(
    walk: &mut Expander<'_>,
    current: &Map<String, Value>,
    at_root: bool,
    depth: usize,
) -> Result<Step, SchemaError> {
    let Some(entries) = current.get("allOf").and_then(Value::as_array) else {
        return Err(walk.error_at("allOf", SchemaRule::InvalidKeyword("allOf".into())));
    };
    let mut merged = current.clone();
    merged.remove("allOf");
    let mut pushed = 0;
    for (i, entry) in entries.iter().enumerate() {
        let index = i.to_string();
        let outcome = walk.nested(&["allOf", &index], |w| {
            let entry = w.schema_object(entry)?;
            let (flat, n) = flatten(w, &entry, false, depth + pushed + 1)?;
            pushed += n;
            match flat {
                Flat::Plain(entry) => merge(&merged, &entry, at_root)
                    .map_err(|keys| w.error(SchemaRule::MergeConflict(keys))),
                Flat::Recursive(Recursive { reference, .. }) => {
                    Err(w.error_at("$ref", SchemaRule::RecursiveSchema(reference)))
                }
            }
        });
        match outcome {
            Ok(next) => merged = next,
            Err(error) => {
                walk.unexpand(pushed);
                return Err(error);
            }
        }
    }
    Ok(Step::Merged(merged, pushed))
}

enum Step {
    Merged(Map<String, Value>, usize),
    Recursive(Recursive),
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn flatten_merges_ref_siblings_and_all_of() {
        let root = json!({
            "$defs": {
                "A": {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
                "B": {"required": ["b"], "minProperties": 1}
            }
        });
        let mut walk = start(&root).unwrap();
        let object =
            json!({"allOf": [{"$ref": "#/$defs/A"}, {"$ref": "#/$defs/B"}], "description": "d"});
        let (flat, pushed) = flatten(&mut walk, object.as_object().unwrap(), false, 0).unwrap();
        assert_eq!(pushed, 2);
        let Flat::Plain(map) = flat else {
            panic!("not recursive")
        };
        assert_eq!(map["description"], "d");
        assert_eq!(map["required"], json!(["b", "a"]));
        assert_eq!(map["minProperties"], 1);
        assert!(walk.is_expanding("#/$defs/A"));
        walk.unexpand(pushed);
        assert!(!walk.is_expanding("#/$defs/A") && !walk.is_expanding("#/$defs/B"));
    }

    #[test]
    fn flatten_conflicting_all_of_is_an_error_at_the_entry() {
        let root = json!({});
        let mut walk = start(&root).unwrap();
        let object = json!({"allOf": [{"type": "string"}, {"type": "integer"}]});
        let err = match flatten(&mut walk, object.as_object().unwrap(), false, 0) {
            Err(err) => err,
            Ok(_) => panic!("merged"),
        };
        assert_eq!(err.path, "/allOf/1");
        assert_eq!(err.rule, SchemaRule::MergeConflict(vec!["type".into()]));
    }

    #[test]
    fn unresolvable_and_external_refs_are_errors() {
        let root = json!({});
        let mut walk = start(&root).unwrap();
        for reference in ["#/$defs/Missing", "https://example.com/schema"] {
            let object = json!({ "$ref": reference });
            let Err(err) = flatten(&mut walk, object.as_object().unwrap(), false, 0) else {
                panic!("resolved {reference}");
            };
            assert_eq!(err.path, "/$ref");
            assert!(matches!(err.rule, SchemaRule::InvalidRef { .. }));
        }
    }
}
