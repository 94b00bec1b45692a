//! A reviewer's edit of a call's input before approving it: the fields a
//! tool declares editable ([`ToolBuilder::editable`](crate::ToolBuilder::editable)),
//! the schema of an edit, and an edit applied to an input.

use serde_json::{Map, Value};

use crate::Excerpt;
use crate::error::{ModelError, listed_names};
use crate::input::{MAX_NESTING, too_deep};
use crate::pipeline::nesting_failure;
use crate::tool::Tool;
use crate::validate::{Issue, MAX_LISTED_ISSUES, Subject, failure, json_type};

impl Tool {
    /// The schema of an edit: the input schema restricted to the editable
    /// fields ([`ToolBuilder::editable`](crate::ToolBuilder::editable)).
    /// Only those properties, in the order declared; `required` the ones
    /// the input requires; no other property allowed
    /// (`additionalProperties: false`); the definitions (`$defs`) the kept
    /// properties reach carried along, the others dropped. `None` when no
    /// field is editable. What an inbox builds its edit form from.
    ///
    /// Only the properties are kept: a rule of the input schema across
    /// fields (`dependentRequired`, `if`/`then`) is checked when the edited
    /// input is admitted ([`Tool::admit`]), as any input is.
    ///
    /// ```
    /// use serde_json::json;
    /// use tool_core::{Tool, ToolError};
    ///
    /// let transfer = Tool::builder("transfer").description("Move money")
    ///     .input_schema(json!({
    ///         "type": "object",
    ///         "properties": { "to": { "type": "string" }, "amount": { "type": "integer" }, "memo": { "type": "string" } },
    ///         "required": ["to", "amount"]
    ///     }))
    ///     .require_approval(true)
    ///     .editable(["amount", "memo"])
    ///     .execute(|input, _ctx| async move { Ok::<_, ToolError>(input) })
    ///     .build().unwrap();
    /// assert_eq!(transfer.edit_schema(), Some(&json!({
    ///     "type": "object",
    ///     "properties": { "amount": { "type": "integer" }, "memo": { "type": "string" } },
    ///     "required": ["amount"],
    ///     "additionalProperties": false
    /// })));
    /// ```
    pub fn edit_schema(&self) -> Option<&Value> {
        self.inner.edit_schema.as_ref()
    }

    /// The call's `input` with the fields of `edit` replaced: `edit` is an
    /// object whose keys are editable fields, and each value replaces that
    /// field (a field it does not name keeps its value). Only the shape of
    /// the edit is checked here: admit the result ([`Tool::admit`]) to
    /// validate it as any input, or use [`Tool::validate_edit`] to check the
    /// edited fields against the [edit schema](Tool::edit_schema) first.
    ///
    /// # Errors
    ///
    /// An [`ErrorKind::InputValidation`](crate::ErrorKind::InputValidation)
    /// error for a person or a model to read, with its
    /// [`validation_errors`](ModelError::validation_errors) located per
    /// field: an edit that is not an object (at the root), a key that is
    /// not an editable field (at that key, naming the editable fields), an
    /// edit nested too deep, a tool with no editable field, or an input
    /// that is not an object. Keys from the edit are quoted as an
    /// [`Excerpt`], and at most 20 are listed.
    ///
    /// ```
    /// use serde_json::json;
    /// use tool_core::{Tool, ToolError};
    ///
    /// let transfer = Tool::builder("transfer").description("Move money")
    ///     .input_schema(json!({
    ///         "type": "object",
    ///         "properties": { "to": { "type": "string" }, "amount": { "type": "integer" }, "memo": { "type": "string" } }
    ///     }))
    ///     .require_approval(true)
    ///     .editable(["amount", "memo"])
    ///     .execute(|input, _ctx| async move { Ok::<_, ToolError>(input) })
    ///     .build().unwrap();
    /// let input = json!({ "to": "ann", "amount": 500, "memo": "rent" });
    /// let edited = transfer.apply_edit(&input, &json!({ "amount": 50 })).unwrap();
    /// assert_eq!(edited, json!({ "to": "ann", "amount": 50, "memo": "rent" }));
    ///
    /// let refused = transfer.apply_edit(&input, &json!({ "to": "mallory" })).unwrap_err();
    /// assert!(refused.message().contains("- to: Not an editable field; the editable fields are: amount, memo"));
    /// assert_eq!(refused.validation_errors().unwrap().fields["to"].errors.len(), 1);
    /// ```
    pub fn apply_edit(&self, input: &Value, edit: &Value) -> Result<Value, ModelError> {
        let id = &self.inner.id;
        let fields = &self.inner.definition.editable;
        let refuse = |issues: Vec<Issue>| failure(Subject::Edit, id, &issues, Some(edit));
        if fields.is_empty() {
            return Err(refuse(vec![Issue {
                path: Vec::new(),
                message: "This tool has no editable fields: its input cannot be edited".to_owned(),
            }]));
        }
        if let Some(path) = too_deep(edit, MAX_NESTING) {
            return Err(nesting_failure(Subject::Edit, id, path, edit));
        }
        let Value::Object(changes) = edit else {
            return Err(refuse(vec![Issue {
                path: Vec::new(),
                message: format!(
                    "Expected an object of editable fields ({}), received {}",
                    listed_names(fields),
                    json_type(edit)
                ),
            }]));
        };
        let outside: Vec<Issue> = changes
            .keys()
            .filter(|key| !fields.contains(key))
            .take(MAX_LISTED_ISSUES + 1)
            .map(|key| Issue {
                path: vec![Excerpt::of(key).to_string()],
                message: format!(
                    "Not an editable field; the editable fields are: {}",
                    listed_names(fields)
                ),
            })
            .collect();
        if !outside.is_empty() {
            return Err(refuse(outside));
        }
        let Value::Object(input) = input else {
            return Err(refuse(vec![Issue {
                path: Vec::new(),
                message: format!(
                    "The call's input is {}, not an object: it has no fields to edit",
                    json_type(input)
                ),
            }]));
        };
        let mut edited = input.clone();
        for (field, value) in changes {
            edited.insert(field.clone(), value.clone());
        }
        Ok(Value::Object(edited))
    }

    /// [`apply_edit`](Self::apply_edit), then the editable fields of the
    /// result checked against the [edit schema](Self::edit_schema), with
    /// the same errors as input validation: one `- field: message` line
    /// each, and [`validation_errors`](ModelError::validation_errors)
    /// located per field, for an inbox to show next to each. Returns the
    /// edited input, still to be admitted ([`Tool::admit`]) as any input
    /// (which checks it against the whole input schema).
    ///
    /// The edited fields are checked, not the edit alone: an edit may name
    /// only the fields it changes, and a required editable field it leaves
    /// out keeps the call's value.
    ///
    /// # Errors
    ///
    /// What [`apply_edit`](Self::apply_edit) refuses, an edited field the
    /// edit schema refuses ([`ErrorKind::InputValidation`](crate::ErrorKind::InputValidation)),
    /// or the tool's configuration error.
    ///
    /// ```
    /// use serde_json::json;
    /// use tool_core::{ErrorKind, Tool, ToolError};
    ///
    /// let transfer = Tool::builder("transfer").description("Move money")
    ///     .input_schema(json!({
    ///         "type": "object",
    ///         "properties": { "to": { "type": "string" }, "amount": { "type": "integer", "minimum": 1 } },
    ///         "required": ["to", "amount"]
    ///     }))
    ///     .require_approval(true)
    ///     .editable(["amount"])
    ///     .execute(|input, _ctx| async move { Ok::<_, ToolError>(input) })
    ///     .build().unwrap();
    /// let input = json!({ "to": "ann", "amount": 500 });
    /// assert_eq!(transfer.validate_edit(&input, &json!({ "amount": 50 })), Ok(json!({ "to": "ann", "amount": 50 })));
    ///
    /// let refused = transfer.validate_edit(&input, &json!({ "amount": 0 })).unwrap_err();
    /// assert_eq!(refused.kind(), ErrorKind::InputValidation);
    /// assert_eq!(refused.validation_errors().unwrap().fields["amount"].errors, ["Number must be greater than or equal to 1"]);
    /// ```
    pub fn validate_edit(&self, input: &Value, edit: &Value) -> Result<Value, ModelError> {
        if self.config_error().is_some() {
            return Err(self.configuration_error());
        }
        let edited = self.apply_edit(input, edit)?;
        let Some(schema) = self.inner.edit_schema() else {
            return Err(self.configuration_error());
        };
        let editable: Map<String, Value> = self
            .inner
            .definition
            .editable
            .iter()
            .filter_map(|field| Some((field.clone(), edited.get(field)?.clone())))
            .collect();
        let editable = Value::Object(editable);
        if schema.is_valid(&editable) {
            return Ok(edited);
        }
        Err(failure(
            Subject::Edit,
            &self.inner.id,
            &schema.issues(&editable),
            Some(edit),
        ))
    }
}
