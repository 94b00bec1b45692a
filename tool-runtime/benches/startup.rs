//! Start-up: building a `Runtime` with 1,000 dynamic tools of 10 properties
//! each (every tool's schema its own), the memory that keeps, and what a
//! tool's first call costs beyond its later ones.
//!
//! - memory (printed first): the process's anonymous resident memory (its
//!   heap, not the binary's code pages) that the first tool adds (once per
//!   process: the meta-schema's validator), that the 1,000 schemas add as
//!   JSON values, that building the tools and the runtime from them adds,
//!   and that one call of every tool adds to that;
//! - `startup/build 1000 tools`: making the schemas, then building the
//!   tools and the runtime;
//! - `startup/build 1000 tools from their schemas`: the same with the
//!   schemas made beforehand, so only what the library does is timed;
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

/// The process's anonymous resident memory, in bytes: resident minus
/// file-backed pages (Linux: `/proc/self/statm`), so the code pages a first
/// call brings in are not counted as memory the tools hold.
fn resident_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let mut pages = statm.split_whitespace().skip(1);
    let resident: u64 = pages.next()?.parse().ok()?;
    let file_backed: u64 = pages.next()?.parse().ok()?;
    Some(resident.saturating_sub(file_backed) * 4096)
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

fn schemas() -> Vec<Value> {
    (0..TOOLS).map(schema).collect()
}

fn tool(i: usize, schema: Value) -> Tool {
    Tool::builder(format!("tool_{i}"))
        .description(format!("Tool number {i}"))
        .input_schema(schema)
        .execute(|input: Value, _ctx: ToolContext<Value, Value>| async move {
            Ok::<_, ToolError>(input)
        })
        .build()
        .expect("tool")
}

fn tools(schemas: Vec<Value>) -> Vec<Tool> {
    schemas
        .into_iter()
        .enumerate()
        .map(|(i, schema)| tool(i, schema))
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

fn megabytes(from: u64, to: u64) -> f64 {
    to.saturating_sub(from) as f64 / 1e6
}

fn report_memory() {
    let Some(start) = resident_bytes() else {
        println!("startup memory: /proc/self/statm unreadable, not measured");
        return;
    };
    let first = tool(TOOLS, schema(TOOLS));
    let once = resident_bytes().unwrap_or(start);
    let schemas = schemas();
    let made = resident_bytes().unwrap_or(once);
    let runtime = runtime(tools(schemas));
    let built = resident_bytes().unwrap_or(made);
    println!(
        "startup memory: {TOOLS} tools add {:.1} MB: the first tool {:.1} MB (once), \
         the schemas {:.1} MB, the tools and the runtime {:.1} MB",
        megabytes(start, built),
        megabytes(start, once),
        megabytes(once, made),
        megabytes(made, built),
    );
    for i in 0..TOOLS {
        call(&runtime, i);
    }
    let called = resident_bytes().unwrap_or(built);
    println!(
        "after one call of every tool: {:.1} MB more",
        megabytes(built, called)
    );
    drop(black_box((first, runtime)));
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
    group.bench_function("build 1000 tools", |b| b.iter(|| runtime(tools(schemas()))));
    group.bench_function("build 1000 tools from their schemas", |b| {
        b.iter_batched(
            schemas,
            |schemas| runtime(tools(schemas)),
            BatchSize::LargeInput,
        )
    });
    group.bench_function("first call", |b| {
        b.iter_batched(
            || runtime(vec![tool(0, schema(0))]),
            |runtime| call(&runtime, 0),
            BatchSize::SmallInput,
        )
    });
    let warm = runtime(vec![tool(0, schema(0))]);
    call(&warm, 0);
    group.bench_function("later call", |b| b.iter(|| call(&warm, 0)));
    group.finish();
    criterion.final_summary();
}
