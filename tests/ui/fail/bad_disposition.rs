// background(disposition) takes "deferred" or "foreground".
use tool_core::tool;

/// Re-index the catalogue
#[tool(background(disposition = "later"))]
async fn reindex(full: bool) -> bool {
    full
}

fn main() {}
