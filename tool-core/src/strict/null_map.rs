//! [`NullMap`]: which properties were made nullable, and undoing that on values.

use std::collections::HashMap;

use serde_json::Value;

/// Bit set of JSON value kinds a schema admits (integers count as numbers).
pub(crate) type Kinds = u8;
const NULL: Kinds = 1;
const BOOL: Kinds = 2;
const NUMBER: Kinds = 4;
const STRING: Kinds = 8;
const ARRAY: Kinds = 16;
const OBJECT: Kinds = 32;
pub(crate) const ANY: Kinds = 63;

/// Restoring follows `$ref`s into recursive definitions; a value deeper than this
/// is left as it is rather than risking the stack.
const MAX_RESTORE_DEPTH: usize = 256;

pub(crate) fn kind_of(value: &Value) -> Kinds {
    match value {
        Value::Null => NULL,
        Value::Bool(_) => BOOL,
        Value::Number(_) => NUMBER,
        Value::String(_) => STRING,
        Value::Array(_) => ARRAY,
        Value::Object(_) => OBJECT,
    }
}

pub(crate) fn kind_of_type_name(name: &str) -> Kinds {
    match name {
        "null" => NULL,
        "boolean" => BOOL,
        "number" | "integer" => NUMBER,
        "string" => STRING,
        "array" => ARRAY,
        "object" => OBJECT,
        _ => 0,
    }
}

/// One converted schema, as far as restoring needs it.
#[derive(Debug, Clone, Default)]
pub(crate) struct Node {
    /// Kinds of values the schema admits (used to pick a union branch).
    pub kinds: Kinds,
    /// `Some` when the schema is an object schema with `properties`.
    pub props: Option<Vec<(String, Prop)>>,
    pub items: Option<usize>,
    pub any_of: Vec<usize>,
    /// Decoded pointer of a kept `$ref` (empty: the root).
    pub reference: Option<Vec<String>>,
}

#[derive(Debug, Clone)]
pub(crate) struct Prop {
    /// Optional and not nullable in the input: `null` means "absent".
    pub relaxed: bool,
    pub child: usize,
    /// `const` (or one-value `enum`) of the property: tells union branches apart.
    pub tag: Option<Value>,
}

/// Which properties [`openai_strict_with_map`](super::openai_strict_with_map) made
/// nullable, so a `null` the model sends for them can be turned back into "absent".
///
/// Strict mode requires every property; an optional property that did not accept
/// `null` becomes nullable instead. [`NullMap::restore`] removes those keys when
/// their value is `null`, walking objects, arrays, unions and `$ref`'d definitions,
/// so the value validates against (and deserializes like) the original schema.
/// Keys that were already nullable keep their `null`.
///
/// ```
/// use tool_core::strict::openai_strict_with_map;
/// use serde_json::json;
///
/// let strict = openai_strict_with_map(&json!({
///     "type": "object",
///     "properties": {"name": {"type": "string"}, "limit": {"type": "integer"}},
///     "required": ["name"]
/// }))
/// .unwrap();
/// assert_eq!(strict.schema["properties"]["limit"]["type"], json!(["integer", "null"]));
/// assert_eq!(strict.relaxed.relaxed_paths(), ["/properties/limit"]);
///
/// let mut args = json!({"name": "x", "limit": null});
/// strict.relaxed.restore(&mut args);
/// assert_eq!(args, json!({"name": "x"}));
/// ```
#[derive(Debug, Clone, Default)]
pub struct NullMap {
    pub(crate) nodes: Vec<Node>,
    pub(crate) root: Option<usize>,
    pub(crate) defs: HashMap<Vec<String>, usize>,
    pub(crate) relaxed_paths: Vec<String>,
}

impl NullMap {
    /// JSON Pointers, into the converted schema, of the properties made nullable.
    ///
    /// ```
    /// use tool_core::strict::openai_strict_with_map;
    /// let strict = openai_strict_with_map(&serde_json::json!({
    ///     "type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]
    /// }))
    /// .unwrap();
    /// assert!(strict.relaxed.relaxed_paths().is_empty());
    /// ```
    pub fn relaxed_paths(&self) -> &[String] {
        &self.relaxed_paths
    }

    /// `true` when no property was made nullable, so [`restore`](Self::restore) is a no-op.
    ///
    /// ```
    /// use tool_core::strict::openai_strict_with_map;
    /// let strict = openai_strict_with_map(&serde_json::json!({"type": "object"})).unwrap();
    /// assert!(strict.relaxed.is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.relaxed_paths.is_empty()
    }

    /// Removes every key whose value is `null` where the original schema had that
    /// key optional and not nullable. Values the schema does not describe are left
    /// alone; in a union, a branch is used only when exactly one branch fits the value.
    ///
    /// ```
    /// use tool_core::strict::openai_strict_with_map;
    /// use serde_json::json;
    ///
    /// let strict = openai_strict_with_map(&json!({
    ///     "type": "object",
    ///     "properties": {"items": {"type": "array", "items": {"$ref": "#/$defs/Item"}}},
    ///     "required": ["items"],
    ///     "$defs": {"Item": {"type": "object", "properties": {"note": {"type": "string"}}}}
    /// }))
    /// .unwrap();
    /// let mut value = json!({"items": [{"note": null}, {"note": "n"}]});
    /// strict.relaxed.restore(&mut value);
    /// assert_eq!(value, json!({"items": [{}, {"note": "n"}]}));
    /// ```
    pub fn restore(&self, value: &mut Value) {
        if self.relaxed_paths.is_empty() {
            return;
        }
        if let Some(root) = self.root {
            self.restore_at(value, root, 0);
        }
    }

    fn target(&self, tokens: &[String]) -> Option<usize> {
        if tokens.is_empty() {
            self.root
        } else {
            self.defs.get(tokens).copied()
        }
    }

    fn restore_at(&self, value: &mut Value, id: usize, depth: usize) {
        if depth > MAX_RESTORE_DEPTH {
            return;
        }
        let node = &self.nodes[id];
        if let Some(tokens) = &node.reference {
            if let Some(target) = self.target(tokens) {
                self.restore_at(value, target, depth + 1);
            }
            return;
        }
        match value {
            Value::Object(map) => {
                if let Some(props) = &node.props {
                    for (name, prop) in props {
                        match map.get_mut(name) {
                            Some(Value::Null) if prop.relaxed => {
                                map.remove(name);
                            }
                            Some(child) => self.restore_at(child, prop.child, depth + 1),
                            None => {}
                        }
                    }
                }
            }
            Value::Array(elements) => {
                if let Some(items) = node.items {
                    for element in elements {
                        self.restore_at(element, items, depth + 1);
                    }
                }
            }
            _ => {}
        }
        if !node.any_of.is_empty() {
            let mut fitting = node
                .any_of
                .iter()
                .copied()
                .filter(|&branch| self.fits(value, branch, depth + 1));
            // Ambiguous unions are left alone: dropping a null that another branch
            // accepts would be as wrong as keeping one it rejects.
            if let (Some(branch), None) = (fitting.next(), fitting.next()) {
                self.restore_at(value, branch, depth + 1);
            }
        }
    }

    /// Whether `value` can be an instance of the strict schema `id` (shallow check:
    /// kind, key set and tag values).
    fn fits(&self, value: &Value, id: usize, depth: usize) -> bool {
        if depth > MAX_RESTORE_DEPTH {
            return false;
        }
        let node = &self.nodes[id];
        if let Some(tokens) = &node.reference {
            return self
                .target(tokens)
                .is_some_and(|target| self.fits(value, target, depth + 1));
        }
        if node.kinds & kind_of(value) == 0 {
            return false;
        }
        if let (Value::Object(map), Some(props)) = (value, &node.props) {
            let known = map
                .keys()
                .all(|key| props.iter().any(|(name, _)| name == key));
            let complete = props
                .iter()
                .all(|(name, prop)| prop.relaxed || map.contains_key(name));
            let tags_match = props
                .iter()
                .all(|(name, prop)| match (&prop.tag, map.get(name)) {
                    (Some(_), Some(Value::Null)) if prop.relaxed => true,
                    (Some(tag), Some(found)) => tag == found,
                    _ => true,
                });
            if !(known && complete && tags_match) {
                return false;
            }
        }
        node.any_of.is_empty()
            || node
                .any_of
                .iter()
                .any(|&branch| self.fits(value, branch, depth + 1))
    }
}
