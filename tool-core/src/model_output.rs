//! What the model sees of a tool's output (`toModelOutput` in the reference).

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The model-facing form of a tool result, when it differs from the raw output.
///
/// Serializes as the AI SDK's tool-result output: `{"type": "text", "value": ..}`,
/// `{"type": "json", "value": ..}` or `{"type": "content", "value": [parts]}`.
///
/// ```
/// use tool_core::{ContentPart, ModelOutput};
///
/// let out = ModelOutput::Content(vec![
///     ContentPart::text("Here is the chart"),
///     ContentPart::image_url("https://example.com/chart.png"),
/// ]);
/// let json = serde_json::to_value(&out).unwrap();
/// assert_eq!(json["type"], "content");
/// assert_eq!(json["value"][1]["type"], "image-url");
/// assert_eq!(json["value"][1]["url"], "https://example.com/chart.png");
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", content = "value", rename_all = "kebab-case")]
pub enum ModelOutput {
    /// Plain text.
    Text(String),
    /// A JSON value.
    Json(Value),
    /// Multi-part content: text, images, files.
    Content(Vec<ContentPart>),
}

impl ModelOutput {
    /// Text output.
    pub fn text(text: impl Into<String>) -> Self {
        ModelOutput::Text(text.into())
    }

    /// JSON output.
    pub fn json(value: Value) -> Self {
        ModelOutput::Json(value)
    }
}

/// One part of [`ModelOutput::Content`].
///
/// ```
/// use tool_core::ContentPart;
///
/// let part = ContentPart::ImageData { data: "iVBORw0KGgo=".into(), media_type: "image/png".into() };
/// let json = serde_json::to_value(&part).unwrap();
/// assert_eq!(json, serde_json::json!({ "type": "image-data", "data": "iVBORw0KGgo=", "mediaType": "image/png" }));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum ContentPart {
    /// Text.
    Text {
        /// The text.
        text: String,
    },
    /// An image at a URL.
    ImageUrl {
        /// Where the image is.
        url: String,
    },
    /// An image inline, base64-encoded.
    #[serde(rename_all = "camelCase")]
    ImageData {
        /// Base64 data.
        data: String,
        /// IANA media type, e.g. `image/png`.
        media_type: String,
    },
    /// A file at a URL.
    FileUrl {
        /// Where the file is.
        url: String,
    },
    /// A file inline, base64-encoded.
    #[serde(rename_all = "camelCase")]
    FileData {
        /// Base64 data.
        data: String,
        /// IANA media type, e.g. `application/pdf`.
        media_type: String,
        /// File name shown to the model, when known.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        filename: Option<String>,
    },
    /// A file uploaded to the provider beforehand.
    #[serde(rename_all = "camelCase")]
    FileId {
        /// The provider's file id.
        file_id: String,
    },
    /// An image uploaded to the provider beforehand.
    #[serde(rename_all = "camelCase")]
    ImageFileId {
        /// The provider's file id.
        file_id: String,
    },
    /// A provider-specific part, passed through as is.
    Custom {
        /// Provider-specific fields.
        #[serde(flatten)]
        fields: serde_json::Map<String, Value>,
    },
}

impl ContentPart {
    /// A text part.
    pub fn text(text: impl Into<String>) -> Self {
        ContentPart::Text { text: text.into() }
    }

    /// An image-url part.
    pub fn image_url(url: impl Into<String>) -> Self {
        ContentPart::ImageUrl { url: url.into() }
    }
}
