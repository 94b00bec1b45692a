//! The editable fields of a tool's input (`ToolBuilder::editable`): the
//! check of their names against the input schema when the tool is built,
//! and the edit schema, the input schema restricted to them.

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value};

use crate::error::BuildError;
use crate::schema::{escape_token, parse_ref, resolve, resolve_ref};

/// The names of the input schema's top-level properties (after a root `$ref`).
pub(crate) fn top_level_properties(input_schema: &Value) -> Vec<String> {
    resolve(input_schema, input_schema)
        .get("properties")
        .and_then(Value::as_object)
        .map(|properties| properties.keys().cloned().collect())
        .unwrap_or_default()
}

/// The first problem with the declared editable `fields` of tool `id`: an
/// empty name, a name listed twice, or a name that is not a top-level
/// property of `input_schema`.
pub(crate) fn check_fields(
    id: &str,
    input_schema: &Value,
    fields: &[String],
) -> Result<(), BuildError> {
    let properties = top_level_properties(input_schema);
    let mut seen = HashSet::new();
    for field in fields {
        if field.is_empty() {
            return Err(BuildError::EmptyEditableField { id: id.to_owned() });
        }
        if !seen.insert(field.as_str()) {
            return Err(BuildError::DuplicateEditableField {
                id: id.to_owned(),
                field: field.clone(),
            });
        }
        if !properties.contains(field) {
            return Err(BuildError::UnknownEditableField {
                id: id.to_owned(),
                field: field.clone(),
                properties,
            });
        }
    }
    Ok(())
}

/// The edit schema: `input_schema` restricted to `fields` (those of them
/// that are its top-level properties, in the order given), `required` the
/// ones the input requires, no other property allowed, and the definitions
/// the kept properties reach (through any local `$ref`, transitively)
/// carried along; the others are dropped.
pub(crate) fn edit_schema(input_schema: &Value, fields: &[String]) -> Value {
    let object = resolve(input_schema, input_schema);
    let properties = object.get("properties").and_then(Value::as_object);
    let required: Vec<&str> = object
        .get("required")
        .and_then(Value::as_array)
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut imports = Imports::new(input_schema);
    let mut kept = Map::new();
    for field in fields {
        if let Some(schema) = properties.and_then(|properties| properties.get(field)) {
            let mut schema = schema.clone();
            imports.rewrite(&mut schema);
            kept.insert(field.clone(), schema);
        }
    }
    let required: Vec<Value> = fields
        .iter()
        .filter(|field| kept.contains_key(*field) && required.contains(&field.as_str()))
        .map(|field| Value::String(field.clone()))
        .collect();
    let mut edit = Map::new();
    // The dialect decides how the rest reads: kept when the input names one.
    if let Some(dialect) = input_schema.get("$schema") {
        edit.insert("$schema".to_owned(), dialect.clone());
    }
    edit.insert("type".to_owned(), Value::from("object"));
    edit.insert("properties".to_owned(), Value::Object(kept));
    if !required.is_empty() {
        edit.insert("required".to_owned(), Value::Array(required));
    }
    edit.insert("additionalProperties".to_owned(), Value::Bool(false));
    for (container, definitions) in imports.finish() {
        edit.insert(container.to_owned(), Value::Object(definitions));
    }
    Value::Object(edit)
}

/// Keys whose values are data, not schemas: a `{"$ref": ..}` in them is
/// not a reference.
const DATA_KEYS: [&str; 4] = ["const", "enum", "default", "examples"];

/// Keywords whose values map names to schemas.
const NAMED_SCHEMAS: [&str; 5] = [
    "properties",
    "patternProperties",
    "$defs",
    "definitions",
    "dependentSchemas",
];

/// The definitions an edit schema carries: each local `$ref` of the kept
/// properties is followed in the input schema and its target copied once.
/// A reference to a definition (`#/$defs/Name`, `#/definitions/Name`)
/// keeps its name and place; any other local reference (the root `#`, as
/// schemars writes a recursive input, or `#/properties/x`) is copied into
/// `$defs` under a new name and rewritten to point there.
struct Imports<'a> {
    root: &'a Value,
    /// The rewritten reference of each original one met so far.
    renamed: HashMap<String, String>,
    /// Names taken in `$defs`: the input's own, and those given to copies.
    taken: HashSet<String>,
    /// Targets still to copy (their own references not yet rewritten):
    /// container, name, schema.
    pending: Vec<(&'static str, String, Value)>,
    /// Copied definitions by container (`$defs` or `definitions`).
    copied: Vec<(&'static str, Map<String, Value>)>,
}

impl<'a> Imports<'a> {
    fn new(root: &'a Value) -> Self {
        let taken = root
            .get("$defs")
            .and_then(Value::as_object)
            .map(|definitions| definitions.keys().cloned().collect())
            .unwrap_or_default();
        Imports {
            root,
            renamed: HashMap::new(),
            taken,
            pending: Vec::new(),
            copied: Vec::new(),
        }
    }

    /// Rewrites the local references inside `schema` to where their targets
    /// will be in the edit schema, queueing each target not yet met.
    fn rewrite(&mut self, schema: &mut Value) {
        match schema {
            Value::Object(map) => {
                for (key, value) in map.iter_mut() {
                    match (key.as_str(), value) {
                        ("$ref", Value::String(reference)) => {
                            if let Some(rewritten) = self.reference(reference) {
                                *reference = rewritten;
                            }
                        }
                        (key, _) if DATA_KEYS.contains(&key) => {}
                        // Maps of names to schemas: a property may be named
                        // `default` or `$ref`.
                        (key, Value::Object(named)) if NAMED_SCHEMAS.contains(&key) => {
                            named.values_mut().for_each(|schema| self.rewrite(schema));
                        }
                        (_, value) => self.rewrite(value),
                    }
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|item| self.rewrite(item)),
            _ => {}
        }
    }

    /// Where `reference` points in the edit schema; `None` (left as it is)
    /// when it is not local or resolves nowhere in the input schema.
    fn reference(&mut self, reference: &str) -> Option<String> {
        if let Some(rewritten) = self.renamed.get(reference) {
            return Some(rewritten.clone());
        }
        let tokens = parse_ref(reference).ok()?;
        let target = resolve_ref(self.root, reference, false).ok()?.value.clone();
        let (container, name, rewritten) = match tokens.as_slice() {
            [container, name] if container == "$defs" || container == "definitions" => {
                let container = if container == "$defs" {
                    "$defs"
                } else {
                    "definitions"
                };
                (container, name.clone(), reference.to_owned())
            }
            _ => {
                let name = self.fresh_name(&tokens);
                let rewritten = format!("#/$defs/{}", escape_token(&name));
                ("$defs", name, rewritten)
            }
        };
        let target = if tokens.is_empty() {
            // The root as a definition: its definitions are the edit
            // schema's, carried as its references reach them.
            without_root_keywords(target)
        } else {
            target
        };
        self.renamed.insert(reference.to_owned(), rewritten.clone());
        self.pending.push((container, name, target));
        Some(rewritten)
    }

    /// A `$defs` name for a copy of the schema at `tokens`: the root's title
    /// (schemars titles it after the type) or the last token, made unique.
    fn fresh_name(&mut self, tokens: &[String]) -> String {
        let base = match tokens.last() {
            Some(last) => last.clone(),
            None => self
                .root
                .get("title")
                .and_then(Value::as_str)
                .unwrap_or("Input")
                .to_owned(),
        };
        let mut name = base.clone();
        let mut suffix = 2;
        while self.taken.contains(&name) {
            name = format!("{base}{suffix}");
            suffix += 1;
        }
        self.taken.insert(name.clone());
        name
    }

    /// The copied definitions, each with its own references rewritten
    /// (which may copy more), by container.
    fn finish(mut self) -> Vec<(&'static str, Map<String, Value>)> {
        while let Some((container, name, mut schema)) = self.pending.pop() {
            self.rewrite(&mut schema);
            match self.copied.iter_mut().find(|(c, _)| *c == container) {
                Some((_, definitions)) => {
                    definitions.insert(name, schema);
                }
                None => self
                    .copied
                    .push((container, Map::from_iter([(name, schema)]))),
            }
        }
        self.copied
    }
}

/// The root schema without what only a root has: its definitions, its
/// dialect and its id.
fn without_root_keywords(mut root: Value) -> Value {
    if let Some(map) = root.as_object_mut() {
        for keyword in ["$defs", "definitions", "$schema", "$id"] {
            map.remove(keyword);
        }
    }
    root
}
