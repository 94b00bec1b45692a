// The (plain) output type derives Serialize but not JsonSchema.
use tool_core::tool;

#[derive(serde::Serialize)]
pub struct Weather {
    celsius: f64,
}

/// Get the weather
#[tool]
async fn weather(city: String) -> Weather {
    let _ = city;
    Weather { celsius: 21.0 }
}

fn main() {}
