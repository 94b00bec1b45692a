//! The tool side of exactly-once effects, through the public API: the
//! idempotency key of a call, the `transactional` flag and the `reconcile`
//! hook.

use integration_tests::block_on;
use serde_json::json;
use sha2::{Digest, Sha256};
use tool_core::{CallContext, IdempotencyKey, Tool, ToolError, tool};

// --- the idempotency key ---------------------------------------------------

/// The documented derivation, written out independently: lowercase hex
/// SHA-256 of the tool id, a 0 byte and the call id.
fn documented_key(tool_id: &str, call_id: &str) -> String {
    let mut input = Vec::new();
    input.extend_from_slice(tool_id.as_bytes());
    input.push(0);
    input.extend_from_slice(call_id.as_bytes());
    Sha256::digest(&input)
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

fn echo_key(id: &str) -> Tool {
    Tool::builder(id)
        .description("Returns its idempotency key")
        .execute(|_input, ctx| async move { Ok::<_, ToolError>(json!(ctx.idempotency_key())) })
        .build()
        .unwrap()
}

fn key_seen_by(tool: &Tool, ctx: CallContext) -> String {
    let outcome = block_on(tool.execute("{}", ctx));
    outcome.output().unwrap().as_str().unwrap().to_owned()
}

#[test]
fn the_key_is_derived_from_the_tool_and_the_call() {
    let key = IdempotencyKey::derive("charge", "call-1");
    assert_eq!(key.as_str(), documented_key("charge", "call-1"));
    assert_eq!(key.as_str().len(), 64);
    assert_eq!(key, IdempotencyKey::derive("charge", "call-1"));
    assert_ne!(key, IdempotencyKey::derive("charge", "call-2"));
    assert_ne!(key, IdempotencyKey::derive("refund", "call-1"));
    // The separator keeps apart pairs that concatenate to the same text.
    assert_ne!(
        IdempotencyKey::derive("ab", "c"),
        IdempotencyKey::derive("a", "bc")
    );
}

#[test]
fn the_key_of_a_known_pair() {
    // Computed independently (`printf 'charge\0call-1' | sha256sum`).
    assert_eq!(
        IdempotencyKey::derive("charge", "call-1").as_str(),
        KNOWN_KEY
    );
}

const KNOWN_KEY: &str = "33cd374a3256dec844089564b9f543ab5f8ef5496bd647e5756cd6a2064acaf4";

#[test]
fn the_tool_host_and_admitted_call_see_the_same_key() {
    let charge = echo_key("charge");
    let expected = documented_key("charge", "call-1");
    assert_eq!(key_seen_by(&charge, CallContext::new("call-1")), expected);
    // Another run of the same call (a retry, a recovery) gets the same key.
    assert_eq!(
        key_seen_by(&charge, CallContext::new("call-1").with_attempt(3)),
        expected
    );
    assert_ne!(key_seen_by(&charge, CallContext::new("call-2")), expected);
    assert_ne!(
        key_seen_by(&echo_key("refund"), CallContext::new("call-1")),
        expected
    );
    assert_eq!(
        CallContext::new("call-1")
            .idempotency_key("charge")
            .as_str(),
        expected
    );
    let admitted = charge.admit("{}", CallContext::new("call-1")).unwrap();
    assert_eq!(admitted.idempotency_key().as_str(), expected);
}

#[test]
fn the_key_serializes_and_displays_as_its_text() {
    let key = IdempotencyKey::derive("charge", "call-1");
    assert_eq!(serde_json::to_value(&key).unwrap(), json!(key.as_str()));
    assert_eq!(key.to_string(), key.as_str());
    assert_eq!(AsRef::<str>::as_ref(&key), key.as_str());
}

// --- transactional ---------------------------------------------------------

/// Move money between two accounts
#[tool(transactional)]
async fn transfer(from: String, to: String) -> String {
    format!("{from} -> {to}")
}

/// Move money, declared explicitly not transactional
#[tool(transactional = false)]
async fn transfer_later(from: String, to: String) -> String {
    format!("{from} -> {to}")
}

#[test]
fn transactional_is_declared_by_the_attribute_and_the_builder() {
    assert!(Tool::from(TransferTool).definition().transactional);
    assert!(!Tool::from(TransferLaterTool).definition().transactional);
    let builder = |transactional: Option<bool>| {
        let builder = Tool::builder("transfer")
            .description("Move money")
            .execute(|input, _ctx| async move { Ok::<_, ToolError>(input) });
        match transactional {
            Some(flag) => builder.transactional(flag),
            None => builder,
        }
        .build()
        .unwrap()
    };
    assert!(!builder(None).definition().transactional);
    assert!(builder(Some(true)).definition().transactional);
    // A flag of the definition like the others, serialized with them.
    let definition = serde_json::to_value(builder(Some(true)).definition()).unwrap();
    assert_eq!(definition["transactional"], true);
    // Running the tool is unchanged: the runtime owns the transaction.
    let outcome = block_on(
        Tool::from(TransferTool).execute(r#"{"from": "a", "to": "b"}"#, CallContext::new("c1")),
    );
    assert_eq!(outcome.output(), Some(&json!("a -> b")));
}
