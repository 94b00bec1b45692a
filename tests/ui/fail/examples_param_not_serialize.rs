// With input_examples the generated input is serialized: a parameter type without Serialize is reported on that parameter.
use tool_core::tool;

#[derive(serde::Deserialize, schemars::JsonSchema)]
pub enum Unit {
    Celsius,
}

fn examples() -> Vec<WeatherToolInput> {
    Vec::new()
}

/// Get the weather
#[tool(input_examples = examples)]
async fn weather(city: String, unit: Unit) -> String {
    let _ = unit;
    city
}

fn main() {}
