// Every supported shape compiles and runs; each module was its own case and
// its `main` runs here.

// `ToolContext<S, R>` gives the suspend and resume types; the attribute may
// repeat them, and the context may come before the input.
mod context_suspend_resume {
    use tool_core::{tool, Tool, ToolContext, ToolError};

    #[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
    pub struct Question {
        text: String,
    }

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    pub struct Answer {
        approved: bool,
    }

    /// Deletes a file after a human confirms.
    #[tool]
    async fn delete_file(path: String, ctx: ToolContext<Question, Answer>) -> Result<String, ToolError> {
        match ctx.resume_data() {
            None => ctx.suspend(Question { text: format!("Delete {path}?") }),
            Some(Answer { approved: true }) => Ok(format!("deleted {path}")),
            Some(Answer { approved: false }) => Ok("kept".into()),
        }
    }

    /// Moves a file after a human confirms.
    #[tool(suspend = Question, resume = Answer)]
    async fn move_file(ctx: ToolContext<Question, Answer>, from: String, to: String) -> Result<String, ToolError> {
        if ctx.resume_data().is_none() {
            return ctx.suspend(Question { text: format!("Move {from} to {to}?") });
        }
        Ok(format!("moved {from} to {to}"))
    }

    /// Reports who is calling; a context without suspension.
    #[tool]
    async fn whoami(ctx: ToolContext) -> String {
        ctx.call_id().to_owned()
    }

    pub fn main() {
        for tool in [Tool::from(DeleteFileTool), Tool::from(MoveFileTool)] {
            let definition = tool.definition();
            assert!(definition.suspend_schema.as_ref().unwrap()["properties"]["text"].is_object());
            assert!(definition.resume_schema.as_ref().unwrap()["properties"]["approved"].is_object());
            assert!(!definition.input_schema["properties"].as_object().unwrap().contains_key("ctx"));
        }
        let tool = Tool::from(WhoamiTool);
        assert!(tool.definition().suspend_schema.is_none());
        assert!(tool.definition().resume_schema.is_none());
    }
}

// `crate = path` with tool-core reached through a facade module (as a crate
// re-exporting tool-core would): generated code goes through that path only.
mod crate_path_facade {
    mod facade {
        pub use tool_core::*;
    }

    use facade::{Tool, ToolContext, ToolError};

    #[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
    pub struct Confirm {
        text: String,
    }

    /// Book a table
    #[facade::tool(
        crate = crate::crate_path_facade::facade,
        input_examples = examples,
        require_approval = needs_approval,
        request_context = Confirm,
        to_model_output = as_text,
        background,
        mcp(read_only, meta = meta),
        output_validation = "warn",
    )]
    pub async fn book(
        /// Restaurant
        place: String,
        /// Party size
        people: Option<u8>,
        ctx: ToolContext<Confirm, Confirm>,
    ) -> Result<String, ToolError> {
        if ctx.resume_data().is_none() {
            return ctx.suspend(Confirm { text: format!("Book {place} for {people:?}?") });
        }
        Ok(place)
    }

    fn examples() -> [BookToolInput; 1] {
        [BookToolInput { place: "Chez Nous".into(), people: Some(2) }]
    }

    fn needs_approval(input: &BookToolInput, _: &facade::RequestContext) -> bool {
        input.people.unwrap_or(1) > 8
    }

    // `&str` for a `String` output: the call goes through deref coercion.
    fn as_text(output: &str) -> facade::ModelOutput {
        facade::ModelOutput::text(output)
    }

    fn meta() -> serde_json::Value {
        serde_json::json!({ "source": "facade" })
    }

    pub fn main() {
        let tool = Tool::from(BookTool);
        let definition = tool.definition();
        assert_eq!(definition.input_schema["properties"]["place"]["description"], "Restaurant");
        assert_eq!(definition.input_examples.len(), 1);
        assert!(tool.has_approval_policy());
    }
}

// The description may come from macros: `#[doc = include_str!("...")]`
// (relative to this file), mixed with `///` lines, and
// `description = concat!(...)`. The compiler evaluates them; the text is
// trimmed like doc comments are.
mod description_from_macros {
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

    pub fn main() {
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
}

// `require_approval(editable(..))` on plain parameters, with a policy, and
// on a struct taken as the whole input (a renamed property by its string).
mod editable {
    use tool_core::{tool, RequestContext, Tool};

    /// Transfer money
    #[tool(require_approval(editable(amount, memo)))]
    async fn transfer(to: String, amount: u64, memo: Option<String>) -> String {
        format!("{amount} to {to}: {memo:?}")
    }

    fn large(input: &RefundToolInput, _: &RequestContext) -> bool {
        input.amount > 100
    }

    /// Refund a payment
    #[tool(require_approval(policy = large, editable(amount, r#type)))]
    async fn refund(amount: u64, r#type: String) -> String {
        format!("{amount} ({type})", type = r#type)
    }

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    #[serde(rename_all = "camelCase")]
    pub struct Payment {
        payee: String,
        amount_cents: u64,
    }

    /// Pay someone
    #[tool(require_approval(editable("amountCents")))]
    async fn pay(payment: Payment) -> String {
        format!("{} to {}", payment.amount_cents, payment.payee)
    }

    pub fn main() {
        let transfer = Tool::from(TransferTool);
        assert!(transfer.definition().require_approval);
        assert_eq!(transfer.definition().editable, ["amount", "memo"]);
        assert!(transfer.edit_schema().is_some());

        let refund = Tool::from(RefundTool);
        assert!(refund.has_approval_policy());
        assert_eq!(refund.definition().editable, ["amount", "type"]);

        let pay = Tool::from(PayTool);
        assert!(pay.config_error().is_none(), "{:?}", pay.config_error());
        assert_eq!(pay.definition().editable, ["amountCents"]);
    }
}

// Every attribute key, with every mcp(...) and background(...) entry.
mod every_key {
    use serde_json::{json, Value};
    use tool_core::hooks::{InputAvailable, InputDelta, InputStart, OutputAvailable};
    use tool_core::transform::{Phase, ToolTransform};
    use tool_core::{
        tool, Disposition, ModelOutput, OutputValidation, RequestContext, Tool, ToolContext, ToolError,
    };

    #[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
    pub struct Question {
        text: String,
    }

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    pub struct Answer {
        approved: bool,
    }

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    pub struct Tenant {
        tenant_id: String,
    }

    #[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
    pub struct Deleted {
        count: u32,
    }

    fn model_output(output: &Deleted) -> ModelOutput {
        ModelOutput::text(format!("deleted {}", output.count))
    }

    fn transform() -> ToolTransform {
        ToolTransform::new().display(Phase::Input, |ctx| Some(ctx.payload.clone()))
    }

    fn provider_options() -> Value {
        json!({ "anthropic": { "cacheControl": { "type": "ephemeral" } } })
    }

    fn examples() -> Vec<PurgeToolInput> {
        vec![PurgeToolInput { table: "logs".into(), older_than_days: Some(30) }]
    }

    fn meta() -> Value {
        json!({ "owner": "ops" })
    }

    fn started(_: InputStart) {}
    fn delta(_: InputDelta) {}
    // Typed: the input as the function takes it, its output type; async too.
    async fn available(args: InputAvailable<PurgeToolInput>) -> Result<(), ToolError> {
        let _: &String = &args.input.table;
        Ok(())
    }
    fn output(args: OutputAvailable<Deleted>) {
        let _: u32 = args.output.count;
    }

    /// Deletes old rows
    #[tool(
        id = "purge-rows",
        description = "Delete rows older than a number of days",
        title = "Purge rows",
        strict = true,
        require_approval,
        retry_safe = false,
        transactional,
        reconcile = find_purge,
        suspend = Question,
        resume = Answer,
        request_context = Tenant,
        to_model_output = model_output,
        transform = transform,
        mcp(title = "Purge", read_only = false, destructive, idempotent = true, open_world = false, meta = meta),
        provider_options = provider_options,
        input_examples = examples,
        background(enabled, disposition = "foreground", timeout_ms = 30_000, max_retries = 2),
        on_input_start = started,
        on_input_delta = delta,
        on_input_available = available,
        on_output = output,
        output_validation = "warn",
        crate = ::tool_core,
    )]
    pub async fn purge(
        /// Table to purge
        table: String,
        /// Age threshold in days
        older_than_days: Option<u32>,
        ctx: ToolContext<Question, Answer>,
    ) -> Result<Deleted, ToolError> {
        if ctx.resume_data().is_none() {
            return ctx.suspend(Question { text: format!("Purge {table}?") });
        }
        let _ = older_than_days;
        Ok(Deleted { count: 3 })
    }

    async fn find_purge(
        input: PurgeToolInput,
        _key: tool_core::IdempotencyKey,
        _ctx: ToolContext<Question, Answer>,
    ) -> Result<tool_core::Reconciled<Deleted>, ToolError> {
        let _ = input.table;
        Ok(tool_core::Reconciled::NotHappened)
    }

    struct Args {
        days: u32,
    }

    fn policy(input: &KeepRowsToolInput, request_context: &RequestContext) -> bool {
        input.days > 7 || request_context.get("tenant").is_none()
    }

    /// Keeps rows for a number of days
    #[tool(require_approval = policy, strict = false, output_validation = "strict", background(enabled = false, disposition = "deferred"), mcp(read_only))]
    pub async fn keep_rows(days: u32) -> u32 {
        Args { days }.days
    }

    /// Explicitly needs no approval
    #[tool(require_approval = false, background)]
    pub async fn relaxed() {}

    pub fn main() {
        let tool = Tool::from(PurgeTool);
        let d = tool.definition();
        assert_eq!(d.id, "purge-rows");
        assert_eq!(d.description, "Delete rows older than a number of days");
        assert_eq!(d.title.as_deref(), Some("Purge rows"));
        assert!(d.strict);
        assert!(d.require_approval);
        assert!(!d.retry_safe);
        assert!(d.transactional);
        assert!(tool.has_reconcile());
        assert!(d.suspend_schema.is_some() && d.resume_schema.is_some());
        assert!(d.request_context_schema.as_ref().unwrap()["properties"]["tenant_id"].is_object());
        assert_eq!(d.provider_options["anthropic"]["cacheControl"]["type"], "ephemeral");
        assert_eq!(d.input_examples, vec![json!({ "table": "logs", "older_than_days": 30 })]);
        let bg = d.background.as_ref().unwrap();
        assert!(bg.enabled);
        assert_eq!(bg.disposition, Disposition::Foreground);
        assert_eq!(bg.timeout_ms, Some(30_000));
        assert_eq!(bg.max_retries, 2);
        assert_eq!(d.output_validation, OutputValidation::Warn);
        let mcp = d.mcp.as_ref().unwrap();
        assert_eq!(mcp.annotations.title.as_deref(), Some("Purge"));
        assert_eq!(mcp.annotations.read_only_hint, Some(false));
        assert_eq!(mcp.annotations.destructive_hint, Some(true));
        assert_eq!(mcp.annotations.idempotent_hint, Some(true));
        assert_eq!(mcp.annotations.open_world_hint, Some(false));
        assert_eq!(mcp.meta.as_ref().unwrap()["owner"], "ops");
        let hooks = tool.hooks();
        assert!(hooks.has_on_input_start() && hooks.has_on_input_delta());
        assert!(hooks.has_on_input_available() && hooks.has_on_output());
        assert!(tool.transform().is_configured(tool_core::transform::Target::Display));

        let tool = Tool::from(KeepRowsTool);
        assert!(tool.has_approval_policy());
        let block_on = |f| tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(f);
        assert!(block_on(tool.requires_approval(&json!({ "days": 30 }), &RequestContext::new())));
        assert!(!block_on(tool.requires_approval(&json!({ "days": 1 }), &RequestContext::new().with("tenant", "a"))));
        let d = tool.definition();
        assert!(!d.strict);
        assert!(!d.transactional);
        assert_eq!(d.output_validation, OutputValidation::Strict);
        assert!(!d.background.as_ref().unwrap().enabled);
        assert_eq!(d.background.as_ref().unwrap().disposition, Disposition::Deferred);

        let tool = Tool::from(RelaxedTool);
        assert!(!tool.definition().require_approval);
        assert!(tool.definition().background.as_ref().unwrap().enabled);
    }
}

// `input = params` and `input = whole` override the default, which reads the
// parameter's schema: `input = params` makes the alias of `Vec<u32>` a
// property (as the default would), and `input = whole` takes a struct of the
// user's named like a standard type (`Value`) as the whole input.
mod input_override {
    use tool_core::{CallContext, Tool, tool};

    type Ids = Vec<u32>;

    /// Count the ids
    #[tool(input = params)]
    pub async fn count(
        /// The ids to count
        ids: Ids,
    ) -> usize {
        ids.len()
    }

    /// A text, under a name `#[tool]` would otherwise take for `serde_json::Value`.
    #[derive(serde::Deserialize, schemars::JsonSchema)]
    pub struct Value {
        /// The text
        text: String,
    }

    /// Echo a text
    #[tool(input = whole)]
    pub async fn echo(Value { text }: Value) -> String {
        text
    }

    pub fn main() {
        let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();

        let count = Tool::from(CountTool);
        let schema = &count.definition().input_schema;
        assert_eq!(schema["type"], "object", "{schema}");
        assert_eq!(schema["properties"]["ids"]["type"], "array", "{schema}");
        assert_eq!(schema["properties"]["ids"]["description"], "The ids to count");
        assert_eq!(schema["required"], serde_json::json!(["ids"]));
        let outcome = runtime.block_on(count.execute(r#"{"ids": [1, 2, 3]}"#, CallContext::new("c1")));
        assert_eq!(outcome.output().unwrap(), &serde_json::json!(3));

        let echo = Tool::from(EchoTool);
        let schema = &echo.definition().input_schema;
        assert_eq!(schema["type"], "object", "{schema}");
        assert_eq!(schema["properties"]["text"]["description"], "The text");
        let outcome = runtime.block_on(echo.execute(r#"{"text": "hi"}"#, CallContext::new("c2")));
        assert_eq!(outcome.output().unwrap(), "hi");
    }
}

// A tool without parameters takes an empty object.
mod no_params {
    use tool_core::{tool, Tool};

    /// The current time
    #[tool]
    async fn now() -> String {
        "12:00".to_owned()
    }

    pub fn main() {
        let tool = Tool::from(NowTool);
        let definition = tool.definition();
        assert_eq!(definition.input_schema["type"], "object");
        assert_eq!(definition.output_schema.as_ref().unwrap()["type"], "string");
    }
}

// Generated code needs nothing but tool-core: no serde_json, and serde and
// schemars appear only in the user's own derives.
mod only_tool_core {
    use tool_core::{tool, Tool, ToolError};

    #[derive(serde::Serialize, schemars::JsonSchema)]
    pub struct Page {
        title: String,
    }

    /// Fetch a page title
    #[tool(strict, input_examples = examples, mcp(open_world), background(timeout_ms = 5000))]
    pub async fn fetch_title(
        /// The page address
        url: String,
        /// Follow redirects
        follow: Option<bool>,
    ) -> Result<Page, ToolError> {
        let _ = follow;
        Ok(Page { title: url })
    }

    fn examples() -> Vec<FetchTitleToolInput> {
        vec![FetchTitleToolInput { url: "https://example.com".into(), follow: None }]
    }

    pub fn main() {
        let tool = Tool::from(FetchTitleTool);
        assert_eq!(tool.definition().input_examples.len(), 1);
        assert_eq!(tool.definition().background.as_ref().unwrap().timeout_ms, Some(5000));
    }
}

// Return types: a plain `O`, `()`, no return type, `Result<(), E>` with a
// user error type, and a one-argument `Result` alias.
mod plain_and_unit_output {
    use tool_core::{tool, Tool, ToolError};

    #[derive(serde::Serialize, schemars::JsonSchema)]
    pub struct Total {
        sum: i64,
    }

    /// Sums numbers
    #[tool]
    async fn sum(numbers: Vec<i64>) -> Total {
        Total { sum: numbers.iter().sum() }
    }

    /// Logs a line
    #[tool]
    async fn log_line(line: String) -> () {
        let _ = line;
    }

    /// Forgets everything
    #[tool]
    async fn forget() {}

    #[derive(Debug)]
    pub struct StoreError;

    impl std::fmt::Display for StoreError {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("store unavailable")
        }
    }

    impl std::error::Error for StoreError {}

    /// Saves a note
    #[tool]
    async fn save(note: String) -> Result<(), StoreError> {
        let _ = note;
        Err(StoreError)
    }

    /// Reads a file
    #[tool]
    fn read_file(path: String) -> std::io::Result<String> {
        std::fs::read_to_string(path)
    }

    pub fn main() {
        let tool = Tool::from(SumTool);
        assert_eq!(tool.definition().output_schema.as_ref().unwrap()["properties"]["sum"]["type"], "integer");
        for tool in [Tool::from(LogLineTool), Tool::from(ForgetTool), Tool::from(SaveTool)] {
            assert!(tool.definition().output_schema.is_none());
        }
        let tool = Tool::from(ReadFileTool);
        assert_eq!(tool.definition().output_schema.as_ref().unwrap()["type"], "string");
        let _: Result<(), ToolError> = Err(ToolError::new("unused"));
    }
}

// Several plain parameters become a generated input struct: `///` docs are
// property descriptions, `Option<T>` is optional, `r#type` is `type`.
mod plain_params {
    use tool_core::{tool, Tool, ToolError};

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    pub enum Unit {
        Celsius,
        Fahrenheit,
    }

    /// Search the catalogue
    #[tool]
    pub async fn search(
        /// What to look for
        query: String,
        /// How many results (default 10)
        limit: Option<u32>,
        /// Temperature unit
        unit: Unit,
        /// Kind of item
        r#type: Option<String>,
        mut tags: Vec<String>,
    ) -> Result<Vec<String>, ToolError> {
        tags.push(query);
        let _ = (limit, unit, r#type);
        Ok(tags)
    }

    pub fn main() {
        let tool = Tool::from(SearchTool);
        let schema = &tool.definition().input_schema;
        assert_eq!(schema["type"], "object");
        // The generated struct's rustdoc is not shown to the model.
        assert!(schema.get("description").is_none(), "{schema}");
        assert_eq!(schema["properties"]["query"]["description"], "What to look for");
        assert_eq!(schema["properties"]["limit"]["description"], "How many results (default 10)");
        assert!(schema["properties"]["type"].is_object(), "{schema}");
        assert!(schema["properties"]["unit"].is_object(), "{schema}");
        let required = schema["required"].as_array().unwrap();
        assert!(required.contains(&"query".into()));
        assert!(required.contains(&"unit".into()));
        assert!(required.contains(&"tags".into()));
        assert!(!required.contains(&"limit".into()));
        assert!(!required.contains(&"type".into()));
        // The generated input struct is public, beside the tool.
        let input = SearchToolInput {
            query: "q".into(),
            limit: None,
            unit: Unit::Celsius,
            r#type: None,
            tags: Vec::new(),
        };
        let _ = input.query;
        let _future = search("lamp".into(), Some(3), Unit::Fahrenheit, None, vec![]);
    }
}

// `reconcile = path` with every input shape: several parameters (the
// generated input struct), one struct parameter (the whole input), one
// parameter of another type; with a suspending context, a path with
// segments, and an error type of the function's own.
mod reconcile {
    use serde_json::json;
    use tool_core::{
        tool, CallContext, IdempotencyKey, Reconciled, Tool, ToolContext, ToolError,
    };

    #[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
    pub struct Question {
        text: String,
    }

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    pub struct Answer {
        approved: bool,
    }

    /// Transfer money, after a human approves
    #[tool(transactional, reconcile = hooks::find_transfer)]
    async fn transfer(
        from: String,
        to: String,
        ctx: ToolContext<Question, Answer>,
    ) -> Result<String, ToolError> {
        match ctx.resume_data() {
            None => ctx.suspend(Question { text: format!("{from} -> {to}?") }),
            Some(Answer { approved }) => Ok(format!("{from} -> {to}: {approved}")),
        }
    }

    mod hooks {
        use super::*;

        pub async fn find_transfer(
            input: super::TransferToolInput,
            _key: IdempotencyKey,
            _ctx: ToolContext<Question, Answer>,
        ) -> Result<Reconciled<String>, std::io::Error> {
            Ok(Reconciled::Happened(format!("{} -> {}: true", input.from, input.to)))
        }
    }

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    pub struct Order {
        id: u64,
    }

    /// Place an order
    #[tool(reconcile = find_order)]
    fn place_order(order: Order) -> u64 {
        order.id
    }

    async fn find_order(
        order: Order,
        _key: IdempotencyKey,
        _ctx: ToolContext,
    ) -> Result<Reconciled<u64>, ToolError> {
        Ok(Reconciled::Happened(order.id))
    }

    /// Tag items
    #[tool(reconcile = find_tags, retry_safe = false)]
    async fn tag(tags: Vec<String>) {
        let _ = tags;
    }

    async fn find_tags(
        tags: Vec<String>,
        _key: IdempotencyKey,
        _ctx: ToolContext,
    ) -> Result<Reconciled<()>, ToolError> {
        Ok(if tags.is_empty() { Reconciled::NotHappened } else { Reconciled::Happened(()) })
    }

    pub fn main() {
        let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let transfer = Tool::from(TransferTool);
        assert!(transfer.definition().transactional && transfer.has_reconcile());
        let found = runtime
            .block_on(transfer.reconcile(json!({ "from": "a", "to": "b" }), CallContext::new("c1")).unwrap())
            .unwrap();
        assert_eq!(found.output().and_then(|o| o.output()), Some(&json!("a -> b: true")));

        let order = Tool::from(PlaceOrderTool);
        let found = runtime
            .block_on(order.reconcile(json!({ "id": 7 }), CallContext::new("c1")).unwrap())
            .unwrap();
        assert_eq!(found.output().and_then(|o| o.output()), Some(&json!(7)));

        let tag = Tool::from(TagTool);
        let none = runtime
            .block_on(tag.reconcile(json!({ "tags": [] }), CallContext::new("c1")).unwrap())
            .unwrap();
        assert!(!none.happened());
        let some = runtime
            .block_on(tag.reconcile(json!({ "tags": ["a"] }), CallContext::new("c1")).unwrap())
            .unwrap();
        assert!(some.happened());
    }
}

// One struct parameter is the whole input, taken plain.
mod struct_input {
    use tool_core::{tool, Tool, ToolError};

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    pub struct WeatherInput {
        /// City name or coordinates
        location: String,
    }

    #[derive(serde::Serialize, schemars::JsonSchema)]
    pub struct Weather {
        location: String,
        temperature_celsius: f64,
    }

    /// Get the current weather for a location
    #[tool]
    pub async fn weather(input: WeatherInput) -> Result<Weather, ToolError> {
        Ok(Weather { location: input.location, temperature_celsius: 21.0 })
    }

    pub fn main() {
        let tool = Tool::from(WeatherTool);
        let definition = tool.definition();
        assert_eq!(definition.id, "weather");
        assert_eq!(WeatherTool::ID, "weather");
        assert_eq!(definition.description, "Get the current weather for a location");
        assert_eq!(
            definition.input_schema["properties"]["location"]["description"],
            "City name or coordinates"
        );
        assert!(definition.output_schema.as_ref().unwrap()["properties"]["temperature_celsius"].is_object());
        // The function stays callable as written.
        let _future = weather(WeatherInput { location: "Paris".into() });
    }
}

// One struct parameter is the whole input, destructured in the signature.
mod struct_input_destructured {
    use tool_core::{tool, Tool, ToolError};

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    pub struct WeatherInput {
        /// City name or coordinates
        location: String,
        /// Temperature unit
        unit: Option<String>,
    }

    #[derive(serde::Serialize, schemars::JsonSchema)]
    #[serde(rename_all = "camelCase")]
    pub struct Weather {
        location: String,
        temperature_celsius: f64,
    }

    /// Get the current weather for a location
    #[tool(id = "weather-tool", strict, mcp(title = "Weather Lookup", read_only, idempotent))]
    pub async fn weather(WeatherInput { location, unit: _ }: WeatherInput) -> Result<Weather, ToolError> {
        Ok(Weather { location, temperature_celsius: 21.0 })
    }

    pub fn main() {
        let tool = Tool::from(WeatherTool);
        let definition = tool.definition();
        assert_eq!(definition.id, "weather-tool");
        assert!(definition.strict);
        assert_eq!(definition.input_schema["required"], serde_json::json!(["location"]));
        assert!(definition.output_schema.as_ref().unwrap()["properties"]["temperatureCelsius"].is_object());
        let mcp = definition.mcp.as_ref().unwrap();
        assert_eq!(mcp.annotations.title.as_deref(), Some("Weather Lookup"));
        assert_eq!(mcp.annotations.read_only_hint, Some(true));
    }
}

// A plain (non-async) function is a tool too.
mod sync_fn {
    use tool_core::{tool, Tool, ToolError};

    /// Add two integers
    #[tool]
    fn add(a: i64, b: i64) -> Result<i64, ToolError> {
        Ok(a + b)
    }

    /// Upper-cases a text; a lone scalar parameter is a property, not the input.
    #[tool(id = "shout")]
    pub(crate) fn upper(text: String) -> String {
        text.to_uppercase()
    }

    pub fn main() {
        assert_eq!(add(2, 3).unwrap(), 5);
        assert_eq!(upper("a".into()), "A");
        let tool = Tool::from(AddTool);
        assert_eq!(tool.definition().input_schema["required"], serde_json::json!(["a", "b"]));
        let tool = Tool::from(UpperTool);
        assert_eq!(tool.definition().id, "shout");
        assert_eq!(tool.definition().input_schema["properties"]["text"]["type"], "string");
    }
}

// `State<T>` parameters: application state, in any position, beside the
// context and plain parameters, qualified or not; each declares its type.
mod app_state {
    use std::sync::Arc;

    use tool_core::{AppState, CallContext, State, Tool, ToolContext, ToolError, tool};

    #[derive(Clone)]
    pub struct Pool {
        name: Arc<str>,
    }

    #[derive(Clone)]
    pub struct Rates(f64);

    /// Converts an amount with the pool's rates
    #[tool]
    async fn convert(
        State(rates): State<Rates>,
        amount: f64,
        ctx: ToolContext,
        pool: tool_core::State<Pool>,
    ) -> Result<String, ToolError> {
        let _ = ctx.call_id();
        Ok(format!("{} {}", amount * rates.0, pool.0.name))
    }

    /// Names the pool
    #[tool]
    fn pool_name(State(pool): State<Pool>) -> String {
        pool.name.to_string()
    }

    pub fn main() {
        let tool = Tool::from(ConvertTool);
        let names: Vec<&str> = tool.required_state().iter().map(|r| r.type_name()).collect();
        assert_eq!(names, [std::any::type_name::<Rates>(), std::any::type_name::<Pool>()]);
        assert_eq!(tool.definition().input_schema["required"], serde_json::json!(["amount"]));
        let state = AppState::new()
            .with(Rates(2.0))
            .with(Pool { name: "main".into() });
        let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let outcome = runtime.block_on(tool.execute(
            serde_json::json!({ "amount": 1.5 }),
            CallContext::new("c1").with_state(state.clone()),
        ));
        assert_eq!(outcome.output(), Some(&serde_json::json!("3 main")));
        let outcome = runtime.block_on(
            Tool::from(PoolNameTool).execute(serde_json::json!({}), CallContext::new("c2").with_state(state)),
        );
        assert_eq!(outcome.output(), Some(&serde_json::json!("main")));
    }
}

// `state = Type` declares the workflow state; the tool reads it typed, or as
// JSON, and sets a new one. A context without a declared state still reads
// the workflow's ids and its state as JSON.
mod workflow_state {
    use tool_core::{tool, Tool, ToolContext, ToolError};

    #[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
    pub struct Counter {
        count: u32,
    }

    /// Counts a workflow's visits
    #[tool(workflow_state = Counter, request_context = Counter)]
    async fn visit(ctx: ToolContext) -> Result<u32, ToolError> {
        let Some(workflow) = ctx.workflow::<Counter>() else {
            return Ok(0);
        };
        let raw = ctx.workflow::<serde_json::Value>().map(|w| w.state().clone());
        let count = workflow.state().count + 1;
        workflow.set_state(Counter { count });
        let _ = raw;
        Ok(count)
    }

    /// Names the workflow run
    #[tool]
    async fn run_name(ctx: ToolContext) -> String {
        ctx.workflow::<serde_json::Value>()
            .map(|w| format!("{}/{}", w.workflow_id(), w.run_id()))
            .unwrap_or_default()
    }

    pub fn main() {
        let tool = Tool::from(VisitTool);
        assert!(tool.definition().workflow_state_schema.as_ref().unwrap()["properties"]["count"].is_object());
        assert!(tool.definition().request_context_schema.is_some());
        assert!(Tool::from(RunNameTool).definition().workflow_state_schema.is_none());
    }
}

fn main() {
    app_state::main();
    context_suspend_resume::main();
    crate_path_facade::main();
    description_from_macros::main();
    editable::main();
    every_key::main();
    input_override::main();
    no_params::main();
    only_tool_core::main();
    plain_and_unit_output::main();
    plain_params::main();
    reconcile::main();
    struct_input::main();
    struct_input_destructured::main();
    sync_fn::main();
    workflow_state::main();
}
