//! `Tool::execute` of the weather tool (parse-free JSON input, full input
//! and output validation) against the bare path a hand-written tool would
//! take: `serde_json::from_value` → fn → `serde_json::to_value`.
//!
//! Run: `cargo bench -p tool-core --bench execute`

mod weather;

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;
use tool_core::{CallContext, Tool};

use weather::{WeatherTool, bare, ready};

fn execute(c: &mut Criterion) {
    let tool = Tool::from(WeatherTool);
    let input = json!({ "location": "Paris" });
    assert_eq!(
        ready(tool.execute(input.clone(), CallContext::new("call-1"))).output(),
        Some(&bare(input.clone()))
    );
    let mut group = c.benchmark_group("weather");
    group.bench_function("bare serde path", |b| {
        b.iter(|| bare(black_box(input.clone())));
    });
    group.bench_function("Tool::execute", |b| {
        b.iter(|| ready(tool.execute(black_box(input.clone()), CallContext::new("call-1"))));
    });
    group.finish();
}

criterion_group!(benches, execute);
criterion_main!(benches);
