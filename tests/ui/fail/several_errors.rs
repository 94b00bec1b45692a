// Several independent mistakes in one item are all reported at once.
use tool_core::tool;

#[tool(id = "bad id", mcp(readonly), output_validation = "loose")]
async unsafe fn weather(city: &str) -> impl Sized {
    city.len()
}

fn main() {}
