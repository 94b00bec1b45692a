//! Start-up: building a `Runtime` with 1,000 dynamic tools of 10 properties
//! each (every tool's schema its own), the memory that keeps, and what a
//! tool's first call costs beyond its later ones.
//!
//! - memory: what the build adds to the process's resident set, and what
//!   one call of every tool adds to that (printed first);
//! - `startup/build 1000 tools`: building the tools and the runtime;
//! - `startup/first call` against `startup/later call`: a call of a tool
//!   never called before (a fresh runtime per iteration), against a call of
//!   one that was.
//!
//! Run: `cargo bench -p tool-runtime --bench startup`

#[path = "../../tool-core/benches/weather/mod.rs"]
mod weather;

use std::hint::black_box;

use criterion::{BatchSize, Criterion};
use serde_json::{Map, Value, json};
use tool_core::{Tool, ToolContext, ToolError};
use tool_runtime::{Runtime, ToolCall};

use weather::ready;

/// The process's resident set, in bytes (Linux: `/proc/self/statm`).
fn resident_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4096)
}

const TOOLS: usize = 1_000;
const PROPERTIES: usize = 10;

/// Tool `i`'s input schema: 10 properties of several kinds, named after the
/// tool so that no two schemas are equal.
fn schema(i: usize) -> Value {
    let properties: Map<String, Value> = (0..PROPERTIES)
        .map(|p| {
            let kind = match p % 4 {
                0 => json!({ "type": "string", "description": format!("field {p} of tool {i}") }),
                1 => json!({ "type": "integer", "minimum": 0 }),
                2 => json!({ "type": "array", "items": { "type": "string" } }),
                _ => json!({ "type": "boolean" }),
            };
            (format!("field_{i}_{p}"), kind)
        })
        .collect();
    let required: Vec<String> = (0..PROPERTIES / 2)
        .map(|p| format!("field_{i}_{p}"))
        .collect();
    json!({ "type": "object", "properties": properties, "required": required })
}

fn tools() -> Vec<Tool> {
    (0..TOOLS)
        .map(|i| {
            Tool::builder(format!("tool_{i}"))
                .description(format!("Tool number {i}"))
                .input_schema(schema(i))
                .execute(|input: Value, _ctx: ToolContext<Value, Value>| async move {
                    Ok::<_, ToolError>(input)
                })
                .build()
                .expect("tool")
        })
        .collect()
}

fn runtime(tools: Vec<Tool>) -> Runtime {
    tools
        .into_iter()
        .fold(Runtime::builder(), |builder, tool| builder.tool(tool))
        .build()
        .expect("runtime")
}

fn call_input(i: usize) -> Value {
    let mut input = Map::new();
    for p in 0..PROPERTIES / 2 {
        let value = match p % 4 {
            0 => json!("text"),
            1 => json!(p),
            2 => json!(["a", "b"]),
            _ => json!(true),
        };
        input.insert(format!("field_{i}_{p}"), value);
    }
    Value::Object(input)
}

fn call(runtime: &Runtime, i: usize) {
    let outcome = ready(runtime.call(ToolCall::new("call-1", format!("tool_{i}"), call_input(i))));
    assert!(outcome.output().is_some(), "{outcome:?}");
}

fn report_memory() {
    let Some(before) = resident_bytes() else {
        println!("startup memory: /proc/self/statm unreadable, not measured");
        return;
    };
    let runtime = runtime(tools());
    let built = resident_bytes().unwrap_or(before);
    println!(
        "startup memory: {TOOLS} tools add {:.1} MB resident",
        (built.saturating_sub(before)) as f64 / 1e6
    );
    for i in 0..TOOLS {
        call(&runtime, i);
    }
    let called = resident_bytes().unwrap_or(built);
    println!(
        "after one call of every tool: {:.1} MB more resident",
        (called.saturating_sub(built)) as f64 / 1e6
    );
    drop(black_box(runtime));
}

fn main() {
    report_memory();
    // `STARTUP_MEMORY_ONLY=1`: the memory figures alone (for callgrind).
    if std::env::var_os("STARTUP_MEMORY_ONLY").is_some() {
        return;
    }
    let mut criterion = Criterion::default().configure_from_args();
    let mut group = criterion.benchmark_group("startup");
    group.sample_size(20);
    // What a user's start-up does: each tool built from its schema, then
    // the runtime from the tools.
    group.bench_function("build 1000 tools", |b| b.iter(|| runtime(tools())));
    group.bench_function("first call", |b| {
        b.iter_batched(
            || runtime(tools().into_iter().take(1).collect()),
            |runtime| call(&runtime, 0),
            BatchSize::SmallInput,
        )
    });
    let warm = runtime(tools().into_iter().take(1).collect());
    call(&warm, 0);
    group.bench_function("later call", |b| b.iter(|| call(&warm, 0)));
    group.finish();
    criterion.final_summary();
}
