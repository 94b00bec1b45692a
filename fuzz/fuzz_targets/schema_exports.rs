//! Any JSON value as a tool's input schema: OpenAI strict conversion, the
//! builder and every provider export never panic (a schema they cannot
//! take is an error), and a strict schema converts again to itself.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use tool_core::provider::Provider;
use tool_core::{Tool, ToolError};

fuzz_target!(|data: &[u8]| {
    let Ok(schema) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    if let Ok(strict) = tool_core::strict::openai_strict(&schema) {
        let again = tool_core::strict::openai_strict(&strict).expect("a strict schema converts again");
        assert_eq!(again, strict, "strict conversion is idempotent");
    }
    let Ok(tool) = Tool::builder("fuzz")
        .description("A fuzzed schema")
        .input_schema(schema)
        .strict(true)
        .execute(|input, _ctx| async move { Ok::<_, ToolError>(input) })
        .build()
    else {
        return;
    };
    for provider in Provider::ALL {
        let _ = tool.export(provider);
    }
});
