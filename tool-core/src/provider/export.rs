//! [`Export`]: one tool's definition for one provider, and what maps the
//! model's arguments back to the tool's own schema.

use std::sync::OnceLock;

use serde_json::{Map, Value, json};

use super::error::ExportError;
use super::{Provider, anthropic, gemini, openai};
use crate::definition::ToolDefinition;
use crate::input::{RawInput, parse_text};
use crate::strict::{NullMap, StrictOptions};
use crate::tool::Tool;

/// A tool exported for one provider: the definition to send, and how to turn
/// the arguments the model sends back into what the tool's schema expects.
///
/// Get one with [`Tool::export`](crate::Tool::export) (converted once per
/// tool and provider, then cached) or [`Export::from_definition`].
///
/// Under OpenAI strict mode every property is required, and a property that
/// was optional is made nullable; the model then sends `null` for "not
/// given". [`Export::restore_input`] removes those `null`s again, so the tool
/// sees what its Rust type expects. For the other providers and without
/// strict mode the arguments need no change, and restoring is a no-op.
///
/// ```
/// use serde_json::json;
/// use tool_core::provider::Provider;
/// use tool_core::{RawInput, Tool, ToolError};
///
/// let tool = Tool::builder("search")
///     .description("Search the docs")
///     .strict(true)
///     .input_schema(json!({
///         "type": "object",
///         "properties": { "query": { "type": "string" }, "limit": { "type": "integer" } },
///         "required": ["query"]
///     }))
///     .execute(|input, _ctx| async move { Ok::<_, ToolError>(input) })
///     .build()
///     .unwrap();
///
/// let export = tool.export(Provider::OpenAiChat).unwrap();
/// assert_eq!(export.definition()["function"]["strict"], true);
/// assert_eq!(export.definition()["function"]["parameters"]["required"], json!(["query", "limit"]));
///
/// // The model must send every key; `null` stands for "not given".
/// let args = export.restore_input(r#"{"query": "rust", "limit": null}"#);
/// assert_eq!(args, RawInput::Json(json!({ "query": "rust" })));
/// ```
#[derive(Debug, Clone)]
pub struct Export {
    provider: Provider,
    name: String,
    strict: bool,
    definition: Value,
    restore: NullMap,
}

impl Export {
    /// Converts a tool definition for `provider`, without caching (use
    /// [`Tool::export`](crate::Tool::export) for the cached form).
    ///
    /// `provider_options[provider.options_key()]` must be a JSON object; its
    /// `strict` (a boolean) overrides the tool's flag for this provider, its
    /// `description` replaces the description, and its other entries are
    /// merged into the definition (the object that holds `name`). `name`,
    /// `type` and the schema key cannot be overridden.
    ///
    /// # Errors
    ///
    /// [`ExportError`] naming the provider and tool: a schema the provider
    /// cannot take ([`ExportError::Strict`] for OpenAI strict mode with the
    /// JSON path and rule, [`ExportError::Schema`] for the others), a name it
    /// refuses, or unusable provider options.
    ///
    /// ```
    /// use serde_json::json;
    /// use tool_core::provider::{Export, Provider};
    /// use tool_core::{Tool, ToolError};
    ///
    /// let tool = Tool::builder("lookup")
    ///     .description("Look a word up")
    ///     .input_schema(json!({ "type": "object", "properties": { "word": { "type": "string" } } }))
    ///     .execute(|input, _ctx| async move { Ok::<_, ToolError>(input) })
    ///     .build()
    ///     .unwrap();
    /// let export = Export::from_definition(tool.definition(), Provider::Gemini).unwrap();
    /// assert_eq!(export.definition()["parameters"]["properties"]["word"]["type"], "string");
    /// ```
    pub fn from_definition(
        definition: &ToolDefinition,
        provider: Provider,
    ) -> Result<Self, ExportError> {
        let name = definition.id.as_str();
        let check = match provider {
            Provider::Gemini => gemini::check_name(name),
            _ => openai::check_name(name),
        };
        check.map_err(|reason| ExportError::InvalidName {
            provider,
            tool: name.to_owned(),
            reason,
        })?;
        let options = Options::read(definition, provider)?;
        let strict = provider.supports_strict() && options.strict.unwrap_or(definition.strict);
        let description = options
            .description
            .clone()
            .unwrap_or_else(|| definition.description.clone());
        let examples = &definition.input_examples;
        let schema_error = |error: super::error::SchemaError| error.for_tool(provider, name);
        let mut restore = NullMap::default();
        let mut tool = Map::new();
        match provider {
            Provider::OpenAiChat | Provider::OpenAiResponses => {
                let parameters = if strict {
                    let converted = StrictOptions::default()
                        .convert(&definition.input_schema)
                        .map_err(|source| ExportError::Strict {
                            provider,
                            tool: name.to_owned(),
                            source,
                        })?;
                    restore = converted.relaxed;
                    converted.schema
                } else {
                    openai::loose_schema(&definition.input_schema).map_err(schema_error)?
                };
                tool.insert("name".into(), json!(name));
                insert_description(&mut tool, with_examples(&description, examples));
                tool.insert("parameters".into(), parameters);
                tool.insert("strict".into(), json!(strict));
            }
            Provider::Anthropic => {
                let input_schema = if strict {
                    anthropic::strict_schema(&definition.input_schema).map_err(schema_error)?
                } else {
                    openai::loose_schema(&definition.input_schema).map_err(schema_error)?
                };
                tool.insert("name".into(), json!(name));
                insert_description(&mut tool, description);
                tool.insert("input_schema".into(), input_schema);
                if strict {
                    tool.insert("strict".into(), json!(true));
                }
                let examples: Vec<Value> =
                    examples.iter().filter(|e| e.is_object()).cloned().collect();
                if !examples.is_empty() {
                    tool.insert("input_examples".into(), Value::Array(examples));
                }
            }
            Provider::Gemini => {
                let parameters =
                    gemini::parameters(&definition.input_schema).map_err(schema_error)?;
                tool.insert("name".into(), json!(name));
                insert_description(&mut tool, with_examples(&description, examples));
                if let Some(parameters) = parameters {
                    tool.insert("parameters".into(), parameters);
                }
            }
        }
        for (key, value) in options.merged {
            tool.insert(key, value);
        }
        let definition = match provider {
            Provider::OpenAiChat => json!({ "type": "function", "function": Value::Object(tool) }),
            Provider::OpenAiResponses => {
                let mut flat = Map::new();
                flat.insert("type".into(), json!("function"));
                flat.extend(tool);
                Value::Object(flat)
            }
            Provider::Anthropic | Provider::Gemini => Value::Object(tool),
        };
        Ok(Export {
            provider,
            name: name.to_owned(),
            strict,
            definition,
            restore,
        })
    }

    /// The provider.
    pub fn provider(&self) -> Provider {
        self.provider
    }

    /// The tool's name, as the model calls it.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether the definition turns on the provider's strict mode.
    pub fn is_strict(&self) -> bool {
        self.strict
    }

    /// The definition to send, as one entry of the request's `tools` (for
    /// Gemini: one of the `functionDeclarations`).
    pub fn definition(&self) -> &Value {
        &self.definition
    }

    /// The input schema as sent (`None` for a Gemini tool without parameters).
    ///
    /// ```
    /// use serde_json::json;
    /// use tool_core::provider::Provider;
    /// use tool_core::{Tool, ToolError};
    ///
    /// let tool = Tool::builder("ping")
    ///     .description("Ping")
    ///     .execute(|input, _ctx| async move { Ok::<_, ToolError>(input) })
    ///     .build()
    ///     .unwrap();
    /// assert_eq!(tool.export(Provider::Anthropic).unwrap().input_schema(), Some(&json!({ "type": "object" })));
    /// assert_eq!(tool.export(Provider::Gemini).unwrap().input_schema(), None);
    /// ```
    pub fn input_schema(&self) -> Option<&Value> {
        match self.provider {
            Provider::OpenAiChat => self.definition.get("function")?.get("parameters"),
            Provider::OpenAiResponses | Provider::Gemini => self.definition.get("parameters"),
            Provider::Anthropic => self.definition.get("input_schema"),
        }
    }

    /// The properties the strict rewrite made nullable (empty when there was
    /// no such rewrite).
    pub fn null_map(&self) -> &NullMap {
        &self.restore
    }

    /// Undoes the strict rewrite on parsed arguments: `null` on a key that was
    /// optional (and not nullable) before becomes an absent key.
    ///
    /// ```
    /// use serde_json::json;
    /// use tool_core::provider::Provider;
    /// use tool_core::{Tool, ToolError};
    ///
    /// let tool = Tool::builder("find")
    ///     .description("Find")
    ///     .strict(true)
    ///     .input_schema(json!({ "type": "object", "properties": { "near": { "type": "string" } } }))
    ///     .execute(|input, _ctx| async move { Ok::<_, ToolError>(input) })
    ///     .build()
    ///     .unwrap();
    /// let mut args = json!({ "near": null });
    /// tool.export(Provider::OpenAiResponses).unwrap().restore_value(&mut args);
    /// assert_eq!(args, json!({}));
    /// ```
    pub fn restore_value(&self, value: &mut Value) {
        self.restore.restore(value);
    }

    /// Parses the model's argument text (as the tool would: empty text is
    /// `{}`, a Markdown code fence is unwrapped) and restores it. Text that
    /// does not parse is returned unchanged, so the tool reports it with its
    /// usual "invalid arguments" error.
    pub fn restore_input(&self, input: impl Into<RawInput>) -> RawInput {
        match input.into() {
            RawInput::Json(mut value) => {
                self.restore_value(&mut value);
                RawInput::Json(value)
            }
            // Every exported schema is an object schema: empty text is `{}`.
            RawInput::Text(text) => match parse_text(&text, true) {
                Some(mut value) => {
                    self.restore_value(&mut value);
                    RawInput::Json(value)
                }
                None => RawInput::Text(text),
            },
        }
    }
}

/// Each provider's export of one tool, converted on first use; kept in the
/// tool with [`Tool::derived`].
#[derive(Default)]
struct Exports {
    openai_chat: OnceLock<Result<Export, ExportError>>,
    openai_responses: OnceLock<Result<Export, ExportError>>,
    anthropic: OnceLock<Result<Export, ExportError>>,
    gemini: OnceLock<Result<Export, ExportError>>,
}

impl Exports {
    fn slot(&self, provider: Provider) -> &OnceLock<Result<Export, ExportError>> {
        match provider {
            Provider::OpenAiChat => &self.openai_chat,
            Provider::OpenAiResponses => &self.openai_responses,
            Provider::Anthropic => &self.anthropic,
            Provider::Gemini => &self.gemini,
        }
    }
}

impl Tool {
    /// The tool's definition for `provider`, with that provider's schema
    /// rules applied. Converted on the first call per provider and cached in
    /// the tool (clones share the cache), so later calls are a lookup.
    ///
    /// # Errors
    ///
    /// [`ExportError`] when the provider cannot take the tool (see
    /// [`Export::from_definition`]); the error is cached too.
    ///
    /// ```
    /// use serde_json::json;
    /// use tool_core::provider::Provider;
    /// use tool_core::{Tool, ToolError};
    ///
    /// let tool = Tool::builder("weather")
    ///     .description("Get the weather")
    ///     .input_schema(json!({ "type": "object", "properties": { "city": { "type": "string" } }, "required": ["city"] }))
    ///     .input_examples([json!({ "city": "Paris" })])
    ///     .execute(|input, _ctx| async move { Ok::<_, ToolError>(input) })
    ///     .build()
    ///     .unwrap();
    ///
    /// let anthropic = tool.export(Provider::Anthropic).unwrap();
    /// assert_eq!(anthropic.definition()["input_examples"], json!([{ "city": "Paris" }]));
    /// let gemini = tool.export(Provider::Gemini).unwrap();
    /// assert_eq!(gemini.definition()["description"], "Get the weather\n\nExamples:\n{\"city\":\"Paris\"}");
    /// // Cached: the same export, not a new conversion.
    /// assert!(std::ptr::eq(gemini, tool.clone().export(Provider::Gemini).unwrap()));
    /// ```
    #[cfg_attr(docsrs, doc(cfg(feature = "provider")))]
    pub fn export(&self, provider: Provider) -> Result<&Export, ExportError> {
        self.derived(Exports::default)
            .slot(provider)
            .get_or_init(|| Export::from_definition(&self.inner.definition, provider))
            .as_ref()
            .map_err(Clone::clone)
    }
}

/// The options of one provider, split into what the exporter reads and what
/// it merges into the definition.
struct Options {
    strict: Option<bool>,
    description: Option<String>,
    merged: Map<String, Value>,
}

impl Options {
    fn read(definition: &ToolDefinition, provider: Provider) -> Result<Self, ExportError> {
        let key = provider.options_key();
        let error = |option: String, reason: &str| ExportError::ProviderOptions {
            provider,
            tool: definition.id.clone(),
            key: option,
            reason: reason.to_owned(),
        };
        let mut options = Options {
            strict: None,
            description: None,
            merged: Map::new(),
        };
        let Some(value) = definition.provider_options.get(key) else {
            return Ok(options);
        };
        let Value::Object(map) = value else {
            return Err(error(key.to_owned(), "must be a JSON object"));
        };
        let reserved: &[&str] = match provider {
            Provider::OpenAiChat => &["name", "parameters", "type", "function"],
            Provider::OpenAiResponses => &["name", "parameters", "type"],
            Provider::Anthropic => &["name", "input_schema"],
            Provider::Gemini => &["name", "parameters", "parametersJsonSchema"],
        };
        for (option, value) in map {
            match option.as_str() {
                "strict" => match value {
                    Value::Bool(strict) => options.strict = Some(*strict),
                    _ => return Err(error(format!("{key}.strict"), "must be a boolean")),
                },
                "description" => match value {
                    Value::String(text) => options.description = Some(text.clone()),
                    _ => return Err(error(format!("{key}.description"), "must be a string")),
                },
                reserved_key if reserved.contains(&reserved_key) => {
                    return Err(error(
                        format!("{key}.{option}"),
                        "is set by the exporter from the tool itself and cannot be overridden",
                    ));
                }
                _ => {
                    options.merged.insert(option.clone(), value.clone());
                }
            }
        }
        Ok(options)
    }
}

fn insert_description(tool: &mut Map<String, Value>, description: String) {
    if !description.trim().is_empty() {
        tool.insert("description".into(), Value::String(description));
    }
}

/// The description with the input examples appended, for providers without
/// a field for them.
fn with_examples(description: &str, examples: &[Value]) -> String {
    if examples.is_empty() {
        return description.to_owned();
    }
    let lines: Vec<String> = examples.iter().map(Value::to_string).collect();
    let examples = format!("Examples:\n{}", lines.join("\n"));
    if description.trim().is_empty() {
        examples
    } else {
        format!("{description}\n\n{examples}")
    }
}
