//! SSE framing and every provider's decoder on any body, in small chunks:
//! nothing panics, and the events keep the decoders' contract: a call is
//! started once while open, its deltas and end come while it is open, and
//! every call is ended (completed or incomplete) once the stream finishes.
#![no_main]

use std::collections::HashSet;

use libfuzzer_sys::fuzz_target;
use tool_core::decode::{SseParser, ToolCallEvent};
use tool_core::provider::Provider;

fuzz_target!(|data: &[u8]| {
    let body = String::from_utf8_lossy(data);
    let chars: Vec<char> = body.chars().collect();
    let size = data.first().map_or(7, |b| usize::from(*b % 31) + 1);
    for provider in [Provider::OpenAiChat, Provider::OpenAiResponses, Provider::Anthropic] {
        let Some(mut decoder) = provider.decoder() else {
            continue;
        };
        let mut sse = SseParser::new();
        let mut events = Vec::new();
        for chunk in chars.chunks(size) {
            let chunk: String = chunk.iter().collect();
            for event in sse.push(&chunk) {
                if let Ok(decoded) = decoder.decode_data(&event.data) {
                    events.extend(decoded);
                }
            }
        }
        if let Some(event) = sse.finish()
            && let Ok(decoded) = decoder.decode_data(&event.data)
        {
            events.extend(decoded);
        }
        events.extend(decoder.finish());
        let mut open = HashSet::new();
        for event in &events {
            let id = event.call_id().to_owned();
            match event {
                ToolCallEvent::Start { .. } => assert!(open.insert(id), "{provider:?}: started twice while open: {events:?}"),
                ToolCallEvent::InputDelta { .. } => assert!(open.contains(&id), "{provider:?}: delta of a call not open: {events:?}"),
                ToolCallEvent::InputEnd { .. } | ToolCallEvent::Incomplete { .. } => {
                    assert!(open.remove(&id), "{provider:?}: end of a call not open: {events:?}")
                }
            }
        }
        assert!(open.is_empty(), "{provider:?}: calls left open after finish: {open:?}");
    }
});
