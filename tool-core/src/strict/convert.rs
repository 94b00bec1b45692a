//! The schema walk: closes objects, requires every property, rewrites unions,
//! merges `allOf`, expands `$ref`s that cannot stay, and filters keywords.

use serde_json::{Map, Value, json};

use super::error::{StrictError, StrictRule};
use super::merge::{is_annotation, merge};
use super::null_map::{ANY, Kinds, Node, NullMap, Prop, kind_of, kind_of_type_name};
use super::nullable::{allows_null, make_nullable};
use super::pointer::{escape_token, is_kept_target, parse_ref, resolve};
use super::{StrictOptions, StrictSchema};

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

/// Keywords dropped: `default` is dead weight once every property is required (and
/// rejected by some deployments); the others OpenAI rejects but only narrow what the
/// original schema accepts, so validating against the original still enforces them.
const STRIPPED: &[&str] = &[
    "default",
    "uniqueItems",
    "propertyNames",
    "minProperties",
    "maxProperties",
    "contains",
    "minContains",
    "maxContains",
];

#[derive(Clone, Copy)]
struct Frame {
    depth: usize,
    at_root: bool,
    in_nested_resource: bool,
}

struct Converter<'a> {
    root: &'a Value,
    options: &'a StrictOptions,
    spent: usize,
    /// `$ref`s being inlined right now, to detect recursion through them.
    expanding: Vec<String>,
    map: NullMap,
    in_path: String,
    out_path: String,
}

pub(crate) fn convert_root(
    schema: &Value,
    options: &StrictOptions,
) -> Result<StrictSchema, StrictError> {
    check_json_depth(schema, options.max_json_depth)?;
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
    let mut converter = Converter {
        root: schema,
        options,
        spent: 0,
        expanding: Vec::new(),
        map: NullMap::default(),
        in_path: String::new(),
        out_path: String::new(),
    };
    let frame = Frame {
        depth: 0,
        at_root: true,
        in_nested_resource: false,
    };
    let (mut out, root_id) = converter.convert(schema, frame)?;
    check_root(&mut out)?;
    check_ref_cycles(&out)?;
    super::limits::check(&out, options)?;
    converter.map.root = Some(root_id);
    Ok(StrictSchema {
        schema: out,
        relaxed: converter.map,
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

fn tokens_target<'v>(root: &'v Value, tokens: &[String]) -> Option<&'v Value> {
    tokens
        .iter()
        .try_fold(root, |value, token| value.get(token.as_str()))
}

/// Rejects JSON nesting beyond `limit` without recursing, so a hostile schema
/// cannot overflow the stack in this check or in the conversion after it.
fn check_json_depth(schema: &Value, limit: usize) -> Result<(), StrictError> {
    // Each visited container is remembered as (parent, token) to rebuild its path.
    let mut trail: Vec<(Option<usize>, String)> = Vec::new();
    let mut stack: Vec<(&Value, usize, Option<usize>)> = vec![(schema, 1, None)];
    while let Some((value, depth, me)) = stack.pop() {
        if depth > limit {
            let mut tokens = Vec::new();
            let mut at = me;
            while let Some(i) = at {
                tokens.push(format!("/{}", escape_token(&trail[i].1)));
                at = trail[i].0;
            }
            tokens.reverse();
            return Err(StrictError::new(
                tokens.concat(),
                StrictRule::TooDeep(limit),
            ));
        }
        let mut visit = |token: String, child: &Value| {
            matches!(child, Value::Object(_) | Value::Array(_)).then(|| {
                trail.push((me, token));
                trail.len() - 1
            })
        };
        match value {
            Value::Object(map) => {
                for (k, v) in map {
                    if let Some(i) = visit(k.clone(), v) {
                        stack.push((v, depth + 1, Some(i)));
                    }
                }
            }
            Value::Array(items) => {
                for (n, v) in items.iter().enumerate() {
                    if let Some(i) = visit(n.to_string(), v) {
                        stack.push((v, depth + 1, Some(i)));
                    }
                }
            }
            _ => {}
        }
    }
    Ok(())
}

impl Converter<'_> {
    fn error(&self, rule: StrictRule) -> StrictError {
        StrictError::new(self.in_path.clone(), rule)
    }

    fn error_at(&self, keyword: &str, rule: StrictRule) -> StrictError {
        StrictError::new(format!("{}/{}", self.in_path, escape_token(keyword)), rule)
    }

    fn spend(&mut self) -> Result<(), StrictError> {
        self.spent += 1;
        if self.spent > self.options.max_schema_nodes {
            return Err(self.error(StrictRule::TooManyNodes(self.options.max_schema_nodes)));
        }
        Ok(())
    }

    /// Runs `f` with both paths extended by one token each.
    fn nested<T>(&mut self, input: &[&str], output: &[&str], f: impl FnOnce(&mut Self) -> T) -> T {
        let (in_len, out_len) = (self.in_path.len(), self.out_path.len());
        for token in input {
            self.in_path.push('/');
            self.in_path.push_str(&escape_token(token));
        }
        for token in output {
            self.out_path.push('/');
            self.out_path.push_str(&escape_token(token));
        }
        let result = f(self);
        self.in_path.truncate(in_len);
        self.out_path.truncate(out_len);
        result
    }

    fn push_node(&mut self, node: Node) -> usize {
        self.map.nodes.push(node);
        self.map.nodes.len() - 1
    }

    fn convert(&mut self, schema: &Value, frame: Frame) -> Result<(Value, usize), StrictError> {
        if frame.depth > self.options.max_json_depth {
            return Err(self.error(StrictRule::TooDeep(self.options.max_json_depth)));
        }
        let object = match schema {
            Value::Object(object) => object,
            Value::Bool(true) => return Err(self.error(StrictRule::AnyValue)),
            Value::Bool(false) => return Err(self.error(StrictRule::NoValue)),
            _ => return Err(self.error(StrictRule::NotASchema)),
        };
        self.spend()?;
        let frame = Frame {
            in_nested_resource: frame.in_nested_resource
                || (!frame.at_root && object.get("$id").is_some_and(Value::is_string)),
            ..frame
        };
        if object.contains_key("$ref") {
            return self.convert_ref(object, frame);
        }
        if object.contains_key("allOf") {
            return self.convert_all_of(object, frame);
        }
        self.convert_plain(object, frame)
    }

    fn convert_ref(
        &mut self,
        object: &Map<String, Value>,
        frame: Frame,
    ) -> Result<(Value, usize), StrictError> {
        if frame.in_nested_resource {
            return Err(self.error_at("$ref", StrictRule::NestedIdRef));
        }
        let Some(reference) = object["$ref"].as_str() else {
            return Err(self.error_at("$ref", StrictRule::InvalidKeyword("$ref".into())));
        };
        let ref_path = format!("{}/$ref", self.in_path);
        let (tokens, target) = resolve(self.root, reference, &ref_path)?;
        let mut siblings = object.clone();
        siblings.remove("$ref");
        let kept = is_kept_target(&tokens);
        if kept && siblings.is_empty() {
            let id = self.push_node(Node {
                reference: Some(tokens),
                ..Node::default()
            });
            return Ok((json!({"$ref": reference}), id));
        }
        if self.expanding.iter().any(|r| r == reference) {
            // Recursion through a reference we are inlining: the definition itself
            // is converted in place, so a plain `$ref` is valid; only annotations
            // (which OpenAI does not allow next to `$ref`) are lost.
            if kept && siblings.keys().all(|k| is_annotation(k, frame.at_root)) {
                let id = self.push_node(Node {
                    reference: Some(tokens),
                    ..Node::default()
                });
                return Ok((json!({"$ref": reference}), id));
            }
            return Err(self.error_at("$ref", StrictRule::RefCycle(reference.to_owned())));
        }
        let target = match target {
            Value::Object(target) => target.clone(),
            Value::Bool(true) => Map::new(),
            Value::Bool(false) => return Err(self.error_at("$ref", StrictRule::NoValue)),
            _ => return Err(self.error_at("$ref", StrictRule::NotASchema)),
        };
        let merged = merge(&siblings, &target, frame.at_root)
            .map_err(|keys| self.error(StrictRule::RefSiblingConflict(keys)))?;
        self.expanding.push(reference.to_owned());
        let result = self.convert(
            &Value::Object(merged),
            Frame {
                depth: frame.depth + 1,
                ..frame
            },
        );
        self.expanding.pop();
        result
    }

    fn convert_all_of(
        &mut self,
        object: &Map<String, Value>,
        frame: Frame,
    ) -> Result<(Value, usize), StrictError> {
        let Some(entries) = object["allOf"].as_array() else {
            return Err(self.error_at("allOf", StrictRule::InvalidKeyword("allOf".into())));
        };
        let mut merged = object.clone();
        merged.remove("allOf");
        for (i, entry) in entries.iter().enumerate() {
            let index = i.to_string();
            let entry = self.nested(&["allOf", &index], &[], |c| c.resolve_entry(entry, frame))?;
            merged = merge(&merged, &entry, frame.at_root).map_err(|keys| {
                StrictError::new(
                    format!("{}/allOf/{i}", self.in_path),
                    StrictRule::AllOfConflict(keys),
                )
            })?;
        }
        self.convert(
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
        &mut self,
        entry: &Value,
        frame: Frame,
    ) -> Result<Map<String, Value>, StrictError> {
        let mut current = match entry {
            Value::Object(object) => object.clone(),
            Value::Bool(true) => return Ok(Map::new()),
            Value::Bool(false) => return Err(self.error(StrictRule::NoValue)),
            _ => return Err(self.error(StrictRule::NotASchema)),
        };
        if current.get("$id").is_some_and(Value::is_string) && current.contains_key("$ref") {
            return Err(self.error_at("$ref", StrictRule::NestedIdRef));
        }
        let mut seen: Vec<String> = Vec::new();
        let mut carried = Map::new();
        while let Some(reference) = current.get("$ref") {
            if frame.in_nested_resource {
                return Err(self.error_at("$ref", StrictRule::NestedIdRef));
            }
            if current
                .keys()
                .any(|k| k != "$ref" && !is_annotation(k, false))
            {
                break; // constraining siblings: left for `convert_ref` to merge
            }
            let Some(reference) = reference.as_str().map(str::to_owned) else {
                return Err(self.error_at("$ref", StrictRule::InvalidKeyword("$ref".into())));
            };
            if seen.contains(&reference) {
                return Err(self.error_at("$ref", StrictRule::RefCycle(reference)));
            }
            self.spend()?;
            let ref_path = format!("{}/$ref", self.in_path);
            let (_, target) = resolve(self.root, &reference, &ref_path)?;
            // Outer annotations win over the ones met further down the chain.
            for (k, v) in current.iter().filter(|(k, _)| *k != "$ref") {
                carried.entry(k.clone()).or_insert_with(|| v.clone());
            }
            current = match target {
                Value::Object(target) => target.clone(),
                Value::Bool(true) => Map::new(),
                Value::Bool(false) => return Err(self.error_at("$ref", StrictRule::NoValue)),
                _ => return Err(self.error_at("$ref", StrictRule::NotASchema)),
            };
            seen.push(reference);
        }
        current.extend(carried);
        Ok(current)
    }

    fn convert_plain(
        &mut self,
        object: &Map<String, Value>,
        frame: Frame,
    ) -> Result<(Value, usize), StrictError> {
        let child = Frame {
            depth: frame.depth + 1,
            at_root: false,
            ..frame
        };
        let has_properties = object.get("properties").is_some_and(Value::is_object);
        let declared_type = object.get("type");
        let types: Vec<&str> = match declared_type {
            None => Vec::new(),
            Some(Value::String(t)) => vec![t.as_str()],
            Some(Value::Array(ts)) if ts.iter().all(Value::is_string) => {
                ts.iter().filter_map(Value::as_str).collect()
            }
            Some(_) => return Err(self.error_at("type", StrictRule::InvalidKeyword("type".into()))),
        };
        let is_object = types.contains(&"object") || (declared_type.is_none() && has_properties);
        if declared_type.is_none()
            && !has_properties
            && object
                .get("additionalProperties")
                .is_some_and(|v| v != &Value::Bool(false))
        {
            return Err(self.error_at("additionalProperties", StrictRule::OpenMap));
        }
        if declared_type.is_none()
            && !has_properties
            && !["anyOf", "oneOf", "enum", "const"]
                .iter()
                .any(|k| object.contains_key(*k))
        {
            return Err(self.error(StrictRule::AnyValue));
        }

        let mut out = Map::new();
        let mut node = Node {
            kinds: kinds_of(object, &types),
            ..Node::default()
        };
        if declared_type.is_none() && has_properties {
            out.insert("type".into(), json!("object"));
        }
        let mut unions_done = false;
        for (key, value) in object {
            match key.as_str() {
                "$defs" | "definitions" => {
                    let converted = self.convert_defs(key, value, child, frame.at_root)?;
                    out.insert(key.clone(), converted);
                }
                "properties" | "required" | "additionalProperties" if is_object => {}
                "patternProperties" => {
                    if value.as_object().is_some_and(|m| !m.is_empty()) {
                        return Err(self.error_at(key, StrictRule::PatternProperties));
                    }
                }
                "unevaluatedProperties" => match value {
                    // Redundant once the object is closed.
                    Value::Bool(false) => {}
                    _ => return Err(self.error_at(key, StrictRule::OpenMap)),
                },
                "unevaluatedItems" => {
                    if value != &Value::Bool(false) {
                        return Err(self.error_at(key, StrictRule::UnsupportedKeyword(key.clone())));
                    }
                }
                "items" => {
                    if value.is_array() {
                        return Err(self.error_at(key, StrictRule::UnsupportedKeyword(key.clone())));
                    }
                    let (converted, id) =
                        self.nested(&["items"], &["items"], |c| c.convert(value, child))?;
                    node.items = Some(id);
                    out.insert(key.clone(), converted);
                }
                "anyOf" | "oneOf" if !unions_done => {
                    unions_done = true;
                    let branches = self.convert_unions(object, child, &mut node)?;
                    out.insert("anyOf".into(), Value::Array(branches));
                }
                "anyOf" | "oneOf" => {}
                "format" => {
                    let keep = types.contains(&"string")
                        && value
                            .as_str()
                            .is_some_and(|f| SUPPORTED_FORMATS.contains(&f));
                    if keep {
                        out.insert(key.clone(), value.clone());
                    }
                }
                k if STRIPPED.contains(&k) => {}
                k if REJECTED.contains(&k) => {
                    return Err(self.error_at(k, StrictRule::UnsupportedKeyword(k.to_owned())));
                }
                _ => {
                    out.insert(key.clone(), value.clone());
                }
            }
        }
        if is_object {
            self.close_object(object, &mut out, &mut node, child)?;
        }
        let id = self.push_node(node);
        Ok((Value::Object(out), id))
    }

    fn convert_defs(
        &mut self,
        keyword: &str,
        value: &Value,
        child: Frame,
        at_root: bool,
    ) -> Result<Value, StrictError> {
        let Some(defs) = value.as_object() else {
            return Err(self.error_at(keyword, StrictRule::InvalidKeyword(keyword.into())));
        };
        let mut out = Map::new();
        for (name, schema) in defs {
            let (converted, id) = self.nested(&[keyword, name], &[keyword, name], |c| {
                c.convert(schema, child)
            })?;
            if at_root {
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
        object: &Map<String, Value>,
        child: Frame,
        node: &mut Node,
    ) -> Result<Vec<Value>, StrictError> {
        let mut branches = Vec::new();
        for keyword in ["anyOf", "oneOf"] {
            let Some(value) = object.get(keyword) else {
                continue;
            };
            let Some(list) = value.as_array() else {
                return Err(self.error_at(keyword, StrictRule::InvalidKeyword(keyword.into())));
            };
            for (i, branch) in list.iter().enumerate() {
                let (in_index, out_index) = (i.to_string(), branches.len().to_string());
                let (converted, id) =
                    self.nested(&[keyword, &in_index], &["anyOf", &out_index], |c| {
                        c.convert(branch, child)
                    })?;
                node.any_of.push(id);
                branches.push(converted);
            }
        }
        Ok(branches)
    }

    /// Closes an object schema and lists every property in `required`; optional
    /// properties become nullable (recorded in the [`NullMap`]).
    fn close_object(
        &mut self,
        object: &Map<String, Value>,
        out: &mut Map<String, Value>,
        node: &mut Node,
        child: Frame,
    ) -> Result<(), StrictError> {
        let explicit_closed = match object.get("additionalProperties") {
            None => false,
            Some(Value::Bool(false)) => true,
            Some(_) => return Err(self.error_at("additionalProperties", StrictRule::OpenMap)),
        };
        let required: Vec<&str> = match object.get("required") {
            None => Vec::new(),
            Some(Value::Array(names)) => names.iter().filter_map(Value::as_str).collect(),
            Some(_) => {
                return Err(
                    self.error_at("required", StrictRule::InvalidKeyword("required".into()))
                );
            }
        };
        let properties = match object.get("properties") {
            None => None,
            Some(Value::Object(p)) => Some(p),
            Some(_) => {
                return Err(self.error_at(
                    "properties",
                    StrictRule::InvalidKeyword("properties".into()),
                ));
            }
        };
        let declares_none = properties.is_none_or(Map::is_empty);
        if self.options.reject_open_objects && declares_none && !explicit_closed {
            return Err(self.error(StrictRule::OpenObject));
        }
        if let Some(properties) = properties {
            let mut converted = Map::new();
            let mut props = Vec::new();
            for (name, schema) in properties {
                let (mut value, id) =
                    self.nested(&["properties", name], &["properties", name], |c| {
                        c.convert(schema, child)
                    })?;
                let tag = value
                    .get("const")
                    .cloned()
                    .or_else(|| match value.get("enum") {
                        Some(Value::Array(one)) if one.len() == 1 => Some(one[0].clone()),
                        _ => None,
                    });
                let relaxed =
                    !required.contains(&name.as_str()) && !allows_null(&value, self.root, 0);
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
            node.props = Some(props);
        }
        out.insert("additionalProperties".into(), Value::Bool(false));
        Ok(())
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
