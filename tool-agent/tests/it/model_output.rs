//! `to_model_output` in the agent, as the reference keeps it: the model
//! reads the tool's model output in its provider's richest form (Anthropic
//! `tool_result` blocks, Responses `function_call_output` items, Chat text
//! then one user message with the images), while the application's chunks
//! and the stored run keep the raw output with the model output beside it.
//! Per provider: an image URL, inline image data, an oversized image, an
//! unsupported media type and another provider's file id, the last three
//! replaced by notices instead of a request the provider refuses.

use crate::common;

use common::provider::{APIS, Api, Part, Received, Reply, Server};
use serde_json::{Value, json};
use tool_agent::{
    Agent, AgentChunk, FinishReason, Message, ModelFinish, ScriptedModel, ScriptedStep, Thread,
};
use tool_core::transform::{Phase, ToolTransform};
use tool_core::{ContentPart, ModelOutput, Tool, ToolContext, ToolError};
use tool_runtime::Runtime;

const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";

/// `chart` outputs `{"chart": .., "rows": 3}`; the model reads `parts`.
fn chart(parts: Vec<ContentPart>, transform: Option<ToolTransform>) -> Tool {
    let builder = Tool::builder("chart")
        .description("Draws the sales chart")
        .to_model_output(move |_output: &Value| ModelOutput::Content(parts.clone()))
        .execute(
            |_input: Value, _ctx: ToolContext<Value, Value>| async move {
                Ok::<_, ToolError>(json!({ "chart": "sales.png", "rows": 3 }))
            },
        );
    match transform {
        Some(transform) => builder.transform(transform),
        None => builder,
    }
    .build()
    .unwrap()
}

fn image_data(bytes: usize, media_type: &str) -> ContentPart {
    ContentPart::ImageData {
        data: "A".repeat(bytes),
        media_type: media_type.into(),
    }
}

fn scripted() -> ScriptedModel {
    ScriptedModel::new([
        ScriptedStep::new()
            .tool_call("c1", "chart", json!({}))
            .finish(ModelFinish::ToolCalls),
        ScriptedStep::answer("Sales rose."),
    ])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chunks_and_the_stored_run_keep_the_raw_output_and_the_model_reads_its_model_output() {
    let parts = vec![
        ContentPart::text("Sales rose 12%"),
        ContentPart::image_url("https://example.com/sales.png"),
    ];
    let model = scripted();
    let runtime = Runtime::builder()
        .tool(chart(parts.clone(), None))
        .build()
        .unwrap();
    let agent = Agent::builder("analyst", model.clone(), runtime)
        .build()
        .unwrap();
    let out = agent
        .generate(Thread::new("t1"), vec![Message::user("sales?")])
        .await
        .unwrap();
    assert_eq!(out.finish_reason, FinishReason::Stop, "{:?}", out.chunks);
    let raw = json!({ "chart": "sales.png", "rows": 3 });
    let chunk = out.chunks.iter().find_map(|c| match c {
        AgentChunk::ToolResult {
            result,
            model_output,
            ..
        } => Some((result.clone(), model_output.clone())),
        _ => None,
    });
    assert_eq!(
        chunk,
        Some((raw.clone(), Some(ModelOutput::Content(parts.clone()))))
    );
    let expected = Message::ToolResult {
        call_id: "c1".into(),
        tool_name: "chart".into(),
        result: raw,
        model_output: Some(ModelOutput::Content(parts)),
        is_error: false,
    };
    let read = model.requests()[1].messages.last().cloned();
    assert_eq!(read.as_ref(), Some(&expected), "the model's request");
    let stored = agent.transcript(&out.run_id).await.unwrap();
    assert!(stored.contains(&expected), "{stored:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_display_transform_that_hides_part_of_the_output_hides_the_model_output_too() {
    let transform = ToolTransform::new()
        .display(Phase::Output, |ctx| {
            Some(json!({ "rows": ctx.payload["rows"] }))
        })
        .pass_through_others(tool_core::transform::Target::Display);
    let runtime = Runtime::builder()
        .tool(chart(
            vec![ContentPart::text("secret chart")],
            Some(transform),
        ))
        .build()
        .unwrap();
    let out = Agent::builder("analyst", scripted(), runtime)
        .build()
        .unwrap()
        .generate(Thread::new("t1"), vec![Message::user("sales?")])
        .await
        .unwrap();
    let chunk = out.chunks.iter().find_map(|c| match c {
        AgentChunk::ToolResult {
            result,
            model_output,
            ..
        } => Some((result.clone(), model_output.clone())),
        _ => None,
    });
    assert_eq!(chunk, Some((json!({ "rows": 3 }), None)));
}

/// The parts every provider test sends: an image URL, a small PNG, an
/// image over the provider's limit, a BMP, and a file id of the other
/// vendor.
fn hostile_parts(api: Api) -> Vec<ContentPart> {
    let (oversized, foreign_id) = match api {
        // Anthropic: 5 MB per image; OpenAI: 50 MB per request.
        Api::Anthropic => (
            image_data(5 * 1024 * 1024 + 512 * 1024, "image/png"),
            "file-openai1",
        ),
        Api::Chat | Api::Responses => (
            image_data(50 * 1024 * 1024 + 1, "image/png"),
            "file_011anthropic",
        ),
    };
    vec![
        ContentPart::text("Sales rose 12%"),
        ContentPart::image_url("https://example.com/sales.png"),
        ContentPart::ImageData {
            data: PNG.into(),
            media_type: "image/png".into(),
        },
        oversized,
        image_data(8, "image/bmp"),
        ContentPart::FileId {
            file_id: foreign_id.into(),
        },
    ]
}

/// Runs the chart call against `api`'s local server and returns the
/// second request (the one carrying the tool result).
async fn second_request(api: Api, parts: Vec<ContentPart>) -> Received {
    let server = Server::scripted(move |request: &Received| {
        if api.tool_results(&request.body).is_empty() {
            Reply::sse(api.answer(&[Part::Call("call_1".into(), "chart", json!({}))]))
        } else {
            Reply::sse(api.text_answer())
        }
    })
    .await;
    let runtime = Runtime::builder().tool(chart(parts, None)).build().unwrap();
    let out = Agent::builder("analyst", api.model(&server, Some("sk-test"), 0), runtime)
        .build()
        .unwrap()
        .generate(Thread::new("t1"), vec![Message::user("sales?")])
        .await
        .unwrap();
    assert_eq!(
        out.finish_reason,
        FinishReason::Stop,
        "{api:?}: {:?}",
        out.chunks
    );
    let mut received = server.received();
    assert_eq!(received.len(), 2, "{api:?}");
    received.remove(1)
}

fn notice(text: &str) -> Value {
    json!({ "type": "text", "text": text })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_provider_reads_images_in_its_own_form_and_notices_for_what_it_would_refuse() {
    for api in APIS {
        let body = second_request(api, hostile_parts(api)).await.body;
        match api {
            Api::Anthropic => {
                let messages = body["messages"].as_array().unwrap();
                let result = &messages.last().unwrap()["content"][0];
                assert_eq!(result["type"], "tool_result");
                assert_eq!(
                    result["content"],
                    json!([
                        { "type": "text", "text": "Sales rose 12%" },
                        { "type": "image", "source": { "type": "url", "url": "https://example.com/sales.png" } },
                        { "type": "image", "source": { "type": "base64", "media_type": "image/png", "data": PNG } },
                        notice("[image/png image not sent: 5.5 MB is over Anthropic's 5 MB per image]"),
                        notice("[image/bmp image not sent: Anthropic takes image/jpeg, image/png, image/gif, image/webp]"),
                        notice("[file file-openai1 not sent: Anthropic file ids begin with \"file_\"]"),
                    ])
                );
            }
            Api::Responses => {
                let output = body["input"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|item| item["type"] == "function_call_output")
                    .unwrap()["output"]
                    .clone();
                let input_text = |text: &str| json!({ "type": "input_text", "text": text });
                assert_eq!(
                    output,
                    json!([
                        input_text("Sales rose 12%"),
                        { "type": "input_image", "image_url": "https://example.com/sales.png", "detail": "auto" },
                        { "type": "input_image", "image_url": format!("data:image/png;base64,{PNG}"), "detail": "auto" },
                        input_text("[image not sent: the request would carry more than OpenAI Responses's 50 MB of inline data]"),
                        input_text("[image/bmp image not sent: OpenAI Responses takes image/png, image/jpeg, image/webp, image/gif]"),
                        input_text("[file file_011anthropic not sent: OpenAI Responses file ids begin with \"file-\"]"),
                    ])
                );
            }
            Api::Chat => {
                let messages = body["messages"].as_array().unwrap();
                let tool = messages.iter().position(|m| m["role"] == "tool").unwrap();
                assert_eq!(
                    messages[tool]["content"],
                    json!([
                        notice("Sales rose 12%"),
                        notice("[image 1 of this result follows in the next user message]"),
                        notice("[image 2 of this result follows in the next user message]"),
                        notice(
                            "[image not sent: the request would carry more than OpenAI Chat Completions's 50 MB of inline data]"
                        ),
                        notice(
                            "[image/bmp image not sent: OpenAI Chat Completions takes image/png, image/jpeg, image/webp, image/gif]"
                        ),
                        notice(
                            "[file file_011anthropic not sent: OpenAI Chat Completions file ids begin with \"file-\"]"
                        ),
                    ])
                );
                assert_eq!(
                    messages[tool + 1],
                    json!({ "role": "user", "content": [
                        notice("Images and files of tool call call_1 (chart):"),
                        { "type": "image_url", "image_url": { "url": "https://example.com/sales.png" } },
                        { "type": "image_url", "image_url": { "url": format!("data:image/png;base64,{PNG}") } },
                    ] }),
                    "the images follow the step's tool messages"
                );
                assert_eq!(messages.len(), tool + 2, "nothing else follows");
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_anthropic_file_source_turns_the_files_api_beta_feature_on() {
    let file = ContentPart::FileId {
        file_id: "file_011CNha8iCJcU1wXNR6q4V8w".into(),
    };
    let received = second_request(Api::Anthropic, vec![file]).await;
    let result = &received.body["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()["content"][0];
    assert_eq!(
        result["content"],
        json!([{ "type": "document", "source": { "type": "file", "file_id": "file_011CNha8iCJcU1wXNR6q4V8w" } }])
    );
    assert_eq!(
        received.headers.get("anthropic-beta").map(String::as_str),
        Some("files-api-2025-04-14")
    );
    // Without a file source, no beta feature.
    let plain = second_request(Api::Anthropic, vec![ContentPart::text("ok")]).await;
    assert_eq!(plain.headers.get("anthropic-beta"), None);
}
