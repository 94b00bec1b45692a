// Misuses of the attribute's keys and values, reported by the macro (no type
// checking needed): each is an error of its own, spanned on the token to fix.

// A misspelled key: the error suggests the intended one and lists the valid keys (and no "missing description" on top).
mod unknown_key {
    use tool_core::tool;

    #[tool(descripton = "Get the weather")]
    async fn weather(city: String) -> String {
        city
    }
}

// `state = Type`, the workflow state's key before application state had
// `State<T>`: the error names both.
mod workflow_state_key {
    use tool_core::tool;

    #[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
    pub struct Visits {
        count: u32,
    }

    /// Counts visits
    #[tool(state = Visits)]
    async fn visit(city: String) -> String {
        city
    }
}

// createTool's camelCase names: each error names the #[tool] spelling or says where the schema comes from.
mod mastra_key_names {
    use tool_core::tool;

    /// Get the weather
    #[tool(requireApproval, inputSchema = WeatherInput, toModelOutput = to_text)]
    async fn weather(city: String) -> String {
        city
    }
}

// An MCP annotation given as a top-level key: the error says it goes inside mcp(...).
mod key_belongs_in_mcp {
    use tool_core::tool;

    /// Get the weather
    #[tool(id = "weather", read_only)]
    async fn weather(city: String) -> String {
        city
    }
}

// The same key given twice.
mod duplicate_key {
    use tool_core::tool;

    /// Get the weather
    #[tool(id = "weather", strict, id = "forecast")]
    async fn weather(city: String) -> String {
        city
    }
}

// The same entry twice inside mcp(...).
mod duplicate_nested_key {
    use tool_core::tool;

    /// Get the weather
    #[tool(mcp(read_only, title = "Weather", read_only = false))]
    async fn weather(city: String) -> String {
        city
    }
}

// Values of the wrong kind, each reported: a number for a string, a string for a flag, a flag with parentheses, a string for an integer.
mod bad_value_type {
    use tool_core::tool;

    /// Get the weather
    #[tool(id = 42, strict = "yes", mcp(read_only(true)), background(max_retries = "3"))]
    async fn weather(city: String) -> String {
        city
    }
}

// `transactional` is a flag: `transactional` or `transactional = false`, not a string.
mod transactional_value {
    use tool_core::tool;

    /// Move money between two accounts
    #[tool(transactional = "yes")]
    async fn transfer(from: String, to: String) -> String {
        format!("{from} -> {to}")
    }
}

// An id providers reject (spaces and `!` are outside ^[a-zA-Z0-9_-]{1,64}$).
mod bad_id {
    use tool_core::tool;

    /// Get the weather
    #[tool(id = "get weather!")]
    async fn weather(city: String) -> String {
        city
    }
}

// Without `id`, the function name is the id; a non-ASCII name is not a valid one.
mod fn_name_not_an_id {
    use tool_core::tool;

    /// Get the weather
    #[tool]
    async fn météo(city: String) -> String {
        city
    }
}

// `input` takes `whole` or `params`, and `whole` needs exactly one parameter
// besides the context.
mod bad_input_shape {
    use tool_core::tool;

    /// Get the weather
    #[tool(input = foo)]
    async fn weather(city: String) -> String {
        city
    }

    /// Get the forecast
    #[tool(input = "params")]
    async fn forecast(city: String) -> String {
        city
    }

    /// Add two numbers
    #[tool(input = whole)]
    async fn add(a: f64, b: f64) -> f64 {
        a + b
    }
}

// An unknown entry in mcp(...).
mod bad_mcp_entry {
    use tool_core::tool;

    /// Get the weather
    #[tool(mcp(title = "Weather", readonly))]
    async fn weather(city: String) -> String {
        city
    }
}

// An unknown entry in background(...).
mod bad_background_entry {
    use tool_core::tool;

    /// Re-index the catalogue
    #[tool(background(timeout = 60_000))]
    async fn reindex(full: bool) -> bool {
        full
    }
}

// background(disposition) takes "deferred" or "foreground".
mod bad_disposition {
    use tool_core::tool;

    /// Re-index the catalogue
    #[tool(background(disposition = "later"))]
    async fn reindex(full: bool) -> bool {
        full
    }
}

// output_validation takes "strict" or "warn".
mod bad_output_validation {
    use tool_core::tool;

    /// Get the weather
    #[tool(output_validation = "lenient")]
    async fn weather(city: String) -> String {
        city
    }
}

// `state` given twice.
mod state_duplicate {
    use tool_core::{ToolContext, tool};

    #[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
    struct Counter {
        count: u32,
    }

    /// Counts
    #[tool(workflow_state = Counter, workflow_state = Counter)]
    async fn count(ctx: ToolContext) -> u32 {
        ctx.workflow::<Counter>().map_or(0, |w| w.state().count)
    }
}

// `state` takes a type, not a string.
mod state_not_a_type {
    use tool_core::{ToolContext, tool};

    /// Counts
    #[tool(workflow_state = "Counter")]
    async fn count(ctx: ToolContext) -> String {
        ctx.call_id().to_owned()
    }
}

// `reconcile` takes the path of a function, not a string.
mod reconcile_not_a_path {
    use tool_core::tool;

    /// Refund a charge
    #[tool(reconcile = "find_refund")]
    async fn refund(charge_id: String) -> String {
        charge_id
    }
}

// A field listed twice in editable(...), and editable(...) given twice.
mod editable_duplicate {
    use tool_core::tool;

    /// Transfer money
    #[tool(require_approval(editable(amount, memo, amount)))]
    async fn transfer(to: String, amount: u64, memo: String) -> String {
        format!("{amount} to {to}: {memo}")
    }

    /// Transfer money
    #[tool(require_approval(editable(amount), editable(memo)))]
    async fn transfer_twice(to: String, amount: u64, memo: String) -> String {
        format!("{amount} to {to}: {memo}")
    }
}

// `editable` as a top-level key, and inside mcp(...): it belongs inside
// require_approval(...).
mod editable_misplaced {
    use tool_core::tool;

    /// Transfer money
    #[tool(require_approval, editable(amount))]
    async fn transfer(to: String, amount: u64) -> String {
        format!("{amount} to {to}")
    }

    /// Transfer money
    #[tool(require_approval = true, mcp(editable(amount)))]
    async fn transfer_mcp(to: String, amount: u64) -> String {
        format!("{amount} to {to}")
    }
}

// An editable field that is none of the parameters: spanned on the name,
// with the closest parameter suggested.
mod editable_unknown_field {
    use tool_core::tool;

    /// Transfer money
    #[tool(require_approval(editable(amout, memo)))]
    async fn transfer(to: String, amount: u64, memo: Option<String>) -> String {
        format!("{amount} to {to}: {memo:?}")
    }

    /// Transfer money, approved by a policy
    #[tool(require_approval(policy = always, editable(recipient)))]
    async fn transfer_by_policy(to: String, amount: u64) -> String {
        format!("{amount} to {to}")
    }

    fn always(_: &TransferByPolicyToolInput, _: &tool_core::RequestContext) -> bool {
        true
    }

    /// Ping
    #[tool(require_approval(editable(amount)))]
    async fn ping() -> &'static str {
        "pong"
    }
}

// `editable` needs the names of the fields a reviewer may change.
mod editable_without_names {
    use tool_core::tool;

    /// Transfer money
    #[tool(require_approval(editable()))]
    async fn transfer(to: String, amount: u64) -> String {
        format!("{amount} to {to}")
    }

    /// Transfer money
    #[tool(require_approval(editable))]
    async fn transfer_flag(to: String, amount: u64) -> String {
        format!("{amount} to {to}")
    }

    /// Transfer money
    #[tool(require_approval())]
    async fn transfer_empty(to: String, amount: u64) -> String {
        format!("{amount} to {to}")
    }
}

// An explicit but blank description.
mod empty_description {
    use tool_core::tool;

    #[tool(description = "  ")]
    async fn weather(city: String) -> String {
        city
    }
}

// No doc comment and no `description = "..."`: the model would not know what the tool does.
mod missing_description {
    use tool_core::tool;

    #[tool]
    async fn weather(city: String) -> String {
        city
    }
}

// `mcp(task_required)` serves a tool only as an MCP task, which only a
// background tool's call can be.
mod task_required_without_background {
    use tool_core::tool;

    /// Builds an archive
    #[tool(mcp(task_required))]
    async fn archive() -> String {
        "archived".into()
    }
}

// A background tool must be `async fn`.
mod background_not_async {
    use tool_core::tool;

    /// Re-index the catalogue
    #[tool(background(timeout_ms = 60_000))]
    fn reindex(full: bool) -> bool {
        full
    }
}

// Several independent mistakes in one item are all reported at once.
mod several_errors {
    use tool_core::tool;

    #[tool(id = "bad id", mcp(readonly), output_validation = "loose")]
    async unsafe fn weather(city: &str) -> impl Sized {
        city.len()
    }
}

// On a #[tool] error the function is still emitted: its callers report nothing more.
mod fn_still_emitted {
    use tool_core::tool;

    /// Get the weather
    #[tool(id = "weather tool")]
    async fn weather(city: String) -> String {
        city
    }

    async fn forecast() -> String {
        weather("Paris".to_owned()).await
    }

    fn main() {
        let _ = forecast();
    }
}

// On a #[tool] error the macro still emits the tool type (a stand-in that
// converts into `Tool`), so uses of `WeatherTool` elsewhere report nothing:
// the only errors are the macro's own.
mod type_used_after_error {
    use tool_core::{Tool, tool};

    /// Get the weather
    #[tool(id = "weather tool", stirct)]
    pub async fn weather(city: String) -> String {
        city
    }

    fn register(tools: &mut Vec<Tool>, tool: impl Into<Tool>) {
        tools.push(tool.into());
    }

    fn main() {
        let mut tools = vec![Tool::from(WeatherTool)];
        let value = WeatherTool;
        let copy = value;
        register(&mut tools, value);
        register(&mut tools, copy.clone());
        let tool: Tool = WeatherTool::default().into();
        tools.push(tool);
        println!("{value:?} {}", tools.len());
    }
}

fn main() {}
