//! Cost of exporting a tool to providers: the strict conversion alone, a
//! tool's first export per provider (the conversion, done once), and a
//! second export (a cached lookup), for a strict tool whose input schema has
//! 50 properties: 5 top-level fields and 5 nested objects of 9 fields, with
//! optional fields, enums, formats, bounds and `$defs`/`$ref`.
//!
//! Run: `cargo bench -p tool-core --bench export`

use std::hint::black_box;
use std::time::Duration;

use criterion::{BatchSize, BenchmarkId, Criterion, criterion_group, criterion_main};
use serde_json::{Map, Value, json};
use tool_core::provider::{Export, Provider};
use tool_core::strict::openai_strict_with_map;
use tool_core::{Tool, ToolError};

/// One nested object: 9 properties, 4 of them optional.
fn section(name: &str) -> Value {
    json!({
        "type": "object",
        "description": format!("The {name} section"),
        "properties": {
            "id": { "type": "string", "format": "uuid", "description": "Identifier" },
            "label": { "type": "string", "minLength": 1, "maxLength": 80 },
            "count": { "type": "integer", "format": "uint32", "minimum": 0 },
            "ratio": { "type": "number", "format": "double" },
            "enabled": { "type": "boolean", "default": true },
            "kind": { "$ref": "#/$defs/Kind" },
            "tags": { "type": "array", "items": { "type": "string" }, "maxItems": 10 },
            "note": { "type": ["string", "null"] },
            "updated": { "type": "string", "format": "date-time" }
        },
        "required": ["id", "label", "count", "kind", "updated"]
    })
}

/// 5 top-level properties + 5 sections x 9 = 50 properties.
fn schema() -> Value {
    let mut properties = Map::new();
    properties.insert(
        "query".into(),
        json!({ "type": "string", "description": "What to do" }),
    );
    properties.insert(
        "limit".into(),
        json!({ "type": ["integer", "null"], "format": "uint8", "minimum": 0, "maximum": 255 }),
    );
    properties.insert(
        "mode".into(),
        json!({ "type": "string", "enum": ["fast", "full", "dry-run"] }),
    );
    properties.insert("strict_match".into(), json!({ "type": "boolean" }));
    properties.insert(
        "owner".into(),
        json!({ "type": "string", "format": "email" }),
    );
    let mut defs = Map::new();
    defs.insert(
        "Kind".into(),
        json!({ "type": "string", "enum": ["a", "b", "c", "d"] }),
    );
    for name in ["billing", "shipping", "profile", "settings", "audit"] {
        let def = format!("{}{}", name[..1].to_uppercase(), &name[1..]);
        properties.insert(name.into(), json!({ "$ref": format!("#/$defs/{def}") }));
        defs.insert(def, section(name));
    }
    json!({
        "type": "object",
        "properties": properties,
        "required": ["query", "mode", "billing", "shipping"],
        "$defs": defs
    })
}

fn build_tool() -> Tool {
    Tool::builder("update_account")
        .description("Update an account")
        .strict(true)
        .input_schema(schema())
        .input_examples([json!({ "query": "x", "mode": "fast" })])
        .execute(|input: Value, _ctx| async move { Ok::<_, ToolError>(input) })
        .build()
        .expect("the bench tool builds")
}

fn bench(c: &mut Criterion) {
    let schema = schema();
    let tool = build_tool();
    let mut group = c.benchmark_group("export");
    group
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    group.bench_function("strict_conversion", |b| {
        b.iter(|| openai_strict_with_map(black_box(&schema)).expect("strict"));
    });
    for provider in Provider::ALL {
        let id = format!("{provider:?}");
        group.bench_function(BenchmarkId::new("first_export", &id), |b| {
            // A fresh tool per iteration (built outside the timing): its first
            // export converts the schema. The tool is dropped untimed too.
            b.iter_batched(
                build_tool,
                |fresh| {
                    black_box(fresh.export(provider).expect("exports"));
                    fresh
                },
                BatchSize::SmallInput,
            );
        });
        tool.export(provider).expect("exports");
        group.bench_function(BenchmarkId::new("second_export", &id), |b| {
            b.iter(|| black_box(tool.export(black_box(provider)).expect("cached")));
        });
        group.bench_function(BenchmarkId::new("from_definition", &id), |b| {
            b.iter(|| {
                Export::from_definition(black_box(tool.definition()), provider).expect("exports")
            });
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
