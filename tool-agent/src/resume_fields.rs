//! Auto-resume's input fields: the optional `suspendedToolCallId` and
//! `resumeData` a tool that can suspend takes when the agent auto-resumes,
//! added to its exported input schema and taken out of a call's input
//! before the tool sees it.

use serde_json::{Map, Value, json};
use tool_core::ToolDefinition;
use tool_core::provider::{Export, ExportError, Provider};

/// The input fields that route a new call as the resume of a suspended one
/// (auto-resume), stripped before the tool sees its input.
const SUSPENDED_CALL_FIELD: &str = "suspendedToolCallId";
const RESUME_DATA_FIELD: &str = "resumeData";

/// Takes the auto-resume fields out of a call's input: the suspended call
/// it names, and the data (none when absent or null).
pub(crate) fn take_resume_fields(input: &mut Value) -> (Option<String>, Option<Value>) {
    let Some(object) = input.as_object_mut() else {
        return (None, None);
    };
    let suspended = match object.remove(SUSPENDED_CALL_FIELD) {
        Some(Value::String(id)) => Some(id),
        _ => None,
    };
    let data = object.remove(RESUME_DATA_FIELD).filter(|v| !v.is_null());
    (suspended, data)
}

/// `definition`'s export with the auto-resume fields added to its input
/// schema (optional; nullable where strict mode needs every field required).
pub(crate) fn with_resume_fields(
    mut definition: ToolDefinition,
    provider: Provider,
) -> Result<Export, ExportError> {
    let mut resume = definition
        .resume_schema
        .clone()
        .unwrap_or_else(|| json!({}));
    // The resume schema's definitions move to the input schema's root,
    // where its references (`#/$defs/..`) then point.
    if let Some(resume) = resume.as_object_mut() {
        resume.remove("$schema");
        if let (Some(Value::Object(defs)), Some(input)) = (
            resume.remove("$defs"),
            definition.input_schema.as_object_mut(),
        ) {
            let root = input
                .entry("$defs")
                .or_insert_with(|| Value::Object(Map::new()));
            if let Some(root) = root.as_object_mut() {
                for (name, schema) in defs {
                    root.entry(name).or_insert(schema);
                }
            }
        }
    }
    if let Some(properties) = definition
        .input_schema
        .get_mut("properties")
        .and_then(Value::as_object_mut)
    {
        properties.insert(
            SUSPENDED_CALL_FIELD.to_owned(),
            json!({ "type": "string", "description": "The id of the suspended call this call resumes, when the user's message gives the data it waits for." }),
        );
        properties.insert(RESUME_DATA_FIELD.to_owned(), resume);
    } else {
        let mut properties = Map::new();
        properties.insert(SUSPENDED_CALL_FIELD.to_owned(), json!({ "type": "string" }));
        properties.insert(RESUME_DATA_FIELD.to_owned(), resume);
        definition.input_schema = json!({ "type": "object", "properties": properties });
    }
    Export::from_definition(&definition, provider)
}
