//! The stream decoders over streams recorded from the providers (copied
//! byte for byte from public repositories; `fixtures/streams/README.md`
//! names each source, its path and its licence): a Chat refusal, a Chat
//! answer cut by the token limit, an Anthropic tool call cut by the token
//! limit, and a Chat tool call without `index` as Gemini's
//! OpenAI-compatible endpoint sends it.

use serde_json::{Value, json};
use tool_core::decode::{
    AnthropicDecoder, OpenAiChatDecoder, StreamDecoder, ToolCallEvent, decode_sse,
};

fn fixture(name: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/streams")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The `data` of every event of an SSE body, parsed (`[DONE]` left out).
fn chunks(body: &str) -> Vec<Value> {
    body.lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .filter(|data| data.trim() != "[DONE]")
        .map(|data| serde_json::from_str(data).unwrap())
        .collect()
}

/// The first choice's `delta.<field>` texts, joined, and its last
/// `finish_reason`.
fn delta_text_and_finish(body: &str, field: &str) -> (String, Option<String>) {
    let mut text = String::new();
    let mut finish = None;
    for chunk in chunks(body) {
        let Some(choice) = chunk["choices"].get(0) else {
            continue;
        };
        if let Some(piece) = choice["delta"][field].as_str() {
            text.push_str(piece);
        }
        if let Some(reason) = choice["finish_reason"].as_str() {
            finish = Some(reason.to_owned());
        }
    }
    (text, finish)
}

#[test]
fn a_recorded_chat_refusal_decodes_to_no_call() {
    let body = fixture("openai-chat-completions-refusal.sse");
    // The refusal is text for the application, never a call: the decoder
    // reads every chunk (the usage chunk with no choice among them) and
    // reports nothing, and no error.
    let events = decode_sse(OpenAiChatDecoder::new(), &body).unwrap();
    assert_eq!(events, []);
    let (refusal, finish) = delta_text_and_finish(&body, "refusal");
    assert_eq!(refusal, "I'm sorry, I can't assist with that request.");
    assert_eq!(finish.as_deref(), Some("stop"));
    let (content, _) = delta_text_and_finish(&body, "content");
    assert_eq!(content, "", "the refusal is the only text");
}

#[test]
fn a_recorded_chat_answer_cut_by_the_token_limit_decodes_to_no_call() {
    let body = fixture("openai-chat-completions-length.sse");
    let events = decode_sse(OpenAiChatDecoder::new(), &body).unwrap();
    assert_eq!(events, []);
    let (content, finish) = delta_text_and_finish(&body, "content");
    assert_eq!(content, "{\"", "cut after one token");
    assert_eq!(finish.as_deref(), Some("length"));
}

#[test]
fn a_recorded_anthropic_tool_call_cut_by_max_tokens_is_incomplete_with_its_text() {
    let body = fixture("anthropic-messages-tool-use-truncated-max-tokens.sse");
    let events = decode_sse(AnthropicDecoder::new(), &body).unwrap();
    let Some(ToolCallEvent::Incomplete {
        call_id,
        tool_name,
        partial_text,
        reason,
    }) = events.last()
    else {
        panic!("the call ends incomplete: {events:?}");
    };
    assert!(
        matches!(&events[0], ToolCallEvent::Start { call_id: id, tool_name } if id == call_id && tool_name == "make_file")
    );
    assert_eq!(tool_name, "make_file");
    assert!(reason.contains("max_tokens"), "{reason}");
    // Every fragment received, unparsed: the start of the arguments, cut
    // inside a string.
    let deltas: String = events
        .iter()
        .filter_map(|event| match event {
            ToolCallEvent::InputDelta { delta, .. } => Some(delta.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(&deltas, partial_text);
    assert!(
        partial_text.starts_with("{\"filename\": \"taxes.txt\""),
        "{partial_text}"
    );
    assert!(serde_json::from_str::<Value>(partial_text).is_err());
    assert!(
        !events
            .iter()
            .any(|event| matches!(event, ToolCallEvent::InputEnd { .. })),
        "no input is made up"
    );
}

#[test]
fn a_recorded_gemini_tool_call_without_index_is_one_whole_call() {
    let body = fixture("gemini-openai-compat-tool-call-without-index.jsonl");
    let chunk: Value = serde_json::from_str(body.trim()).unwrap();
    assert!(
        chunk["choices"][0]["delta"]["tool_calls"][0]
            .get("index")
            .is_none(),
        "the recorded shape: no index"
    );
    let mut decoder = OpenAiChatDecoder::new();
    let mut events = decoder.decode_data(body.trim()).unwrap();
    // Gemini sends no finish_reason with it here: `[DONE]` ends the call.
    events.extend(decoder.decode_data("[DONE]").unwrap());
    events.extend(decoder.finish());
    let arguments =
        r#"{"offset":1,"limit":100,"path":"/app/skills/agent-runtime/stage-design/SKILL.md"}"#;
    assert_eq!(
        events,
        [
            ToolCallEvent::Start {
                call_id: "call_297140".into(),
                tool_name: "read".into(),
            },
            ToolCallEvent::InputDelta {
                call_id: "call_297140".into(),
                delta: arguments.into(),
            },
            ToolCallEvent::InputEnd {
                call_id: "call_297140".into(),
                input: json!({
                    "offset": 1,
                    "limit": 100,
                    "path": "/app/skills/agent-runtime/stage-design/SKILL.md",
                }),
            },
        ]
    );

    // Two such calls in a row (Gemini's parallel calls come one per chunk,
    // each without index): two calls, never one with both arguments.
    let second = body.trim().replace("call_297140", "call_2");
    let mut decoder = OpenAiChatDecoder::new();
    let mut events = decoder.decode_data(body.trim()).unwrap();
    events.extend(decoder.decode_data(&second).unwrap());
    events.extend(decoder.decode_data("[DONE]").unwrap());
    let ended: Vec<&str> = events
        .iter()
        .filter_map(|event| match event {
            ToolCallEvent::InputEnd { call_id, .. } => Some(call_id.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(ended, ["call_297140", "call_2"]);
}
