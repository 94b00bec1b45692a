//! The elicitation forms of a paused call: asking the user to approve a
//! call, or to give the resume data a suspended call waits for, and reading
//! the answer back.
//!
//! MCP form elicitation takes only flat objects of primitive properties
//! (string, number, integer, boolean, string enums: untitled, titled with
//! `oneOf`, legacy `enumNames`, and multi-select arrays of either). A resume schema of
//! that shape is asked for as is; a primitive resume schema is asked for as
//! the single property `value` and unwrapped from the answer; anything else
//! (nested objects, arrays, unions, no resume schema) cannot be elicited,
//! and the call stays pending instead. A tool's own questions
//! (`ToolContext::mcp`) follow the same rules.

use rmcp::model::{ElicitResult, ElicitationAction, ElicitationSchema};
use serde_json::{Map, Value, json};

use crate::convert::value_text;

/// The `inputRequests` key of an approval question.
pub(crate) const APPROVAL_KEY: &str = "approval";
/// The `inputRequests` key of a resume-data question.
pub(crate) const RESUME_KEY: &str = "resume";

/// The property a primitive resume schema is asked for as.
const VALUE_PROPERTY: &str = "value";

/// Longest argument or payload dump shown in an elicitation message.
const MAX_DUMP: usize = 2000;

/// A form to show the user, and how to read its answer.
#[derive(Debug, Clone)]
pub(crate) struct Form {
    pub(crate) message: String,
    pub(crate) schema: ElicitationSchema,
    /// The resume schema was primitive: the answer is under `value`.
    wrapped: bool,
}

/// What the user answered to an approval form.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ApprovalAnswer {
    /// Run the call.
    Approve,
    /// Do not run it; the reason, when given, is what the model reads.
    Decline(Option<String>),
    /// No decision (the form was dismissed): the call stays pending.
    Dismissed,
}

/// What the user answered to a resume form.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Answer {
    /// The resume data.
    Data(Value),
    /// The user did not give it (declined or dismissed): the call stays suspended.
    Refused(ElicitationAction),
}

/// The form asking whether a call may run.
pub(crate) fn approval_form(title: &str, tool_id: &str, input: &Value) -> Form {
    let schema = json!({
        "type": "object",
        "properties": {
            "approved": {
                "type": "boolean",
                "title": "Approve",
                "description": "Run the tool call with these arguments",
                "default": true
            },
            "reason": {
                "type": "string",
                "title": "Reason",
                "description": "Why not (the model reads this when you decline)"
            }
        },
        "required": ["approved"]
    });
    let name = if title == tool_id {
        format!("\"{tool_id}\"")
    } else {
        format!("\"{title}\" ({tool_id})")
    };
    Form {
        message: format!("Allow {name} to run with these arguments?\n{}", dump(input)),
        schema: elicitation_schema(schema)
            .unwrap_or_else(|| ElicitationSchema::new(Default::default())),
        wrapped: false,
    }
}

/// The form asking for the resume data of a suspended call: the suspend
/// payload is the message (a string as is, anything else as JSON), the
/// resume schema the requested schema. `None` when the resume schema is not
/// a flat primitive schema. `note` (why an earlier answer was rejected)
/// goes before the message.
pub(crate) fn resume_form(
    payload: &Value,
    resume_schema: Option<&Value>,
    note: Option<&str>,
) -> Option<Form> {
    let (schema, wrapped) = flat_schema(resume_schema?)?;
    let schema = elicitation_schema(schema)?;
    let message = match note {
        Some(note) => format!("{note}\n\n{}", dump(payload)),
        None => dump(payload),
    };
    Some(Form {
        message,
        schema,
        wrapped,
    })
}

/// Why a client cannot be asked `what`: it did not declare it, on
/// `protocol` (the version its requests speak), in words for the tool.
pub(crate) fn undeclared(what: &str, protocol: &str) -> String {
    format!(
        "the client did not declare {what} in its capabilities (protocol {protocol}), so it cannot be asked"
    )
}

/// The form a tool asks for itself (`ToolContext::mcp().elicit(..)`), for a
/// client that may or may not take forms (`forms`), on `protocol`: why it
/// cannot be asked otherwise, in words for the tool.
pub(crate) fn tool_form_for(
    forms: bool,
    protocol: &str,
    message: String,
    schema: &Value,
) -> Result<Form, String> {
    if !forms {
        return Err(undeclared("form elicitation (`elicitation`)", protocol));
    }
    tool_form(message, schema).ok_or_else(|| {
        "MCP elicitation asks for flat forms: an object of string, number, integer, boolean or string-enum properties".to_owned()
    })
}

/// The form a tool asks for itself (`ToolContext::mcp().elicit(..)`): its
/// schema made flat as resume schemas are. `None` when it cannot be.
fn tool_form(message: String, schema: &Value) -> Option<Form> {
    let (schema, wrapped) = flat_schema(schema)?;
    Some(Form {
        message,
        schema: elicitation_schema(schema)?,
        wrapped,
    })
}

impl Form {
    /// Reads the answer to an approval form.
    pub(crate) fn decision(result: &ElicitResult) -> ApprovalAnswer {
        match result.action {
            ElicitationAction::Accept => {
                let content = result.content.as_ref();
                let approved = content
                    .and_then(|c| c.get("approved"))
                    .and_then(Value::as_bool)
                    .unwrap_or(true);
                if approved {
                    ApprovalAnswer::Approve
                } else {
                    let reason = content
                        .and_then(|c| c.get("reason"))
                        .and_then(Value::as_str)
                        .map(str::trim)
                        .filter(|r| !r.is_empty())
                        .map(str::to_owned);
                    ApprovalAnswer::Decline(reason)
                }
            }
            ElicitationAction::Decline => ApprovalAnswer::Decline(None),
            _ => ApprovalAnswer::Dismissed,
        }
    }

    /// Reads the answer to a resume form.
    pub(crate) fn answer(&self, result: &ElicitResult) -> Answer {
        match result.action {
            ElicitationAction::Accept => {
                let content = result.content.clone().unwrap_or_else(|| json!({}));
                if self.wrapped {
                    Answer::Data(content.get(VALUE_PROPERTY).cloned().unwrap_or(Value::Null))
                } else {
                    Answer::Data(content)
                }
            }
            ref action => Answer::Refused(action.clone()),
        }
    }
}

fn elicitation_schema(schema: Value) -> Option<ElicitationSchema> {
    match schema {
        Value::Object(map) => ElicitationSchema::from_json_schema(map).ok(),
        _ => None,
    }
}

fn dump(value: &Value) -> String {
    let text = value_text(value);
    if text.chars().count() <= MAX_DUMP {
        return text;
    }
    let cut: String = text.chars().take(MAX_DUMP).collect();
    format!("{cut}... (truncated)")
}

/// A resume schema as a flat form schema: an object of primitive
/// properties (each cleaned to the keywords elicitation allows; a nullable
/// property becomes optional), or a primitive wrapped as `value`.
fn flat_schema(schema: &Value) -> Option<(Value, bool)> {
    let root = schema;
    if let Some(primitive) = primitive(root, root) {
        let (property, _) = primitive;
        let schema = json!({
            "type": "object",
            "properties": { VALUE_PROPERTY: property },
            "required": [VALUE_PROPERTY]
        });
        return Some((schema, true));
    }
    if root.get("type").and_then(Value::as_str) != Some("object") {
        return None;
    }
    let properties = root.get("properties")?.as_object()?;
    let required: Vec<&str> = root
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut flat = Map::new();
    let mut still_required = Vec::new();
    for (name, property) in properties {
        let (property, nullable) = primitive(root, property)?;
        if required.contains(&name.as_str()) && !nullable {
            still_required.push(Value::String(name.clone()));
        }
        flat.insert(name.clone(), property);
    }
    let mut out = Map::new();
    out.insert("type".to_owned(), json!("object"));
    for key in ["title", "description"] {
        if let Some(value) = root.get(key).filter(|v| v.is_string()) {
            out.insert(key.to_owned(), value.clone());
        }
    }
    out.insert("properties".to_owned(), Value::Object(flat));
    if !still_required.is_empty() {
        out.insert("required".to_owned(), Value::Array(still_required));
    }
    Some((Value::Object(out), false))
}

/// A primitive property schema cleaned to what elicitation allows, and
/// whether it admits `null`. Follows one local `$ref`.
fn primitive(root: &Value, schema: &Value) -> Option<(Value, bool)> {
    let schema = match schema.get("$ref").and_then(Value::as_str) {
        Some(reference) => root.pointer(reference.strip_prefix('#')?)?,
        None => schema,
    };
    let (kind, nullable) = match schema.get("type")? {
        Value::String(kind) => (kind.as_str(), false),
        Value::Array(kinds) => {
            let kinds: Vec<&str> = kinds.iter().filter_map(Value::as_str).collect();
            match kinds.as_slice() {
                [kind, "null"] | ["null", kind] => (*kind, true),
                [kind] => (*kind, false),
                _ => return None,
            }
        }
        _ => return None,
    };
    if kind == "array" {
        return multi_select(root, schema).map(|schema| (schema, nullable));
    }
    if !matches!(kind, "string" | "number" | "integer" | "boolean") {
        return None;
    }
    let mut out = Map::new();
    out.insert("type".to_owned(), json!(kind));
    let allowed: &[&str] = match kind {
        "string" => &[
            "title",
            "description",
            "default",
            "enum",
            "enumNames",
            "oneOf",
            "minLength",
            "maxLength",
            "format",
        ],
        "number" | "integer" => &["title", "description", "default", "minimum", "maximum"],
        _ => &["title", "description", "default"],
    };
    for key in allowed {
        if let Some(value) = schema.get(*key) {
            if *key == "format"
                && !matches!(value.as_str(), Some("email" | "uri" | "date" | "date-time"))
            {
                continue;
            }
            if matches!(*key, "enum" | "enumNames") {
                out.insert((*key).to_owned(), Value::Array(strings(value)?));
                continue;
            }
            if *key == "oneOf" {
                out.insert("oneOf".to_owned(), Value::Array(titled(value)?));
                continue;
            }
            out.insert((*key).to_owned(), value.clone());
        }
    }
    Some((Value::Object(out), nullable))
}

/// A multi-select property: an array of strings from `items.enum`, or of
/// titled options from `items.anyOf` (`const` and `title` each).
fn multi_select(root: &Value, schema: &Value) -> Option<Value> {
    let items = schema.get("items")?;
    let items = match items.get("$ref").and_then(Value::as_str) {
        Some(reference) => root.pointer(reference.strip_prefix('#')?)?,
        None => items,
    };
    let items = match (items.get("enum"), items.get("anyOf")) {
        (Some(values), None) if items.get("type").is_none_or(|t| t == "string") => {
            json!({ "type": "string", "enum": strings(values)? })
        }
        (None, Some(options)) => json!({ "anyOf": titled(options)? }),
        _ => return None,
    };
    let mut out = Map::new();
    out.insert("type".to_owned(), json!("array"));
    for key in ["title", "description", "default", "minItems", "maxItems"] {
        if let Some(value) = schema.get(key) {
            out.insert(key.to_owned(), value.clone());
        }
    }
    out.insert("items".to_owned(), items);
    Some(Value::Object(out))
}

/// The string values of an `enum` (or `enumNames`) array.
fn strings(values: &Value) -> Option<Vec<Value>> {
    Some(
        values
            .as_array()?
            .iter()
            .filter(|v| v.is_string())
            .cloned()
            .collect(),
    )
}

/// Titled options (`oneOf` or `anyOf` of `{"const": .., "title": ..}`),
/// each cleaned to those two; `None` when one is not such an option.
fn titled(options: &Value) -> Option<Vec<Value>> {
    options
        .as_array()?
        .iter()
        .map(|option| {
            let value = option.get("const")?.as_str()?;
            let title = option.get("title")?.as_str()?;
            Some(json!({ "const": value, "title": title }))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema_json(form: &Form) -> Value {
        serde_json::to_value(&form.schema).unwrap()
    }

    #[test]
    fn flat_object_resume_schemas_are_asked_for_as_they_are() {
        let resume = json!({
            "title": "Answer",
            "type": "object",
            "properties": {
                "confirmed": { "type": "boolean", "description": "Go ahead?" },
                "note": { "type": ["string", "null"] },
                "size": { "$ref": "#/$defs/Size" }
            },
            "required": ["confirmed", "note", "size"],
            "$defs": { "Size": { "type": "string", "enum": ["S", "M"] } }
        });
        let form = resume_form(&json!("Book it?"), Some(&resume), None).unwrap();
        assert_eq!(form.message, "Book it?");
        assert_eq!(
            schema_json(&form),
            json!({
                "type": "object",
                "title": "Answer",
                "properties": {
                    "confirmed": { "type": "boolean", "description": "Go ahead?" },
                    "note": { "type": "string" },
                    "size": { "type": "string", "enum": ["S", "M"] }
                },
                "required": ["confirmed", "size"]
            })
        );
        let accepted =
            ElicitResult::new(ElicitationAction::Accept).with_content(json!({ "confirmed": true }));
        assert_eq!(
            form.answer(&accepted),
            Answer::Data(json!({ "confirmed": true }))
        );
    }

    #[test]
    fn primitive_resume_schemas_are_wrapped_and_unwrapped() {
        let form = resume_form(
            &json!({ "q": 1 }),
            Some(&json!({ "type": "boolean" })),
            Some("try again"),
        )
        .unwrap();
        assert_eq!(form.message, "try again\n\n{\"q\":1}");
        let accepted =
            ElicitResult::new(ElicitationAction::Accept).with_content(json!({ "value": false }));
        assert_eq!(form.answer(&accepted), Answer::Data(json!(false)));
        let declined = ElicitResult::new(ElicitationAction::Decline);
        assert_eq!(
            form.answer(&declined),
            Answer::Refused(ElicitationAction::Decline)
        );
    }

    #[test]
    fn every_enum_form_of_sep_1330_is_asked_for() {
        let options = json!([{ "const": "a", "title": "A" }, { "const": "b", "title": "B" }]);
        let schema = json!({
            "type": "object",
            "properties": {
                "untitled": { "type": "string", "enum": ["a", "b"] },
                "titled": { "type": "string", "oneOf": options },
                "legacy": { "type": "string", "enum": ["a", "b"], "enumNames": ["A", "B"] },
                "untitledMulti": { "type": "array", "items": { "$ref": "#/$defs/Ab" }, "maxItems": 2 },
                "titledMulti": { "type": "array", "items": { "anyOf": options } }
            },
            "$defs": { "Ab": { "description": "A or B", "type": "string", "enum": ["a", "b"] } }
        });
        let form = tool_form("Pick".into(), &schema).unwrap();
        assert_eq!(
            schema_json(&form)["properties"],
            json!({
                "untitled": { "type": "string", "enum": ["a", "b"] },
                "titled": { "type": "string", "oneOf": options },
                "legacy": { "type": "string", "enum": ["a", "b"], "enumNames": ["A", "B"] },
                "untitledMulti": { "type": "array", "items": { "type": "string", "enum": ["a", "b"] }, "maxItems": 2 },
                "titledMulti": { "type": "array", "items": { "anyOf": options } }
            })
        );
        let not_options = json!({ "type": "object", "properties": {
            "x": { "type": "array", "items": { "type": "object" } }
        } });
        assert!(tool_form("Pick".into(), &not_options).is_none());
    }

    #[test]
    fn nested_or_missing_resume_schemas_cannot_be_elicited() {
        let nested = json!({ "type": "object", "properties": { "a": { "type": "object" } } });
        assert!(resume_form(&json!(null), Some(&nested), None).is_none());
        let array = json!({ "type": "array" });
        assert!(resume_form(&json!(null), Some(&array), None).is_none());
        assert!(resume_form(&json!(null), None, None).is_none());
    }

    #[test]
    fn approval_answers() {
        let accept =
            ElicitResult::new(ElicitationAction::Accept).with_content(json!({ "approved": true }));
        assert_eq!(Form::decision(&accept), ApprovalAnswer::Approve);
        let no = ElicitResult::new(ElicitationAction::Accept)
            .with_content(json!({ "approved": false, "reason": " too expensive " }));
        assert_eq!(
            Form::decision(&no),
            ApprovalAnswer::Decline(Some("too expensive".into()))
        );
        assert_eq!(
            Form::decision(&ElicitResult::new(ElicitationAction::Decline)),
            ApprovalAnswer::Decline(None)
        );
        assert_eq!(
            Form::decision(&ElicitResult::new(ElicitationAction::Cancel)),
            ApprovalAnswer::Dismissed
        );
        let form = approval_form("Delete File", "delete-file", &json!({ "path": "/tmp/x" }));
        assert_eq!(
            form.message,
            "Allow \"Delete File\" (delete-file) to run with these arguments?\n{\"path\":\"/tmp/x\"}"
        );
    }
}
