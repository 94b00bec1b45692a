// A description given by a macro (in the attribute or in a doc attribute)
// is checked once the compiler has evaluated it: empty or blank is an error,
// as a blank literal is. A value that is neither a string literal nor a
// macro is rejected by the attribute parser.
use tool_core::tool;

#[tool(description = concat!(" ", ""))]
async fn weather(city: String) -> String {
    city
}

/// A number for a description is not one.
#[tool(description = 42)]
async fn forecast(city: String) -> String {
    city
}

#[doc = include_str!("blank_description.txt")]
#[tool]
async fn lookup(city: String) -> String {
    city
}

fn main() {}
