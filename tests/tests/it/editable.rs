//! `#[tool(require_approval(editable(..)))]` through the public API: the
//! declared fields, the edit schema of generated and whole-struct inputs,
//! an edit applied and run, and a name the macro cannot check caught when
//! the tool is built.

use serde_json::json;
use tool_core::{
    BuildError, CallContext, ErrorKind, RequestContext, Tool, ToolError, ToolSet, tool,
};

/// Transfer money
#[tool(require_approval(editable(amount, memo)))]
async fn transfer(
    /// Who receives it
    to: String,
    /// How much, in cents
    amount: u32,
    /// A note for the recipient
    memo: Option<String>,
) -> Result<String, ToolError> {
    Ok(format!("{amount} to {to}: {}", memo.unwrap_or_default()))
}

#[test]
fn plain_parameters_make_an_edit_schema_of_the_editable_ones() {
    let tool = Tool::from(TransferTool);
    assert!(tool.definition().require_approval);
    assert_eq!(tool.definition().editable, ["amount", "memo"]);
    let input_schema = &tool.definition().input_schema;
    let edit_schema = tool.edit_schema().unwrap();
    assert_eq!(
        edit_schema,
        &json!({
            "type": "object",
            "properties": {
                "amount": input_schema["properties"]["amount"],
                "memo": input_schema["properties"]["memo"],
            },
            "required": ["amount"],
            "additionalProperties": false
        })
    );
    assert_eq!(
        edit_schema["properties"]["amount"]["description"],
        "How much, in cents"
    );
}

#[tokio::test]
async fn an_edited_input_is_admitted_and_runs_like_any_input() {
    let tool = Tool::from(TransferTool);
    let input = json!({ "to": "ann", "amount": 500, "memo": "rent" });
    let edited = tool
        .validate_edit(&input, &json!({ "amount": 50, "memo": null }))
        .unwrap();
    assert_eq!(edited, json!({ "to": "ann", "amount": 50, "memo": null }));
    let outcome = tool
        .admit(edited, CallContext::new("c1"))
        .unwrap()
        .run()
        .await;
    assert_eq!(outcome.output(), Some(&json!("50 to ann: ")));

    // A value the parameter's type refuses, next to its field.
    let refused = tool
        .validate_edit(&input, &json!({ "amount": -5 }))
        .unwrap_err();
    assert_eq!(refused.kind(), ErrorKind::InputValidation);
    assert_eq!(
        refused.validation_errors().unwrap().fields["amount"].errors,
        ["Number must be greater than or equal to 0"]
    );
    // The recipient is not editable.
    let refused = tool
        .apply_edit(&input, &json!({ "to": "mallory" }))
        .unwrap_err();
    assert_eq!(
        refused.validation_errors().unwrap().fields["to"].errors,
        ["Not an editable field; the editable fields are: amount, memo"]
    );
}

fn over_limit(input: &RefundToolInput, _: &RequestContext) -> bool {
    input.amount > 100
}

/// Refund a payment
#[tool(require_approval(policy = over_limit, editable(amount)))]
async fn refund(amount: u32, reason: String) -> String {
    format!("refunded {amount}: {reason}")
}

#[tokio::test]
async fn a_policy_and_editable_fields_together() {
    let tool = Tool::from(RefundTool);
    assert!(tool.has_approval_policy());
    assert!(!tool.definition().require_approval);
    assert_eq!(tool.definition().editable, ["amount"]);
    let rc = RequestContext::new();
    assert!(
        tool.requires_approval(&json!({ "amount": 500, "reason": "x" }), &rc)
            .await
    );
    assert!(
        !tool
            .requires_approval(&json!({ "amount": 5, "reason": "x" }), &rc)
            .await
    );
    assert_eq!(
        tool.edit_schema().unwrap()["properties"]
            .as_object()
            .unwrap()
            .len(),
        1
    );
}

/// Rename a file
#[tool(require_approval(editable(name)))]
async fn rename(
    /// The new name
    name: String,
) -> String {
    name
}

#[test]
fn a_lone_scalar_parameter_is_its_own_editable_field() {
    let tool = Tool::from(RenameTool);
    assert!(tool.config_error().is_none(), "{:?}", tool.config_error());
    assert_eq!(
        tool.edit_schema().unwrap()["properties"]["name"]["description"],
        "The new name"
    );
    assert_eq!(
        tool.apply_edit(&json!({ "name": "a.txt" }), &json!({ "name": "b.txt" })),
        Ok(json!({ "name": "b.txt" }))
    );
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
pub struct Address {
    city: String,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
pub struct Shipment {
    item: String,
    address: Address,
    express: bool,
}

/// Ship an item
#[tool(require_approval(editable(address, express)))]
async fn ship(shipment: Shipment) -> String {
    format!(
        "{} to {}{}",
        shipment.item,
        shipment.address.city,
        if shipment.express { " (express)" } else { "" }
    )
}

#[test]
fn a_struct_inputs_fields_are_editable_with_their_definitions() {
    let tool = Tool::from(ShipTool);
    assert!(tool.config_error().is_none(), "{:?}", tool.config_error());
    let schema = tool.edit_schema().unwrap();
    assert_eq!(schema["required"], json!(["address", "express"]));
    assert_eq!(schema["properties"]["address"]["$ref"], "#/$defs/Address");
    assert_eq!(
        schema["$defs"]["Address"]["properties"]["city"]["type"],
        "string"
    );
    let input = json!({ "item": "tea", "address": { "city": "Oslo" }, "express": false });
    let refused = tool
        .validate_edit(&input, &json!({ "address": { "town": "Bergen" } }))
        .unwrap_err();
    assert_eq!(
        refused.validation_errors().unwrap().fields["address"].fields["city"].errors,
        ["Required"]
    );
}

/// Ship an item, declaring a field the struct does not have
#[tool(require_approval(editable(adress)))]
async fn ship_misdeclared(shipment: Shipment) -> String {
    shipment.item
}

#[tokio::test]
async fn a_struct_field_the_macro_cannot_see_is_checked_when_the_tool_is_built() {
    let tool = Tool::from(ShipMisdeclaredTool);
    let error = tool.config_error().expect("an unknown editable field");
    assert_eq!(
        error,
        &BuildError::UnknownEditableField {
            id: "ship_misdeclared".into(),
            field: "adress".into(),
            properties: ["item", "address", "express"].map(String::from).to_vec(),
        }
    );
    let input = json!({ "item": "tea", "address": { "city": "Oslo" }, "express": false });
    let outcome = tool.execute(input, CallContext::new("c1")).await;
    assert_eq!(outcome.error().unwrap().kind(), ErrorKind::Configuration);
    // A set of tools, and so a runtime, refuses it: the mistake shows when
    // the application starts, not in every call the model makes.
    assert_eq!(
        ToolSet::new([ShipMisdeclaredTool]).unwrap_err(),
        error.clone()
    );
    let refused = tool_runtime::Runtime::builder()
        .tool(ShipMisdeclaredTool)
        .build()
        .unwrap_err();
    assert!(refused.to_string().contains("adress"), "{refused}");
}

/// Doubles a number a reviewer may change, declaring a name it does not have
#[tool(require_approval(editable(amount)))]
async fn double_misdeclared(value: u32) -> u32 {
    value * 2
}

#[test]
fn a_lone_parameters_editable_field_is_checked_when_the_tool_is_built() {
    // One non-object parameter: the input is `{ "value": .. }`, decided from
    // the schema when the tool is built.
    let error = Tool::from(DoubleMisdeclaredTool)
        .config_error()
        .cloned()
        .expect("an unknown editable field");
    assert!(
        matches!(&error, BuildError::UnknownEditableField { field, .. } if field == "amount"),
        "{error:?}"
    );
    assert!(
        tool_runtime::Runtime::builder()
            .tool(DoubleMisdeclaredTool)
            .build()
            .is_err()
    );
}
