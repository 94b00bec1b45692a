// Functions named in the attribute whose signature does not fit, reported by
// type checking on the path.

// A reconcile function must take what the tool function takes: here the tool
// takes a `String`, the reconcile function a `u32`.
mod reconcile_wrong_input {
    use tool_core::{tool, IdempotencyKey, Reconciled, ToolContext, ToolError};

    /// Refund a charge
    #[tool(reconcile = find_refund)]
    async fn refund(charge_id: String) -> Result<String, ToolError> {
        Ok(charge_id)
    }

    async fn find_refund(
        charge_id: u32,
        _key: IdempotencyKey,
        _ctx: ToolContext,
    ) -> Result<Reconciled<String>, ToolError> {
        Ok(Reconciled::Happened(charge_id.to_string()))
    }
}

// A reconcile function returns the tool's output type: here the tool returns
// a `String`, the reconcile function a `u32`.
mod reconcile_wrong_output {
    use tool_core::{tool, IdempotencyKey, Reconciled, ToolContext, ToolError};

    /// Refund a charge
    #[tool(reconcile = find_refund)]
    async fn refund(charge_id: String) -> Result<String, ToolError> {
        Ok(charge_id)
    }

    async fn find_refund(
        _charge_id: String,
        _key: IdempotencyKey,
        _ctx: ToolContext,
    ) -> Result<Reconciled<u32>, ToolError> {
        Ok(Reconciled::Happened(1))
    }
}

// A `#[tool]`'s input hook gets the input as the function takes it: here a
// `String`, and the hook asks for a `u32`.
mod typed_hook_wrong_input {
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
}

// A `#[tool]`'s output hook gets the output as the function returns it:
// here a `u32`, and the async hook asks for a `String`.
mod typed_hook_wrong_output {
    use tool_core::hooks::OutputAvailable;
    use tool_core::{tool, ToolError};

    async fn on_output(args: OutputAvailable<String>) {
        let _ = args.output;
    }

    /// Count the words
    #[tool(on_output = on_output)]
    async fn count_words(text: String) -> Result<u32, ToolError> {
        Ok(text.split_whitespace().count() as u32)
    }
}

// A hook path whose function has the wrong signature.
mod wrong_hook_signature {
    use tool_core::tool;

    fn on_output(output: &str) {
        let _ = output;
    }

    /// Get the weather
    #[tool(on_output = on_output)]
    async fn weather(city: String) -> String {
        city
    }
}

// input_examples of a tool with one parameter are values of its type (or of
// the generated input struct): examples of another type are reported on the
// path.
mod wrong_examples_type {
    use tool_core::tool;

    fn examples() -> Vec<u32> {
        vec![3]
    }

    /// Get the weather
    #[tool(input_examples = examples)]
    async fn weather(city: String) -> String {
        city
    }
}

// A to_model_output function that takes the wrong type.
mod wrong_model_output_signature {
    use tool_core::{tool, ModelOutput};

    fn as_text(output: &u32) -> ModelOutput {
        ModelOutput::text(output.to_string())
    }

    /// Get the weather
    #[tool(to_model_output = as_text)]
    async fn weather(city: String) -> String {
        city
    }
}

// A require_approval policy whose parameter is not the tool's input: for a
// tool with one parameter, neither its type nor the generated input struct;
// for several, not the generated input struct.
mod wrong_policy_signature {
    use tool_core::{tool, RequestContext};

    fn policy(count: &u32, _: &RequestContext) -> bool {
        *count > 10
    }

    /// Get the weather
    #[tool(require_approval = policy)]
    async fn weather(city: String) -> String {
        city
    }

    /// Get the weather for some days
    #[tool(require_approval = policy)]
    async fn forecast(city: String, days: u32) -> String {
        format!("{city} {days}")
    }
}

fn main() {}
