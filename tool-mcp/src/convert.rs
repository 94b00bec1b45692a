//! Conversions between tool-core values and MCP wire types: a tool's
//! declaration as an MCP `Tool`, an outcome as a `CallToolResult`, model
//! output as content blocks, and back (a remote MCP tool as a dynamic tool,
//! a remote result as output).

use std::sync::Arc;

use rmcp::model::{
    CallToolResult, ContentBlock, JsonObject, MetaObject, Resource, ResourceContents,
    ToolAnnotations,
};
use serde_json::{Map, Value, json};
use tool_core::{ContentPart, McpAnnotations, McpOptions, ModelOutput, Tool, ToolError};

use tool_runtime::CallOutcome;

/// The property a non-object output is wrapped in, so that the MCP output
/// schema and `structuredContent` have the object root MCP requires.
///
/// ```
/// use serde_json::json;
/// use tool_core::{Tool, ToolError};
/// use tool_runtime::Runtime;
/// use tool_mcp::{McpServer, OUTPUT_WRAPPER};
///
/// let tags = Tool::builder("tags").description("Lists tags")
///     .output_schema(json!({ "type": "array", "items": { "type": "string" } }))
///     .execute(|_input, _ctx| async move { Ok::<_, ToolError>(json!(["a"])) })
///     .build().unwrap();
/// let server = McpServer::new(Runtime::builder().tool(tags).build().unwrap());
/// let schema = server.tools()[0].output_schema.clone().unwrap();
/// assert_eq!(schema["required"], json!([OUTPUT_WRAPPER]));
/// ```
pub const OUTPUT_WRAPPER: &str = "result";

/// The `_meta` key carrying the tool's strict flag: the server adds it to
/// a tool's `_meta` unless the tool declared that key itself (its own
/// entries are served exactly as declared), and `McpClient` reads it back.
///
/// ```
/// use serde_json::json;
/// use tool_core::{McpOptions, Tool, ToolError};
/// use tool_runtime::Runtime;
/// use tool_mcp::{McpServer, STRICT_META};
///
/// let echo = |id: &str| Tool::builder(id).description("Echoes").strict(true)
///     .execute(|input, _ctx| async move { Ok::<_, ToolError>(input) });
/// let mut own = serde_json::Map::new();
/// own.insert("strict".into(), json!("the tool's own"));
/// let declared = echo("declared").mcp(McpOptions::default().meta(own)).build().unwrap();
/// let server = McpServer::new(Runtime::builder().tool(echo("plain").build().unwrap()).tool(declared).build().unwrap());
/// let plain = server.tools()[0].meta.clone().unwrap();
/// assert_eq!(plain.get(STRICT_META), Some(&json!(true)));
/// let declared = server.tools()[1].meta.clone().unwrap();
/// assert_eq!(declared.get("strict"), Some(&json!("the tool's own")));
/// ```
pub const STRICT_META: &str = "tool-runtime/strict";

/// The dialect of every schema served: JSON Schema 2020-12, MCP's default.
const JSON_SCHEMA_2020_12: &str = "https://json-schema.org/draft/2020-12/schema";

/// A tool as served: its MCP declaration and whether its output is wrapped.
#[derive(Debug, Clone)]
pub(crate) struct ServedTool {
    /// The runtime's tool (one lookup per request serves both).
    pub(crate) tool: Tool,
    pub(crate) declaration: rmcp::model::Tool,
    pub(crate) wrapped_output: bool,
    /// Whether results carry the raw output as `structuredContent` (and the
    /// declaration its `outputSchema`): not for a tool whose model output
    /// is its own (`to_model_output`), unless the server opts it in.
    pub(crate) structured: bool,
    /// The output schema as declared, for peers of 2026-07-28 (which take a
    /// schema of any root), when the declaration's is wrapped.
    unwrapped_output_schema: Option<Arc<JsonObject>>,
}

impl ServedTool {
    /// The declaration a peer gets: the output schema unwrapped for peers
    /// of the 2026-07-28 protocol or newer.
    pub(crate) fn declaration_for(&self, modern: bool) -> rmcp::model::Tool {
        let mut declaration = self.declaration.clone();
        if let (true, Some(schema)) = (modern, &self.unwrapped_output_schema) {
            declaration.output_schema = Some(Arc::clone(schema));
        }
        declaration
    }

    /// Whether a peer's results wrap the output in `{"result": ...}`.
    pub(crate) fn wraps_output_for(&self, modern: bool) -> bool {
        self.wrapped_output && !(modern && self.unwrapped_output_schema.is_some())
    }
}

/// The MCP declaration of a tool: name = id, title (the tool's title, else
/// its MCP annotation title), description, input schema, output schema
/// (object roots as is, anything else wrapped in `{"result": ...}`),
/// annotations as declared, `_meta` (declared entries, and the strict flag
/// under [`STRICT_META`] unless declared). A tool that maps its output
/// (`to_model_output`) has no output schema unless `structured_output`
/// opts it in: its results carry the model output only.
pub(crate) fn served_tool(tool: &Tool, structured_output: bool) -> ServedTool {
    let def = tool.definition();
    let structured = structured_output || !tool.has_to_model_output();
    let mut input_schema = match &def.input_schema {
        Value::Object(map) => map.clone(),
        // A schema that is not an object (`true`) accepts anything.
        _ => json_object(json!({ "type": "object" })),
    };
    standard_formats_only(&mut input_schema);
    // MCP's default dialect, said outright (the conformance suite checks it).
    input_schema
        .entry("$schema")
        .or_insert_with(|| json!(JSON_SCHEMA_2020_12));
    let mut declaration = rmcp::model::Tool::new(
        def.id.clone(),
        def.description.clone(),
        Arc::new(input_schema),
    );
    let annotations = def.mcp.as_ref().map(|mcp| &mcp.annotations);
    declaration.title = def
        .title
        .clone()
        .or_else(|| annotations.and_then(|a| a.title.clone()));
    declaration.annotations = annotations.and_then(tool_annotations);
    let served_output_schema = def.output_schema.as_ref().filter(|_| structured);
    let (output_schema, wrapped_output) = match served_output_schema {
        Some(schema) => {
            let (mut schema, wrapped) = output_schema(schema);
            standard_formats_only(&mut schema);
            (Some(Arc::new(schema)), wrapped)
        }
        None => (None, false),
    };
    let unwrapped_output_schema = match (served_output_schema, wrapped_output) {
        (Some(Value::Object(schema)), true) => {
            let mut schema = schema.clone();
            standard_formats_only(&mut schema);
            Some(Arc::new(schema))
        }
        _ => None,
    };
    declaration.output_schema = output_schema;
    let mut meta = def
        .mcp
        .as_ref()
        .and_then(|mcp| mcp.meta.clone())
        .unwrap_or_default();
    meta.entry(STRICT_META).or_insert(Value::Bool(def.strict));
    declaration.meta = Some(MetaObject(meta));
    ServedTool {
        tool: tool.clone(),
        declaration,
        wrapped_output,
        structured,
        unwrapped_output_schema,
    }
}

/// The annotations exactly as declared; `None` when none is set.
fn tool_annotations(a: &McpAnnotations) -> Option<ToolAnnotations> {
    let set = a.title.is_some()
        || a.read_only_hint.is_some()
        || a.destructive_hint.is_some()
        || a.idempotent_hint.is_some()
        || a.open_world_hint.is_some();
    set.then(|| {
        ToolAnnotations::from_raw(
            a.title.clone(),
            a.read_only_hint,
            a.destructive_hint,
            a.idempotent_hint,
            a.open_world_hint,
        )
    })
}

/// The `format`s JSON Schema 2020-12 defines.
const STANDARD_FORMATS: &[&str] = &[
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uuid",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
];

/// Keywords whose values are data, not schemas: a `format` inside them is
/// the data's own.
const DATA_KEYWORDS: &[&str] = &["const", "enum", "default", "examples"];

/// Removes the `format`s JSON Schema does not define (schemars' `uint32`,
/// `int64`, `double`...), which clients such as the official TypeScript SDK
/// report as unknown; the numeric bounds beside them already say what they
/// meant. Schemas are at most `tool_core::MAX_SCHEMA_DEPTH` deep, so the
/// recursion is bounded.
fn standard_formats_only(schema: &mut Map<String, Value>) {
    if schema
        .get("format")
        .and_then(Value::as_str)
        .is_some_and(|format| !STANDARD_FORMATS.contains(&format))
    {
        schema.remove("format");
    }
    for (keyword, value) in schema.iter_mut() {
        if DATA_KEYWORDS.contains(&keyword.as_str()) {
            continue;
        }
        // `properties`, `$defs` and the like map names to schemas; `allOf`
        // and `prefixItems` hold lists of them; the rest hold one.
        match value {
            Value::Object(map) if is_schema_map(keyword) => {
                for subschema in map.values_mut() {
                    if let Value::Object(subschema) = subschema {
                        standard_formats_only(subschema);
                    }
                }
            }
            Value::Object(subschema) => standard_formats_only(subschema),
            Value::Array(items) => {
                for item in items {
                    if let Value::Object(subschema) = item {
                        standard_formats_only(subschema);
                    }
                }
            }
            _ => {}
        }
    }
}

/// Whether `keyword`'s value maps names to schemas.
fn is_schema_map(keyword: &str) -> bool {
    matches!(
        keyword,
        "properties" | "patternProperties" | "$defs" | "definitions" | "dependentSchemas"
    )
}

/// An output schema with an object root: returned as is when its root is
/// `"type": "object"`, otherwise wrapped as the `result` property of an
/// object (root keywords such as `$defs` move to the wrapper, so `$ref`s
/// still resolve). The flag says whether it was wrapped.
pub(crate) fn output_schema(schema: &Value) -> (JsonObject, bool) {
    if let Value::Object(map) = schema
        && map.get("type").and_then(Value::as_str) == Some("object")
    {
        return (map.clone(), false);
    }
    let mut inner = schema.clone();
    let mut wrapper = Map::new();
    if let Value::Object(map) = &mut inner {
        for key in ["$schema", "$id", "$defs", "definitions"] {
            if let Some(value) = map.remove(key) {
                wrapper.insert(key.to_owned(), value);
            }
        }
    }
    wrapper.insert("type".to_owned(), json!("object"));
    wrapper.insert("properties".to_owned(), json!({ OUTPUT_WRAPPER: inner }));
    wrapper.insert("required".to_owned(), json!([OUTPUT_WRAPPER]));
    (wrapper, true)
}

fn json_object(value: Value) -> JsonObject {
    match value {
        Value::Object(map) => map,
        _ => JsonObject::new(),
    }
}

/// A completed call of `served` (`None`: a tool this server no longer
/// serves, whose task settled) as an MCP result: the content is the
/// `to_model_output` form when the tool has one, else the output as text;
/// `structuredContent` is the output (wrapped like the schema when
/// `wrapped`; present whenever the tool has an output schema or the output
/// is an object), unless the tool's model output is its own and the server
/// did not opt it in: then the raw output is nowhere in the result.
pub(crate) fn completed(
    output: Value,
    model_output: Option<&ModelOutput>,
    served: Option<&ServedTool>,
    wrapped: bool,
) -> CallToolResult {
    let content = match model_output {
        Some(model_output) => model_output_content(model_output),
        None => vec![ContentBlock::text(value_text(&output))],
    };
    let has_output_schema = served.is_some_and(|s| s.declaration.output_schema.is_some());
    // Without its declaration, the model output alone when there is one:
    // nothing is sent that the tool may have left out.
    let structured_allowed = match served {
        Some(served) => served.structured,
        None => model_output.is_none(),
    };
    let structured = if !structured_allowed {
        None
    } else if wrapped {
        Some(json!({ OUTPUT_WRAPPER: output }))
    } else if has_output_schema || output.is_object() {
        Some(output)
    } else {
        None
    };
    let mut result = CallToolResult::success(content);
    result.structured_content = structured;
    result
}

/// A result the model reads as a failure (`isError: true`) with `text`.
pub(crate) fn error_result(text: impl Into<String>) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(text)])
}

/// The model-facing text of an outcome that is not `Completed`, as an
/// `isError` result (nothing the output schema describes was produced).
pub(crate) fn not_completed(outcome: &CallOutcome) -> CallToolResult {
    match outcome {
        CallOutcome::Failed { error } => error_result(error.message()),
        other => error_result(value_text(&other.to_model_value())),
    }
}

/// A string as its text, any other value as JSON: a value as an MCP text block.
pub(crate) fn value_text(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

/// `to_model_output` as MCP content: text and JSON as text, images as image
/// content (an `https:` image URL as a resource link, since MCP images are
/// inline), audio files as audio content, other files as embedded resources
/// or links, provider file ids and custom parts as text.
pub(crate) fn model_output_content(model_output: &ModelOutput) -> Vec<ContentBlock> {
    match model_output {
        ModelOutput::Text(text) => vec![ContentBlock::text(text.clone())],
        ModelOutput::Json(value) => vec![ContentBlock::text(value.to_string())],
        ModelOutput::Content(parts) => parts.iter().map(part_content).collect(),
    }
}

fn part_content(part: &ContentPart) -> ContentBlock {
    match part {
        ContentPart::Text { text } => ContentBlock::text(text.clone()),
        ContentPart::ImageUrl { url } => match data_url(url) {
            Some((media_type, data)) => ContentBlock::image(data, media_type),
            None => link(url, "image"),
        },
        ContentPart::ImageData { data, media_type } => {
            ContentBlock::image(data.clone(), media_type.clone())
        }
        ContentPart::FileUrl { url } => match data_url(url) {
            Some((media_type, data)) => inline_file(data, media_type, None),
            None => link(url, "file"),
        },
        ContentPart::FileData {
            data,
            media_type,
            filename,
        } => inline_file(data.to_owned(), media_type.to_owned(), filename.as_deref()),
        ContentPart::FileId { file_id } => ContentBlock::text(format!("[file {file_id}]")),
        ContentPart::ImageFileId { file_id } => {
            ContentBlock::text(format!("[image file {file_id}]"))
        }
        ContentPart::Custom { fields } => {
            ContentBlock::text(Value::Object(fields.clone()).to_string())
        }
    }
}

/// `data:<media type>;base64,<data>` split into its media type and data.
fn data_url(url: &str) -> Option<(String, String)> {
    let rest = url.strip_prefix("data:")?;
    let (header, data) = rest.split_once(',')?;
    let media_type = header.strip_suffix(";base64")?;
    let media_type = if media_type.is_empty() {
        "application/octet-stream"
    } else {
        media_type
    };
    Some((media_type.to_owned(), data.to_owned()))
}

fn inline_file(data: String, media_type: String, filename: Option<&str>) -> ContentBlock {
    if media_type.starts_with("image/") {
        ContentBlock::image(data, media_type)
    } else if media_type.starts_with("audio/") {
        ContentBlock::audio(data, media_type)
    } else {
        let uri = format!("attachment:///{}", filename.unwrap_or("file"));
        ContentBlock::resource(ResourceContents::blob(data, uri).with_mime_type(media_type))
    }
}

fn link(url: &str, fallback_name: &str) -> ContentBlock {
    let name = url
        .split(['?', '#'])
        .next()
        .and_then(|path| path.rsplit('/').next())
        .filter(|segment| !segment.is_empty())
        .unwrap_or(fallback_name);
    ContentBlock::resource_link(Resource::new(url, name))
}

// --- the other direction: remote MCP tools as dynamic tools ---------------

/// The tool options a remote tool declares: its annotations and `_meta`
/// (without the `strict` flag, which is returned apart).
pub(crate) fn remote_mcp_options(tool: &rmcp::model::Tool) -> (Option<McpOptions>, bool) {
    let mut meta = tool.meta.clone().map(|m| m.0).unwrap_or_default();
    let strict = matches!(meta.remove(STRICT_META), Some(Value::Bool(true)));
    let mut options = McpOptions::default();
    let mut any = false;
    if let Some(a) = &tool.annotations {
        if let Some(title) = &a.title {
            options = options.title(title.clone());
        }
        if let Some(v) = a.read_only_hint {
            options = options.read_only(v);
        }
        if let Some(v) = a.destructive_hint {
            options = options.destructive(v);
        }
        if let Some(v) = a.idempotent_hint {
            options = options.idempotent(v);
        }
        if let Some(v) = a.open_world_hint {
            options = options.open_world(v);
        }
        any = true;
    }
    if !meta.is_empty() {
        options = options.meta(meta);
        any = true;
    }
    (any.then_some(options), strict)
}

/// What a remote call returned, as a local tool's output: an `isError`
/// result is a [`ToolError`] with its text; `structuredContent` is the
/// output; otherwise the text (all content is text) or the content blocks
/// as JSON (see [`content_model_output`]).
pub(crate) fn remote_output(result: CallToolResult) -> Result<Value, ToolError> {
    let texts: Vec<&str> = result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.as_str()))
        .collect();
    if result.is_error == Some(true) {
        let message = if texts.is_empty() {
            "the remote tool reported an error without a message".to_owned()
        } else {
            texts.join("\n")
        };
        return Err(ToolError::new(message));
    }
    if let Some(structured) = result.structured_content {
        return Ok(structured);
    }
    if texts.len() == result.content.len() {
        return Ok(Value::String(texts.join("\n")));
    }
    serde_json::to_value(&result.content).map_err(|e| ToolError::new(e.to_string()))
}

/// The model-facing form of a remote tool's output: MCP content blocks
/// (what [`remote_output`] returns for non-text content) become content
/// parts; a string is text; anything else JSON.
pub(crate) fn content_model_output(output: &Value) -> ModelOutput {
    match output {
        Value::String(text) => ModelOutput::Text(text.clone()),
        Value::Array(blocks) => {
            let parts: Option<Vec<ContentPart>> = blocks
                .iter()
                .map(|block| {
                    serde_json::from_value::<ContentBlock>(block.clone())
                        .ok()
                        .map(|block| block_part(&block))
                })
                .collect();
            match parts {
                Some(parts) => ModelOutput::Content(parts),
                None => ModelOutput::Json(output.clone()),
            }
        }
        other => ModelOutput::Json(other.clone()),
    }
}

fn block_part(block: &ContentBlock) -> ContentPart {
    match block {
        ContentBlock::Text(text) => ContentPart::text(text.text.clone()),
        ContentBlock::Image(image) => ContentPart::ImageData {
            data: image.data.clone(),
            media_type: image.mime_type.clone(),
        },
        ContentBlock::Audio(audio) => ContentPart::FileData {
            data: audio.data.clone(),
            media_type: audio.mime_type.clone(),
            filename: None,
        },
        ContentBlock::ResourceLink(resource) => {
            if resource
                .mime_type
                .as_deref()
                .is_some_and(|m| m.starts_with("image/"))
            {
                ContentPart::image_url(resource.uri.clone())
            } else {
                ContentPart::FileUrl {
                    url: resource.uri.clone(),
                }
            }
        }
        ContentBlock::Resource(embedded) => match &embedded.resource {
            ResourceContents::TextResourceContents { text, .. } => ContentPart::text(text.clone()),
            ResourceContents::BlobResourceContents {
                blob, mime_type, ..
            } => ContentPart::FileData {
                data: blob.clone(),
                media_type: mime_type
                    .clone()
                    .unwrap_or_else(|| "application/octet-stream".to_owned()),
                filename: None,
            },
            other => ContentPart::text(serde_json::to_string(other).unwrap_or_default()),
        },
        other => ContentPart::text(serde_json::to_string(other).unwrap_or_default()),
    }
}

/// A remote tool name as a local tool id (`^[a-zA-Z0-9_-]{1,64}$`): other
/// characters become `_`, and the id is cut at 64 characters.
pub(crate) fn local_id(prefix: &str, name: &str) -> String {
    format!("{prefix}{name}")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect()
}

/// The roots a client listed, as a tool reads them.
#[allow(
    deprecated,
    reason = "MCP roots (SEP-2577 deprecates them; older peers and SEP-2322's rounds use them)"
)]
pub(crate) fn listed_roots(listed: &rmcp::model::ListRootsResult) -> Vec<crate::context::Root> {
    listed
        .roots
        .iter()
        .map(|root| crate::context::Root::new(root.uri.clone(), root.name.clone()))
        .collect()
}

/// The text of the client's model's answer to `sampling/createMessage`, its
/// text parts joined.
#[allow(
    deprecated,
    reason = "MCP sampling (SEP-2577 deprecates it; older peers use it)"
)]
pub(crate) fn sampled_text(answer: &rmcp::model::CreateMessageResult) -> String {
    answer
        .message
        .content
        .iter()
        .filter_map(|part| part.as_text().map(|t| t.text.as_str()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_standard_formats_are_sent() {
        // The hardening issue: schemars' formats reached MCP clients, which
        // report them as unknown.
        let mut schema = json_object(json!({
            "type": "object",
            "properties": {
                "count": { "type": "integer", "format": "uint32", "minimum": 0 },
                "when": { "type": "string", "format": "date-time" },
                "format": { "type": "number", "format": "double", "default": { "format": "uint8" } },
                "list": { "type": "array", "items": { "type": "integer", "format": "int64" } },
                "either": { "anyOf": [{ "type": "integer", "format": "uint16" }, { "type": "null" }] }
            },
            "$defs": { "Id": { "type": "string", "format": "uuid" } }
        }));
        standard_formats_only(&mut schema);
        assert_eq!(
            Value::Object(schema),
            json!({
                "type": "object",
                "properties": {
                    "count": { "type": "integer", "minimum": 0 },
                    "when": { "type": "string", "format": "date-time" },
                    "format": { "type": "number", "default": { "format": "uint8" } },
                    "list": { "type": "array", "items": { "type": "integer" } },
                    "either": { "anyOf": [{ "type": "integer" }, { "type": "null" }] }
                },
                "$defs": { "Id": { "type": "string", "format": "uuid" } }
            })
        );
    }

    #[test]
    fn object_output_schemas_are_kept_and_others_wrapped_with_their_defs() {
        let object = json!({ "type": "object", "properties": { "a": { "type": "string" } } });
        assert_eq!(output_schema(&object), (json_object(object.clone()), false));

        let array = json!({
            "type": "array",
            "items": { "$ref": "#/$defs/Item" },
            "$defs": { "Item": { "type": "string" } }
        });
        let (wrapped, was_wrapped) = output_schema(&array);
        assert!(was_wrapped);
        assert_eq!(
            Value::Object(wrapped),
            json!({
                "$defs": { "Item": { "type": "string" } },
                "type": "object",
                "properties": { "result": { "type": "array", "items": { "$ref": "#/$defs/Item" } } },
                "required": ["result"]
            })
        );
    }

    #[test]
    fn model_output_parts_map_to_mcp_content() {
        let out = ModelOutput::Content(vec![
            ContentPart::text("chart"),
            ContentPart::ImageData {
                data: "AAAA".into(),
                media_type: "image/png".into(),
            },
            ContentPart::image_url("data:image/gif;base64,R0lG"),
            ContentPart::image_url("https://example.com/c.png?x=1"),
            ContentPart::FileData {
                data: "UklG".into(),
                media_type: "audio/wav".into(),
                filename: None,
            },
            ContentPart::FileData {
                data: "JVBE".into(),
                media_type: "application/pdf".into(),
                filename: Some("report.pdf".into()),
            },
        ]);
        let content = serde_json::to_value(model_output_content(&out)).unwrap();
        assert_eq!(
            content,
            json!([
                { "type": "text", "text": "chart" },
                { "type": "image", "data": "AAAA", "mimeType": "image/png" },
                { "type": "image", "data": "R0lG", "mimeType": "image/gif" },
                { "type": "resource_link", "uri": "https://example.com/c.png?x=1", "name": "c.png" },
                { "type": "audio", "data": "UklG", "mimeType": "audio/wav" },
                { "type": "resource", "resource": { "uri": "attachment:///report.pdf", "mimeType": "application/pdf", "blob": "JVBE" } }
            ])
        );
    }

    #[test]
    fn remote_results_become_outputs_or_errors() {
        let error = CallToolResult::error(vec![ContentBlock::text("location: Required")]);
        assert_eq!(
            remote_output(error).unwrap_err().message(),
            "location: Required"
        );
        let mut structured = CallToolResult::success(vec![ContentBlock::text("{}")]);
        structured.structured_content = Some(json!({ "a": 1 }));
        assert_eq!(remote_output(structured).unwrap(), json!({ "a": 1 }));
        let text = CallToolResult::success(vec![ContentBlock::text("a"), ContentBlock::text("b")]);
        assert_eq!(remote_output(text).unwrap(), json!("a\nb"));
        let image = CallToolResult::success(vec![ContentBlock::image("AAAA", "image/png")]);
        let output = remote_output(image).unwrap();
        assert_eq!(
            content_model_output(&output),
            ModelOutput::Content(vec![ContentPart::ImageData {
                data: "AAAA".into(),
                media_type: "image/png".into()
            }])
        );
    }

    #[test]
    fn remote_names_become_valid_ids() {
        assert_eq!(local_id("", "weather-tool"), "weather-tool");
        assert_eq!(local_id("remote_", "fs.read file"), "remote_fs_read_file");
        assert_eq!(local_id("", &"x".repeat(100)).len(), 64);
    }
}
