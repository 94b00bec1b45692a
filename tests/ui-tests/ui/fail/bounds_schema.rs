// Types that lack a trait the tool needs, reported by type checking on the
// user's type (continued from bounds.rs), and parameters that `#[tool]`
// takes by their names for something they are not (probes).

// The input struct derives Deserialize but not JsonSchema.
mod input_not_json_schema {
    use tool_core::tool;

    #[derive(serde::Deserialize)]
    pub struct WeatherInput {
        city: String,
    }

    /// Get the weather
    #[tool]
    async fn weather(WeatherInput { city }: WeatherInput) -> String {
        city
    }
}

// The (plain) output type derives Serialize but not JsonSchema.
mod output_not_json_schema {
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
}

// The request_context type lacks JsonSchema.
mod request_context_not_json_schema {
    use tool_core::tool;

    pub struct Tenant {
        pub id: String,
    }

    /// Get the weather
    #[tool(request_context = Tenant)]
    async fn weather(city: String) -> String {
        city
    }
}

// With input_examples the generated input is serialized: a parameter type without Serialize is reported on that parameter.
mod examples_param_not_serialize {
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
}

// With input_examples a lone parameter's examples are serialized as its
// values: a type without Serialize is reported.
mod lone_examples_param_not_serialize {
    use tool_core::tool;

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    pub enum Unit {
        Celsius,
    }

    fn examples() -> Vec<Unit> {
        Vec::new()
    }

    /// Get the unit
    #[tool(input_examples = examples)]
    async fn unit(unit: Unit) -> String {
        let _ = unit;
        String::new()
    }
}

// `#[tool]` recognizes the context by its name, `ToolContext`: under an alias
// it is taken as an input parameter. The error says so and what to write.
mod context_alias {
    use tool_core::{ToolContext, tool};

    #[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
    pub struct Question {
        text: String,
    }

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    pub struct Answer {
        approved: bool,
    }

    type Ctx = ToolContext<Question, Answer>;

    /// Delete a file after a human confirms
    #[tool]
    async fn delete_file(path: String, ctx: Ctx) -> String {
        let _ = ctx;
        path
    }
}

// `input = whole` takes the one parameter as the whole input, whose JSON
// Schema must be an object: on a `Vec` (or an alias of one) it is reported on
// the type. Without `input = whole`, such a parameter becomes a property.
mod whole_input_not_object {
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
}

fn main() {}
