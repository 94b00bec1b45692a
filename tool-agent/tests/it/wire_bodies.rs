//! Every request body the three HTTP models send through an agent run,
//! captured by a local server: a strict tool with nested objects and enums,
//! a plain one, one that needs approval (declined), one that fails, one
//! whose model output has images and a PDF; the second step with their
//! results; a refusal kept in the history (Chat's recorded from the API); a
//! call cut off by the token limit, sent back as `{}` with its error.
//!
//! Each body must be JSON of the expected shape here; with
//! `TOOL_AGENT_WIRE_BODIES=DIR` the bodies are also written to
//! `DIR/{chat,responses,anthropic}/NN.json`, where CI's `.ci/wire-check`
//! validates them against the official SDKs' request types.

use crate::common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use common::provider::{APIS, Api, Part, Received, Reply, Server, typed};
use serde_json::{Value, json};
use tool_agent::{Agent, FinishReason, Message, Thread};
use tool_core::{ContentPart, ModelOutput, Tool, ToolContext, ToolError};
use tool_runtime::Runtime;

/// Where the bodies are written, when set.
const BODIES_DIR_ENV: &str = "TOOL_AGENT_WIRE_BODIES";

/// A 1×1 PNG.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";

/// A PDF's first bytes (`%PDF-1.4`), base64.
const PDF: &str = "JVBERi0xLjQK";

/// The refusal of the synthetic answers (Responses, Anthropic).
const REFUSAL: &str = "I can't help with that.";

/// Chat's refusal, recorded (openai-python's test snapshot, vendored in
/// tool-core's fixtures: `tool-core/tests/fixtures/streams/README.md`).
const RECORDED_CHAT_REFUSAL: &str = "I'm sorry, I can't assist with that request.";

fn recorded_chat_refusal() -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tool-core/tests/fixtures/streams/openai-chat-completions-refusal.sse");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A trip to plan: nested objects, enums, an optional field, a list.
#[derive(serde::Deserialize, schemars::JsonSchema)]
#[allow(dead_code)]
struct Trip {
    /// Where to.
    destination: Place,
    /// How.
    mode: Mode,
    /// The stops on the way.
    stops: Vec<Place>,
    /// Nights, when known.
    nights: Option<u32>,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[allow(dead_code)]
struct Place {
    city: String,
    country: Country,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
#[allow(dead_code)]
enum Mode {
    Train,
    Plane,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[allow(dead_code)]
enum Country {
    IT,
    FR,
}

fn tools() -> Vec<Tool> {
    let ok = |value: Value| {
        move |_input: Value, _ctx: ToolContext<Value, Value>| {
            let value = value.clone();
            async move { Ok::<_, ToolError>(value) }
        }
    };
    let plan = Tool::builder("plan")
        .description("Plans a trip")
        .strict(true)
        .input_schema(serde_json::to_value(schemars::schema_for!(Trip)).unwrap())
        .execute(ok(json!({ "planned": true })))
        .build()
        .unwrap();
    let lookup = Tool::builder("lookup")
        .description("Looks up the balance")
        .execute(ok(json!({ "balance": 100 })))
        .build()
        .unwrap();
    let transfer = Tool::builder("transfer")
        .description("Sends money")
        .require_approval(true)
        .input_schema(json!({ "type": "object", "properties": { "amount": { "type": "integer" } }, "required": ["amount"] }))
        .execute(ok(json!({ "sent": true })))
        .build()
        .unwrap();
    let fail = Tool::builder("fail")
        .description("Always fails")
        .execute(
            |_input: Value, _ctx: ToolContext<Value, Value>| async move {
                Err::<Value, _>(ToolError::new("the service is down"))
            },
        )
        .build()
        .unwrap();
    let snapshot = Tool::builder("snapshot")
        .description("Takes a picture")
        .execute(ok(json!({ "taken": true })))
        .to_model_output(|_| {
            ModelOutput::Content(vec![
                ContentPart::Text {
                    text: "the picture".into(),
                },
                ContentPart::ImageData {
                    data: PNG.into(),
                    media_type: "image/png".into(),
                },
                ContentPart::ImageUrl {
                    url: "https://example.com/picture.png".into(),
                },
                ContentPart::FileData {
                    data: PDF.into(),
                    media_type: "application/pdf".into(),
                    filename: Some("picture.pdf".into()),
                },
            ])
        })
        .build()
        .unwrap();
    vec![plan, lookup, transfer, fail, snapshot]
}

/// The first step: text, then a call of each tool.
fn calls() -> Vec<Part> {
    let trip = json!({
        "destination": { "city": "Rome", "country": "IT" },
        "mode": "train",
        "stops": [{ "city": "Lyon", "country": "FR" }],
        "nights": null,
    });
    vec![
        Part::Text("Let me see. ".into()),
        Part::Call("call_plan".into(), "plan", trip),
        Part::Call("call_lookup".into(), "lookup", json!({})),
        Part::Call("call_transfer".into(), "transfer", json!({ "amount": 10 })),
        Part::Call("call_fail".into(), "fail", json!({})),
        Part::Call("call_snapshot".into(), "snapshot", json!({})),
    ]
}

/// A refusal in the API's streaming format, and its text.
fn refusal(api: Api) -> (Vec<String>, &'static str) {
    match api {
        Api::Chat => (vec![recorded_chat_refusal()], RECORDED_CHAT_REFUSAL),
        Api::Responses => (
            vec![
                typed(
                    json!({"type": "response.refusal.delta", "item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": REFUSAL}),
                ),
                typed(
                    json!({"type": "response.completed", "response": {"status": "completed", "output": []}}),
                ),
            ],
            REFUSAL,
        ),
        Api::Anthropic => (
            vec![
                typed(
                    json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": REFUSAL}}),
                ),
                typed(json!({"type": "content_block_stop", "index": 0})),
                typed(
                    json!({"type": "message_delta", "delta": {"stop_reason": "refusal", "stop_sequence": null}}),
                ),
                typed(json!({"type": "message_stop"})),
            ],
            REFUSAL,
        ),
    }
}

/// A call of `plan` cut off by the token limit (`{"city": "Ro`).
fn cut_by_the_token_limit(api: Api) -> Vec<String> {
    api.token_limit_answer()
        .into_iter()
        .map(|event| event.replace("weather", "plan"))
        .collect()
}

/// Runs the conversation on `api` and returns the request bodies, in order.
async fn conversation(api: Api) -> Vec<Received> {
    let served = Arc::new(AtomicUsize::new(0));
    let count = Arc::clone(&served);
    let server = Server::scripted(move |_: &Received| {
        Reply::sse(match count.fetch_add(1, Ordering::SeqCst) {
            0 => api.answer(&calls()),
            1 => refusal(api).0,
            2 => cut_by_the_token_limit(api),
            _ => api.text_answer(),
        })
    })
    .await;
    let runtime = Runtime::builder().tools(tools()).build().unwrap();
    let agent = Agent::builder("wire", api.model(&server, Some("sk-test"), 0), runtime)
        .instructions("You plan trips.")
        .max_tokens(1024)
        .build()
        .unwrap();

    let paused = agent
        .generate(Thread::new("t1"), vec![Message::user("Plan Rome.")])
        .await
        .unwrap();
    assert_eq!(
        paused.finish_reason,
        FinishReason::Suspended,
        "{api:?}: {:?}",
        paused.chunks
    );
    let refused = agent
        .decline_tool_call(&paused.run_id, "call_transfer", None)
        .await
        .unwrap()
        .output()
        .await;
    assert_eq!(
        refused.finish_reason,
        FinishReason::Refusal,
        "{api:?}: {:?}",
        refused.chunks
    );
    let done = agent
        .reply(&paused.run_id, "Please, just the plan.")
        .await
        .unwrap()
        .output()
        .await;
    assert_eq!(
        done.finish_reason,
        FinishReason::Stop,
        "{api:?}: {:?}",
        done.chunks
    );
    server.received()
}

/// The conversation's items: Chat and Anthropic `messages`, Responses `input`.
fn items(api: Api, body: &Value) -> &Vec<Value> {
    let key = match api {
        Api::Chat | Api::Anthropic => "messages",
        Api::Responses => "input",
    };
    body[key]
        .as_array()
        .unwrap_or_else(|| panic!("{api:?}: no {key}"))
}

/// Whether the conversation has `text` as an assistant's text.
fn assistant_says(api: Api, body: &Value, text: &str) -> bool {
    items(api, body).iter().any(|item| {
        item["role"] == "assistant"
            && match &item["content"] {
                Value::String(content) => content == text,
                Value::Array(parts) => parts.iter().any(|part| part["text"] == text),
                _ => false,
            }
    })
}

/// Whether the PNG is a value of its own somewhere in `value` (Anthropic's
/// `source.data`, a `data:` URL), not text inside another string.
fn has_image(value: &Value) -> bool {
    match value {
        Value::String(text) => text == PNG || *text == format!("data:image/png;base64,{PNG}"),
        Value::Array(items) => items.iter().any(has_image),
        Value::Object(fields) => fields.values().any(has_image),
        _ => false,
    }
}

fn api_name(api: Api) -> &'static str {
    match api {
        Api::Chat => "chat",
        Api::Responses => "responses",
        Api::Anthropic => "anthropic",
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_request_body_is_captured_for_the_sdk_check() {
    let out_dir = std::env::var_os(BODIES_DIR_ENV).map(std::path::PathBuf::from);
    for api in APIS {
        let received = conversation(api).await;
        assert_eq!(received.len(), 4, "{api:?}: four steps");
        for request in &received {
            assert_eq!(request.path, api.path(), "{api:?}");
            assert!(request.body.is_object(), "{api:?}: a JSON object");
            assert_eq!(request.body["stream"], true, "{api:?}");
        }
        let bodies: Vec<&Value> = received.iter().map(|r| &r.body).collect();
        // Written before the checks below, to read what a failing one saw.
        if let Some(dir) = &out_dir {
            let dir = dir.join(api_name(api));
            std::fs::create_dir_all(&dir).unwrap();
            for (n, body) in bodies.iter().enumerate() {
                let text = serde_json::to_string_pretty(body).unwrap();
                std::fs::write(dir.join(format!("{:02}.json", n + 1)), text).unwrap();
            }
        }

        // The first step offers the tools, `plan` strict where the API says so.
        let tools = bodies[0]["tools"].as_array().unwrap();
        assert_eq!(tools.len(), 5, "{api:?}");
        let plan = tools
            .iter()
            .find(|tool| tool["name"] == "plan" || tool["function"]["name"] == "plan")
            .unwrap_or_else(|| panic!("{api:?}: plan is offered"));
        match api {
            Api::Chat => assert_eq!(plan["function"]["strict"], true),
            Api::Responses => assert_eq!(plan["strict"], true),
            Api::Anthropic => assert!(plan["input_schema"].is_object()),
        }

        // The second: every call answered, the declined and failed ones as such.
        let results: std::collections::HashMap<String, String> =
            api.tool_results(bodies[1]).into_iter().collect();
        let mut ids: Vec<&str> = results.keys().map(String::as_str).collect();
        ids.sort_unstable();
        assert_eq!(
            ids,
            [
                "call_fail",
                "call_lookup",
                "call_plan",
                "call_snapshot",
                "call_transfer"
            ],
            "{api:?}"
        );
        assert!(
            results["call_transfer"].contains("not approved"),
            "{api:?}: {}",
            results["call_transfer"]
        );
        assert!(
            results["call_fail"].contains("the service is down"),
            "{api:?}: {}",
            results["call_fail"]
        );

        // The image reaches the model as an image, in the API's form, not
        // inside the text of a result.
        assert!(
            has_image(bodies[1]),
            "{api:?}: {}",
            serde_json::to_string(bodies[1]).unwrap()
        );

        // The third: the refusal is history, the user's reply after it.
        assert!(assistant_says(api, bodies[2], refusal(api).1), "{api:?}");
        assert_eq!(
            api.last_user_text(bodies[2]).as_deref(),
            Some("Please, just the plan."),
            "{api:?}"
        );

        // The fourth: the cut call sent back as an empty object, with its error.
        let cut = items(api, bodies[3]).iter().find_map(|item| match api {
            Api::Chat => item["tool_calls"]
                .as_array()?
                .iter()
                .find(|call| call["id"] == "call_1")
                .map(|call| call["function"]["arguments"].clone()),
            Api::Responses => (item["type"] == "function_call" && item["call_id"] == "call_1")
                .then(|| item["arguments"].clone()),
            Api::Anthropic => item["content"]
                .as_array()?
                .iter()
                .find(|block| block["type"] == "tool_use" && block["id"] == "call_1")
                .map(|block| block["input"].clone()),
        });
        let expected = match api {
            Api::Anthropic => json!({}),
            Api::Chat | Api::Responses => json!("{}"),
        };
        assert_eq!(cut, Some(expected), "{api:?}");
        assert!(
            api.tool_results(bodies[3])
                .iter()
                .any(|(id, text)| id == "call_1" && !text.is_empty()),
            "{api:?}: the cut-off explanation"
        );
    }
}
