//! Tool results in each provider's message format.
//!
//! * OpenAI Chat Completions: `{"role": "tool", "tool_call_id", "content"}`;
//!   `content` is a string or an array of text parts (tool messages take text
//!   only, so images and files become short text placeholders).
//! * OpenAI Responses: `{"type": "function_call_output", "call_id", "output"}`;
//!   `output` is a string or an array of `input_text`, `input_image` and
//!   `input_file` items.
//! * Anthropic Messages: `{"type": "tool_result", "tool_use_id", "content",
//!   "is_error"}`; `content` is a string or `text`, `image` and `document`
//!   blocks; `is_error: true` on a failed call.
//! * Gemini: `{"functionResponse": {"id", "name", "response", "parts"}}`;
//!   `response` is `{"output": ...}` or, on failure, `{"error": ...}` (the
//!   keys Gemini's docs name); inline images and files go to `parts`
//!   (multimodal function responses), URLs and file ids become text.
//!
//! What is sent is a completed call's model output when the tool maps its
//! output (`to_model_output`), else the output itself (a string as is,
//! anything else as JSON); a failed call sends the model-facing error object;
//! other outcomes (suspended, aborted, and a runtime's declined or started)
//! send their model text ([`ModelFacing::to_model_value`]). Any
//! [`ModelFacing`] outcome can be encoded: tool-core's and a runtime's.

use serde_json::{Map, Value, json};

use super::Provider;
use crate::model_output::{ContentPart, ModelOutput};
use crate::outcome::ModelFacing;

impl Provider {
    /// The message (or content block, or part) that carries `outcome` back
    /// to the model as the result of call `call_id` to `tool_name`.
    ///
    /// For Anthropic it is a `tool_result` block for the next user message's
    /// content; for Gemini a part of the next `user` content (with `id` only
    /// when `call_id` is not empty, as older models send no call ids).
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
        match self {
            Provider::OpenAiChat => json!({
                "role": "tool",
                "tool_call_id": call_id,
                "content": chat_content(outcome),
            }),
            Provider::OpenAiResponses => json!({
                "type": "function_call_output",
                "call_id": call_id,
                "output": responses_output(outcome),
            }),
            Provider::Anthropic => anthropic_result(call_id, outcome),
            Provider::Gemini => gemini_result(call_id, tool_name, outcome),
        }
    }
}

/// What the model is told, before the provider's shape is applied.
enum Body<'a> {
    Text(String),
    Parts(&'a [ContentPart]),
}

fn body(outcome: &dyn ModelFacing) -> Body<'_> {
    match outcome.completed() {
        Some((_, Some(ModelOutput::Content(parts)))) => Body::Parts(parts),
        Some((_, Some(ModelOutput::Text(text)))) => Body::Text(text.clone()),
        Some((_, Some(ModelOutput::Json(value)))) | Some((value, None)) => {
            Body::Text(value_text(value))
        }
        None => Body::Text(value_text(&outcome.to_model_value())),
    }
}

/// A string as it is; any other value as JSON text.
fn value_text(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

/// A text stand-in for a part a provider cannot carry in a tool result.
fn placeholder(part: &ContentPart) -> String {
    match part {
        ContentPart::Text { text } => text.clone(),
        ContentPart::ImageUrl { url } => format!("[image: {url}]"),
        ContentPart::ImageData { media_type, .. } => {
            format!("[{media_type} image omitted: not supported in this tool result format]")
        }
        ContentPart::FileUrl { url } => format!("[file: {url}]"),
        ContentPart::FileData {
            media_type,
            filename,
            ..
        } => match filename {
            Some(name) => format!(
                "[file {name} ({media_type}) omitted: not supported in this tool result format]"
            ),
            None => {
                format!("[{media_type} file omitted: not supported in this tool result format]")
            }
        },
        ContentPart::FileId { file_id } => format!("[file id: {file_id}]"),
        ContentPart::ImageFileId { file_id } => format!("[image file id: {file_id}]"),
        ContentPart::Custom { fields } => Value::Object(fields.clone()).to_string(),
    }
}

fn data_url(media_type: &str, data: &str) -> String {
    format!("data:{media_type};base64,{data}")
}

fn chat_content(outcome: &dyn ModelFacing) -> Value {
    match body(outcome) {
        Body::Text(text) => Value::String(text),
        Body::Parts(parts) => Value::Array(
            parts
                .iter()
                .map(|part| json!({ "type": "text", "text": placeholder(part) }))
                .collect(),
        ),
    }
}

fn responses_output(outcome: &dyn ModelFacing) -> Value {
    match body(outcome) {
        Body::Text(text) => Value::String(text),
        Body::Parts(parts) => Value::Array(parts.iter().map(responses_part).collect()),
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
        ContentPart::Custom { fields } => Value::Object(fields.clone()),
    }
}

fn anthropic_result(call_id: &str, outcome: &dyn ModelFacing) -> Value {
    let content = match body(outcome) {
        Body::Text(text) => Value::String(text),
        Body::Parts(parts) => Value::Array(parts.iter().map(anthropic_block).collect()),
    };
    let mut result = json!({ "type": "tool_result", "tool_use_id": call_id, "content": content });
    if outcome.failure().is_some() {
        result["is_error"] = Value::Bool(true);
    }
    result
}

fn anthropic_block(part: &ContentPart) -> Value {
    match part {
        ContentPart::Text { text } => json!({ "type": "text", "text": text }),
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
        ContentPart::Custom { fields } => Value::Object(fields.clone()),
    }
}

fn gemini_result(call_id: &str, tool_name: &str, outcome: &dyn ModelFacing) -> Value {
    let mut parts = Vec::new();
    let response = match (outcome.failure(), outcome.completed()) {
        (Some(error), _) => json!({ "error": error.to_json() }),
        (None, Some((_, Some(ModelOutput::Content(content))))) => {
            let mut texts = Vec::new();
            for part in content {
                match part {
                    ContentPart::ImageData { data, media_type }
                    | ContentPart::FileData {
                        data, media_type, ..
                    } => {
                        parts.push(
                            json!({ "inlineData": { "mimeType": media_type, "data": data } }),
                        );
                    }
                    ContentPart::Custom { fields } => parts.push(Value::Object(fields.clone())),
                    other => texts.push(placeholder(other)),
                }
            }
            json!({ "output": texts.join("\n") })
        }
        (None, Some((_, Some(ModelOutput::Text(text))))) => json!({ "output": text }),
        (None, Some((_, Some(ModelOutput::Json(value))) | (value, None))) => {
            json!({ "output": value })
        }
        (None, None) => json!({ "output": outcome.to_model_value() }),
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
                { "type": "text", "text": "[image: https://x/c.png]" },
                { "type": "text", "text": "[file report.pdf (application/pdf) omitted: not supported in this tool result format]" }
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
                "response": { "output": "chart\n[image: https://x/c.png]" },
                "parts": [{ "inlineData": { "mimeType": "application/pdf", "data": "JVBERi0=" } }]
            } })
        );
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
