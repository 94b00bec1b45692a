// Misuses of the function's signature and body, reported by the macro (no type
// checking needed).

// #[tool] on a struct.
mod not_a_function {
    use tool_core::tool;

    /// Get the weather
    #[tool]
    pub struct Weather {
        city: String,
    }
}

// A method with `self`: tools are free functions.
mod receiver {
    use tool_core::tool;

    struct Weather;

    impl Weather {
        /// Get the weather
        #[tool]
        async fn lookup(&self, city: String) -> String {
            city
        }
    }
}

// A `const fn` cannot be a tool.
mod const_fn {
    use tool_core::tool;

    /// Double a number
    #[tool]
    const fn double(n: i64) -> i64 {
        n * 2
    }
}

// An `unsafe fn` cannot be a tool.
mod unsafe_fn {
    use tool_core::tool;

    /// Get the weather
    #[tool]
    async unsafe fn weather(city: String) -> String {
        city
    }
}

// A generic tool function: schemas need concrete types.
mod generic_fn {
    use tool_core::tool;

    /// Echo a value
    #[tool]
    async fn echo<T: serde::Serialize>(value: T) -> T {
        value
    }
}

// An `impl Trait` parameter: the input schema needs a concrete type.
mod impl_trait_param {
    use tool_core::tool;

    /// Get the weather
    #[tool]
    async fn weather(city: impl Into<String>, days: u8) -> String {
        let _ = days;
        city.into()
    }
}

// `impl Trait` return: the output schema needs a concrete type.
mod impl_trait_return {
    use tool_core::tool;

    /// Get the weather
    #[tool]
    async fn weather(city: String) -> impl serde::Serialize {
        city
    }
}

// `impl Trait` inside Result: the output schema needs a concrete type.
mod result_impl_trait {
    use tool_core::{tool, ToolError};

    /// Get the weather
    #[tool]
    async fn weather(city: String) -> Result<impl serde::Serialize, ToolError> {
        Ok(city)
    }
}

// A borrowed parameter: arguments are deserialized into owned values.
mod reference_param {
    use tool_core::tool;

    /// Get the weather
    #[tool]
    async fn weather(city: &str, days: u8) -> String {
        format!("{city} {days}")
    }
}

// A destructuring pattern among several parameters: each parameter is a named property.
mod destructured_param {
    use tool_core::tool;

    /// Distance between two points
    #[tool]
    async fn distance((x1, y1): (f64, f64), (x2, y2): (f64, f64)) -> f64 {
        ((x2 - x1).powi(2) + (y2 - y1).powi(2)).sqrt()
    }
}

// Two ToolContext parameters.
mod two_contexts {
    use tool_core::{tool, ToolContext};

    /// Get the weather
    #[tool]
    async fn weather(ctx: ToolContext, city: String, again: ToolContext) -> String {
        let _ = (ctx, again);
        city
    }
}

// The ToolContext taken by reference instead of by value.
mod context_by_reference {
    use tool_core::{tool, ToolContext};

    /// Get the weather
    #[tool]
    async fn weather(city: String, ctx: &ToolContext) -> String {
        let _ = ctx;
        city
    }
}

// The attribute's `suspend = Type` disagrees with the ToolContext's generics.
mod context_generics_mismatch {
    use tool_core::{tool, ToolContext};

    #[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
    pub struct Question {
        text: String,
    }

    #[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
    pub struct Prompt {
        text: String,
    }

    /// Delete a file after confirmation
    #[tool(suspend = Question)]
    async fn delete_file(path: String, ctx: ToolContext<Prompt>) -> String {
        let _ = ctx;
        path
    }
}

// `resume = Type` in the attribute, but the ToolContext does not carry it.
mod context_missing_generics {
    use tool_core::{tool, ToolContext};

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    pub struct Answer {
        approved: bool,
    }

    /// Delete a file after confirmation
    #[tool(resume = Answer)]
    async fn delete_file(path: String, ctx: ToolContext) -> String {
        let _ = ctx;
        path
    }
}

// `suspend = Type` without a ToolContext parameter to suspend with.
mod suspend_without_context {
    use tool_core::tool;

    #[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
    pub struct Question {
        text: String,
    }

    /// Delete a file after confirmation
    #[tool(suspend = Question)]
    async fn delete_file(path: String) -> String {
        path
    }
}

// A workflow state, but no context to read it through.
mod state_without_context {
    use tool_core::tool;

    #[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
    struct Counter {
        count: u32,
    }

    /// Counts
    #[tool(workflow_state = Counter)]
    async fn count(n: u32) -> u32 {
        n
    }
}

// `set_state` in a tool that declares no workflow state.
mod set_state_without_state {
    use tool_core::{ToolContext, tool};

    /// Resets the workflow
    #[tool]
    async fn reset(ctx: ToolContext) {
        if let Some(workflow) = ctx.workflow::<serde_json::Value>() {
            workflow.set_state(serde_json::json!({}));
        }
    }
}

// The state read as a type other than the declared one, and read typed in
// a tool that declares no state.
mod state_read_as_another_type {
    use tool_core::{ToolContext, tool};

    #[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
    struct Counter {
        count: u32,
    }

    #[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
    struct Cart {
        items: Vec<String>,
    }

    /// Counts
    #[tool(workflow_state = Counter)]
    async fn count(ctx: ToolContext) -> usize {
        ctx.workflow::<Cart>().map_or(0, |w| w.state().items.len())
    }

    /// Counts too
    #[tool]
    async fn undeclared(ctx: ToolContext) -> u32 {
        ctx.workflow::<Counter>().map_or(0, |w| w.state().count)
    }
}

fn main() {}
