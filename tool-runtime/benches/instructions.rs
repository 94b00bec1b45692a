//! Per-call cost in instructions, for `valgrind --tool=callgrind` (which
//! counts instructions, repeatably, whatever else the machine does): the
//! weather tool called `CALLS` times (default 10,000) along one path,
//! `CALL_PATH` = `bare` (`serde_json::from_value` → fn → `to_value`),
//! `execute` (`Tool::execute`) or `runtime` (`Runtime::call`). The cost of
//! one call is (count at N calls − count at 0 calls) / N; see BENCHMARKS.md.
//!
//! `TOOL=add` calls the trivial `add` tool of `runtime.rs`'s `call_overhead`
//! instead (`execute` and `runtime` only: its bare path is no serde at all);
//! `TOOL=add-policy` the same tool with an approval policy typed on its
//! input that answers "not required" (issue 34's goal: within 5% of `add`
//! through `runtime`).
//!
//! `SUBSCRIBER` says who listens to the calls' spans and events: `none`
//! (the default: no subscriber), `info` (a `fmt` subscriber at info, writing
//! to a sink) or `warn` (the same subscriber filtering the calls' info-level
//! spans out).
//!
//! Run: `cargo bench -p tool-runtime --bench instructions --no-run`, then the
//! binary under callgrind with `CALL_PATH`, `CALLS` and `SUBSCRIBER` set.

mod add;
#[path = "../../tool-core/benches/weather/mod.rs"]
mod weather;

use std::hint::black_box;

use serde_json::json;
use tool_core::{ApprovalRequirement, CallContext, RequestContext, Tool, tool};
use tool_runtime::{Runtime, ToolCall};

use add::AddTool;
use weather::{WeatherTool, bare, ready};

/// Add two integers
#[tool(id = "add", require_approval = small_sums)]
async fn policed_add(
    /// First addend
    a: i64,
    /// Second addend
    b: i64,
) -> i64 {
    a + b
}

/// Sums of addends under a million need nobody's approval.
fn small_sums(input: &PolicedAddToolInput, _rc: &RequestContext) -> ApprovalRequirement {
    if input.a.abs() < 1_000_000 && input.b.abs() < 1_000_000 {
        ApprovalRequirement::NotRequired
    } else {
        ApprovalRequirement::required()
    }
}

fn main() {
    let level = match std::env::var("SUBSCRIBER").as_deref() {
        Err(_) | Ok("none") => None,
        Ok("info") => Some(tracing::Level::INFO),
        Ok("warn") => Some(tracing::Level::WARN),
        Ok(other) => panic!("SUBSCRIBER must be none, info or warn, not {other}"),
    };
    if let Some(level) = level {
        tracing_subscriber::fmt()
            .with_max_level(level)
            .with_writer(std::io::sink)
            .init();
    }
    let path = std::env::var("CALL_PATH").unwrap_or_else(|_| "bare".to_owned());
    let calls: usize = std::env::var("CALLS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(10_000);
    let (tool, input, expected) = match std::env::var("TOOL").as_deref() {
        Err(_) | Ok("weather") => {
            let input = json!({ "location": "Paris" });
            let expected = bare(input.clone());
            (Tool::from(WeatherTool), input, expected)
        }
        Ok("add") => (Tool::from(AddTool), json!({ "a": 2, "b": 3 }), json!(5)),
        Ok("add-policy") => (
            Tool::from(PolicedAddTool),
            json!({ "a": 2, "b": 3 }),
            json!(5),
        ),
        Ok(other) => panic!("TOOL must be weather, add or add-policy, not {other}"),
    };
    let id = tool.id().to_owned();
    let runtime = Runtime::builder()
        .tool(tool.clone())
        .build()
        .expect("runtime");
    // Everything is built and checked once, so the N = 0 run pays for it too.
    assert_eq!(
        ready(tool.execute(input.clone(), CallContext::new("c"))).output(),
        Some(&expected)
    );
    assert_eq!(
        ready(runtime.call(ToolCall::new("c", id.as_str(), input.clone()))).output(),
        Some(&expected)
    );
    assert!(
        path != "bare" || id == "weather-tool",
        "the bare path is the weather tool's"
    );
    for _ in 0..calls {
        let input = black_box(input.clone());
        match path.as_str() {
            "bare" => {
                black_box(bare(input));
            }
            "execute" => {
                black_box(ready(tool.execute(input, CallContext::new("c"))));
            }
            "runtime" => {
                black_box(ready(runtime.call(ToolCall::new("c", id.as_str(), input))));
            }
            other => panic!("CALL_PATH must be bare, execute or runtime, not {other}"),
        }
    }
}
