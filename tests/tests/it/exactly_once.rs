//! The tool side of exactly-once effects, through the public API: the
//! idempotency key of a call, the `transactional` flag and the `reconcile`
//! hook.

use integration_tests::block_on;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use tool_core::{
    CallContext, ErrorKind, IdempotencyKey, ModelError, Outcome, Reconciled, Tool, ToolContext,
    ToolError, tool,
};

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

// --- reconcile ---------------------------------------------------------------

#[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema, Debug, PartialEq)]
pub struct Charge {
    /// Cents charged; never 0.
    #[schemars(range(min = 1))]
    cents: u32,
    key: String,
}

/// Charge a card
#[tool(transactional, reconcile = find_charge)]
async fn charge(cents: u32, card: String) -> Result<Charge, ToolError> {
    let _ = card;
    Ok(Charge {
        cents,
        key: String::new(),
    })
}

/// What the payment API knows: a charge was made for the card "made",
/// none for "none"; "zero" makes the API report a charge the output schema
/// refuses; "down" is an API that cannot answer.
async fn find_charge(
    input: ChargeToolInput,
    key: IdempotencyKey,
    ctx: ToolContext,
) -> Result<Reconciled<Charge>, ToolError> {
    assert_eq!(key, ctx.idempotency_key());
    match input.card.as_str() {
        "made" => Ok(Reconciled::Happened(Charge {
            cents: input.cents,
            key: key.to_string(),
        })),
        "zero" => Ok(Reconciled::Happened(Charge {
            cents: 0,
            key: key.to_string(),
        })),
        "down" => Err(ToolError::new("the payment API is down")),
        _ => Ok(Reconciled::NotHappened),
    }
}

fn reconcile(tool: &Tool, input: Value) -> Result<Reconciled<Outcome>, ModelError> {
    let running = tool
        .reconcile(input, CallContext::new("call-1"))
        .expect("a reconcile hook");
    block_on(running)
}

#[test]
fn a_reconciled_call_that_happened_has_its_output_validated() {
    let tool = Tool::from(ChargeTool);
    assert!(tool.definition().transactional);
    assert!(tool.has_reconcile());
    let found = reconcile(&tool, json!({ "cents": 500, "card": "made" })).unwrap();
    let Reconciled::Happened(outcome) = found else {
        panic!("expected Happened, got {found:?}")
    };
    // The key the hook saw is the call's, derived from the tool and call ids.
    let key = documented_key("charge", "call-1");
    assert_eq!(outcome.output(), Some(&json!({ "cents": 500, "key": key })));
    assert!(matches!(outcome, Outcome::Completed { .. }));

    let error = reconcile(&tool, json!({ "cents": 500, "card": "zero" })).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::OutputValidation);
    assert!(error.message().contains("cents"), "{}", error.message());
}

#[test]
fn a_reconciled_call_that_did_not_happen() {
    let tool = Tool::from(ChargeTool);
    let found = reconcile(&tool, json!({ "cents": 500, "card": "none" })).unwrap();
    assert_eq!(found, Reconciled::NotHappened);
}

#[test]
fn a_hook_that_cannot_tell_is_an_error() {
    let tool = Tool::from(ChargeTool);
    let error = reconcile(&tool, json!({ "cents": 500, "card": "down" })).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Execution);
    assert_eq!(error.message(), "the payment API is down");
    // Its input is validated as execute's is, before the hook runs.
    let error = reconcile(&tool, json!({ "cents": "many", "card": "made" })).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::InputValidation);
}

/// Refund a charge
#[tool(reconcile = find_refund)]
async fn refund(charge_id: String, ctx: ToolContext) -> String {
    format!("refunded {charge_id} ({})", ctx.idempotency_key())
}

/// A lone parameter: the hook takes its type, as the tool's function does.
async fn find_refund(
    charge_id: String,
    key: IdempotencyKey,
    _ctx: ToolContext,
) -> Result<Reconciled<String>, std::io::Error> {
    Ok(match charge_id.as_str() {
        "panic" => panic!("the hook panicked"),
        "ch_1" => Reconciled::Happened(format!("refunded {charge_id} ({key})")),
        _ => Reconciled::NotHappened,
    })
}

#[test]
fn a_lone_parameter_reaches_the_hook_as_the_function_takes_it() {
    let tool = Tool::from(RefundTool);
    assert!(!tool.definition().transactional);
    let executed =
        block_on(tool.execute(json!({ "charge_id": "ch_1" }), CallContext::new("call-1")));
    let found = reconcile(&tool, json!({ "charge_id": "ch_1" })).unwrap();
    // The output the hook reports is the one the call would have produced.
    assert_eq!(found.output().and_then(Outcome::output), executed.output());
    assert!(
        !reconcile(&tool, json!({ "charge_id": "ch_2" }))
            .unwrap()
            .happened()
    );
    let error = reconcile(&tool, json!({ "charge_id": "panic" })).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::Panic);
}

#[test]
fn a_tool_without_a_hook_has_nothing_to_reconcile() {
    let tool = echo_key("echo");
    assert!(!tool.has_reconcile());
    assert!(tool.reconcile("{}", CallContext::new("call-1")).is_none());
}

#[test]
fn a_json_hook_is_validated_and_mapped_like_execute() {
    let tool = Tool::builder("send-email")
        .description("Send an email")
        .output_schema(json!({ "type": "string" }))
        .to_model_output(|output| tool_core::ModelOutput::text(format!("mail: {output}")))
        .execute(|_input, _ctx| async move { Ok::<_, ToolError>(json!("sent")) })
        .reconcile(|input, key, ctx| async move {
            assert_eq!(key, ctx.idempotency_key());
            Ok::<_, ToolError>(match input["to"].as_str() {
                Some("ann") => Reconciled::Happened(json!("sent")),
                Some("bad") => Reconciled::Happened(json!(42)),
                _ => Reconciled::NotHappened,
            })
        })
        .build()
        .unwrap();
    let found = reconcile(&tool, json!({ "to": "ann" })).unwrap();
    let Reconciled::Happened(Outcome::Completed {
        output,
        model_output,
        ..
    }) = found
    else {
        panic!("expected a completed outcome, got {found:?}");
    };
    assert_eq!(output, json!("sent"));
    assert_eq!(
        model_output,
        Some(tool_core::ModelOutput::text("mail: \"sent\""))
    );
    assert_eq!(
        reconcile(&tool, json!({ "to": "bob" })).unwrap(),
        Reconciled::NotHappened
    );
    let error = reconcile(&tool, json!({ "to": "bad" })).unwrap_err();
    assert_eq!(error.kind(), ErrorKind::OutputValidation);
}
