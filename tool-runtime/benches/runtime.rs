//! Runtime overhead and streaming input.
//!
//! - `call_overhead`: `Runtime::call` (no hooks, no event subscriber) against
//!   `Tool::execute` on the same tool, side by side: a trivial `add` tool,
//!   and (`weather/`) tool-core's weather tool, whose `Tool::execute` the
//!   `execute` bench compares with bare serde. All complete on their first
//!   poll, so they are driven without an executor.
//! - `streaming`: a JSON argument streamed in 16-byte deltas through
//!   `begin` / `push` / `partial()` (after every delta), at 64 KiB and 1 MiB
//!   (time per byte should be flat), against re-parsing the whole prefix with
//!   `serde_json::from_str` (after a naive completion) on every delta at 64 KiB.
//!
//! Run: `cargo bench -p tool-runtime --bench runtime`

mod add;
#[path = "../../tool-core/benches/weather/mod.rs"]
mod weather;

use std::hint::black_box;

use criterion::measurement::WallTime;
use criterion::{
    BenchmarkGroup, BenchmarkId, Criterion, Throughput, criterion_group, criterion_main,
};
use serde_json::{Value, json};
use tool_core::{CallContext, Tool};
use tool_runtime::{Runtime, ToolCall};

use add::AddTool;
use weather::{WeatherTool, ready};

fn call_overhead(c: &mut Criterion) {
    let mut group = c.benchmark_group("call_overhead");
    let add = json!({ "a": 2, "b": 3 });
    side_by_side(&mut group, "", Tool::from(AddTool), add, json!(5));
    let paris = json!({ "location": "Paris" });
    let weather = weather::bare(paris.clone());
    side_by_side(
        &mut group,
        "weather/",
        Tool::from(WeatherTool),
        paris,
        weather,
    );
    group.finish();
}

/// `Tool::execute` and `Runtime::call` of `tool` on `input` (which both
/// answer with `output`), one after the other in `group`, their ids
/// prefixed with `prefix`.
fn side_by_side(
    group: &mut BenchmarkGroup<WallTime>,
    prefix: &str,
    tool: Tool,
    input: Value,
    output: Value,
) {
    let id = tool.id().to_owned();
    let runtime = Runtime::builder()
        .tool(tool.clone())
        .build()
        .expect("runtime");
    assert_eq!(
        ready(tool.execute(input.clone(), CallContext::new("c"))).output(),
        Some(&output)
    );
    assert_eq!(
        ready(runtime.call(ToolCall::new("c", id.as_str(), input.clone()))).output(),
        Some(&output)
    );
    group.bench_function(format!("{prefix}Tool::execute"), |b| {
        b.iter(|| ready(tool.execute(black_box(input.clone()), CallContext::new("call-1"))))
    });
    group.bench_function(format!("{prefix}Runtime::call"), |b| {
        b.iter(|| {
            let call = ToolCall::new("call-1", id.as_str(), black_box(input.clone()));
            ready(runtime.call(call))
        })
    });
}

/// A complete JSON document of about `size` bytes: an object with an array
/// of records (strings, numbers, nested arrays and objects).
fn document(size: usize) -> String {
    let mut text = String::from(r#"{"query": "streaming benchmark", "items": ["#);
    let mut i = 0;
    while text.len() + 120 < size {
        if i > 0 {
            text.push_str(", ");
        }
        text.push_str(&format!(
            r#"{{"id": {i}, "name": "item number {i}", "score": {}.5, "tags": ["a", "b\n"], "ok": true, "meta": {{"k": null}}}}"#,
            i * 7
        ));
        i += 1;
    }
    text.push_str("]}");
    assert!(serde_json::from_str::<Value>(&text).is_ok());
    text
}

fn deltas(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    while start < text.len() {
        let mut end = (start + 16).min(text.len());
        while !text.is_char_boundary(end) {
            end += 1;
        }
        out.push(&text[start..end]);
        start = end;
    }
    out
}

/// The naive baseline: close what is open in the prefix, parse it all.
fn reparse(prefix: &str) -> Option<Value> {
    let mut closers = Vec::new();
    let (mut in_string, mut escaped) = (false, false);
    for b in prefix.bytes() {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'{' => closers.push(b'}'),
            b'[' => closers.push(b']'),
            b'}' | b']' => {
                closers.pop();
            }
            _ => {}
        }
    }
    let mut completed = prefix.trim_end().trim_end_matches([',', ':']).to_owned();
    if escaped {
        completed.pop();
    }
    if in_string {
        completed.push('"');
    }
    completed.extend(closers.iter().rev().map(|&c| c as char));
    serde_json::from_str(&completed).ok()
}

fn streaming(c: &mut Criterion) {
    let tool = Tool::from(AddTool);
    let runtime = Runtime::builder().tool(tool).build().expect("runtime");
    let mut group = c.benchmark_group("streaming");
    group.sample_size(10);
    for (label, size) in [("64KiB", 64 * 1024), ("1MiB", 1024 * 1024)] {
        let text = document(size);
        let pieces = deltas(&text);
        group.throughput(Throughput::Bytes(text.len() as u64));
        group.bench_with_input(
            BenchmarkId::new("runtime_push_partial", label),
            &pieces,
            |b, pieces| {
                b.iter(|| {
                    let mut stream = runtime.begin("call-1", "add", Vec::new());
                    for piece in pieces {
                        stream.push(piece);
                        black_box(stream.partial());
                    }
                    black_box(stream.partial().is_some())
                })
            },
        );
        if size == 64 * 1024 {
            let mut last = None;
            for end in 1..=pieces.len() {
                let len: usize = pieces[..end].iter().map(|p| p.len()).sum();
                if let Some(v) = reparse(&text[..len]) {
                    last = Some(v);
                }
            }
            assert_eq!(
                last,
                serde_json::from_str(&text).ok(),
                "the baseline parses the whole document"
            );
            group.bench_with_input(
                BenchmarkId::new("reparse_prefix", label),
                &pieces,
                |b, pieces| {
                    b.iter(|| {
                        let mut len = 0;
                        let mut last = None;
                        for piece in pieces.iter() {
                            len += piece.len();
                            if let Some(v) = reparse(&text[..len]) {
                                last = Some(v);
                            }
                        }
                        black_box(last)
                    })
                },
            );
        }
    }
    group.finish();
}

criterion_group!(benches, call_overhead, streaming);
criterion_main!(benches);
