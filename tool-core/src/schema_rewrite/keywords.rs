//! The keyword loop every dialect shares: a schema object is rewritten keyword
//! by keyword, each one kept, dropped, noted in the description, rejected, or
//! handed to a subschema rewrite or a dialect hook.

use serde_json::{Map, Value};

use super::{EngineRule, RewriteError, Walker};

/// What a dialect does with one keyword of a schema object.
// Some actions serve only the provider dialects (feature `provider`).
#[cfg_attr(not(feature = "provider"), allow(dead_code))]
pub(crate) enum Action<R> {
    /// Copied unchanged.
    Keep,
    /// Left out: not in the dialect, redundant, or handled elsewhere.
    Drop,
    /// Left out and noted in the description (`{minimum: 1}`), because the
    /// model may still follow it and validation against the original schema
    /// enforces it.
    Note,
    /// Refused: leaving it out would accept very different values.
    Reject(R),
    /// Its value has the wrong JSON type.
    Invalid,
    /// One subschema, rewritten through [`Dialect::subschema`].
    Schema,
    /// A map of named subschemas (`properties`), each rewritten through
    /// [`Dialect::subschema`].
    Schemas,
    /// Rewritten by [`Dialect::rewrite`].
    Rewrite,
}

/// The static part of a dialect: which keywords it keeps, drops, notes or
/// rejects whatever their value; any other is left out, as every dialect
/// is a closed list. The lists must not overlap (a test per dialect checks
/// it), so their order does not matter.
pub(crate) struct Table {
    /// Kept as they are.
    pub(crate) keep: &'static [&'static str],
    /// Left out silently.
    pub(crate) drop: &'static [&'static str],
    /// Left out and noted in the description.
    pub(crate) note: &'static [&'static str],
    /// Refused with the dialect's "unsupported keyword" rule.
    pub(crate) reject: &'static [&'static str],
}

impl Table {
    /// The rule for `keyword`.
    pub(crate) fn action<R: EngineRule>(&self, keyword: &str) -> Action<R> {
        let listed = |list: &[&str]| list.contains(&keyword);
        if listed(self.keep) {
            Action::Keep
        } else if listed(self.drop) {
            Action::Drop
        } else if listed(self.note) {
            Action::Note
        } else if listed(self.reject) {
            Action::Reject(R::unsupported_keyword(keyword))
        } else {
            Action::Drop
        }
    }

    /// Keywords that more than one list names (none, for a valid table).
    #[cfg(test)]
    pub(crate) fn overlaps(&self) -> Vec<&'static str> {
        let lists = [self.keep, self.drop, self.note, self.reject];
        let mut seen: Vec<&str> = Vec::new();
        let mut twice = Vec::new();
        for keyword in lists.into_iter().flatten() {
            if seen.contains(keyword) {
                twice.push(*keyword);
            }
            seen.push(keyword);
        }
        twice
    }
}

/// One dialect: its [`Table`] and the hooks for the rules that depend on a
/// keyword's value or on the rest of the schema object.
pub(crate) trait Dialect {
    /// The dialect's rule enum.
    type Rule: EngineRule;
    /// What the dialect knows about the schema object being rewritten
    /// (its types, depth, what it found so far).
    type Node;
    /// What [`finish`](Self::finish) hands back besides the schema.
    type Built;
    /// The keyword rules that do not depend on values.
    const TABLE: Table;
    /// Whether a `properties` map whose members all rewrite to nothing is
    /// left out rather than written as `{}`.
    const OMIT_EMPTY_PROPERTIES: bool = false;

    /// The rule for `keyword` when it depends on its value or on the node;
    /// `None` defers to [`TABLE`](Self::TABLE).
    fn action(&self, node: &Self::Node, keyword: &str, value: &Value)
    -> Option<Action<Self::Rule>>;

    /// Rewrites one subschema found under `keyword` (the walker's path is
    /// already extended to it).
    fn subschema(
        &mut self,
        walk: &mut Walker<'_, Self::Rule>,
        node: &mut Self::Node,
        keyword: &str,
        schema: &Value,
    ) -> Result<Value, RewriteError<Self::Rule>>;

    /// Handles a keyword of `object` whose [`Action`] is
    /// [`Rewrite`](Action::Rewrite).
    fn rewrite(
        &mut self,
        walk: &mut Walker<'_, Self::Rule>,
        node: &mut Self::Node,
        object: &Map<String, Value>,
        keyword: &str,
        value: &Value,
        out: &mut Out,
    ) -> Result<(), RewriteError<Self::Rule>>;

    /// Completes the rewritten object once every keyword is seen.
    fn finish(
        &mut self,
        walk: &mut Walker<'_, Self::Rule>,
        node: Self::Node,
        object: &Map<String, Value>,
        out: &mut Out,
    ) -> Result<Self::Built, RewriteError<Self::Rule>>;
}

/// A schema object being rewritten, and the constraints noted for its
/// description.
#[derive(Default)]
pub(crate) struct Out {
    /// The rewritten keywords so far.
    pub(crate) schema: Map<String, Value>,
    notes: Vec<(String, Value)>,
}

impl Out {
    /// Notes a dropped constraint for the description.
    pub(crate) fn note(&mut self, keyword: &str, value: &Value) {
        self.notes.push((keyword.to_owned(), value.clone()));
    }

    /// The schema, with the notes appended to its description.
    fn into_schema(mut self) -> Map<String, Value> {
        describe_dropped(&mut self.schema, &self.notes);
        self.schema
    }
}

/// A rewritten schema object and what the dialect's [`Dialect::finish`]
/// built, or where and why it failed.
pub(crate) type Rewritten<D> =
    Result<(Map<String, Value>, <D as Dialect>::Built), RewriteError<<D as Dialect>::Rule>>;

/// Rewrites the keywords of `object` (already free of `$ref`s and `allOf`s
/// the dialect expands) by the dialect's rules, starting from `out`.
pub(crate) fn rewrite<D: Dialect>(
    walk: &mut Walker<'_, D::Rule>,
    dialect: &mut D,
    object: &Map<String, Value>,
    mut node: D::Node,
    mut out: Out,
) -> Rewritten<D> {
    for (key, value) in object {
        let action = dialect
            .action(&node, key, value)
            .unwrap_or_else(|| D::TABLE.action(key));
        match action {
            Action::Keep => {
                out.schema.insert(key.clone(), value.clone());
            }
            Action::Drop => {}
            Action::Note => out.note(key, value),
            Action::Reject(rule) => return Err(walk.error_at(key, rule)),
            Action::Invalid => {
                return Err(walk.error_at(key, D::Rule::invalid_keyword(key)));
            }
            Action::Schema => {
                let rewritten =
                    walk.nested(&[key], |w| dialect.subschema(w, &mut node, key, value))?;
                out.schema.insert(key.clone(), rewritten);
            }
            Action::Schemas => {
                let Some(members) = value.as_object() else {
                    return Err(walk.error_at(key, D::Rule::invalid_keyword(key)));
                };
                let mut rewritten = Map::new();
                for (name, member) in members {
                    let member = walk.nested(&[key, name], |w| {
                        dialect.subschema(w, &mut node, key, member)
                    })?;
                    rewritten.insert(name.clone(), member);
                }
                if !(D::OMIT_EMPTY_PROPERTIES && rewritten.is_empty()) {
                    out.schema.insert(key.clone(), Value::Object(rewritten));
                }
            }
            Action::Rewrite => dialect.rewrite(walk, &mut node, object, key, value, &mut out)?,
        }
    }
    let built = dialect.finish(walk, node, object, &mut out)?;
    Ok((out.into_schema(), built))
}

/// Appends dropped constraints to the description, the way Anthropic's SDKs
/// do (`{minimum: 1, maxLength: 10}`), so the model may still follow them;
/// validation against the original schema enforces them.
fn describe_dropped(out: &mut Map<String, Value>, dropped: &[(String, Value)]) {
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
