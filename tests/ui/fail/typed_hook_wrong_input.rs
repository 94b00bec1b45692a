// A `#[tool]`'s input hook gets the input as the function takes it: here a
// `String`, and the hook asks for a `u32`.
use tool_core::hooks::InputAvailable;
use tool_core::tool;

fn on_available(args: InputAvailable<u32>) {
    let _ = args.input;
}

/// Get the weather
#[tool(on_input_available = on_available)]
async fn weather(city: String) -> String {
    city
}

fn main() {}
