//! Standing rules on Restate: the virtual object `ToolRules` keeps every
//! rule ever made (ids are never reused), and [`RestateRules`] is a
//! [`RuleStore`] that reads and writes it through the ingress, for the
//! runtimes that take the steps and the one that makes rules.

use std::sync::Arc;

use restate_sdk::prelude::*;
use serde::{Deserialize, Serialize};
use tool_runtime::StandingRule;
use tool_runtime::store::{MemoryStore, Revocation, RuleStore, StoreError};

use crate::error::RestateError;
use crate::ingress::Ingress;

/// `ToolRules`' state key: every rule, in the order made.
const RULES: &str = "rules";
/// The key of the one `ToolRules` object.
const KEY: &str = "all";

/// A [`RuleStore`] kept in the Restate object `ToolRules`, through the
/// ingress: what each step's runtime reads standing rules from, and what
/// [`RestateTools::rules`](crate::RestateTools::rules) makes them in.
/// The rules in force are read when a call needs an approval, once per
/// such call step (the step's result, rules applied, is journaled).
///
/// ```no_run
/// use std::sync::Arc;
/// use tool_restate::RestateRules;
/// use tool_runtime::Runtime;
///
/// // A runtime of its own that applies the rules kept in Restate.
/// let rules = RestateRules::new("http://127.0.0.1:8080");
/// let runtime = Runtime::builder().rule_store(Arc::new(rules)).build().unwrap();
/// ```
#[derive(Debug, Clone)]
pub struct RestateRules {
    ingress: Ingress,
}

impl RestateRules {
    /// The rules of the Restate server whose ingress is at `ingress`.
    pub fn new(ingress: impl Into<String>) -> Self {
        RestateRules {
            ingress: Ingress::new(ingress, reqwest::Client::new()),
        }
    }

    pub(crate) fn through(ingress: Ingress) -> Self {
        RestateRules { ingress }
    }

    /// Every rule made, revoked ones included.
    async fn all(&self) -> Result<Vec<StandingRule>, StoreError> {
        self.post::<(), _>("list", None).await
    }

    async fn post<B: Serialize, T: serde::de::DeserializeOwned>(
        &self,
        handler: &str,
        body: Option<&B>,
    ) -> Result<T, StoreError> {
        self.ingress
            .post("ToolRules", KEY, handler, body)
            .await
            .map_err(|error| self.unavailable(error))
    }

    fn unavailable(&self, error: RestateError) -> StoreError {
        StoreError::Io {
            location: format!("ToolRules through {}", self.ingress.url()),
            reason: error.to_string(),
            source: Some(Box::new(error)),
        }
    }
}

/// The rules `rules` in a memory store: the semantics of each question
/// (what is in force, when) are that store's.
async fn in_memory(rules: Vec<StandingRule>) -> Result<MemoryStore, StoreError> {
    let store = MemoryStore::new();
    for rule in rules {
        store.add_rule(rule).await?;
    }
    Ok(store)
}

impl RuleStore for RestateRules {
    async fn add_rule(&self, rule: StandingRule) -> Result<bool, StoreError> {
        self.post("add", Some(&rule)).await
    }

    async fn revoke_rule(
        &self,
        rule_id: &str,
        revocation: Revocation,
    ) -> Result<Option<StandingRule>, StoreError> {
        let request = Revoke {
            rule_id: rule_id.to_owned(),
            revocation,
        };
        self.post("revoke", Some(&request)).await
    }

    async fn rule(&self, rule_id: &str) -> Result<Option<StandingRule>, StoreError> {
        Ok(self
            .all()
            .await?
            .into_iter()
            .find(|rule| rule.rule_id == rule_id))
    }

    async fn rules_in_force(
        &self,
        tool_id: Option<&str>,
        now_ms: u64,
    ) -> Result<Vec<StandingRule>, StoreError> {
        in_memory(self.all().await?)
            .await?
            .rules_in_force(tool_id, now_ms)
            .await
    }
}

/// A revocation, as `ToolRules/revoke` takes it.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Revoke {
    rule_id: String,
    revocation: Revocation,
}

/// The virtual object `ToolRules` (one, keyed `all`): the standing rules.
/// It stores what it is given (a rule is admitted by the runtime that
/// makes it: its author, tool and predicates); keep the ingress private.
pub struct ToolRules;

#[restate_sdk::object]
impl ToolRules {
    /// Adds a rule: `false` when its id is taken (also by a revoked rule).
    #[handler]
    async fn add(&self, ctx: ObjectContext<'_>, rule: Json<StandingRule>) -> HandlerResult<bool> {
        let Json(rule) = rule;
        let mut rules = kept(&ctx).await?;
        // The limits every store puts on a rule (ids, JSON depth).
        in_memory(vec![rule.clone()])
            .await
            .map_err(|error| TerminalError::new_with_code(400, error.to_string()))?;
        if rules.iter().any(|kept| kept.rule_id == rule.rule_id) {
            return Ok(false);
        }
        rules.push(rule);
        ctx.set(RULES, Json(rules));
        Ok(true)
    }

    /// Revokes a rule not revoked yet: the rule as revoked, or `null`.
    #[handler]
    async fn revoke(
        &self,
        ctx: ObjectContext<'_>,
        request: Json<Revoke>,
    ) -> HandlerResult<Json<Option<StandingRule>>> {
        let Json(Revoke {
            rule_id,
            revocation,
        }) = request;
        let mut rules = kept(&ctx).await?;
        let Some(rule) = rules
            .iter_mut()
            .find(|rule| rule.rule_id == rule_id && rule.revoked.is_none())
        else {
            return Ok(Json(None));
        };
        rule.revoked = Some(revocation);
        let revoked = rule.clone();
        ctx.set(RULES, Json(rules));
        Ok(Json(Some(revoked)))
    }

    /// Every rule made, revoked ones included, in the order made.
    #[handler]
    async fn list(&self, ctx: SharedObjectContext<'_>) -> HandlerResult<Json<Vec<StandingRule>>> {
        Ok(Json(
            ctx.get::<Json<Vec<StandingRule>>>(RULES)
                .await?
                .map(|Json(rules)| rules)
                .unwrap_or_default(),
        ))
    }
}

async fn kept(ctx: &ObjectContext<'_>) -> Result<Vec<StandingRule>, TerminalError> {
    Ok(ctx
        .get::<Json<Vec<StandingRule>>>(RULES)
        .await?
        .map(|Json(rules)| rules)
        .unwrap_or_default())
}

/// The store each step's runtime keeps its rules in.
pub(crate) fn step_rules(ingress: &Ingress) -> Arc<RestateRules> {
    Arc::new(RestateRules::through(ingress.clone()))
}
