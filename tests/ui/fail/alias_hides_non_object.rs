// A lone parameter is the whole input unless its type is written as a
// scalar, sequence or option (`#[tool]` reads the name). An alias hides the
// name, so `Ids` would become a non-object input schema: it is reported on
// the type, suggesting `input = params`. So is `input = whole` on a `Vec`.
use tool_core::tool;

type Ids = Vec<u32>;

/// Count the ids
#[tool]
async fn count(ids: Ids) -> usize {
    ids.len()
}

/// Count the names
#[tool(input = whole)]
async fn count_names(names: Vec<String>) -> usize {
    names.len()
}

fn main() {}
