//! What a standing rule's condition is evaluated with: the application's
//! named predicates ([`RulePredicates`]) and the call asked about
//! ([`RuleSubject`]). Pure: no store, no runtime; the approval rules ask
//! it at the gate, `StandingRules` when a rule is made.

use std::collections::HashMap;
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::store::{PredicateCall, StandingRule};

/// A predicate as registered: the input and the rule's arguments as JSON,
/// `Err` when they do not read as its types (or it panicked).
type PredicateFn = Arc<dyn Fn(&Value, &Value) -> Result<bool, String> + Send + Sync>;

/// The application's named predicates, which a standing rule's condition
/// calls by name with its own arguments
/// ([`StandingRule::when`]): typed on the tool's input and on the
/// arguments, registered with
/// [`RuntimeBuilder::rule_predicate`](crate::RuntimeBuilder::rule_predicate).
/// A predicate that cannot be evaluated (unknown, input or arguments that
/// do not read as its types, a panic) does not hold: a rule fails closed.
///
/// ```
/// use std::time::{Duration, SystemTime};
/// use serde::Deserialize;
/// use serde_json::json;
/// use tool_runtime::{RulePredicates, RuleSubject, StandingRule};
///
/// #[derive(Deserialize)]
/// struct Refund { amount: u64 }
///
/// let predicates = RulePredicates::new()
///     .with("amount_at_most", |refund: &Refund, cap: &u64| refund.amount <= *cap);
/// let rule = StandingRule::new("small", "refund", SystemTime::now() + Duration::from_secs(60))
///     .when("amount_at_most", json!(200));
/// let now_ms = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).unwrap().as_millis() as u64;
/// let approves = |input: serde_json::Value| {
///     predicates.approves(&rule, &RuleSubject { tool_id: "refund", input: &input, requester: None, now_ms })
/// };
/// assert!(approves(json!({ "amount": 150 })));
/// assert!(!approves(json!({ "amount": 900 })));
/// assert!(!approves(json!({ "amount": "lots" })), "fails closed");
/// ```
#[derive(Clone, Default)]
pub struct RulePredicates {
    by_name: HashMap<String, PredicateFn>,
}

impl fmt::Debug for RulePredicates {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut names: Vec<&str> = self.by_name.keys().map(String::as_str).collect();
        names.sort_unstable();
        f.debug_struct("RulePredicates")
            .field("names", &names)
            .finish()
    }
}

/// The call a standing rule is asked about: its tool, validated input,
/// requester, and the time.
///
/// ```
/// use serde_json::json;
/// use tool_runtime::RuleSubject;
///
/// let input = json!({ "amount": 5 });
/// let call = RuleSubject { tool_id: "refund", input: &input, requester: Some("agent-7"), now_ms: 0 };
/// assert_eq!(call.requester, Some("agent-7"));
/// ```
#[derive(Debug, Clone, Copy)]
pub struct RuleSubject<'a> {
    /// The tool called.
    pub tool_id: &'a str,
    /// The call's validated input.
    pub input: &'a Value,
    /// Who asked for it, if the call says.
    pub requester: Option<&'a str>,
    /// The time, in milliseconds since the Unix epoch.
    pub now_ms: u64,
}

impl RulePredicates {
    /// No predicates.
    pub fn new() -> Self {
        RulePredicates::default()
    }

    /// Registers `predicate` as `name` (replacing one of that name): it
    /// holds for an input when it reads as `I`, the rule's arguments read
    /// as `A`, and it returns `true`.
    pub fn with<I, A, F>(mut self, name: impl Into<String>, predicate: F) -> Self
    where
        I: DeserializeOwned,
        A: DeserializeOwned,
        F: Fn(&I, &A) -> bool + Send + Sync + 'static,
    {
        self.insert(name.into(), predicate);
        self
    }

    pub(crate) fn insert<I, A, F>(&mut self, name: String, predicate: F)
    where
        I: DeserializeOwned,
        A: DeserializeOwned,
        F: Fn(&I, &A) -> bool + Send + Sync + 'static,
    {
        let erased = move |input: &Value, args: &Value| {
            let input = I::deserialize(input).map_err(|e| format!("the input: {e}"))?;
            let args = A::deserialize(args).map_err(|e| format!("the arguments: {e}"))?;
            catch_unwind(AssertUnwindSafe(|| predicate(&input, &args)))
                .map_err(|_| "it panicked".to_owned())
        };
        self.by_name.insert(name, Arc::new(erased));
    }

    /// Whether a predicate is registered as `name`.
    ///
    /// ```
    /// use tool_runtime::RulePredicates;
    ///
    /// let predicates = RulePredicates::new().with("any", |_: &serde_json::Value, _: &()| true);
    /// assert!(predicates.contains("any") && !predicates.contains("none"));
    /// ```
    pub fn contains(&self, name: &str) -> bool {
        self.by_name.contains_key(name)
    }

    /// Whether `rule` approves `call`: it is the rule's tool, the rule is
    /// in force, names the call's requester (or none), and its condition
    /// holds for the input (every equality, and its predicate, evaluated
    /// with these predicates; one that cannot be evaluated does not hold).
    /// What the runtime adds at its gate (how many approvals the call
    /// needs, from which group, separation of duties) is not asked here.
    pub fn approves(&self, rule: &StandingRule, call: &RuleSubject<'_>) -> bool {
        rule.tool_id == call.tool_id
            && rule.in_force_at(call.now_ms)
            && rule
                .requester
                .as_deref()
                .is_none_or(|requester| call.requester == Some(requester))
            && rule
                .condition
                .equals
                .iter()
                .all(|equals| equals.holds_for(call.input))
            && rule
                .condition
                .predicate
                .as_ref()
                .is_none_or(|predicate| self.holds(rule, predicate, call.input))
    }

    fn holds(&self, rule: &StandingRule, predicate: &PredicateCall, input: &Value) -> bool {
        let rule_id = rule.rule_id.as_str();
        let Some(evaluate) = self.by_name.get(&predicate.name) else {
            tracing::warn!(rule_id, predicate = %predicate.name, "a standing rule names a predicate this runtime does not have; it approves nothing");
            return false;
        };
        evaluate(input, &predicate.args).unwrap_or_else(|reason| {
            tracing::warn!(rule_id, predicate = %predicate.name, reason, "a standing rule's predicate could not be evaluated; it approves nothing");
            false
        })
    }
}
