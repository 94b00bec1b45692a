//! Streaming input with lifecycle hooks: the model's arguments arrive in
//! pieces; `on_input_start`, `on_input_delta`, `on_input_available` and
//! `on_output` fire in order (the tool's, then the runtime's), and
//! `partial()` shows the best-effort value after every piece. The input
//! hooks run on a queue of the call's: `push` does not wait for them. The
//! tool's `on_input_available` and `on_output` get its own types; a hook
//! may be an `async fn`.
//!
//! Run: `cargo run -p examples --example streaming`

use serde::Deserialize;
use tool_core::hooks::{InputAvailable, InputDelta, InputStart, OutputAvailable};
use tool_core::{Hooks, ToolError, tool};
use tool_runtime::{EventKind, Runtime};

fn on_start(args: InputStart) {
    println!(
        "  [tool hook] on_input_start     call={} messages={}",
        args.call_id,
        args.messages.len()
    );
}

fn on_delta(args: InputDelta) {
    println!(
        "  [tool hook] on_input_delta     {:?}",
        args.input_text_delta
    );
}

fn on_available(args: InputAvailable<SearchInput>) {
    let SearchInput { query, limit } = &args.input;
    println!("  [tool hook] on_input_available query={query:?} limit={limit}");
}

async fn on_output(args: OutputAvailable<Vec<String>>) {
    tokio::task::yield_now().await; // e.g. write to an audit log
    println!(
        "  [tool hook] on_output          {} -> {} results",
        args.tool_id,
        args.output.len()
    );
}

#[derive(Deserialize, schemars::JsonSchema)]
pub struct SearchInput {
    /// What to search for
    query: String,
    /// How many results
    limit: u32,
}

/// Search the documentation
#[tool(
    id = "search-docs",
    on_input_start = on_start,
    on_input_delta = on_delta,
    on_input_available = on_available,
    on_output = on_output
)]
pub async fn search_docs(
    SearchInput { query, limit }: SearchInput,
) -> Result<Vec<String>, ToolError> {
    println!("  [execute]   searching {query:?} (limit {limit})");
    Ok((1..=limit).map(|i| format!("{query} result {i}")).collect())
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let runtime_hooks = Hooks::new()
        .on_input_start(|a: InputStart| {
            println!("  [runtime]   on_input_start     call={}", a.call_id)
        })
        .on_input_available(|a: InputAvailable| {
            println!("  [runtime]   on_input_available {}", a.input)
        })
        .on_output(|a: OutputAvailable| println!("  [runtime]   on_output          {}", a.tool_id));
    let runtime = Runtime::builder()
        .tool(SearchDocsTool)
        .hooks(runtime_hooks)
        .build()?;
    let mut events = runtime.events();

    let messages =
        vec![serde_json::json!({ "role": "user", "content": "find the streaming docs" })];
    let mut stream = runtime.begin("call-1", "search-docs", messages);
    for delta in [
        r#"{"que"#,
        r#"ry": "stre"#,
        r#"aming", "li"#,
        r#"mit": 2"#,
        "}",
    ] {
        stream.push(delta);
        println!(
            "  [partial]   {}",
            stream
                .partial()
                .map_or("(nothing yet)".into(), ToString::to_string)
        );
    }
    let outcome = stream.finish().await;
    println!("--- outcome: {}", outcome.to_model_value());

    println!("--- events a UI received:");
    while let Some(event) = events.try_next() {
        let what = match &event.kind {
            EventKind::InputDelta { display } => format!("input delta {display}"),
            EventKind::InputAvailable { payload } => format!("input available {}", payload.display),
            EventKind::Output { payload } => format!("output {}", payload.display),
            other => format!("{other:?}"),
        };
        println!("  {} {}: {what}", event.tool_id, event.call_id);
    }
    Ok(())
}
