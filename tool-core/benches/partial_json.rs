//! Streaming cost of `PartialJson`: tool-call arguments arrive in 16-byte
//! deltas and the best-effort value is read after every delta. The
//! incremental parser should cost the same per byte at 64 KiB and 1 MiB; the
//! baseline re-parses the whole prefix per delta (quadratic), for comparison.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;
use tool_core::partial_json::PartialJson;

const DELTA: usize = 16;

/// A tool-call argument of about `size` bytes: half a long string with
/// escapes and non-ASCII text, half an array of small objects.
fn argument(size: usize) -> String {
    let mut content = String::new();
    let line = r#"Line with \"quotes\", a tab\t, caf\u00e9, naïve 😀 and \ud83d\ude00.\n"#;
    while content.len() < size / 2 {
        content.push_str(line);
    }
    let mut items = Vec::new();
    let mut used = content.len();
    let mut id = 0u32;
    while used < size {
        let item = format!(
            r#"{{"id": {id}, "name": "item {id}", "tags": ["a", "b"], "price": {}.5, "ok": true, "note": null}}"#,
            id % 97
        );
        used += item.len() + 2;
        items.push(item);
        id += 1;
    }
    format!(
        r#"{{"content": "{content}", "items": [{}]}}"#,
        items.join(", ")
    )
}

/// Byte offsets where each delta ends, at char boundaries.
fn delta_ends(text: &str) -> Vec<usize> {
    let mut ends = Vec::new();
    let mut end = 0;
    while end < text.len() {
        end = (end + DELTA).min(text.len());
        while !text.is_char_boundary(end) {
            end += 1;
        }
        ends.push(end);
    }
    ends
}

fn stream_incremental(text: &str, ends: &[usize]) -> usize {
    let mut parser = PartialJson::new();
    let mut start = 0;
    let mut seen = 0;
    for &end in ends {
        parser.push(&text[start..end]);
        seen += usize::from(black_box(parser.current()).is_some());
        start = end;
    }
    seen
}

fn stream_reparse(text: &str, ends: &[usize]) -> usize {
    let mut seen = 0;
    for &end in ends {
        let mut parser = PartialJson::new();
        parser.push(&text[..end]);
        seen += usize::from(black_box(parser.current()).is_some());
    }
    seen
}

fn bench_streaming(c: &mut Criterion) {
    let mut group = c.benchmark_group("partial_json_stream_16B_deltas");
    for (label, size) in [("16KiB", 16 << 10), ("64KiB", 64 << 10), ("1MiB", 1 << 20)] {
        let text = argument(size);
        let ends = delta_ends(&text);
        // Guard the benchmark itself: the streamed result must be right.
        let mut check = PartialJson::new();
        check.push(&text);
        assert!(check.is_complete());
        assert_eq!(check.value(), serde_json::from_str(&text).ok());

        group.throughput(Throughput::Bytes(text.len() as u64));
        group.bench_with_input(
            BenchmarkId::new("incremental", label),
            &(text.as_str(), ends.as_slice()),
            |b, &(text, ends)| b.iter(|| stream_incremental(text, ends)),
        );
    }
    group.finish();

    // Quadratic, so only small sizes and few samples.
    let mut group = c.benchmark_group("partial_json_stream_16B_deltas");
    group.sample_size(10);
    for (label, size) in [("16KiB", 16 << 10), ("64KiB", 64 << 10)] {
        let text = argument(size);
        let ends = delta_ends(&text);
        group.throughput(Throughput::Bytes(text.len() as u64));
        group.bench_with_input(
            BenchmarkId::new("reparse_baseline", label),
            &(text.as_str(), ends.as_slice()),
            |b, &(text, ends)| b.iter(|| stream_reparse(text, ends)),
        );
    }
    group.finish();
}

criterion_group!(benches, bench_streaming);
criterion_main!(benches);
