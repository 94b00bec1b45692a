// A background tool must be `async fn`.
use tool_core::tool;

/// Re-index the catalogue
#[tool(background(timeout_ms = 60_000))]
fn reindex(full: bool) -> bool {
    full
}

fn main() {}
