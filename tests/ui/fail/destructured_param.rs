// A destructuring pattern among several parameters: each parameter is a named property.
use tool_core::tool;

/// Distance between two points
#[tool]
async fn distance((x1, y1): (f64, f64), (x2, y2): (f64, f64)) -> f64 {
    ((x2 - x1).powi(2) + (y2 - y1).powi(2)).sqrt()
}

fn main() {}
