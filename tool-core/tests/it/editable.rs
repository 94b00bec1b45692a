//! Editable fields through the public API: the builder's checks, the edit
//! schema of derived and hand-written input schemas, and edits applied and
//! validated. (A typed tool's fields, checked when `Tool::from` builds it,
//! are tested with `#[tool]` in the workspace's tests/tests/it/editable.rs.)

use serde_json::{Value, json};
use tool_core::{BuildError, CallContext, ErrorKind, ModelError, Tool, ToolBuilder, ToolError};

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[allow(dead_code)]
enum Currency {
    Eur,
    Usd,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[allow(dead_code)]
struct Money {
    cents: u32,
    currency: Currency,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[allow(dead_code)]
struct Audit {
    requested_by: String,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[allow(dead_code)]
struct TransferInput {
    to: String,
    amount: Money,
    memo: Option<String>,
    audit: Audit,
}

/// Asserts that `error`'s message contains `text`, showing it if not.
#[track_caller]
fn assert_says(error: &ModelError, text: &str) {
    assert!(error.message().contains(text), "{}", error.message());
}

/// A tool of `input_schema` (derived by schemars, or written by hand)
/// whose `fields` are editable.
fn tool_with(input_schema: Value, fields: &[&str]) -> ToolBuilder {
    Tool::builder("transfer")
        .description("Move money")
        .input_schema(input_schema)
        .require_approval(true)
        .editable(fields.iter().copied())
        .execute(|input, _ctx| async move { Ok::<_, ToolError>(input) })
}

/// The transfer tool, its input schema derived from `TransferInput`.
fn derived_transfer() -> Tool {
    let schema = tool_core::schema_for::<TransferInput>().unwrap();
    tool_with(schema, &["amount", "memo"]).build().unwrap()
}

#[test]
fn a_derived_inputs_edit_schema_keeps_the_definitions_its_fields_reach() {
    let tool = derived_transfer();
    assert_eq!(tool.definition().editable, ["amount", "memo"]);
    let schema = tool.edit_schema().expect("editable fields");
    let properties: Vec<&String> = schema["properties"].as_object().unwrap().keys().collect();
    assert_eq!(properties, ["amount", "memo"]);
    assert_eq!(schema["required"], json!(["amount"]));
    assert_eq!(schema["additionalProperties"], json!(false));
    assert_eq!(schema["properties"]["amount"]["$ref"], "#/$defs/Money");
    let mut definitions: Vec<&String> = schema["$defs"].as_object().unwrap().keys().collect();
    definitions.sort();
    // `Money` for `amount`, `Currency` through `Money`; `Audit` is dropped.
    assert_eq!(definitions, ["Currency", "Money"]);
    assert_eq!(
        schema["$defs"]["Money"],
        tool.definition().input_schema["$defs"]["Money"]
    );
}

#[test]
fn a_nested_edit_is_validated_through_the_kept_definitions() {
    let tool = derived_transfer();
    let input = json!({
        "to": "ann",
        "amount": { "cents": 500, "currency": "Eur" },
        "audit": { "requested_by": "bob" }
    });
    let edit = json!({ "amount": { "cents": 50, "currency": "Yen" } });
    let refused = tool.validate_edit(&input, &edit).unwrap_err();
    assert_eq!(refused.kind(), ErrorKind::InputValidation);
    let errors = refused.validation_errors().unwrap();
    assert_eq!(
        errors.fields["amount"].fields["currency"].errors,
        ["Invalid enum value. Expected 'Eur' | 'Usd', received 'Yen'"]
    );
    assert!(
        refused
            .message()
            .starts_with("Edit validation failed for transfer."),
        "{}",
        refused.message()
    );

    let edit = json!({ "amount": { "cents": 50, "currency": "Usd" }, "memo": "half" });
    let edited = tool.validate_edit(&input, &edit).unwrap();
    assert_eq!(
        edited,
        json!({
            "to": "ann",
            "amount": { "cents": 50, "currency": "Usd" },
            "memo": "half",
            "audit": { "requested_by": "bob" }
        })
    );
    // The edited input is an input like any other.
    assert!(tool.admit(edited, CallContext::new("c1")).is_ok());
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
#[allow(dead_code)]
struct Node {
    name: String,
    children: Vec<Node>,
}

#[test]
fn a_reference_to_a_recursive_inputs_root_points_at_a_copy_of_it() {
    let schema = tool_core::schema_for::<Node>().unwrap();
    let tool = tool_with(schema, &["children"]).build().unwrap();
    let schema = tool.edit_schema().unwrap();
    // schemars refers to a recursive root as `#`; in the edit schema `#`
    // is the edit itself, so the root is copied into `$defs`.
    assert_eq!(
        schema["properties"]["children"]["items"]["$ref"],
        "#/$defs/Node"
    );
    let node = &schema["$defs"]["Node"];
    assert_eq!(
        node["properties"]["children"]["items"]["$ref"],
        "#/$defs/Node"
    );
    assert_eq!(node["required"], json!(["name", "children"]));
    let input = json!({ "name": "root", "children": [] });
    let edit = json!({ "children": [{ "name": "leaf", "children": [{ "children": [] }] }] });
    let refused = tool.validate_edit(&input, &edit).unwrap_err();
    let errors = refused.validation_errors().unwrap();
    assert_eq!(
        errors.fields["children"].fields["0"].fields["children"].fields["0"].fields["name"].errors,
        ["Required"]
    );
    let edit = json!({ "children": [{ "name": "leaf", "children": [] }] });
    assert!(tool.validate_edit(&input, &edit).is_ok());
}

/// A hand-written input schema with a definition, a reference to another
/// property and a definition no editable field reaches.
fn hand_written() -> Value {
    json!({
        "type": "object",
        "properties": {
            "to": { "type": "string" },
            "amount": { "$ref": "#/$defs/positive" },
            "limit": { "$ref": "#/properties/amount" },
            "memo": { "type": "string", "maxLength": 10 },
            "audit": { "$ref": "#/$defs/audit" }
        },
        "required": ["to", "amount", "memo"],
        "$defs": {
            "positive": { "type": "integer", "minimum": 1 },
            "audit": { "type": "object" }
        }
    })
}

fn transfer_builder(fields: &[&str]) -> ToolBuilder {
    tool_with(hand_written(), fields)
}

#[test]
fn a_hand_written_schemas_edit_schema_copies_what_its_fields_reach() {
    let tool = transfer_builder(&["memo", "limit"]).build().unwrap();
    let schema = tool.edit_schema().unwrap();
    assert_eq!(
        schema,
        &json!({
            "type": "object",
            "properties": {
                "memo": { "type": "string", "maxLength": 10 },
                // `#/properties/amount` is no property of the edit: copied.
                "limit": { "$ref": "#/$defs/amount" }
            },
            "required": ["memo"],
            "additionalProperties": false,
            "$defs": {
                "amount": { "$ref": "#/$defs/positive" },
                "positive": { "type": "integer", "minimum": 1 }
            }
        })
    );
    let input = json!({ "to": "ann", "amount": 5, "memo": "rent" });
    let refused = tool
        .validate_edit(
            &input,
            &json!({ "limit": 0, "memo": "far too long a memo" }),
        )
        .unwrap_err();
    let errors = refused.validation_errors().unwrap();
    assert_eq!(
        errors.fields["limit"].errors,
        ["Number must be greater than or equal to 1"]
    );
    assert_eq!(
        errors.fields["memo"].errors,
        ["String must contain at most 10 character(s)"]
    );
}

#[test]
fn no_editable_field_means_no_edit_schema() {
    let tool = transfer_builder(&[]).build().unwrap();
    assert!(tool.definition().editable.is_empty());
    assert_eq!(tool.edit_schema(), None);
    let refused = tool
        .apply_edit(&json!({ "to": "ann" }), &json!({ "to": "bob" }))
        .unwrap_err();
    assert_says(&refused, "has no editable fields");
}

#[test]
fn an_edit_replaces_only_the_fields_it_names() {
    let tool = transfer_builder(&["amount", "memo"]).build().unwrap();
    let input = json!({ "to": "ann", "amount": 500, "memo": "rent" });
    let edited = tool.apply_edit(&input, &json!({ "amount": 50 })).unwrap();
    assert_eq!(edited, json!({ "to": "ann", "amount": 50, "memo": "rent" }));
    // A required editable field left out keeps the call's value.
    assert_eq!(
        tool.validate_edit(&input, &json!({ "amount": 50 })),
        Ok(edited)
    );
    // The whole form, as an inbox sends it.
    assert_eq!(
        tool.apply_edit(&input, &json!({ "amount": 7, "memo": "gift" })),
        Ok(json!({ "to": "ann", "amount": 7, "memo": "gift" }))
    );
}

#[test]
fn a_key_outside_the_editable_fields_is_refused_naming_it_and_them() {
    let tool = transfer_builder(&["amount", "memo"]).build().unwrap();
    let input = json!({ "to": "ann", "amount": 500, "memo": "rent" });
    let refused = tool
        .apply_edit(&input, &json!({ "amount": 5, "to": "mallory" }))
        .unwrap_err();
    assert_eq!(refused.kind(), ErrorKind::InputValidation);
    assert_says(
        &refused,
        "\n- to: Not an editable field; the editable fields are: amount, memo",
    );
    let errors = refused.validation_errors().unwrap();
    assert_eq!(
        errors.fields["to"].errors,
        ["Not an editable field; the editable fields are: amount, memo"]
    );
    assert!(!errors.fields.contains_key("amount"));
    // validate_edit refuses it the same way.
    assert_eq!(
        tool.validate_edit(&input, &json!({ "amount": 5, "to": "mallory" })),
        Err(refused)
    );
}

#[test]
fn outside_keys_are_quoted_bounded() {
    let tool = transfer_builder(&["amount"]).build().unwrap();
    let input = json!({ "to": "ann", "amount": 500, "memo": "rent" });
    let mut edit = serde_json::Map::new();
    edit.insert("k".repeat(1 << 20), json!(1));
    for n in 0..1000 {
        edit.insert(format!("extra{n}"), json!(n));
    }
    let refused = tool.apply_edit(&input, &Value::Object(edit)).unwrap_err();
    assert!(
        refused.message().len() < 12_000,
        "{} bytes",
        refused.message().len()
    );
    assert!(refused.message().contains("more errors of the same kind"));
}

#[test]
fn an_edit_that_is_not_an_object_is_refused_at_the_root() {
    let tool = transfer_builder(&["amount", "memo"]).build().unwrap();
    let input = json!({ "to": "ann", "amount": 500, "memo": "rent" });
    for edit in [json!("amount=5"), json!([5]), json!(null)] {
        let refused = tool.apply_edit(&input, &edit).unwrap_err();
        assert_eq!(refused.kind(), ErrorKind::InputValidation);
        let errors = refused.validation_errors().unwrap();
        assert_eq!(errors.errors.len(), 1, "{edit}");
        assert!(
            errors.errors[0]
                .starts_with("Expected an object of editable fields (amount, memo), received "),
            "{}",
            errors.errors[0]
        );
    }
}

#[test]
fn an_edit_nested_too_deep_is_refused_before_it_is_walked() {
    let tool = transfer_builder(&["memo"]).build().unwrap();
    // The edit object and `MAX_NESTING` arrays: one level too many.
    let deep = (0..tool_core::MAX_NESTING).fold(json!("leaf"), |inner, _| json!([inner]));
    let refused = tool
        .validate_edit(&json!({ "to": "ann" }), &json!({ "memo": deep }))
        .unwrap_err();
    assert_eq!(refused.kind(), ErrorKind::InputValidation);
    assert_says(&refused, "Nested deeper than");
}

#[test]
fn build_refuses_a_field_that_is_not_a_top_level_property() {
    let error = transfer_builder(&["amount", "amout"]).build().unwrap_err();
    assert_eq!(
        error,
        BuildError::UnknownEditableField {
            id: "transfer".into(),
            field: "amout".into(),
            properties: ["to", "amount", "limit", "memo", "audit"]
                .map(String::from)
                .to_vec(),
        }
    );
    assert_eq!(
        error.to_string(),
        r#"tool "transfer" declares "amout" editable, but it is not a top-level property of its input schema: its properties are: to, amount, limit, memo, audit"#
    );
    // A nested property is not a top-level one.
    assert!(matches!(
        transfer_builder(&["positive"]).build(),
        Err(BuildError::UnknownEditableField { .. })
    ));
}

#[test]
fn build_refuses_an_empty_or_repeated_field() {
    assert_eq!(
        transfer_builder(&["memo", ""]).build().unwrap_err(),
        BuildError::EmptyEditableField {
            id: "transfer".into()
        }
    );
    let error = transfer_builder(&["memo", "amount", "memo"])
        .build()
        .unwrap_err();
    assert_eq!(
        error,
        BuildError::DuplicateEditableField {
            id: "transfer".into(),
            field: "memo".into()
        }
    );
    assert!(error.to_string().contains("\"memo\" twice"), "{error}");
}

#[test]
fn the_refusal_of_an_unknown_field_is_bounded() {
    let properties: serde_json::Map<String, Value> = (0..1000)
        .map(|n| {
            (
                format!("{}{n}", "p".repeat(500)),
                json!({ "type": "string" }),
            )
        })
        .collect();
    let error = Tool::builder("wide")
        .description("Many properties")
        .input_schema(json!({ "type": "object", "properties": properties }))
        .editable(["x".repeat(1 << 20)])
        .build()
        .unwrap_err();
    let message = error.to_string();
    assert!(message.len() < 6_000, "{} bytes", message.len());
    assert!(message.ends_with(" and 980 more"), "{message}");
    let empty = Tool::builder("bare")
        .description("No properties")
        .editable(["memo"])
        .build()
        .unwrap_err();
    assert!(
        empty
            .to_string()
            .ends_with("its input schema: it has no properties"),
        "{empty}"
    );
}

#[test]
fn properties_named_like_keywords_are_followed_as_schemas() {
    let schema = json!({
        "type": "object",
        "properties": {
            "options": {
                "type": "object",
                "properties": {
                    "default": { "$ref": "#/$defs/level" },
                    "$ref": { "type": "string" }
                }
            }
        },
        "$defs": { "level": { "enum": ["low", "high"] } }
    });
    let tool = tool_with(schema, &["options"]).build().unwrap();
    let edit_schema = tool.edit_schema().unwrap();
    assert_eq!(
        edit_schema["$defs"]["level"],
        json!({ "enum": ["low", "high"] })
    );
    let refused = tool
        .validate_edit(&json!({}), &json!({ "options": { "default": "mid" } }))
        .unwrap_err();
    assert_eq!(
        refused.validation_errors().unwrap().fields["options"].fields["default"].errors,
        ["Invalid enum value. Expected 'low' | 'high', received 'mid'"]
    );
}
