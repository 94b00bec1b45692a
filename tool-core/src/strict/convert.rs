//! OpenAI strict mode as a dialect of the [schema-rewriting
//! engine](crate::schema_rewrite): closes objects, requires every property,
//! rewrites unions, merges `allOf`, expands `$ref`s that cannot stay, and
//! filters keywords by [`TABLE`].

use serde_json::{Map, Value, json};

use super::error::{StrictError, StrictRule};
use super::null_map::{ANY, Kinds, Node, NullMap, Prop, kind_of, kind_of_type_name};
use super::nullable::{allows_null, make_nullable};
use super::options::{StrictOptions, StrictSchema};
use crate::schema::{escape_token, parse_ref};
use crate::schema_rewrite::keywords::{Action, Dialect, Out, Table, rewrite};
use crate::schema_rewrite::{Limits, RewriteError, Walker, is_annotation, merge};

/// String formats OpenAI accepts; any other `format` is dropped.
pub(crate) const SUPPORTED_FORMATS: &[&str] = &[
    "date-time",
    "time",
    "date",
    "duration",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "uuid",
];

/// Constraints OpenAI rejects and that cannot be dropped without accepting very
/// different values (Anthropic's strict mode refuses them too).
pub(crate) const REJECTED: &[&str] = &[
    "not",
    "if",
    "then",
    "else",
    "dependentRequired",
    "dependentSchemas",
    "dependencies",
    "prefixItems",
    "additionalItems",
];

/// The keywords OpenAI's structured outputs document as supported (with
/// `format` for its listed formats, decided in [`OpenAiStrict::action`]),
/// and the identifiers and annotations every schema may carry.
pub(crate) const SUPPORTED_KEYWORDS: &[&str] = &[
    "type",
    "enum",
    "const",
    "anyOf",
    "$ref",
    "$defs",
    "definitions",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "minItems",
    "maxItems",
    "pattern",
    "multipleOf",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "description",
    "title",
    "$schema",
    "$id",
    "$anchor",
];

/// Validation keywords strict mode has no equivalent for. In a schema they
/// are dropped (validation against the original schema still enforces
/// them); next to a `$ref` they are refused, see
/// [`OpenAiStrict::convert_ref`].
pub(crate) const UNEXPRESSED_CONSTRAINTS: &[&str] = &[
    "minLength",
    "maxLength",
    "uniqueItems",
    "propertyNames",
    "minProperties",
    "maxProperties",
    "contains",
    "minContains",
    "maxContains",
];

/// OpenAI strict mode's keyword rules; the value-dependent ones (and
/// [`UNEXPRESSED_CONSTRAINTS`], dropped) are in [`OpenAiStrict::action`].
/// Any other keyword (`examples`, `deprecated`...) is dropped, as
/// unsupported formats are: it only annotated what the original schema
/// accepts.
const TABLE: Table = Table {
    keep: SUPPORTED_KEYWORDS,
    // Dead weight once every property is required (and rejected by some
    // deployments).
    drop: &["default"],
    note: &[],
    reject: REJECTED,
};

type Walk<'a> = Walker<'a, StrictRule>;
type Error = RewriteError<StrictRule>;

#[derive(Clone, Copy)]
struct Frame {
    depth: usize,
    at_root: bool,
    in_nested_resource: bool,
}

/// The OpenAI strict dialect: the options, the [`NullMap`] being built, and
/// the JSON Pointer into the output (where relaxed properties are recorded).
struct OpenAiStrict<'o> {
    options: &'o StrictOptions,
    map: NullMap,
    out_path: String,
}

/// One schema object being converted.
struct Plain {
    /// The frame of its subschemas.
    child: Frame,
    at_root: bool,
    is_object: bool,
    is_string: bool,
    unions_done: bool,
    node: Node,
}

pub(crate) fn convert_root(
    schema: &Value,
    options: &StrictOptions,
) -> Result<StrictSchema, StrictError> {
    let limits = Limits {
        depth: options.max_json_depth,
        nodes: options.max_schema_nodes,
    };
    let mut walk = Walker::start(schema, limits)?;
    let Value::Object(object) = schema else {
        return Err(StrictError::new("", StrictRule::NotASchema));
    };
    if object.is_empty() {
        // `{}` as a whole tool schema means "no parameters" (as the reference).
        let mut map = NullMap::default();
        map.nodes.push(Node {
            kinds: kind_of(&Value::Object(Map::new())),
            props: Some(Vec::new()),
            ..Node::default()
        });
        map.root = Some(0);
        return Ok(StrictSchema {
            schema: json!({"type": "object", "properties": {}, "required": [], "additionalProperties": false}),
            relaxed: map,
        });
    }
    let mut dialect = OpenAiStrict {
        options,
        map: NullMap::default(),
        out_path: String::new(),
    };
    let frame = Frame {
        depth: 0,
        at_root: true,
        in_nested_resource: false,
    };
    let (mut out, root_id) = dialect.convert(&mut walk, schema, frame)?;
    check_root(&mut out)?;
    check_ref_cycles(&out)?;
    super::limits::check(&out, options)?;
    dialect.map.root = Some(root_id);
    Ok(StrictSchema {
        schema: out,
        relaxed: dialect.map,
    })
}

/// OpenAI needs a plain object at the root: no union, no `null`.
fn check_root(out: &mut Value) -> Result<(), StrictError> {
    let root_error = |rule| Err(StrictError::new("", rule));
    if out.get("anyOf").is_some() {
        return root_error(StrictRule::RootUnion);
    }
    match out.get("type") {
        Some(Value::String(t)) if t == "object" => Ok(()),
        Some(Value::Array(types)) if types.iter().any(|t| t == "object") => {
            if types.iter().all(|t| t == "object") {
                out["type"] = json!("object");
                Ok(())
            } else if types.iter().any(|t| t == "null") {
                root_error(StrictRule::NullableRoot)
            } else {
                root_error(StrictRule::NonObjectRoot)
            }
        }
        _ => root_error(StrictRule::NonObjectRoot),
    }
}

/// Rejects definitions that are only `$ref`s leading back to themselves (such as
/// `A: {"$ref": B}`, `B: {"$ref": A}`): they describe no value at all.
fn check_ref_cycles(out: &Value) -> Result<(), StrictError> {
    for keyword in ["$defs", "definitions"] {
        let Some(Value::Object(defs)) = out.get(keyword) else {
            continue;
        };
        for name in defs.keys() {
            let start = vec![keyword.to_owned(), name.clone()];
            let mut seen = vec![start.clone()];
            let mut current = &defs[name];
            while let Some(Value::String(reference)) = current.get("$ref") {
                let Ok(tokens) = parse_ref(reference) else {
                    break;
                };
                if seen.contains(&tokens) {
                    let path = format!("/{keyword}/{}/$ref", escape_token(name));
                    return Err(StrictError::new(
                        path,
                        StrictRule::RefCycle(reference.clone()),
                    ));
                }
                let Some(next) = tokens_target(out, &tokens) else {
                    break;
                };
                seen.push(tokens);
                current = next;
            }
        }
    }
    Ok(())
}

/// Where decoded pointer tokens lead in the converted schema (the kept
/// `$ref`s point into it, not into the input).
fn tokens_target<'v>(root: &'v Value, tokens: &[String]) -> Option<&'v Value> {
    tokens
        .iter()
        .try_fold(root, |value, token| value.get(token.as_str()))
}

/// Whether a reference points at a definition kept as a `$ref` target: the
/// root itself or a root-level `$defs`/`definitions` entry.
fn is_kept_target(tokens: &[String]) -> bool {
    tokens.is_empty() || (tokens.len() == 2 && (tokens[0] == "$defs" || tokens[0] == "definitions"))
}

impl OpenAiStrict<'_> {
    /// Runs `f` with the input path extended by `input` and the output path
    /// by `output`.
    fn nested<T>(
        &mut self,
        walk: &mut Walk<'_>,
        input: &[&str],
        output: &[&str],
        f: impl FnOnce(&mut Self, &mut Walk<'_>) -> T,
    ) -> T {
        let len = self.out_path.len();
        for token in output {
            self.out_path.push('/');
            self.out_path.push_str(&escape_token(token));
        }
        let result = walk.nested(input, |w| f(self, w));
        self.out_path.truncate(len);
        result
    }

    fn push_node(&mut self, node: Node) -> usize {
        self.map.nodes.push(node);
        self.map.nodes.len() - 1
    }

    fn kept_ref(&mut self, reference: &str, tokens: Vec<String>) -> (Value, usize) {
        let id = self.push_node(Node {
            reference: Some(tokens),
            ..Node::default()
        });
        (json!({"$ref": reference}), id)
    }

    fn convert(
        &mut self,
        walk: &mut Walk<'_>,
        schema: &Value,
        frame: Frame,
    ) -> Result<(Value, usize), Error> {
        walk.enter(frame.depth)?;
        let object = match schema {
            Value::Object(object) => object,
            Value::Bool(true) => return Err(walk.error(StrictRule::AnyValue)),
            Value::Bool(false) => return Err(walk.error(StrictRule::NoValue)),
            _ => return Err(walk.error(StrictRule::NotASchema)),
        };
        walk.spend()?;
        let frame = Frame {
            in_nested_resource: frame.in_nested_resource
                || (!frame.at_root && object.get("$id").is_some_and(Value::is_string)),
            ..frame
        };
        if object.contains_key("$ref") {
            return self.convert_ref(walk, object, frame);
        }
        if object.contains_key("allOf") {
            return self.convert_all_of(walk, object, frame);
        }
        self.convert_plain(walk, object, frame)
    }

    /// Resolves a `$ref` that must not reach into a nested `$id` resource.
    fn resolve<'a>(walk: &Walk<'a>, reference: &str) -> Result<(Vec<String>, &'a Value), Error> {
        let target = walk.resolve(reference, true)?;
        if target.crosses_id {
            return Err(walk.error_at("$ref", StrictRule::NestedIdRef));
        }
        Ok((target.tokens, target.value))
    }

    /// A `$ref` target as a schema object (errors at the `$ref`).
    fn target_object(walk: &Walk<'_>, target: &Value) -> Result<Map<String, Value>, Error> {
        match target {
            Value::Object(target) => Ok(target.clone()),
            Value::Bool(true) => Ok(Map::new()),
            Value::Bool(false) => Err(walk.error_at("$ref", StrictRule::NoValue)),
            _ => Err(walk.error_at("$ref", StrictRule::NotASchema)),
        }
    }

    /// A `$ref` alone to a definition stays; with siblings its target is
    /// inlined, merged with them (bounds tightened, other constraints
    /// equal or refused), except that a sibling in
    /// [`UNEXPRESSED_CONSTRAINTS`] is refused.
    fn convert_ref(
        &mut self,
        walk: &mut Walk<'_>,
        object: &Map<String, Value>,
        frame: Frame,
    ) -> Result<(Value, usize), Error> {
        if frame.in_nested_resource {
            return Err(walk.error_at("$ref", StrictRule::NestedIdRef));
        }
        let Some(reference) = object["$ref"].as_str() else {
            return Err(walk.error_at("$ref", StrictRule::InvalidKeyword("$ref".into())));
        };
        let (tokens, target) = Self::resolve(walk, reference)?;
        let mut siblings = object.clone();
        siblings.remove("$ref");
        let kept = is_kept_target(&tokens);
        if kept && siblings.is_empty() {
            return Ok(self.kept_ref(reference, tokens));
        }
        // Merged into the target and then dropped, such a sibling would
        // vanish from the one place it was written: refused, as
        // openai-agents does, so the schema is never silently looser.
        let mut unexpressed: Vec<String> = siblings
            .keys()
            .filter(|keyword| UNEXPRESSED_CONSTRAINTS.contains(&keyword.as_str()))
            .cloned()
            .collect();
        unexpressed.sort();
        if let Some(first) = unexpressed.first().cloned() {
            return Err(walk.error_at(&first, StrictRule::RefSiblingUnsupported(unexpressed)));
        }
        if walk.is_expanding(reference) {
            // Recursion through a reference we are inlining: the definition itself
            // is converted in place, so a plain `$ref` is valid; only annotations
            // (which OpenAI does not allow next to `$ref`) are lost.
            if kept && siblings.keys().all(|k| is_annotation(k, frame.at_root)) {
                return Ok(self.kept_ref(reference, tokens));
            }
            return Err(walk.error_at("$ref", StrictRule::RefCycle(reference.to_owned())));
        }
        let target = Self::target_object(walk, target)?;
        let merged = merge(&siblings, &target, frame.at_root)
            .map_err(|keys| walk.error(StrictRule::RefSiblingConflict(keys)))?;
        walk.expand(reference.to_owned());
        let result = self.convert(
            walk,
            &Value::Object(merged),
            Frame {
                depth: frame.depth + 1,
                ..frame
            },
        );
        walk.unexpand(1);
        result
    }

    fn convert_all_of(
        &mut self,
        walk: &mut Walk<'_>,
        object: &Map<String, Value>,
        frame: Frame,
    ) -> Result<(Value, usize), Error> {
        let Some(entries) = object["allOf"].as_array() else {
            return Err(walk.error_at("allOf", StrictRule::InvalidKeyword("allOf".into())));
        };
        let mut merged = object.clone();
        merged.remove("allOf");
        for (i, entry) in entries.iter().enumerate() {
            let index = i.to_string();
            merged = walk.nested(&["allOf", &index], |w| {
                let entry = Self::resolve_entry(w, entry, frame)?;
                merge(&merged, &entry, frame.at_root)
                    .map_err(|keys| w.error(StrictRule::AllOfConflict(keys)))
            })?;
        }
        self.convert(
            walk,
            &Value::Object(merged),
            Frame {
                depth: frame.depth + 1,
                ..frame
            },
        )
    }

    /// An `allOf` entry as a plain schema object: a `$ref` whose siblings are only
    /// annotations is followed (through chains) so its target can be merged.
    fn resolve_entry(
        walk: &mut Walk<'_>,
        entry: &Value,
        frame: Frame,
    ) -> Result<Map<String, Value>, Error> {
        let mut current = walk.schema_object(entry)?;
        if current.get("$id").is_some_and(Value::is_string) && current.contains_key("$ref") {
            return Err(walk.error_at("$ref", StrictRule::NestedIdRef));
        }
        let mut seen: Vec<String> = Vec::new();
        let mut carried = Map::new();
        while let Some(reference) = current.get("$ref") {
            if frame.in_nested_resource {
                return Err(walk.error_at("$ref", StrictRule::NestedIdRef));
            }
            if current
                .keys()
                .any(|k| k != "$ref" && !is_annotation(k, false))
            {
                break; // constraining siblings: left for `convert_ref` to merge
            }
            let Some(reference) = reference.as_str().map(str::to_owned) else {
                return Err(walk.error_at("$ref", StrictRule::InvalidKeyword("$ref".into())));
            };
            if seen.contains(&reference) {
                return Err(walk.error_at("$ref", StrictRule::RefCycle(reference)));
            }
            walk.spend()?;
            let (_, target) = Self::resolve(walk, &reference)?;
            // Outer annotations win over the ones met further down the chain.
            for (k, v) in current.iter().filter(|(k, _)| *k != "$ref") {
                carried.entry(k.clone()).or_insert_with(|| v.clone());
            }
            current = Self::target_object(walk, target)?;
            seen.push(reference);
        }
        current.extend(carried);
        Ok(current)
    }

    fn convert_plain(
        &mut self,
        walk: &mut Walk<'_>,
        object: &Map<String, Value>,
        frame: Frame,
    ) -> Result<(Value, usize), Error> {
        let has_properties = object.get("properties").is_some_and(Value::is_object);
        let declared_type = object.get("type");
        let types: Vec<&str> = match declared_type {
            None => Vec::new(),
            Some(Value::String(t)) => vec![t.as_str()],
            Some(Value::Array(ts)) if ts.iter().all(Value::is_string) => {
                ts.iter().filter_map(Value::as_str).collect()
            }
            Some(_) => return Err(walk.error_at("type", StrictRule::InvalidKeyword("type".into()))),
        };
        let is_object = types.contains(&"object") || (declared_type.is_none() && has_properties);
        if declared_type.is_none()
            && !has_properties
            && object
                .get("additionalProperties")
                .is_some_and(|v| v != &Value::Bool(false))
        {
            return Err(walk.error_at("additionalProperties", StrictRule::OpenMap));
        }
        if declared_type.is_none()
            && !has_properties
            && !["anyOf", "oneOf", "enum", "const"]
                .iter()
                .any(|k| object.contains_key(*k))
        {
            return Err(walk.error(StrictRule::AnyValue));
        }
        let mut out = Out::default();
        if declared_type.is_none() && has_properties {
            out.schema.insert("type".into(), json!("object"));
        }
        let plain = Plain {
            child: Frame {
                depth: frame.depth + 1,
                at_root: false,
                ..frame
            },
            at_root: frame.at_root,
            is_object,
            is_string: types.contains(&"string"),
            unions_done: false,
            node: Node {
                kinds: kinds_of(object, &types),
                ..Node::default()
            },
        };
        let (out, id) = rewrite(walk, self, object, plain, out)?;
        Ok((Value::Object(out), id))
    }

    fn convert_defs(
        &mut self,
        walk: &mut Walk<'_>,
        keyword: &str,
        value: &Value,
        plain: &Plain,
    ) -> Result<Value, Error> {
        let Some(defs) = value.as_object() else {
            return Err(walk.error_at(keyword, StrictRule::InvalidKeyword(keyword.into())));
        };
        let mut out = Map::new();
        for (name, schema) in defs {
            let (converted, id) =
                self.nested(walk, &[keyword, name], &[keyword, name], |c, w| {
                    c.convert(w, schema, plain.child)
                })?;
            if plain.at_root {
                self.map
                    .defs
                    .insert(vec![keyword.to_owned(), name.clone()], id);
            }
            out.insert(name.clone(), converted);
        }
        Ok(Value::Object(out))
    }

    /// `anyOf` followed by `oneOf` (as `anyOf`): OpenAI has no `oneOf`, and the
    /// branches of the unions schemars emits are disjoint, so `anyOf` accepts the same.
    fn convert_unions(
        &mut self,
        walk: &mut Walk<'_>,
        object: &Map<String, Value>,
        plain: &mut Plain,
    ) -> Result<Vec<Value>, Error> {
        let mut branches = Vec::new();
        for keyword in ["anyOf", "oneOf"] {
            let Some(value) = object.get(keyword) else {
                continue;
            };
            let Some(list) = value.as_array() else {
                return Err(walk.error_at(keyword, StrictRule::InvalidKeyword(keyword.into())));
            };
            for (i, branch) in list.iter().enumerate() {
                let (in_index, out_index) = (i.to_string(), branches.len().to_string());
                let (converted, id) = self.nested(
                    walk,
                    &[keyword, &in_index],
                    &["anyOf", &out_index],
                    |c, w| c.convert(w, branch, plain.child),
                )?;
                plain.node.any_of.push(id);
                branches.push(converted);
            }
        }
        Ok(branches)
    }

    /// Closes an object schema and lists every property in `required`; optional
    /// properties become nullable (recorded in the [`NullMap`]).
    fn close_object(
        &mut self,
        walk: &mut Walk<'_>,
        object: &Map<String, Value>,
        out: &mut Map<String, Value>,
        plain: &mut Plain,
    ) -> Result<(), Error> {
        let explicit_closed = match object.get("additionalProperties") {
            None => false,
            Some(Value::Bool(false)) => true,
            Some(_) => return Err(walk.error_at("additionalProperties", StrictRule::OpenMap)),
        };
        let required: Vec<&str> = match object.get("required") {
            None => Vec::new(),
            Some(Value::Array(names)) => names.iter().filter_map(Value::as_str).collect(),
            Some(_) => {
                return Err(
                    walk.error_at("required", StrictRule::InvalidKeyword("required".into()))
                );
            }
        };
        let properties = match object.get("properties") {
            None => None,
            Some(Value::Object(p)) => Some(p),
            Some(_) => {
                return Err(walk.error_at(
                    "properties",
                    StrictRule::InvalidKeyword("properties".into()),
                ));
            }
        };
        let declares_none = properties.is_none_or(Map::is_empty);
        if self.options.reject_open_objects && declares_none && !explicit_closed {
            return Err(walk.error(StrictRule::OpenObject));
        }
        if let Some(properties) = properties {
            let mut converted = Map::new();
            let mut props = Vec::new();
            for (name, schema) in properties {
                let (mut value, id) = self.nested(
                    walk,
                    &["properties", name],
                    &["properties", name],
                    |c, w| c.convert(w, schema, plain.child),
                )?;
                let tag = value
                    .get("const")
                    .cloned()
                    .or_else(|| match value.get("enum") {
                        Some(Value::Array(one)) if one.len() == 1 => Some(one[0].clone()),
                        _ => None,
                    });
                let relaxed =
                    !required.contains(&name.as_str()) && !allows_null(&value, walk.root(), 0);
                if relaxed {
                    make_nullable(&mut value);
                    self.map.relaxed_paths.push(format!(
                        "{}/properties/{}",
                        self.out_path,
                        escape_token(name)
                    ));
                }
                props.push((
                    name.clone(),
                    Prop {
                        relaxed,
                        child: id,
                        tag,
                    },
                ));
                converted.insert(name.clone(), value);
            }
            let names = converted.keys().cloned().map(Value::String).collect();
            out.insert("properties".into(), Value::Object(converted));
            out.insert("required".into(), Value::Array(names));
            plain.node.props = Some(props);
        }
        out.insert("additionalProperties".into(), Value::Bool(false));
        Ok(())
    }
}

impl Dialect for OpenAiStrict<'_> {
    type Rule = StrictRule;
    type Node = Plain;
    /// The [`NullMap`] node of the converted schema.
    type Built = usize;
    const TABLE: Table = TABLE;

    fn action(&self, plain: &Plain, keyword: &str, value: &Value) -> Option<Action<StrictRule>> {
        Some(match keyword {
            "$defs" | "definitions" => Action::Rewrite,
            // Rewritten when the object is closed.
            "properties" | "required" | "additionalProperties" if plain.is_object => Action::Drop,
            "patternProperties" if value.as_object().is_some_and(|m| !m.is_empty()) => {
                Action::Reject(StrictRule::PatternProperties)
            }
            "patternProperties" => Action::Drop,
            // Redundant once the object is closed.
            "unevaluatedProperties" if value == &Value::Bool(false) => Action::Drop,
            "unevaluatedProperties" => Action::Reject(StrictRule::OpenMap),
            "unevaluatedItems" if value == &Value::Bool(false) => Action::Drop,
            "unevaluatedItems" => Action::Reject(StrictRule::UnsupportedKeyword(keyword.into())),
            // Tuples.
            "items" if value.is_array() => {
                Action::Reject(StrictRule::UnsupportedKeyword(keyword.into()))
            }
            "items" => Action::Schema,
            "anyOf" | "oneOf" if !plain.unions_done => Action::Rewrite,
            "anyOf" | "oneOf" => Action::Drop,
            "format"
                if plain.is_string
                    && value
                        .as_str()
                        .is_some_and(|f| SUPPORTED_FORMATS.contains(&f)) =>
            {
                Action::Keep
            }
            "format" => Action::Drop,
            _ if UNEXPRESSED_CONSTRAINTS.contains(&keyword) => Action::Drop,
            _ => return None,
        })
    }

    /// `items`, the one subschema keyword the table hands over.
    fn subschema(
        &mut self,
        walk: &mut Walk<'_>,
        plain: &mut Plain,
        keyword: &str,
        schema: &Value,
    ) -> Result<Value, Error> {
        let len = self.out_path.len();
        self.out_path.push('/');
        self.out_path.push_str(&escape_token(keyword));
        let converted = self.convert(walk, schema, plain.child);
        self.out_path.truncate(len);
        let (converted, id) = converted?;
        plain.node.items = Some(id);
        Ok(converted)
    }

    /// Definitions are converted in place; `anyOf` and `oneOf` become one `anyOf`.
    fn rewrite(
        &mut self,
        walk: &mut Walk<'_>,
        plain: &mut Plain,
        object: &Map<String, Value>,
        keyword: &str,
        value: &Value,
        out: &mut Out,
    ) -> Result<(), Error> {
        if keyword == "anyOf" || keyword == "oneOf" {
            plain.unions_done = true;
            let branches = self.convert_unions(walk, object, plain)?;
            out.schema.insert("anyOf".into(), Value::Array(branches));
        } else {
            let converted = self.convert_defs(walk, keyword, value, plain)?;
            out.schema.insert(keyword.to_owned(), converted);
        }
        Ok(())
    }

    fn finish(
        &mut self,
        walk: &mut Walk<'_>,
        mut plain: Plain,
        object: &Map<String, Value>,
        out: &mut Out,
    ) -> Result<usize, Error> {
        if plain.is_object {
            self.close_object(walk, object, &mut out.schema, &mut plain)?;
        }
        Ok(self.push_node(plain.node))
    }
}

fn kinds_of(object: &Map<String, Value>, types: &[&str]) -> Kinds {
    if !types.is_empty() {
        return types.iter().fold(0, |k, t| k | kind_of_type_name(t));
    }
    if let Some(constant) = object.get("const") {
        return kind_of(constant);
    }
    if let Some(Value::Array(values)) = object.get("enum") {
        return values.iter().fold(0, |k, v| k | kind_of(v));
    }
    if object.get("properties").is_some_and(Value::is_object) {
        return kind_of(&Value::Object(Map::new()));
    }
    ANY
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_keyword_table_is_consistent() {
        assert!(TABLE.overlaps().is_empty());
    }
}
