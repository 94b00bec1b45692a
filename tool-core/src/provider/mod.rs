//! Exporting tools to model providers, and their results back.
//!
//! One source of truth, [`Tool::definition`](crate::Tool::definition),
//! becomes each provider's tool definition with that provider's schema rules
//! applied:
//!
//! | [`Provider`] | definition | schema rules | `strict` |
//! |---|---|---|---|
//! | [`OpenAiChat`](Provider::OpenAiChat) | `{"type": "function", "function": {name, description, parameters, strict}}` | strict: [`crate::strict`]; else the schema as derived minus noise ([`openai`](self#openai)) | OpenAI strict mode |
//! | [`OpenAiResponses`](Provider::OpenAiResponses) | `{"type": "function", name, description, parameters, strict}` | as Chat | OpenAI strict mode |
//! | [`Anthropic`](Provider::Anthropic) | `{name, description, input_schema, strict?, input_examples?}` | strict: closed objects, optional properties kept, no bounds, `$ref`s inlined, no recursion | Anthropic strict tool use |
//! | [`Gemini`](Provider::Gemini) | `{name, description, parameters?}` (a `functionDeclarations` entry) | OpenAPI subset: `$ref`s inlined, recursion cut, `nullable`, string enums | ignored |
//!
//! Conversions are cached per tool and provider:
//! [`Tool::export`](crate::Tool::export) converts once, later calls are a
//! lookup. A schema a provider cannot take is an
//! [`ExportError`] naming the provider, the tool, the JSON path and the rule,
//! never a silently different schema. Where a provider cannot express a
//! constraint that only narrows what is valid (a numeric bound under
//! Anthropic strict mode, `exclusiveMinimum` for Gemini), it is dropped and
//! noted in the description: the model may send more, and the tool still
//! validates its arguments against the original schema.
//!
//! `provider_options` keyed by `openai`, `anthropic` or `gemini` are merged
//! into that provider's definition (see [`Export::from_definition`]).
//! `input_examples` go to Anthropic's `input_examples` field, and are
//! appended to the description (`Examples:` and one JSON line each) for
//! OpenAI and Gemini, which have no such field.
//!
//! On the way back, [`Export::restore_input`] maps the arguments the model
//! produced under a rewritten schema to the tool's own (under OpenAI strict
//! mode, `null` on a key that was optional means "absent"), and
//! [`Provider::tool_result`] encodes an [`Outcome`](crate::Outcome) as the
//! provider's tool-result message. [`ProviderTools`] bundles it all for the
//! tools of one request.
//!
//! ```
//! use serde_json::json;
//! use tool_core::provider::{Provider, ProviderTools};
//! use tool_core::{tool, CallContext, ToolError};
//!
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! pub struct Search {
//!     /// What to look for
//!     query: String,
//!     /// At most this many hits
//!     limit: Option<u32>,
//! }
//!
//! /// Search the docs
//! #[tool(strict)]
//! async fn search(input: Search) -> Result<Vec<String>, ToolError> {
//!     Ok(vec![format!("{} (limit {:?})", input.query, input.limit)])
//! }
//!
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! let tools = ProviderTools::new(Provider::OpenAiResponses, [SearchTool])?;
//! let request = json!({ "model": "gpt-4.1", "input": "find strict mode", "tools": tools.request_tools() });
//! assert_eq!(request["tools"][0]["parameters"]["required"], json!(["query", "limit"]));
//!
//! // The model answers with a function_call item: name, call_id, arguments.
//! let outcome = tools.execute("search", r#"{"query": "strict", "limit": null}"#, CallContext::new("call_1")).await;
//! assert_eq!(outcome.output(), Some(&json!(["strict (limit None)"])));
//! let item = tools.tool_result("call_1", "search", &outcome);
//! assert_eq!(item["type"], "function_call_output");
//! # Ok::<_, tool_core::provider::ExportError>(()) }).unwrap();
//! ```
//!
//! # OpenAI
//!
//! With `strict`, [`crate::strict`] converts the schema (every object closed,
//! every property required, optional properties nullable and recorded in a
//! [`NullMap`](crate::strict::NullMap), `oneOf` → `anyOf`, unsupported
//! formats removed, `$defs`/`$ref` kept); a schema that cannot be made strict
//! is [`ExportError::Strict`]. Without it the schema goes out as derived,
//! minus the root `$schema` and schemars' numeric `format`s (`int32`,
//! `uint32`, `double`, ...), which are not JSON Schema formats; boolean
//! subschemas are written as objects. The root must be an object schema.
//!
//! # Anthropic
//!
//! Sources: Anthropic's structured outputs guide ("JSON Schema limitations",
//! "Schema complexity limits") and its SDKs' schema transform. Without
//! `strict`, the schema goes out as for OpenAI without strict. With it:
//! objects are closed (`additionalProperties: false`; open maps are errors),
//! optional properties stay optional (Anthropic allows them, so arguments
//! need no restoring), `$ref`s are inlined and recursion is an error,
//! `allOf` is merged, `oneOf` becomes `anyOf`, enums must be primitive;
//! numeric bounds, string lengths, array constraints other than `minItems`
//! 0/1, and formats other than `date-time`, `time`, `date`, `duration`,
//! `email`, `hostname`, `uri`, `ipv4`, `ipv6`, `uuid` move to the description.
//! A request may carry at most 20 strict tools, 24 optional parameters and 16
//! union-typed parameters across its strict schemas: [`ProviderTools`]
//! checks these ([`AnthropicLimits`]) and fails with [`ExportError::Limits`]
//! naming the limit and the tools. `input_examples` is a beta field on
//! Anthropic's side: send the beta header its docs name when you use it.
//!
//! # Gemini
//!
//! Sources: the Gemini API reference for `Schema` and `FunctionDeclaration`.
//! `$ref`s are inlined and a recursive reference is cut to a plain object of
//! the target's type; type arrays and `null` union branches become
//! `nullable: true`; `additionalProperties` and other keywords outside the
//! subset are dropped; only string enums are kept (`const` strings become
//! one-value enums, other enums are noted in the description); formats other
//! than `date-time`/`enum` (strings), `int32`/`int64`, `float`/`double` are
//! dropped. A tool without parameters has no `parameters` at all. `strict` is
//! ignored: Gemini has no strict mode.

mod anthropic;
mod error;
mod export;
mod gemini;
mod media;
mod openai;
mod result;
mod schema;
mod tools;

use std::fmt;

use serde_json::Value;

pub use anthropic::AnthropicLimits;
pub use error::{AnthropicLimit, ExportError, LimitViolation, SchemaRule};
pub use export::Export;
pub use media::{MediaBudget, MediaLimits};
pub use result::{EncodedToolResult, ToolResultBody};
pub use tools::{ProviderTools, ToolCallStream};

use crate::decode::{
    AnthropicDecoder, DecodeError, OpenAiChatDecoder, OpenAiResponsesDecoder, StreamDecoder,
    ToolCallEvent,
};

/// A model provider API a tool can be exported to.
///
/// ```
/// use tool_core::provider::Provider;
///
/// assert_eq!(Provider::Gemini.to_string(), "Gemini");
/// assert_eq!(Provider::OpenAiResponses.options_key(), "openai");
/// assert!(!Provider::Gemini.supports_strict());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Provider {
    /// OpenAI Chat Completions (`/v1/chat/completions`).
    OpenAiChat,
    /// OpenAI Responses (`/v1/responses`).
    OpenAiResponses,
    /// Anthropic Messages (`/v1/messages`).
    Anthropic,
    /// Gemini `generateContent` function declarations.
    Gemini,
}

impl Provider {
    /// Every provider.
    pub const ALL: [Provider; 4] = [
        Provider::OpenAiChat,
        Provider::OpenAiResponses,
        Provider::Anthropic,
        Provider::Gemini,
    ];

    /// The key of this provider's entry in a tool's `provider_options`:
    /// `openai` (both OpenAI APIs), `anthropic` or `gemini`.
    pub fn options_key(&self) -> &'static str {
        match self {
            Provider::OpenAiChat | Provider::OpenAiResponses => "openai",
            Provider::Anthropic => "anthropic",
            Provider::Gemini => "gemini",
        }
    }

    /// Whether the provider has a strict mode for tool arguments.
    pub fn supports_strict(&self) -> bool {
        !matches!(self, Provider::Gemini)
    }

    /// A decoder for this provider's streamed tool calls (none for Gemini,
    /// which streams each call whole in a `functionCall` part).
    ///
    /// ```
    /// use tool_core::provider::Provider;
    /// assert!(Provider::Anthropic.decoder().is_some());
    /// assert!(Provider::Gemini.decoder().is_none());
    /// ```
    pub fn decoder(&self) -> Option<Box<dyn StreamDecoder + Send>> {
        match self {
            Provider::OpenAiChat => Some(Box::new(OpenAiChatDecoder::new())),
            Provider::OpenAiResponses => Some(Box::new(OpenAiResponsesDecoder::new())),
            Provider::Anthropic => Some(Box::new(AnthropicDecoder::new())),
            Provider::Gemini => None,
        }
    }
}

impl fmt::Display for Provider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Provider::OpenAiChat => "OpenAI Chat Completions",
            Provider::OpenAiResponses => "OpenAI Responses",
            Provider::Anthropic => "Anthropic Messages",
            Provider::Gemini => "Gemini",
        })
    }
}

/// A boxed decoder is a decoder (so [`Provider::decoder`] works with
/// [`decode_sse`](crate::decode::decode_sse)).
impl<D: StreamDecoder + ?Sized> StreamDecoder for Box<D> {
    fn decode(&mut self, event: &Value) -> Result<Vec<ToolCallEvent>, DecodeError> {
        (**self).decode(event)
    }

    fn decode_data(&mut self, data: &str) -> Result<Vec<ToolCallEvent>, DecodeError> {
        (**self).decode_data(data)
    }

    fn finish(&mut self) -> Vec<ToolCallEvent> {
        (**self).finish()
    }
}
