// An unknown entry in background(...).
use tool_core::tool;

/// Re-index the catalogue
#[tool(background(timeout = 60_000))]
async fn reindex(full: bool) -> bool {
    full
}

fn main() {}
