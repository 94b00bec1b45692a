//! Standing rules as a store keeps them: the [`RuleStore`] trait and a
//! rule's record ([`StandingRule`]), an approval given ahead of time for
//! the calls of one tool whose input matches, until a time, unless
//! revoked. Rules live in the store, so every instance sharing it applies
//! the same ones ([`StandingRules`](crate::StandingRules) makes and revokes
//! them; the approval gate reads those in force).

use std::future::Future;
use std::time::SystemTime;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::StoreError;

/// A standing rule: "approve calls of tool `tool_id` whose input matches
/// `condition`, asked for by `requester`, until `until_ms`", made by
/// `author`. A call the rule matches is approved by it when it reaches
/// the approval gate, and the audit log names the rule and its author.
///
/// A rule never approves a call whose policy asks for more than one
/// approval, nor one that needs approvals from a group its author was not
/// in when making it, nor (under separation of duties) a call its author
/// asked for; and a rule whose condition cannot be evaluated (an unknown
/// predicate, input or arguments of the wrong shape, a predicate that
/// panics) approves nothing.
///
/// ```
/// use std::time::{Duration, SystemTime};
/// use serde_json::json;
/// use tool_runtime::StandingRule;
///
/// let rule = StandingRule::new("acme-refunds", "refund", SystemTime::now() + Duration::from_secs(3600))
///     .when_equals("/customer", json!("acme"))
///     .when("amount_at_most", json!(200))
///     .for_requester("agent-7");
/// assert_eq!(rule.condition.equals.len(), 1);
/// assert_eq!(rule.requester.as_deref(), Some("agent-7"));
/// assert!(rule.revoked.is_none());
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct StandingRule {
    /// The rule's id (the key), chosen by whoever makes it; never reused,
    /// also after it is revoked.
    pub rule_id: String,
    /// The tool whose calls it approves.
    pub tool_id: String,
    /// What a call's input must satisfy.
    pub condition: RuleCondition,
    /// Whose calls it approves (a call's requester); `None`: anyone's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requester: Option<String>,
    /// Until when (milliseconds since the Unix epoch, excluded).
    pub until_ms: u64,
    /// Who made it (the principal, as its `Display` writes it), set when
    /// it is made.
    #[serde(default)]
    pub author: String,
    /// The groups its author was in when making it: a call that needs an
    /// approval from a group is approved only by a rule whose author was
    /// in it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub author_groups: Vec<String>,
    /// When it was made (milliseconds since the Unix epoch).
    #[serde(default)]
    pub created_at_ms: u64,
    /// Who revoked it, and when; `None` while it stands.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revoked: Option<Revocation>,
}

/// What a call's input must satisfy for a [`StandingRule`] to approve it:
/// every equality, and the predicate if there is one. An empty condition
/// matches every input.
///
/// ```
/// use serde_json::json;
/// use tool_runtime::store::RuleCondition;
///
/// let condition = RuleCondition::default();
/// assert!(condition.equals.is_empty() && condition.predicate.is_none());
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct RuleCondition {
    /// Values the input must hold: the value at each JSON pointer equals
    /// the one given.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub equals: Vec<FieldEquals>,
    /// A predicate the application registered
    /// ([`RuntimeBuilder::rule_predicate`](crate::RuntimeBuilder::rule_predicate)),
    /// by name, with the rule's arguments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub predicate: Option<PredicateCall>,
}

/// The value at `pointer` (a JSON pointer, RFC 6901) of a call's input
/// equals `value`.
///
/// ```
/// use serde_json::json;
/// use tool_runtime::store::FieldEquals;
///
/// let equals = FieldEquals::new("/customer", json!("acme"));
/// assert!(equals.holds_for(&json!({ "customer": "acme", "amount": 5 })));
/// assert!(!equals.holds_for(&json!({ "customer": "zeta" })));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct FieldEquals {
    /// Where in the input (`""` is the whole input).
    pub pointer: String,
    /// The value it must be.
    pub value: Value,
}

impl FieldEquals {
    /// The value at `pointer` equals `value`.
    pub fn new(pointer: impl Into<String>, value: Value) -> Self {
        FieldEquals {
            pointer: pointer.into(),
            value,
        }
    }

    /// Whether `input` holds the value (a missing field does not).
    pub fn holds_for(&self, input: &Value) -> bool {
        value_at(input, &self.pointer) == Some(&self.value)
    }
}

/// The value at JSON pointer `pointer` in `value`, as
/// [`Value::pointer`] finds it, without allocating for tokens that need no
/// unescaping: a rule's condition is evaluated for every rule in force on
/// every call that waits for approval.
fn value_at<'a>(value: &'a Value, pointer: &str) -> Option<&'a Value> {
    if pointer.is_empty() {
        return Some(value);
    }
    let tokens = pointer.strip_prefix('/')?;
    tokens.split('/').try_fold(value, |target, token| {
        let token = if token.contains('~') {
            std::borrow::Cow::Owned(token.replace("~1", "/").replace("~0", "~"))
        } else {
            std::borrow::Cow::Borrowed(token)
        };
        match target {
            Value::Object(map) => map.get(token.as_ref()),
            Value::Array(list) => {
                // As RFC 6901 says: digits, no leading zero, no sign.
                let index = (!token.starts_with('+')
                    && (token.len() == 1 || !token.starts_with('0')))
                .then(|| token.parse::<usize>().ok())
                .flatten()?;
                list.get(index)
            }
            _ => None,
        }
    })
}

/// A registered predicate, by name, with a rule's arguments.
///
/// ```
/// use serde_json::json;
/// use tool_runtime::store::PredicateCall;
///
/// let call = PredicateCall::new("amount_at_most", json!(200));
/// assert_eq!(call.name, "amount_at_most");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct PredicateCall {
    /// The name it was registered under.
    pub name: String,
    /// The rule's arguments, as the predicate reads them.
    pub args: Value,
}

impl PredicateCall {
    /// The predicate `name` with `args`.
    pub fn new(name: impl Into<String>, args: Value) -> Self {
        PredicateCall {
            name: name.into(),
            args,
        }
    }
}

/// Who revoked a [`StandingRule`], and when.
///
/// ```
/// use tool_runtime::store::Revocation;
///
/// let revocation = Revocation::new("alice", 1_700_000_000_000);
/// assert_eq!(revocation.by, "alice");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Revocation {
    /// The principal who revoked it.
    pub by: String,
    /// When (milliseconds since the Unix epoch).
    pub at_ms: u64,
}

impl Revocation {
    /// Revoked by `by` at `at_ms`.
    pub fn new(by: impl Into<String>, at_ms: u64) -> Self {
        Revocation {
            by: by.into(),
            at_ms,
        }
    }
}

impl StandingRule {
    /// A rule `rule_id` approving calls of `tool_id` until `until`, whose
    /// condition is empty (every input) until `when_equals` or `when` adds
    /// to it, for anyone's calls until `for_requester` names one.
    pub fn new(rule_id: impl Into<String>, tool_id: impl Into<String>, until: SystemTime) -> Self {
        StandingRule {
            rule_id: rule_id.into(),
            tool_id: tool_id.into(),
            condition: RuleCondition::default(),
            requester: None,
            until_ms: super::time::epoch_ms(until),
            author: String::new(),
            author_groups: Vec::new(),
            created_at_ms: 0,
            revoked: None,
        }
    }

    /// The input's value at `pointer` must equal `value`.
    pub fn when_equals(mut self, pointer: impl Into<String>, value: Value) -> Self {
        self.condition.equals.push(FieldEquals::new(pointer, value));
        self
    }

    /// The predicate registered as `name` must hold for the input, given
    /// `args` ([`RuntimeBuilder::rule_predicate`](crate::RuntimeBuilder::rule_predicate)).
    pub fn when(mut self, name: impl Into<String>, args: Value) -> Self {
        self.condition.predicate = Some(PredicateCall::new(name, args));
        self
    }

    /// Only calls `requester` asked for.
    pub fn for_requester(mut self, requester: impl Into<String>) -> Self {
        self.requester = Some(requester.into());
        self
    }

    /// Whether it approves calls at `now_ms`: not revoked, not expired.
    ///
    /// ```
    /// use std::time::{Duration, SystemTime, UNIX_EPOCH};
    /// use tool_runtime::StandingRule;
    ///
    /// let until = UNIX_EPOCH + Duration::from_millis(1_000);
    /// let rule = StandingRule::new("r1", "refund", until);
    /// assert!(rule.in_force_at(999) && !rule.in_force_at(1_000));
    /// ```
    pub fn in_force_at(&self, now_ms: u64) -> bool {
        self.revoked.is_none() && now_ms < self.until_ms
    }
}

/// Storage of standing rules, keyed by rule id: a job of its own beside
/// the calls ([`CallStore`](super::CallStore)), runs and the audit log;
/// the stores of this crate do all four, and a runtime's store must
/// ([`IntoStore`](super::IntoStore)).
///
/// The contract (the contract tests run it against every store):
/// - a rule id is kept once: adding a rule whose id exists (revoked or
///   not) changes nothing;
/// - of concurrent revocations of one rule, exactly one wins;
/// - the rules in force at a time are those neither revoked nor expired
///   then, in the order they were added; every runtime sharing the store
///   reads the same ones.
///
/// ```
/// use std::time::{Duration, SystemTime, UNIX_EPOCH};
/// use tool_runtime::StandingRule;
/// use tool_runtime::store::{MemoryStore, Revocation, RuleStore};
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let store = MemoryStore::new();
/// let rule = StandingRule::new("r1", "refund", SystemTime::now() + Duration::from_secs(60));
/// assert!(store.add_rule(rule.clone()).await.unwrap());
/// assert!(!store.add_rule(rule).await.unwrap(), "an id is kept once");
/// let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as u64;
/// assert_eq!(store.rules_in_force(Some("refund"), now).await.unwrap().len(), 1);
/// let revoked = store.revoke_rule("r1", Revocation::new("alice", now)).await.unwrap();
/// assert_eq!(revoked.unwrap().revoked.unwrap().by, "alice");
/// assert!(store.revoke_rule("r1", Revocation::new("bob", now)).await.unwrap().is_none());
/// assert!(store.rules_in_force(None, now).await.unwrap().is_empty());
/// # });
/// ```
// Adding a method costs this trait and the three stores; when the runtime
// calls it, also one line in the list of `DynRuleStore` (erased.rs).
pub trait RuleStore: Send + Sync + 'static {
    /// Adds `rule`; `false` (and nothing changes) when a rule with its id
    /// exists. Its ids are checked as a call's are, its condition's values
    /// as JSON is ([`MAX_ID_BYTES`](super::MAX_ID_BYTES),
    /// [`MAX_JSON_DEPTH`](super::MAX_JSON_DEPTH)).
    fn add_rule(&self, rule: StandingRule)
    -> impl Future<Output = Result<bool, StoreError>> + Send;

    /// Revokes the rule `rule_id` as `revocation` says, unless it was
    /// revoked already: returns the rule as revoked, or `None` when there
    /// is no such rule or it was revoked before (also by a concurrent
    /// revocation: exactly one wins).
    fn revoke_rule(
        &self,
        rule_id: &str,
        revocation: Revocation,
    ) -> impl Future<Output = Result<Option<StandingRule>, StoreError>> + Send;

    /// The rule `rule_id`, revoked or not; `None` when there is none.
    fn rule(
        &self,
        rule_id: &str,
    ) -> impl Future<Output = Result<Option<StandingRule>, StoreError>> + Send;

    /// The rules in force at `now_ms` (neither revoked nor expired), of
    /// tool `tool_id` (of every tool for `None`), in the order they were
    /// added.
    fn rules_in_force(
        &self,
        tool_id: Option<&str>,
        now_ms: u64,
    ) -> impl Future<Output = Result<Vec<StandingRule>, StoreError>> + Send;
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::value_at;

    #[test]
    fn a_pointer_finds_what_serde_json_finds() {
        let input = json!({ "a": { "b/c": [10, { "~d": true }] }, "": 1, "0": "zero" });
        for pointer in [
            "",
            "/a",
            "/a/b~1c",
            "/a/b~1c/0",
            "/a/b~1c/1/~0d",
            "/",
            "/0",
            "/a/b~1c/01",
            "/a/b~1c/+1",
            "/a/b~1c/2",
            "/missing",
            "a",
            "/a/b~1c/1/~0d/x",
        ] {
            assert_eq!(
                value_at(&input, pointer),
                input.pointer(pointer),
                "{pointer:?}"
            );
        }
    }
}
