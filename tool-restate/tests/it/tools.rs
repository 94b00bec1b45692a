//! Tools several tests serve.

use serde_json::Value;
use tool_core::{Tool, ToolContext, ToolError};

/// `pay`: needs an approval, then answers its arguments.
pub fn pay_echo() -> Tool {
    Tool::builder("pay")
        .description("Pays")
        .require_approval(true)
        .execute(|input: Value, _ctx: ToolContext<Value, Value>| async move {
            Ok::<_, ToolError>(input)
        })
        .build()
        .expect("pay")
}
