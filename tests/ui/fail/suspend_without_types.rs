use tool_core::{ToolContext, ToolError, tool};

/// Suspends without declaring what it suspends with
#[tool]
async fn undeclared_suspend(ctx: ToolContext) -> Result<(), ToolError> {
    ctx.suspend(())
}

fn main() {}
