// A method with `self`: tools are free functions.
use tool_core::tool;

struct Weather;

impl Weather {
    /// Get the weather
    #[tool]
    async fn lookup(&self, city: String) -> String {
        city
    }
}

fn main() {}
