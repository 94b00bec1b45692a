//! Tool results in each provider's message format.
//!
//! * OpenAI Chat Completions: `{"role": "tool", "tool_call_id", "content"}`;
//!   `content` is a string or an array of text parts (tool messages take text
//!   only, so images and files go in a user message after the step's tool
//!   messages: [`EncodedToolResult::follow_up`]).
//! * OpenAI Responses: `{"type": "function_call_output", "call_id", "output"}`;
//!   `output` is a string or an array of `input_text`, `input_image` and
//!   `input_file` items.
//! * Anthropic Messages: `{"type": "tool_result", "tool_use_id", "content",
//!   "is_error"}`; `content` is a string or `text`, `image` and `document`
//!   blocks; `is_error: true` on a failed call.
//! * Gemini: `{"functionResponse": {"id", "name", "response", "parts"}}`;
//!   `response` is `{"output": ...}` or, on failure, `{"error": ...}` (the
//!   keys Gemini's docs name); inline images and files go to `parts`
//!   (multimodal function responses), URLs and file ids become notices.
//!
//! Images and files are sent within the provider's
//! [`media_limits`](Provider::media_limits); a part the provider would refuse
//! is replaced by a text notice saying why (the [`media`](super::media)
//! module's table).
//!
//! What is sent is a completed call's model output when the tool maps its
//! output (`to_model_output`), else the output itself (a string as is,
//! anything else as JSON); a failed call sends the model-facing error object;
//! other outcomes (suspended, aborted, and a runtime's declined or started)
//! send their model text ([`ModelFacing::to_model_value`]). Any
//! [`ModelFacing`] outcome can be encoded: tool-core's and a runtime's.

use serde_json::{Map, Value, json};

use super::Provider;
use super::media::MediaBudget;
use crate::model_output::{ContentPart, ModelOutput};
use crate::outcome::ModelFacing;

impl Provider {
    /// The message (or content block, or part) that carries `outcome` back
    /// to the model as the result of call `call_id` to `tool_name`.
    ///
    /// For Anthropic it is a `tool_result` block for the next user message's
    /// content; for Gemini a part of the next `user` content (with `id` only
    /// when `call_id` is not empty, as older models send no call ids). Images
    /// and files go where the provider takes them, within its
    /// [`media_limits`](Provider::media_limits); a Chat tool message takes
    /// text only, so there they become notices (use
    /// [`encode_tool_result`](Provider::encode_tool_result) to send them in
    /// a user message instead).
    ///
    /// ```
    /// use serde_json::json;
    /// use tool_core::provider::Provider;
    /// use tool_core::{ContentPart, ModelOutput, Outcome};
    ///
    /// let outcome = Outcome::Completed {
    ///     output: json!({ "chart": "c.png" }),
    ///     model_output: Some(ModelOutput::Content(vec![
    ///         ContentPart::text("Here is the chart"),
    ///         ContentPart::ImageData { data: "iVBORw0KGgo=".into(), media_type: "image/png".into() },
    ///     ])),
    ///     state: None,
    /// };
    /// assert_eq!(
    ///     Provider::Anthropic.tool_result("toolu_1", "chart", &outcome),
    ///     json!({
    ///         "type": "tool_result",
    ///         "tool_use_id": "toolu_1",
    ///         "content": [
    ///             { "type": "text", "text": "Here is the chart" },
    ///             { "type": "image", "source": { "type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo=" } }
    ///         ]
    ///     })
    /// );
    /// assert_eq!(
    ///     Provider::OpenAiResponses.tool_result("call_1", "chart", &outcome)["output"][1],
    ///     json!({ "type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo=", "detail": "auto" })
    /// );
    /// ```
    pub fn tool_result(&self, call_id: &str, tool_name: &str, outcome: &dyn ModelFacing) -> Value {
        let told;
        let body = match (outcome.failure(), outcome.completed()) {
            (Some(error), _) => {
                told = error.to_json();
                ToolResultBody::Error(&told)
            }
            (None, Some((_, Some(model_output)))) => ToolResultBody::ModelOutput(model_output),
            (None, Some((output, None))) => ToolResultBody::Output(output),
            (None, None) => {
                told = outcome.to_model_value();
                ToolResultBody::Output(&told)
            }
        };
        let mut budget = MediaBudget::new(*self);
        self.encode(call_id, tool_name, body, &mut budget, ChatMedia::Notice)
            .message
    }

    /// The message that carries `body` back to the model as the result of
    /// call `call_id` to `tool_name`, with the images and files `budget`
    /// admits (one budget per request: see [`MediaBudget`]); each part it
    /// refuses becomes a text notice saying why.
    ///
    /// For OpenAI Chat Completions, whose tool messages take text only, the
    /// images and files come back in [`EncodedToolResult::follow_up`]: the
    /// content parts of one user message to send after the step's tool
    /// messages (the tool message says so where each part was).
    ///
    /// ```
    /// use serde_json::json;
    /// use tool_core::provider::{MediaBudget, Provider, ToolResultBody};
    /// use tool_core::{ContentPart, ModelOutput};
    ///
    /// let chart = ModelOutput::Content(vec![
    ///     ContentPart::text("Sales rose."),
    ///     ContentPart::image_url("https://example.com/chart.png"),
    /// ]);
    /// let mut budget = MediaBudget::new(Provider::OpenAiChat);
    /// let encoded = Provider::OpenAiChat.encode_tool_result("call_1", "chart", ToolResultBody::ModelOutput(&chart), &mut budget);
    /// assert_eq!(encoded.message["content"][1]["text"], "[image 1 of this result follows in the next user message]");
    /// assert_eq!(encoded.follow_up[1], json!({ "type": "image_url", "image_url": { "url": "https://example.com/chart.png" } }));
    /// ```
    pub fn encode_tool_result(
        &self,
        call_id: &str,
        tool_name: &str,
        body: ToolResultBody<'_>,
        budget: &mut MediaBudget,
    ) -> EncodedToolResult {
        self.encode(call_id, tool_name, body, budget, ChatMedia::FollowUp)
    }

    fn encode(
        &self,
        call_id: &str,
        tool_name: &str,
        body: ToolResultBody<'_>,
        budget: &mut MediaBudget,
        chat_media: ChatMedia,
    ) -> EncodedToolResult {
        let is_error = matches!(body, ToolResultBody::Error(_));
        let content = Content::of(body, budget);
        let mut follow_up = Vec::new();
        let message = match self {
            Provider::OpenAiChat => json!({
                "role": "tool",
                "tool_call_id": call_id,
                "content": chat_content(call_id, tool_name, content, chat_media, &mut follow_up),
            }),
            Provider::OpenAiResponses => json!({
                "type": "function_call_output",
                "call_id": call_id,
                "output": responses_output(content),
            }),
            Provider::Anthropic => anthropic_result(call_id, content, is_error),
            Provider::Gemini => gemini_result(call_id, tool_name, body, content),
        };
        EncodedToolResult { message, follow_up }
    }
}

/// A call's result as the model reads it, in no provider's shape: what
/// [`Provider::encode_tool_result`] encodes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ToolResultBody<'a> {
    /// A completed call's output, or the model text of an outcome that is
    /// neither completed nor failed (a string is sent as it is; any other
    /// value as JSON).
    Output(&'a Value),
    /// A completed call's model output (the tool's `to_model_output`).
    ModelOutput(&'a ModelOutput),
    /// What the model reads of a call that failed (Anthropic marks it
    /// `is_error`; Gemini sends it as `{"error": ..}`).
    Error(&'a Value),
}

/// A tool result in one provider's format: see
/// [`Provider::encode_tool_result`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct EncodedToolResult {
    /// The message, content block or part that carries the result.
    pub message: Value,
    /// OpenAI Chat Completions only: content parts for one user message
    /// after the step's tool messages (a text part naming the call, then its
    /// images and files); empty otherwise.
    pub follow_up: Vec<Value>,
}

/// Whether a Chat tool message's images and files may follow in a user
/// message, or become notices.
#[derive(Clone, Copy, PartialEq)]
enum ChatMedia {
    FollowUp,
    Notice,
}

/// What the model is told, before the provider's shape is applied.
enum Content<'a> {
    Text(String),
    Parts(Vec<Admitted<'a>>),
}

/// A content part the request's budget took, or the notice replacing it.
enum Admitted<'a> {
    Part(&'a ContentPart),
    Notice(String),
}

impl<'a> Content<'a> {
    fn of(body: ToolResultBody<'a>, budget: &mut MediaBudget) -> Self {
        match body {
            ToolResultBody::ModelOutput(ModelOutput::Content(parts)) => Content::Parts(
                parts
                    .iter()
                    .map(|part| match budget.admit(part) {
                        Ok(()) => Admitted::Part(part),
                        Err(notice) => Admitted::Notice(notice),
                    })
                    .collect(),
            ),
            ToolResultBody::ModelOutput(ModelOutput::Text(text)) => Content::Text(text.clone()),
            ToolResultBody::ModelOutput(ModelOutput::Json(value))
            | ToolResultBody::Output(value)
            | ToolResultBody::Error(value) => Content::Text(value_text(value)),
        }
    }
}

/// A string as it is; any other value as JSON text.
fn value_text(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

fn data_url(media_type: &str, data: &str) -> String {
    format!("data:{media_type};base64,{data}")
}

fn text_part(text: &str) -> Value {
    json!({ "type": "text", "text": text })
}

fn chat_content(
    call_id: &str,
    tool_name: &str,
    content: Content<'_>,
    chat_media: ChatMedia,
    follow_up: &mut Vec<Value>,
) -> Value {
    let parts = match content {
        Content::Text(text) => return Value::String(text),
        Content::Parts(parts) => parts,
    };
    let mut texts = Vec::with_capacity(parts.len());
    let mut attached = 0;
    for admitted in parts {
        let part = match admitted {
            Admitted::Part(ContentPart::Text { text }) => {
                texts.push(text_part(text));
                continue;
            }
            Admitted::Notice(notice) => {
                texts.push(text_part(&notice));
                continue;
            }
            Admitted::Part(part) => part,
        };
        let kind = match part {
            ContentPart::ImageUrl { .. } | ContentPart::ImageData { .. } => "image",
            _ => "file",
        };
        if chat_media == ChatMedia::Notice {
            texts.push(text_part(&format!(
                "[{kind} not sent: an OpenAI Chat Completions tool message takes text only]"
            )));
            continue;
        }
        if follow_up.is_empty() {
            follow_up.push(text_part(&format!(
                "Images and files of tool call {call_id} ({tool_name}):"
            )));
        }
        follow_up.push(chat_user_part(part));
        attached += 1;
        texts.push(text_part(&format!(
            "[{kind} {attached} of this result follows in the next user message]"
        )));
    }
    Value::Array(texts)
}

/// A user-message content part of OpenAI Chat Completions for an image or
/// file the budget admitted (so never a URL file, an image file id, or a
/// custom part).
fn chat_user_part(part: &ContentPart) -> Value {
    match part {
        ContentPart::ImageUrl { url } => {
            json!({ "type": "image_url", "image_url": { "url": url } })
        }
        ContentPart::ImageData { data, media_type } => {
            json!({ "type": "image_url", "image_url": { "url": data_url(media_type, data) } })
        }
        ContentPart::FileData {
            data,
            media_type,
            filename,
        } => json!({
            "type": "file",
            "file": {
                "file_data": data_url(media_type, data),
                "filename": filename.as_deref().unwrap_or("file"),
            },
        }),
        ContentPart::FileId { file_id } => {
            json!({ "type": "file", "file": { "file_id": file_id } })
        }
        // The budget refuses every other part for Chat.
        _ => text_part("[part not sent: OpenAI Chat Completions cannot carry it]"),
    }
}

fn responses_output(content: Content<'_>) -> Value {
    match content {
        Content::Text(text) => Value::String(text),
        Content::Parts(parts) => Value::Array(
            parts
                .iter()
                .map(|admitted| match admitted {
                    Admitted::Part(part) => responses_part(part),
                    Admitted::Notice(notice) => json!({ "type": "input_text", "text": notice }),
                })
                .collect(),
        ),
    }
}

fn responses_part(part: &ContentPart) -> Value {
    match part {
        ContentPart::Text { text } => json!({ "type": "input_text", "text": text }),
        ContentPart::ImageUrl { url } => {
            json!({ "type": "input_image", "image_url": url, "detail": "auto" })
        }
        ContentPart::ImageData { data, media_type } => {
            json!({ "type": "input_image", "image_url": data_url(media_type, data), "detail": "auto" })
        }
        ContentPart::ImageFileId { file_id } => {
            json!({ "type": "input_image", "file_id": file_id, "detail": "auto" })
        }
        ContentPart::FileUrl { url } => json!({ "type": "input_file", "file_url": url }),
        ContentPart::FileData {
            data,
            media_type,
            filename,
        } => json!({
            "type": "input_file",
            "file_data": data_url(media_type, data),
            "filename": filename.as_deref().unwrap_or("file"),
        }),
        ContentPart::FileId { file_id } => json!({ "type": "input_file", "file_id": file_id }),
        // The budget refuses custom parts.
        ContentPart::Custom { fields } => Value::Object(fields.clone()),
    }
}

fn anthropic_result(call_id: &str, content: Content<'_>, is_error: bool) -> Value {
    let content = match content {
        Content::Text(text) => Value::String(text),
        Content::Parts(parts) => Value::Array(
            parts
                .iter()
                .map(|admitted| match admitted {
                    Admitted::Part(part) => anthropic_block(part),
                    Admitted::Notice(notice) => text_part(notice),
                })
                .collect(),
        ),
    };
    let mut result = json!({ "type": "tool_result", "tool_use_id": call_id, "content": content });
    if is_error {
        result["is_error"] = Value::Bool(true);
    }
    result
}

fn anthropic_block(part: &ContentPart) -> Value {
    match part {
        ContentPart::Text { text } => text_part(text),
        ContentPart::ImageUrl { url } => {
            json!({ "type": "image", "source": { "type": "url", "url": url } })
        }
        ContentPart::ImageData { data, media_type } => json!({
            "type": "image",
            "source": { "type": "base64", "media_type": media_type, "data": data },
        }),
        ContentPart::ImageFileId { file_id } => {
            json!({ "type": "image", "source": { "type": "file", "file_id": file_id } })
        }
        ContentPart::FileUrl { url } => {
            json!({ "type": "document", "source": { "type": "url", "url": url } })
        }
        ContentPart::FileData {
            data,
            media_type,
            filename,
        } => {
            let mut block = json!({
                "type": "document",
                "source": { "type": "base64", "media_type": media_type, "data": data },
            });
            if let Some(name) = filename {
                block["title"] = json!(name);
            }
            block
        }
        ContentPart::FileId { file_id } => {
            json!({ "type": "document", "source": { "type": "file", "file_id": file_id } })
        }
        // The budget refuses custom parts.
        ContentPart::Custom { fields } => Value::Object(fields.clone()),
    }
}

fn gemini_result(
    call_id: &str,
    tool_name: &str,
    body: ToolResultBody<'_>,
    content: Content<'_>,
) -> Value {
    let mut parts = Vec::new();
    let response = match (body, content) {
        (ToolResultBody::Error(error), _) => json!({ "error": error }),
        (_, Content::Parts(admitted)) => {
            let mut texts = Vec::new();
            for part in admitted {
                match part {
                    Admitted::Part(ContentPart::Text { text }) => texts.push(text.clone()),
                    Admitted::Part(
                        ContentPart::ImageData { data, media_type }
                        | ContentPart::FileData {
                            data, media_type, ..
                        },
                    ) => parts
                        .push(json!({ "inlineData": { "mimeType": media_type, "data": data } })),
                    // The budget refuses every other part for Gemini.
                    Admitted::Part(_) => {
                        texts.push("[part not sent: Gemini cannot carry it]".into())
                    }
                    Admitted::Notice(notice) => texts.push(notice),
                }
            }
            json!({ "output": texts.join("\n") })
        }
        (
            ToolResultBody::ModelOutput(ModelOutput::Json(value)) | ToolResultBody::Output(value),
            _,
        ) => {
            json!({ "output": value })
        }
        (_, Content::Text(text)) => json!({ "output": text }),
    };
    let mut function_response = Map::new();
    if !call_id.is_empty() {
        function_response.insert("id".into(), json!(call_id));
    }
    function_response.insert("name".into(), json!(tool_name));
    function_response.insert("response".into(), response);
    if !parts.is_empty() {
        function_response.insert("parts".into(), Value::Array(parts));
    }
    json!({ "functionResponse": Value::Object(function_response) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ContentPart;
    use crate::error::{ErrorKind, ModelError};
    use crate::outcome::Outcome;

    fn completed(output: Value) -> Outcome {
        Outcome::Completed {
            output,
            model_output: None,
            state: None,
        }
    }

    fn failed() -> Outcome {
        Outcome::Failed {
            error: ModelError::new(ErrorKind::Execution, "boom"),
        }
    }

    #[test]
    fn plain_outputs_are_text_or_json_text() {
        let string = completed(json!("sunny"));
        let object = completed(json!({ "t": 21 }));
        assert_eq!(
            Provider::OpenAiChat.tool_result("c1", "w", &string),
            json!({ "role": "tool", "tool_call_id": "c1", "content": "sunny" })
        );
        assert_eq!(
            Provider::OpenAiResponses.tool_result("c1", "w", &object),
            json!({ "type": "function_call_output", "call_id": "c1", "output": "{\"t\":21}" })
        );
        assert_eq!(
            Provider::Anthropic.tool_result("toolu_1", "w", &object),
            json!({ "type": "tool_result", "tool_use_id": "toolu_1", "content": "{\"t\":21}" })
        );
        assert_eq!(
            Provider::Gemini.tool_result("", "w", &object),
            json!({ "functionResponse": { "name": "w", "response": { "output": { "t": 21 } } } })
        );
    }

    #[test]
    fn failures_carry_the_model_error() {
        let outcome = failed();
        let error = ModelError::new(ErrorKind::Execution, "boom").to_json();
        let anthropic = Provider::Anthropic.tool_result("toolu_1", "w", &outcome);
        assert_eq!(anthropic["is_error"], true);
        assert_eq!(anthropic["content"], json!(error.to_string()));
        assert_eq!(
            Provider::OpenAiChat.tool_result("c1", "w", &outcome)["content"],
            json!(error.to_string())
        );
        assert_eq!(
            Provider::Gemini.tool_result("g1", "w", &outcome),
            json!({ "functionResponse": { "id": "g1", "name": "w", "response": { "error": error } } })
        );
    }

    #[test]
    fn content_parts_per_provider() {
        let outcome = Outcome::Completed {
            output: json!(null),
            model_output: Some(ModelOutput::Content(vec![
                ContentPart::text("chart"),
                ContentPart::image_url("https://x/c.png"),
                ContentPart::FileData {
                    data: "JVBERi0=".into(),
                    media_type: "application/pdf".into(),
                    filename: Some("report.pdf".into()),
                },
            ])),
            state: None,
        };
        assert_eq!(
            Provider::OpenAiChat.tool_result("c1", "w", &outcome)["content"],
            json!([
                { "type": "text", "text": "chart" },
                { "type": "text", "text": "[image not sent: an OpenAI Chat Completions tool message takes text only]" },
                { "type": "text", "text": "[file not sent: an OpenAI Chat Completions tool message takes text only]" }
            ])
        );
        assert_eq!(
            Provider::OpenAiResponses.tool_result("c1", "w", &outcome)["output"][2],
            json!({ "type": "input_file", "file_data": "data:application/pdf;base64,JVBERi0=", "filename": "report.pdf" })
        );
        assert_eq!(
            Provider::Anthropic.tool_result("t1", "w", &outcome)["content"][2],
            json!({
                "type": "document",
                "source": { "type": "base64", "media_type": "application/pdf", "data": "JVBERi0=" },
                "title": "report.pdf"
            })
        );
        assert_eq!(
            Provider::Gemini.tool_result("g1", "w", &outcome),
            json!({ "functionResponse": {
                "id": "g1",
                "name": "w",
                "response": { "output": "chart\n[image https://x/c.png not sent: Gemini does not fetch image URLs in tool results]" },
                "parts": [{ "inlineData": { "mimeType": "application/pdf", "data": "JVBERi0=" } }]
            } })
        );
    }

    #[test]
    fn chat_sends_images_and_files_in_one_user_message_after_the_tool_messages() {
        let output = ModelOutput::Content(vec![
            ContentPart::text("chart"),
            ContentPart::ImageData {
                data: "iVBORw0KGgo=".into(),
                media_type: "image/png".into(),
            },
            ContentPart::FileUrl {
                url: "https://x/r.pdf".into(),
            },
        ]);
        let mut budget = MediaBudget::new(Provider::OpenAiChat);
        let encoded = Provider::OpenAiChat.encode_tool_result(
            "c1",
            "chart",
            ToolResultBody::ModelOutput(&output),
            &mut budget,
        );
        assert_eq!(
            encoded.message["content"],
            json!([
                { "type": "text", "text": "chart" },
                { "type": "text", "text": "[image 1 of this result follows in the next user message]" },
                { "type": "text", "text": "[file https://x/r.pdf not sent: OpenAI Chat Completions does not fetch file URLs]" }
            ])
        );
        assert_eq!(
            encoded.follow_up,
            [
                json!({ "type": "text", "text": "Images and files of tool call c1 (chart):" }),
                json!({ "type": "image_url", "image_url": { "url": "data:image/png;base64,iVBORw0KGgo=" } }),
            ]
        );
        let plain = Provider::OpenAiResponses.encode_tool_result(
            "c1",
            "chart",
            ToolResultBody::Output(&json!({ "t": 1 })),
            &mut MediaBudget::new(Provider::OpenAiResponses),
        );
        assert!(plain.follow_up.is_empty());
    }

    #[test]
    fn other_outcomes_send_their_model_text() {
        // A runtime's declined call is encoded the same way (tool-runtime's tests).
        let aborted = Outcome::Aborted;
        assert_eq!(
            Provider::Anthropic.tool_result("t1", "w", &aborted),
            json!({ "type": "tool_result", "tool_use_id": "t1", "content": "Tool call was aborted." })
        );
        assert_eq!(
            Provider::Gemini.tool_result("", "w", &aborted)["functionResponse"]["response"],
            json!({ "output": "Tool call was aborted." })
        );
    }
}
