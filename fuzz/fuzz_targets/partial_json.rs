//! The partial-JSON parser on any text, pushed in two pieces: it never
//! panics, and on a complete document it agrees with serde_json.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use tool_core::partial_json::PartialJson;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    // The first byte picks where the text is split.
    let mut cut = data.first().map_or(0, |b| usize::from(*b)).min(text.len());
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    let mut parser = PartialJson::new();
    parser.push(&text[..cut]);
    let _ = parser.current();
    parser.push(&text[cut..]);
    if let Ok(full) = serde_json::from_str::<Value>(text) {
        assert!(parser.is_complete(), "serde_json reads {text:?} whole");
        assert_eq!(parser.value(), Some(full), "{text:?}");
    }
});
