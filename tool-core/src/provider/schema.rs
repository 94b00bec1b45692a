//! Schema walking shared by the provider converters: a depth check that does
//! not recurse, `$ref`/`allOf` flattening with recursion detection and a node
//! budget, and the notes that carry dropped constraints into descriptions.

use serde_json::{Map, Value};

use super::error::{SchemaError, SchemaRule};
use crate::strict::merge::merge;
use crate::strict::pointer::{escape_token, parse_ref, step};

/// JSON nesting (and `$ref` expansion) the converters process.
pub(crate) const MAX_DEPTH: usize = 128;
/// Schema nodes visited, counting `$ref` expansion.
pub(crate) const MAX_NODES: usize = 100_000;

/// `format` values schemars emits for Rust numbers: not JSON Schema formats,
/// and no provider does anything with them.
pub(crate) const NUMERIC_FORMATS: &[&str] = &[
    "int", "int8", "int16", "int32", "int64", "int128", "uint", "uint8", "uint16", "uint32",
    "uint64", "uint128", "float", "double",
];

/// Rejects JSON nesting beyond `limit` without recursing, so the recursive
/// converters that follow cannot overflow the stack.
pub(crate) fn check_depth(schema: &Value, limit: usize) -> Result<(), SchemaError> {
    let mut stack: Vec<(&Value, usize, String)> = vec![(schema, 1, String::new())];
    while let Some((value, depth, path)) = stack.pop() {
        if depth > limit {
            return Err(SchemaError::new(path, SchemaRule::TooDeep(limit)));
        }
        match value {
            Value::Object(map) => {
                for (key, child) in map {
                    if child.is_object() || child.is_array() {
                        stack.push((child, depth + 1, format!("{path}/{}", escape_token(key))));
                    }
                }
            }
            Value::Array(items) => {
                for (i, child) in items.iter().enumerate() {
                    if child.is_object() || child.is_array() {
                        stack.push((child, depth + 1, format!("{path}/{i}")));
                    }
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// A schema object with the `$ref`s and `allOf`s at its top merged away.
pub(crate) enum Flat {
    /// The merged schema.
    Plain(Map<String, Value>),
    /// The schema refers back to one being expanded.
    Recursive {
        /// The `$ref` that closes the cycle.
        reference: String,
        /// Annotations and keywords next to it, and the `type` of its target.
        siblings: Map<String, Value>,
        target_type: Option<Value>,
    },
}

/// Walks a schema document, expanding local `$ref`s in place.
pub(crate) struct Expander<'a> {
    root: &'a Value,
    /// JSON Pointer of the schema being converted, through `$ref`s as followed.
    pub(crate) path: String,
    /// The `$ref`s inlined above the schema being converted.
    stack: Vec<String>,
    spent: usize,
}

impl<'a> Expander<'a> {
    pub(crate) fn new(root: &'a Value) -> Self {
        Expander {
            root,
            path: String::new(),
            stack: Vec::new(),
            spent: 0,
        }
    }

    pub(crate) fn error(&self, rule: SchemaRule) -> SchemaError {
        SchemaError::new(self.path.clone(), rule)
    }

    pub(crate) fn error_at(&self, keyword: &str, rule: SchemaRule) -> SchemaError {
        SchemaError::new(format!("{}/{}", self.path, escape_token(keyword)), rule)
    }

    /// Counts one schema node against the budget.
    pub(crate) fn spend(&mut self) -> Result<(), SchemaError> {
        self.spent += 1;
        if self.spent > MAX_NODES {
            return Err(self.error(SchemaRule::TooManyNodes(MAX_NODES)));
        }
        Ok(())
    }

    /// Runs `f` with the path extended by `tokens`.
    pub(crate) fn nested<T>(&mut self, tokens: &[&str], f: impl FnOnce(&mut Self) -> T) -> T {
        let len = self.path.len();
        for token in tokens {
            self.path.push('/');
            self.path.push_str(&escape_token(token));
        }
        let result = f(self);
        self.path.truncate(len);
        result
    }

    /// Forgets the `$ref`s a [`flatten`](Self::flatten) pushed, once the
    /// schema they were inlined into is converted.
    pub(crate) fn pop(&mut self, pushed: usize) {
        let keep = self.stack.len().saturating_sub(pushed);
        self.stack.truncate(keep);
    }

    /// Merges `$ref` targets and `allOf` entries into `object`. Returns the
    /// result and how many `$ref`s were pushed on the expansion stack (to
    /// [`pop`](Self::pop) after converting the result's children).
    ///
    /// `$ref` siblings win over the target for annotations; other keywords
    /// must agree ([`merge`]). A `$ref` already being expanded is reported as
    /// [`Flat::Recursive`] (or as an error inside `allOf`, where it cannot be
    /// cut).
    pub(crate) fn flatten(
        &mut self,
        object: &Map<String, Value>,
        at_root: bool,
        depth: usize,
    ) -> Result<(Flat, usize), SchemaError> {
        let mut pushed = 0;
        let mut current = object.clone();
        loop {
            if depth + pushed > MAX_DEPTH {
                self.pop(pushed);
                return Err(self.error(SchemaRule::TooDeep(MAX_DEPTH)));
            }
            if let Err(error) = self.spend() {
                self.pop(pushed);
                return Err(error);
            }
            let step = if current.contains_key("$ref") {
                self.follow_ref(&current, at_root)
            } else if current.contains_key("allOf") {
                self.merge_all_of(&current, at_root, depth + pushed)
            } else {
                return Ok((Flat::Plain(current), pushed));
            };
            match step {
                Ok(Step::Merged(next, n)) => {
                    current = next;
                    pushed += n;
                }
                Ok(Step::Recursive(flat)) => return Ok((flat, pushed)),
                Err(error) => {
                    self.pop(pushed);
                    return Err(error);
                }
            }
        }
    }

    fn follow_ref(
        &mut self,
        current: &Map<String, Value>,
        at_root: bool,
    ) -> Result<Step, SchemaError> {
        let Some(reference) = current.get("$ref").and_then(Value::as_str) else {
            return Err(self.error_at("$ref", SchemaRule::InvalidKeyword("$ref".into())));
        };
        let reference = reference.to_owned();
        let mut siblings = current.clone();
        siblings.remove("$ref");
        let target = self.resolve(&reference)?;
        if self.stack.contains(&reference) {
            return Ok(Step::Recursive(Flat::Recursive {
                reference,
                siblings,
                target_type: target.get("type").cloned(),
            }));
        }
        let merged = merge(&siblings, &target, at_root)
            .map_err(|keys| self.error(SchemaRule::MergeConflict(keys)))?;
        self.stack.push(reference);
        Ok(Step::Merged(merged, 1))
    }

    fn merge_all_of(
        &mut self,
        current: &Map<String, Value>,
        at_root: bool,
        depth: usize,
    ) -> Result<Step, SchemaError> {
        let Some(entries) = current.get("allOf").and_then(Value::as_array) else {
            return Err(self.error_at("allOf", SchemaRule::InvalidKeyword("allOf".into())));
        };
        let mut merged = current.clone();
        merged.remove("allOf");
        let mut pushed = 0;
        for (i, entry) in entries.iter().enumerate() {
            let index = i.to_string();
            let result = self.nested(&["allOf", &index], |w| {
                let entry = w.as_schema_map(entry)?;
                w.flatten(&entry, false, depth + pushed + 1)
            });
            let (flat, n) = match result {
                Ok(done) => done,
                Err(error) => {
                    self.pop(pushed);
                    return Err(error);
                }
            };
            pushed += n;
            let outcome = match flat {
                Flat::Plain(entry) => merge(&merged, &entry, at_root).map_err(|keys| {
                    SchemaError::new(
                        format!("{}/allOf/{i}", self.path),
                        SchemaRule::MergeConflict(keys),
                    )
                }),
                Flat::Recursive { reference, .. } => Err(SchemaError::new(
                    format!("{}/allOf/{i}/$ref", self.path),
                    SchemaRule::RecursiveSchema(reference),
                )),
            };
            match outcome {
                Ok(next) => merged = next,
                Err(error) => {
                    self.pop(pushed);
                    return Err(error);
                }
            }
        }
        Ok(Step::Merged(merged, pushed))
    }

    /// A schema position as an object: `true` is `{}`; `false` and
    /// non-schemas are errors at the current path.
    pub(crate) fn as_schema_map(&self, schema: &Value) -> Result<Map<String, Value>, SchemaError> {
        match schema {
            Value::Object(map) => Ok(map.clone()),
            Value::Bool(true) => Ok(Map::new()),
            Value::Bool(false) => Err(self.error(SchemaRule::NoValue)),
            _ => Err(self.error(SchemaRule::NotASchema)),
        }
    }

    /// The target of a local `$ref`, as a schema object.
    fn resolve(&self, reference: &str) -> Result<Map<String, Value>, SchemaError> {
        let invalid = |reason: String| {
            self.error_at(
                "$ref",
                SchemaRule::InvalidRef {
                    reference: reference.to_owned(),
                    reason,
                },
            )
        };
        let tokens = parse_ref(reference).map_err(invalid)?;
        let mut current = self.root;
        for token in &tokens {
            current = step(current, token)
                .ok_or_else(|| invalid("does not resolve in this schema".into()))?;
        }
        match current {
            Value::Object(map) => Ok(map.clone()),
            Value::Bool(true) => Ok(Map::new()),
            Value::Bool(false) => Err(self.error_at("$ref", SchemaRule::NoValue)),
            _ => Err(invalid("does not point at a schema".into())),
        }
    }
}

enum Step {
    Merged(Map<String, Value>, usize),
    Recursive(Flat),
}

/// The JSON types a schema declares (`type` as a string or array).
pub(crate) fn declared_types(object: &Map<String, Value>) -> Option<Vec<&str>> {
    match object.get("type")? {
        Value::String(t) => Some(vec![t.as_str()]),
        Value::Array(ts) => Some(ts.iter().filter_map(Value::as_str).collect()),
        _ => None,
    }
}

/// Whether an object schema: typed `object`, or untyped with `properties`.
pub(crate) fn is_object_schema(object: &Map<String, Value>) -> bool {
    match declared_types(object) {
        Some(types) => types.contains(&"object"),
        None => object.get("properties").is_some_and(Value::is_object),
    }
}

/// Appends dropped constraints to the description, the way Anthropic's SDKs
/// do (`{minimum: 1, maxLength: 10}`), so the model may still follow them;
/// validation against the original schema enforces them.
pub(crate) fn describe_dropped(out: &mut Map<String, Value>, dropped: &[(String, Value)]) {
    if dropped.is_empty() {
        return;
    }
    let items: Vec<String> = dropped
        .iter()
        .map(|(key, value)| match value {
            Value::String(text) => format!("{key}: {text}"),
            other => format!("{key}: {other}"),
        })
        .collect();
    append_description(out, &format!("{{{}}}", items.join(", ")));
}

/// Appends a paragraph to a schema's (or definition's) `description`.
pub(crate) fn append_description(out: &mut Map<String, Value>, text: &str) {
    let description = match out.get("description").and_then(Value::as_str) {
        Some(existing) if !existing.is_empty() => format!("{existing}\n\n{text}"),
        _ => text.to_owned(),
    };
    out.insert("description".into(), Value::String(description));
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn depth_check_names_the_path() {
        let mut schema = json!({"type": "string"});
        for _ in 0..200 {
            schema = json!({ "items": schema });
        }
        let err = check_depth(&schema, MAX_DEPTH).unwrap_err();
        assert_eq!(err.rule, SchemaRule::TooDeep(MAX_DEPTH));
        assert!(err.path.starts_with("/items/items"));
    }

    #[test]
    fn flatten_merges_ref_siblings_and_all_of() {
        let root = json!({
            "$defs": {
                "A": {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
                "B": {"required": ["b"], "minProperties": 1}
            }
        });
        let mut walk = Expander::new(&root);
        let object =
            json!({"allOf": [{"$ref": "#/$defs/A"}, {"$ref": "#/$defs/B"}], "description": "d"});
        let (flat, pushed) = walk.flatten(object.as_object().unwrap(), false, 0).unwrap();
        assert_eq!(pushed, 2);
        let Flat::Plain(map) = flat else {
            panic!("not recursive")
        };
        assert_eq!(map["description"], "d");
        assert_eq!(map["required"], json!(["b", "a"]));
        assert_eq!(map["minProperties"], 1);
        walk.pop(pushed);
        assert!(walk.stack.is_empty());
    }

    #[test]
    fn flatten_conflicting_all_of_is_an_error_at_the_entry() {
        let root = json!({});
        let mut walk = Expander::new(&root);
        let object = json!({"allOf": [{"type": "string"}, {"type": "integer"}]});
        let err = match walk.flatten(object.as_object().unwrap(), false, 0) {
            Err(err) => err,
            Ok(_) => panic!("merged"),
        };
        assert_eq!(err.path, "/allOf/1");
        assert_eq!(err.rule, SchemaRule::MergeConflict(vec!["type".into()]));
    }

    #[test]
    fn unresolvable_and_external_refs_are_errors() {
        let root = json!({});
        let mut walk = Expander::new(&root);
        for reference in ["#/$defs/Missing", "https://example.com/schema"] {
            let object = json!({ "$ref": reference });
            let Err(err) = walk.flatten(object.as_object().unwrap(), false, 0) else {
                panic!("resolved {reference}");
            };
            assert_eq!(err.path, "/$ref");
            assert!(matches!(err.rule, SchemaRule::InvalidRef { .. }));
        }
    }

    #[test]
    fn dropped_constraints_go_to_the_description() {
        let mut out = Map::new();
        out.insert("description".into(), json!("A count"));
        describe_dropped(
            &mut out,
            &[
                ("minimum".into(), json!(1)),
                ("format".into(), json!("uri")),
            ],
        );
        assert_eq!(out["description"], "A count\n\n{minimum: 1, format: uri}");
    }
}
