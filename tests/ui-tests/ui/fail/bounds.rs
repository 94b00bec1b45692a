// Types that lack a trait the tool needs, reported by type checking on the
// user's type. More in bounds_schema.rs: no two types of one file share a
// name, or rustc would print their paths.

// The input struct derives JsonSchema but not Deserialize.
mod input_not_deserialize {
    use tool_core::tool;

    #[derive(schemars::JsonSchema)]
    pub struct WeatherInput {
        city: String,
    }

    /// Get the weather
    #[tool]
    async fn weather(input: WeatherInput) -> String {
        input.city
    }
}

// One of several plain parameters has a type that is neither Deserialize nor JsonSchema.
mod param_not_deserialize {
    use tool_core::tool;

    pub struct Unit;

    /// Get the weather
    #[tool]
    async fn weather(city: String, unit: Unit) -> String {
        let _ = unit;
        city
    }
}

// The output type derives JsonSchema but not Serialize.
mod output_not_serialize {
    use tool_core::{tool, ToolError};

    #[derive(schemars::JsonSchema)]
    pub struct Weather {
        celsius: f64,
    }

    /// Get the weather
    #[tool]
    async fn weather(city: String) -> Result<Weather, ToolError> {
        let _ = city;
        Ok(Weather { celsius: 21.0 })
    }
}

// The error type does not convert into ToolError (it is not a std::error::Error).
mod error_not_into_tool_error {
    use tool_core::tool;

    #[derive(Debug)]
    pub struct LookupFailed;

    /// Get the weather
    #[tool]
    async fn weather(city: String) -> Result<String, LookupFailed> {
        let _ = city;
        Err(LookupFailed)
    }
}

// A state type that cannot be written back.
mod state_not_serializable {
    use tool_core::{ToolContext, tool};

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct Counter {
        count: u32,
    }

    /// Counts
    #[tool(workflow_state = Counter)]
    async fn count(ctx: ToolContext) -> String {
        ctx.call_id().to_owned()
    }
}

// The suspend payload type (from the ToolContext generics) is not Serialize.
mod suspend_type_not_serialize {
    use tool_core::{tool, ToolContext};

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    pub struct Question {
        text: String,
    }

    /// Delete a file after confirmation
    #[tool]
    async fn delete_file(path: String, ctx: ToolContext<Question>) -> String {
        let _ = ctx;
        path
    }
}

mod suspend_without_types {
    use tool_core::{ToolContext, ToolError, tool};

    /// Suspends without declaring what it suspends with
    #[tool]
    async fn undeclared_suspend(ctx: ToolContext) -> Result<(), ToolError> {
        ctx.suspend(())
    }
}

// A `State<T>` whose type is not Clone: each call gets a clone.
mod state_not_clone {
    use tool_core::{tool, State};

    pub struct Connection;

    /// Looks an order up
    #[tool]
    async fn lookup(order: u32, State(connection): State<Connection>) -> u32 {
        let _ = connection;
        order
    }
}

fn main() {}
