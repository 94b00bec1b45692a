// The description may come from macros: `#[doc = include_str!("...")]`
// (relative to this file), mixed with `///` lines, and
// `description = concat!(...)`. The compiler evaluates them; the text is
// trimmed like doc comments are.
use tool_core::{Tool, tool};

#[doc = include_str!("weather_description.md")]
#[tool]
pub async fn weather(city: String) -> String {
    city
}

/// Get the forecast.
#[doc = include_str!("weather_description.md")]
/// Days ahead: 1 to 7.
#[tool]
pub async fn forecast(city: String, days: u8) -> String {
    format!("{city} {days}")
}

/// Ignored: the attribute's description wins.
#[tool(description = concat!("Convert a temperature to ", "celsius", "."))]
pub fn convert(value: f64) -> f64 {
    value
}

fn main() {
    let weather = Tool::from(WeatherTool);
    assert_eq!(
        weather.definition().description,
        "Look up the weather for a city.\n\nGive the city name, or coordinates as \"lat,lon\"."
    );
    let forecast = Tool::from(ForecastTool);
    assert_eq!(
        forecast.definition().description,
        "Get the forecast.\nLook up the weather for a city.\n\nGive the city name, or coordinates as \"lat,lon\".\n\nDays ahead: 1 to 7."
    );
    let convert = Tool::from(ConvertTool);
    assert_eq!(convert.definition().description, "Convert a temperature to celsius.");
    assert_eq!(
        <ConvertTool as tool_core::TypedTool>::DESCRIPTION,
        "Convert a temperature to celsius."
    );
}
