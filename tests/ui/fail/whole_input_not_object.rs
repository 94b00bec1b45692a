// `input = whole` takes the one parameter as the whole input, whose JSON
// Schema must be an object: on a `Vec` (or an alias of one) it is reported on
// the type. Without `input = whole`, such a parameter becomes a property.
use tool_core::tool;

type Ids = Vec<u32>;

/// Count the ids
#[tool(input = whole)]
async fn count(ids: Ids) -> usize {
    ids.len()
}

/// Count the names
#[tool(input = whole)]
async fn count_names(names: Vec<String>) -> usize {
    names.len()
}

fn main() {}
