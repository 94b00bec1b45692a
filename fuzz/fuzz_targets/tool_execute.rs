//! `Tool::execute` on any bytes as the model's arguments (repairs, then
//! validation): it never panics, and it either runs the tool on valid
//! arguments or fails with an input error the model can read.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use serde_json::json;
use tool_core::{CallContext, ErrorKind, Outcome, Tool, ToolError};

fn tool() -> &'static Tool {
    static TOOL: OnceLock<Tool> = OnceLock::new();
    TOOL.get_or_init(|| {
        Tool::builder("order")
            .description("Places an order")
            .input_schema(json!({
                "type": "object",
                "properties": {
                    "n": { "type": "integer", "minimum": 0 },
                    "item": { "type": "string", "maxLength": 40 },
                    "tags": { "type": "array", "items": { "type": "string" } },
                    "when": { "anyOf": [{ "type": "string" }, { "type": "null" }] }
                },
                "required": ["n", "item"],
                "additionalProperties": false
            }))
            .execute(|input, _ctx| async move { Ok::<_, ToolError>(input) })
            .build()
            .expect("the tool builds")
    })
}

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data).into_owned();
    let runtime = tokio::runtime::Builder::new_current_thread().build().expect("tokio");
    let outcome = runtime.block_on(tool().execute(text, CallContext::new("c1")));
    match outcome {
        Outcome::Completed { output, .. } => {
            assert!(output["n"].is_u64() && output["item"].is_string(), "{output}");
        }
        Outcome::Failed { error } => {
            assert!(
                matches!(error.kind(), ErrorKind::InvalidJson | ErrorKind::InputValidation),
                "{error:?}"
            );
            assert!(error.message().len() < 64 * 1024, "bounded message");
        }
        other => panic!("unexpected {other:?}"),
    }
});
