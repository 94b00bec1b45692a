//! The fuzz targets' invariants (`fuzz/`) as property tests on stable, so CI
//! checks them on every change: the partial-JSON parser agrees with
//! serde_json, decoders do not depend on how a body is split, strict
//! conversion is idempotent, `Tool::execute` never panics on any arguments,
//! and the SQLite store reads back what it stores.

use proptest::prelude::*;
use serde_json::{Map, Value, json};
use tool_core::decode::{AnthropicDecoder, SseParser, StreamDecoder, ToolCallEvent};
use tool_core::partial_json::PartialJson;
use tool_core::{CallContext, ErrorKind, Outcome, Tool, ToolError};

/// Any JSON value, a few levels deep.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        ".{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map("[a-z]{0,6}", inner, 0..6)
                .prop_map(|map| Value::Object(map.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

/// No failure files: a failing case is printed, and belongs in a regression test.
fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config(256))]

    #[test]
    fn partial_json_agrees_with_serde_json_on_complete_documents(value in json_value(), cut in any::<prop::sample::Index>(), pretty in any::<bool>()) {
        let text = if pretty { serde_json::to_string_pretty(&value) } else { serde_json::to_string(&value) }.unwrap();
        let mut at = cut.index(text.len() + 1);
        while !text.is_char_boundary(at) {
            at -= 1;
        }
        let mut parser = PartialJson::new();
        parser.push(&text[..at]);
        let _ = parser.current();
        parser.push(&text[at..]);
        prop_assert!(parser.is_complete());
        prop_assert_eq!(parser.value(), serde_json::from_str::<Value>(&text).ok());
    }

    #[test]
    fn a_streamed_call_decodes_the_same_however_its_body_is_split(arguments in json_value(), size in 1usize..40) {
        let text = serde_json::to_string(&json!({ "v": arguments })).unwrap();
        let mut half = text.len() / 2;
        while !text.is_char_boundary(half) {
            half -= 1;
        }
        let (head, tail) = text.split_at(half);
        let body = [
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "toolu_1", "name": "t", "input": {}}}),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": head}}),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": tail}}),
            json!({"type": "content_block_stop", "index": 0}),
        ]
        .iter()
        .map(|event| format!("data: {event}\n\n"))
        .collect::<String>();
        let chars: Vec<char> = body.chars().collect();
        let (mut sse, mut decoder) = (SseParser::new(), AnthropicDecoder::new());
        let mut events = Vec::new();
        for chunk in chars.chunks(size) {
            for event in sse.push(&chunk.iter().collect::<String>()) {
                events.extend(decoder.decode_data(&event.data).unwrap());
            }
        }
        events.extend(decoder.finish());
        let expected = ToolCallEvent::InputEnd { call_id: "toolu_1".into(), input: serde_json::from_str(&text).unwrap() };
        prop_assert_eq!(events.last(), Some(&expected));
    }

    #[test]
    fn strict_conversion_is_idempotent(schema in json_value()) {
        if let Ok(strict) = tool_core::strict::openai_strict(&schema) {
            prop_assert_eq!(tool_core::strict::openai_strict(&strict).unwrap(), strict);
        }
    }

    #[test]
    fn execute_never_panics_and_fails_only_with_input_errors(text in "\\PC{0,80}", value in json_value()) {
        let tool = Tool::builder("order")
            .description("Places an order")
            .input_schema(json!({
                "type": "object",
                "properties": { "n": { "type": "integer", "minimum": 0 }, "item": { "type": "string" } },
                "required": ["n", "item"]
            }))
            .execute(|input, _ctx| async move { Ok::<_, ToolError>(input) })
            .build()
            .unwrap();
        for arguments in [text, value.to_string()] {
            match integration_tests::block_on(tool.execute(arguments, CallContext::new("c1"))) {
                Outcome::Completed { output, .. } => prop_assert!(output["n"].is_u64() && output["item"].is_string()),
                Outcome::Failed { error } => prop_assert!(matches!(error.kind(), ErrorKind::InvalidJson | ErrorKind::InputValidation), "{:?}", error),
                other => prop_assert!(false, "unexpected {:?}", other),
            }
        }
    }
}

proptest! {
    #![proptest_config(config(64))]

    #[test]
    fn the_sqlite_store_reads_back_what_it_stores(value in json_value(), id in "[a-z0-9]{1,12}") {
        use tool_runtime::store::{CallStore, SqliteStore};
        use tool_runtime::{PendingCall, PendingKind};
        // Removed when `tmp` drops, also when the case fails.
        let tmp = tempfile::Builder::new().prefix("tool-proptest-store-").tempdir().unwrap();
        let store = SqliteStore::open(tmp.path().join("pending.sqlite")).unwrap();
        let id = format!("{id}-{}", std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos());
        let mut call = PendingCall::new(id.as_str(), "t", PendingKind::Suspended, value.clone());
        call.payload = Some(value);
        integration_tests::block_on(async {
            store.insert(call.clone()).await.unwrap();
            let stored = store.get(&id).await.unwrap().unwrap();
            assert_eq!(stored.call, call);
        });
    }
}
