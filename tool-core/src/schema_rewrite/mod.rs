//! The one schema-rewriting engine behind every provider dialect: OpenAI
//! strict mode ([`crate::strict`]), Anthropic strict mode and Gemini's OpenAPI
//! subset ([`crate::provider`]).
//!
//! It owns what the dialects share, so each is written once:
//!
//! * one error type, [`RewriteError`]: the JSON Pointer into the input schema
//!   and the dialect's rule enum (which implements [`EngineRule`] so the engine
//!   can raise its own errors in the dialect's terms);
//! * one depth limit, [`MAX_DEPTH`], enforced without recursion by
//!   [`check_depth`] before any recursive rewrite starts, and again on `$ref`
//!   expansion by [`Walker::enter`];
//! * one node budget, [`MAX_NODES`], spent through [`Walker::spend`];
//! * one `$ref` resolver ([`crate::schema::resolve_ref`], reached through
//!   [`Walker::resolve`]) and one exact merge of `$ref` siblings and `allOf`
//!   entries ([`merge()`]);
//! * one keyword loop, [`keywords::rewrite`]: a dialect is a [`keywords::Table`]
//!   of keyword rules (keep, drop, note in the description, reject) plus a
//!   [`keywords::Dialect`] with the few hooks whose rules depend on values.
//!
//! What stays with each dialect is what really differs: OpenAI strict keeps
//! `$ref`s to definitions and records the properties it makes nullable; the
//! providers inline every `$ref` and handle recursion their own way.

pub(crate) mod keywords;
mod merge;

use std::marker::PhantomData;

use serde_json::{Map, Value};

use crate::schema::{RefTarget, escape_token, resolve_ref};

pub(crate) use merge::{is_annotation, merge};

/// JSON nesting (and `$ref` expansion) every dialect processes: the tools'
/// schema limit. Deeper input is refused with [`EngineRule::too_deep`]
/// naming the path, so no rewrite can overflow the stack.
pub(crate) const MAX_DEPTH: usize = crate::MAX_SCHEMA_DEPTH;

/// Schema nodes a rewrite visits, counting `$ref` expansion, so a fan-out of
/// references to references cannot explode.
pub(crate) const MAX_NODES: usize = 100_000;

/// A schema a dialect cannot take: where (a JSON Pointer into the input
/// schema, `""` is the root) and the rule broken, in the dialect's terms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RewriteError<R> {
    /// JSON Pointer (RFC 6901) into the input schema.
    pub(crate) path: String,
    /// The rule broken.
    pub(crate) rule: R,
}

impl<R> RewriteError<R> {
    pub(crate) fn new(path: impl Into<String>, rule: R) -> Self {
        RewriteError {
            path: path.into(),
            rule,
        }
    }
}

/// The root pointer is empty, which reads badly in a sentence.
pub(crate) fn display_path(path: &str) -> &str {
    if path.is_empty() { "(root)" } else { path }
}

/// The errors the engine itself raises, spelled in a dialect's rule enum.
pub(crate) trait EngineRule {
    /// A schema position holds something other than an object or boolean.
    fn not_a_schema() -> Self;
    /// The schema `false`.
    fn no_value() -> Self;
    /// A keyword whose value has the wrong JSON type.
    fn invalid_keyword(keyword: &str) -> Self;
    /// A keyword the dialect rejects.
    fn unsupported_keyword(keyword: &str) -> Self;
    /// A `$ref` that is not local or does not resolve.
    fn invalid_ref(reference: &str, reason: String) -> Self;
    /// Nesting beyond `limit`.
    fn too_deep(limit: usize) -> Self;
    /// More than `limit` schema nodes.
    fn too_many_nodes(limit: usize) -> Self;
}

/// Implements [`EngineRule`] for a rule enum that names the engine's errors
/// as both dialect enums do (`NotASchema`, `NoValue`, `InvalidKeyword`,
/// `UnsupportedKeyword`, `InvalidRef`, `TooDeep`, `TooManyNodes`).
macro_rules! engine_rule {
    ($rule:ident) => {
        impl $crate::schema_rewrite::EngineRule for $rule {
            fn not_a_schema() -> Self {
                $rule::NotASchema
            }
            fn no_value() -> Self {
                $rule::NoValue
            }
            fn invalid_keyword(keyword: &str) -> Self {
                $rule::InvalidKeyword(keyword.to_owned())
            }
            fn unsupported_keyword(keyword: &str) -> Self {
                $rule::UnsupportedKeyword(keyword.to_owned())
            }
            fn invalid_ref(reference: &str, reason: String) -> Self {
                $rule::InvalidRef {
                    reference: reference.to_owned(),
                    reason,
                }
            }
            fn too_deep(limit: usize) -> Self {
                $rule::TooDeep(limit)
            }
            fn too_many_nodes(limit: usize) -> Self {
                $rule::TooManyNodes(limit)
            }
        }
    };
}
pub(crate) use engine_rule;

/// Rejects JSON nesting beyond `limit` without recursing, so the recursive
/// rewrites that follow cannot overflow the stack.
pub(crate) fn check_depth<R: EngineRule>(
    schema: &Value,
    limit: usize,
) -> Result<(), RewriteError<R>> {
    // Each visited container is remembered as (parent, token), so the path is
    // rebuilt only for the one that is too deep.
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
            return Err(RewriteError::new(tokens.concat(), R::too_deep(limit)));
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

/// How far a rewrite may go; [`Default`] is [`MAX_DEPTH`] and [`MAX_NODES`].
/// (OpenAI strict mode lets callers set both through
/// [`StrictOptions`](crate::strict::StrictOptions).)
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    pub(crate) depth: usize,
    pub(crate) nodes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            depth: MAX_DEPTH,
            nodes: MAX_NODES,
        }
    }
}

/// The state of one rewrite: the document, the JSON Pointer of the schema
/// being rewritten, the node budget and the `$ref`s being expanded.
pub(crate) struct Walker<'a, R> {
    root: &'a Value,
    /// JSON Pointer of the schema being rewritten, through `$ref`s as followed.
    path: String,
    spent: usize,
    limits: Limits,
    /// `$ref`s inlined above the schema being rewritten, to detect recursion.
    expanding: Vec<String>,
    rule: PhantomData<fn() -> R>,
}

impl<'a, R: EngineRule> Walker<'a, R> {
    /// A walk over `root`, checked for depth first (see [`check_depth`]).
    pub(crate) fn start(root: &'a Value, limits: Limits) -> Result<Self, RewriteError<R>> {
        check_depth(root, limits.depth)?;
        Ok(Walker {
            root,
            path: String::new(),
            spent: 0,
            limits,
            expanding: Vec::new(),
            rule: PhantomData,
        })
    }

    /// The document being rewritten.
    pub(crate) fn root(&self) -> &'a Value {
        self.root
    }

    /// An error at the schema being rewritten.
    pub(crate) fn error(&self, rule: R) -> RewriteError<R> {
        RewriteError::new(self.path.clone(), rule)
    }

    /// An error at one keyword of the schema being rewritten.
    pub(crate) fn error_at(&self, keyword: &str, rule: R) -> RewriteError<R> {
        RewriteError::new(format!("{}/{}", self.path, escape_token(keyword)), rule)
    }

    /// Counts one schema node against the budget.
    pub(crate) fn spend(&mut self) -> Result<(), RewriteError<R>> {
        self.spent += 1;
        if self.spent > self.limits.nodes {
            return Err(self.error(R::too_many_nodes(self.limits.nodes)));
        }
        Ok(())
    }

    /// Refuses a schema `depth` levels down (JSON nesting plus `$ref`
    /// expansion), which [`check_depth`] alone cannot bound.
    pub(crate) fn enter(&self, depth: usize) -> Result<(), RewriteError<R>> {
        if depth > self.limits.depth {
            return Err(self.error(R::too_deep(self.limits.depth)));
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

    /// Resolves a `$ref` of the schema being rewritten (see [`resolve_ref`]
    /// for `stop_at_id`); errors are at its `$ref` keyword.
    pub(crate) fn resolve(
        &self,
        reference: &str,
        stop_at_id: bool,
    ) -> Result<RefTarget<'a>, RewriteError<R>> {
        resolve_ref(self.root, reference, stop_at_id)
            .map_err(|reason| self.error_at("$ref", R::invalid_ref(reference, reason)))
    }

    /// Whether `reference` is being expanded above the current schema.
    pub(crate) fn is_expanding(&self, reference: &str) -> bool {
        self.expanding.iter().any(|r| r == reference)
    }

    /// Marks `reference` as being expanded until [`unexpand`](Self::unexpand).
    pub(crate) fn expand(&mut self, reference: String) {
        self.expanding.push(reference);
    }

    /// Forgets the last `count` references [`expand`](Self::expand)ed.
    pub(crate) fn unexpand(&mut self, count: usize) {
        let keep = self.expanding.len().saturating_sub(count);
        self.expanding.truncate(keep);
    }

    /// A schema position as an object: `true` is `{}`; `false` and
    /// non-schemas are errors at the current path.
    pub(crate) fn schema_object(
        &self,
        schema: &Value,
    ) -> Result<Map<String, Value>, RewriteError<R>> {
        match schema {
            Value::Object(map) => Ok(map.clone()),
            Value::Bool(true) => Ok(Map::new()),
            Value::Bool(false) => Err(self.error(R::no_value())),
            _ => Err(self.error(R::not_a_schema())),
        }
    }
}

/// The JSON types a schema declares (`type` as a string or array).
#[cfg(feature = "provider")]
pub(crate) fn declared_types(object: &Map<String, Value>) -> Option<Vec<&str>> {
    match object.get("type")? {
        Value::String(t) => Some(vec![t.as_str()]),
        Value::Array(ts) => Some(ts.iter().filter_map(Value::as_str).collect()),
        _ => None,
    }
}

/// Whether an object schema: typed `object`, or untyped with `properties`.
#[cfg(feature = "provider")]
pub(crate) fn is_object_schema(object: &Map<String, Value>) -> bool {
    match declared_types(object) {
        Some(types) => types.contains(&"object"),
        None => object.get("properties").is_some_and(Value::is_object),
    }
}

/// Helpers for the dialects' tests.
#[cfg(test)]
pub(crate) mod test_support {
    use serde_json::{Map, Value};

    /// A schema nested `levels` objects deep through `properties`, built and
    /// dropped without recursion (serde_json's own drop recurses).
    pub(crate) struct DeepSchema(pub(crate) Value);

    impl DeepSchema {
        pub(crate) fn new(levels: usize) -> Self {
            let mut schema = serde_json::json!({"type": "string"});
            for _ in 0..levels {
                let mut properties = Map::new();
                properties.insert("a".into(), schema);
                let mut object = Map::new();
                object.insert("type".into(), "object".into());
                object.insert("properties".into(), Value::Object(properties));
                schema = Value::Object(object);
            }
            DeepSchema(schema)
        }
    }

    impl Drop for DeepSchema {
        fn drop(&mut self) {
            let mut stack = vec![self.0.take()];
            while let Some(mut value) = stack.pop() {
                if let Some(object) = value.as_object_mut() {
                    let keys: Vec<String> = object.keys().cloned().collect();
                    stack.extend(keys.iter().filter_map(|k| object.remove(k)));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::provider::SchemaRule;

    #[test]
    fn depth_check_names_the_path() {
        let mut schema = json!({"type": "string"});
        for _ in 0..200 {
            schema = json!({ "items": schema });
        }
        let err = check_depth::<SchemaRule>(&schema, MAX_DEPTH).unwrap_err();
        assert_eq!(err.rule, SchemaRule::TooDeep(MAX_DEPTH));
        assert!(err.path.starts_with("/items/items"));
        assert_eq!(err.path.matches("/items").count(), MAX_DEPTH);
    }

    #[test]
    fn the_budget_counts_every_node() {
        let root = json!({});
        let limits = Limits {
            depth: MAX_DEPTH,
            nodes: 2,
        };
        let mut walk = Walker::<SchemaRule>::start(&root, limits).unwrap();
        assert!(walk.spend().is_ok() && walk.spend().is_ok());
        let err = walk.nested(&["a/b"], |w| w.spend()).unwrap_err();
        assert_eq!(
            (err.path.as_str(), err.rule),
            ("/a~1b", SchemaRule::TooManyNodes(2))
        );
    }

    #[test]
    fn refs_resolve_at_the_ref_keyword() {
        let root = json!({"$defs": {"A": {"type": "string"}}});
        let walk = Walker::<SchemaRule>::start(&root, Limits::default()).unwrap();
        assert_eq!(
            walk.resolve("#/$defs/A", false).unwrap().value,
            &json!({"type": "string"})
        );
        let err = walk.resolve("#/$defs/B", false).map(|_| ()).unwrap_err();
        assert_eq!(err.path, "/$ref");
        assert!(matches!(err.rule, SchemaRule::InvalidRef { .. }));
    }
}
