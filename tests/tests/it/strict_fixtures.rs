//! Data-driven conformance test of `tool_core::strict` against the cases recorded
//! from openai-agents-python and openai-python (`shared/fixtures/strict/`).
//!
//! Each case must convert to its `expected` schema (compared as JSON values; the
//! order of `required` is ignored because it is a set and follows map key order)
//! or be refused where `expect_error` is set. Where we deliberately differ from
//! the reference, the case is listed in [`DEVIATIONS`] with the reason, and is
//! checked against our own expectation from [`our_expectation`] instead.

use serde_json::{Map, Value, json};
use tool_core::strict::{StrictOptions, StrictRule, openai_strict_with};

const FIXTURE: &str = "strict/openai-strict-cases.json";

/// Cases where our converter deliberately differs from the reference converter.
const DEVIATIONS: &[(&str /*case name*/, &str /*reason*/)] = &[
    // Optional properties: the reference lists every property in `required` but
    // leaves its schema as it was, so the model can no longer omit it and must
    // invent a value. We make optional properties nullable (and record them in the
    // NullMap so `null` is turned back into "absent").
    (
        "agents/test_strict_schema.py::test_allOf_single_entry_merging",
        NULLABLE,
    ),
    (
        "agents/test_strict_schema.py::test_allOf_single_ref_entry_decodes_json_pointer_tokens[replacement-order]",
        NULLABLE,
    ),
    (
        "agents/test_strict_schema.py::test_allOf_single_ref_entry_decodes_json_pointer_tokens[slash]",
        NULLABLE,
    ),
    (
        "agents/test_strict_schema.py::test_allOf_single_ref_entry_decodes_json_pointer_tokens[tilde]",
        NULLABLE,
    ),
    (
        "agents/test_strict_schema.py::test_chained_ref_with_sibling_keys_is_resolved",
        NULLABLE,
    ),
    (
        "agents/test_strict_schema.py::test_nested_nullable_object_preserves_type_union",
        NULLABLE,
    ),
    (
        "agents/test_strict_schema.py::test_object_with_false_additional_properties_is_allowed",
        NULLABLE,
    ),
    (
        "agents/test_strict_schema.py::test_object_without_additional_properties",
        NULLABLE,
    ),
    (
        "agents/test_strict_schema.py::test_open_object_rejection_rejects_preserved_pure_refs[percent-encoded]",
        NULLABLE,
    ),
    (
        "agents/test_strict_schema.py::test_reasonably_nested_schema_remains_supported",
        NULLABLE,
    ),
    (
        "agents/test_strict_schema.py::test_ref_allows_unrelated_id_definition_name",
        NULLABLE,
    ),
    ("agents/test_strict_schema.py::test_ref_expansion", NULLABLE),
    (
        "agents/test_strict_schema.py::test_ref_with_anchor_is_still_expanded",
        NULLABLE,
    ),
    (
        "agents/test_strict_schema.py::test_ref_with_annotation_sibling_is_still_expanded",
        NULLABLE,
    ),
    (
        "agents/test_strict_schema.py::test_ref_with_schema_metadata_is_still_expanded",
        NULLABLE,
    ),
    (
        "agents/test_strict_schema_oneof.py::test_deeply_nested_oneof",
        NULLABLE,
    ),
    (
        "agents/test_strict_schema_oneof.py::test_discriminator_preserved",
        NULLABLE,
    ),
    (
        "agents/test_strict_schema_oneof.py::test_nested_oneof_in_array_items",
        NULLABLE,
    ),
    (
        "agents/test_strict_schema_oneof.py::test_oneof_merged_with_existing_anyof",
        NULLABLE,
    ),
    // Non-object roots: OpenAI requires the root of a strict schema to be an
    // object; the reference converts these and leaves the API to refuse them.
    (
        "agents/test_strict_schema.py::test_allOf_single_ref_entry_accepts_equal_json_numbers",
        NON_OBJECT_ROOT,
    ),
    (
        "agents/test_strict_schema.py::test_allOf_single_ref_entry_accepts_equal_mapping_subclasses",
        NON_OBJECT_ROOT,
    ),
    (
        "agents/test_strict_schema.py::test_array_items_processing_and_default_removal",
        NON_OBJECT_ROOT,
    ),
    (
        "agents/test_strict_schema.py::test_explicit_non_object_with_properties_is_not_closed",
        NON_OBJECT_ROOT,
    ),
    (
        "agents/test_strict_schema.py::test_nested_typeless_objects_get_additional_properties[array-item]",
        NON_OBJECT_ROOT,
    ),
    // With reject_open_objects the reference refuses any `$ref` it keeps, because it
    // does not know the target was checked. We convert and check every root
    // `$defs` entry, so a kept `$ref` always points at a strict schema.
    (
        "agents/test_strict_schema.py::test_open_object_rejection_rejects_preserved_pure_refs[ordinary]#call2",
        VALIDATED_REFS,
    ),
    (
        "agents/test_strict_schema.py::test_open_object_rejection_rejects_preserved_pure_refs[percent-encoded]#call2",
        VALIDATED_REFS,
    ),
];

/// Keywords outside OpenAI's documented supported list that we drop and the
/// reference keeps (the hardening issue: strict export kept them), by case:
/// the JSON Pointers, in the reference's expected schema, of what we drop.
/// Dropping only widens what the provider schema says; validation against
/// the tool's own schema still applies every keyword.
const UNSUPPORTED_DROPPED: &[(&str, &[&str])] = &[
    (
        "agents/test_strict_schema.py::test_allOf_single_ref_allows_id_as_schema_map_member_name[components-schemas]",
        &["/components"],
    ),
    (
        "agents/test_strict_schema.py::test_ref_with_annotation_sibling_is_still_expanded",
        &["/properties/node/contentMediaType"],
    ),
    (
        "agents/test_strict_schema_oneof.py::test_discriminated_union_with_pydantic",
        &["/properties/steps/items/discriminator"],
    ),
    (
        "agents/test_strict_schema_oneof.py::test_discriminator_preserved",
        &["/properties/value/discriminator"],
    ),
    (
        "agents/test_strict_schema_oneof.py::test_nested_oneof_in_array_items",
        &["/properties/steps/items/discriminator"],
    ),
];

/// The reference's expected schema without what [`UNSUPPORTED_DROPPED`] lists for `name`.
fn without_dropped(name: &str, mut schema: Value) -> Result<Value, String> {
    let pointers = UNSUPPORTED_DROPPED
        .iter()
        .find(|(case, _)| *case == name)
        .map_or(&[][..], |(_, pointers)| *pointers);
    for pointer in pointers {
        let (parent, key) = pointer.rsplit_once('/').ok_or("bad pointer")?;
        let removed = schema
            .pointer_mut(parent)
            .and_then(Value::as_object_mut)
            .and_then(|map| map.remove(key));
        if removed.is_none() {
            return Err(format!("{pointer} is not in the reference's schema"));
        }
    }
    Ok(schema)
}

const NULLABLE: &str = "optional properties become nullable instead of silently required";
const NON_OBJECT_ROOT: &str = "a non-object root is refused (OpenAI requires an object root)";
const VALIDATED_REFS: &str = "kept `$ref` targets are converted and checked, so they are accepted";

/// What we expect instead of the reference's result, for the cases in [`DEVIATIONS`].
enum Ours {
    /// The reference's expected schema with these (JSON Pointer, JSON value) replacements.
    Patched(&'static [(&'static str, &'static str)]),
    /// The reference's expected schema, rewritten by a function.
    Rewritten(fn(Value) -> Value),
    /// A schema (the reference refuses these cases, so there is nothing to patch).
    Schema(&'static str),
    /// An error with this rule.
    Error(StrictRule),
}

const STRING_OR_NULL: &str = r#"["string", "null"]"#;

fn our_expectation(name: &str) -> Option<Ours> {
    let case = name.split_once("::").map_or(name, |(_, case)| case);
    Some(match case {
        "test_allOf_single_entry_merging" => {
            Ours::Patched(&[("/properties/a/type", r#"["boolean", "null"]"#)])
        }
        "test_allOf_single_ref_entry_decodes_json_pointer_tokens[replacement-order]" => {
            Ours::Patched(&[
                ("/properties/value/type", STRING_OR_NULL),
                ("/$defs/a~01b/properties/value/type", STRING_OR_NULL),
            ])
        }
        "test_allOf_single_ref_entry_decodes_json_pointer_tokens[slash]" => Ours::Patched(&[
            ("/properties/value/type", STRING_OR_NULL),
            ("/$defs/a~1b/properties/value/type", STRING_OR_NULL),
        ]),
        "test_allOf_single_ref_entry_decodes_json_pointer_tokens[tilde]" => Ours::Patched(&[
            ("/properties/value/type", STRING_OR_NULL),
            ("/$defs/a~0b/properties/value/type", STRING_OR_NULL),
        ]),
        "test_chained_ref_with_sibling_keys_is_resolved" | "test_ref_expansion" => {
            Ours::Patched(&[("/properties/a/type", STRING_OR_NULL)])
        }
        "test_nested_nullable_object_preserves_type_union" => {
            // `config` already admitted null: it stays as it was.
            Ours::Patched(&[("/properties/config/properties/key/type", STRING_OR_NULL)])
        }
        "test_object_with_false_additional_properties_is_allowed"
        | "test_object_without_additional_properties" => {
            Ours::Patched(&[("/properties/a/type", STRING_OR_NULL)])
        }
        "test_open_object_rejection_rejects_preserved_pure_refs[percent-encoded]" => {
            Ours::Patched(&[(
                "/properties/value",
                r##"{"anyOf": [{"$ref": "#/$defs/a%20b"}, {"type": "null"}]}"##,
            )])
        }
        "test_reasonably_nested_schema_remains_supported" => Ours::Rewritten(|mut schema| {
            // Every `child` was optional: each becomes ["object", "null"].
            let mut at = &mut schema;
            while let Some(child) = at.pointer_mut("/properties/child") {
                child["type"] = json!(["object", "null"]);
                at = child;
            }
            schema
        }),
        "test_ref_allows_unrelated_id_definition_name"
        | "test_ref_with_anchor_is_still_expanded" => {
            Ours::Patched(&[("/properties/value/type", STRING_OR_NULL)])
        }
        "test_ref_with_annotation_sibling_is_still_expanded" => {
            Ours::Patched(&[("/properties/node/type", r#"["object", "null"]"#)])
        }
        "test_ref_with_schema_metadata_is_still_expanded" => Ours::Patched(&[
            ("/properties/value/type", STRING_OR_NULL),
            ("/$defs/T/properties/value/type", STRING_OR_NULL),
        ]),
        "test_deeply_nested_oneof" => Ours::Patched(&[
            ("/properties/level1/type", r#"["object", "null"]"#),
            (
                "/properties/level1/properties/level2/type",
                r#"["array", "null"]"#,
            ),
        ]),
        "test_discriminator_preserved" => Ours::Patched(&[
            // A union gets a null branch; an untyped `const` is wrapped.
            (
                "/properties/value/anyOf",
                r##"[{"$ref": "#/$defs/TypeA"}, {"$ref": "#/$defs/TypeB"}, {"type": "null"}]"##,
            ),
            (
                "/$defs/TypeA/properties/type",
                r#"{"anyOf": [{"const": "a"}, {"type": "null"}]}"#,
            ),
            ("/$defs/TypeA/properties/value_a/type", STRING_OR_NULL),
            (
                "/$defs/TypeB/properties/type",
                r#"{"anyOf": [{"const": "b"}, {"type": "null"}]}"#,
            ),
            (
                "/$defs/TypeB/properties/value_b/type",
                r#"["integer", "null"]"#,
            ),
        ]),
        "test_nested_oneof_in_array_items" => {
            Ours::Patched(&[("/properties/steps/type", r#"["array", "null"]"#)])
        }
        "test_oneof_merged_with_existing_anyof" => Ours::Patched(&[(
            "/properties/value/anyOf",
            r#"[{"type": "string"}, {"type": "integer"}, {"type": "boolean"}, {"type": "null"}]"#,
        )]),
        "test_allOf_single_ref_entry_accepts_equal_json_numbers"
        | "test_allOf_single_ref_entry_accepts_equal_mapping_subclasses"
        | "test_array_items_processing_and_default_removal"
        | "test_explicit_non_object_with_properties_is_not_closed"
        | "test_nested_typeless_objects_get_additional_properties[array-item]" => {
            Ours::Error(StrictRule::NonObjectRoot)
        }
        "test_open_object_rejection_rejects_preserved_pure_refs[ordinary]#call2" => Ours::Schema(
            r##"{"$defs": {"value": {"type": "string"}}, "type": "object",
                "properties": {"value": {"anyOf": [{"$ref": "#/$defs/value"}, {"type": "null"}]}},
                "required": ["value"], "additionalProperties": false}"##,
        ),
        "test_open_object_rejection_rejects_preserved_pure_refs[percent-encoded]#call2" => {
            Ours::Schema(
                r##"{"$defs": {"a b": {"type": "string"}}, "type": "object",
                "properties": {"value": {"anyOf": [{"$ref": "#/$defs/a%20b"}, {"type": "null"}]}},
                "required": ["value"], "additionalProperties": false}"##,
            )
        }
        _ => return None,
    })
}

enum Expected {
    Schema(Value),
    Error(Option<StrictRule>),
}

#[test]
fn strict_conversion_matches_reference_cases() {
    let Some(path) = integration_tests::shared_fixture(FIXTURE) else {
        return;
    };
    let text = std::fs::read_to_string(&path).expect("read fixture");
    let cases: Vec<Value> = serde_json::from_str(&text).expect("fixture is JSON");
    assert_eq!(cases.len(), 52, "fixture case count changed");

    let names: Vec<&str> = cases.iter().filter_map(|c| c["name"].as_str()).collect();
    for (name, _) in UNSUPPORTED_DROPPED {
        assert!(
            names.contains(name),
            "dropped keywords for unknown case {name}"
        );
    }
    for (name, _) in DEVIATIONS {
        assert!(names.contains(name), "deviation for unknown case {name}");
        assert!(
            our_expectation(name).is_some(),
            "deviation without expectation: {name}"
        );
    }

    let mut failures = Vec::new();
    for case in &cases {
        let name = case["name"].as_str().expect("case name");
        if let Err(why) = run_case(name, case) {
            failures.push(format!("{name}: {why}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

fn run_case(name: &str, case: &Value) -> Result<(), String> {
    let deviates = DEVIATIONS.iter().any(|(n, _)| *n == name);
    if !deviates && our_expectation(name).is_some() {
        return Err("has an expectation but is not listed in DEVIATIONS".into());
    }
    let reference = if case["expect_error"] == json!(true) {
        Expected::Error(None)
    } else {
        Expected::Schema(case["expected"].clone())
    };
    let reference = match reference {
        Expected::Schema(schema) => Expected::Schema(without_dropped(name, schema)?),
        error => error,
    };
    let expected = match (deviates, reference) {
        (false, reference) => reference,
        (true, reference) => match (our_expectation(name).expect("checked"), reference) {
            (Ours::Patched(patches), Expected::Schema(schema)) => {
                Expected::Schema(patch(schema, patches)?)
            }
            (Ours::Rewritten(rewrite), Expected::Schema(schema)) => {
                Expected::Schema(rewrite(schema))
            }
            (Ours::Schema(text), _) => {
                Expected::Schema(serde_json::from_str(text).map_err(|e| e.to_string())?)
            }
            (Ours::Error(rule), _) => Expected::Error(Some(rule)),
            (_, Expected::Error(_)) => return Err("patch expectation for an error case".into()),
        },
    };

    let input = match case.get("input_generator") {
        Some(generator) => generate(generator)?,
        None => case["input"].clone(),
    };
    let options = options_for(case)?;
    let result = openai_strict_with(&input, &options);

    match (result, expected) {
        (Ok(got), Expected::Schema(want)) => {
            let (got, want) = (normalized(got), normalized(want));
            if got == want {
                Ok(())
            } else {
                Err(format!("\n  got  {got}\n  want {want}"))
            }
        }
        (Err(err), Expected::Error(rule)) => {
            if err.to_string().contains(err.path()) && rule.is_none_or(|r| &r == err.rule()) {
                Ok(())
            } else {
                Err(format!("wrong error: {err}"))
            }
        }
        (Ok(got), Expected::Error(_)) => Err(format!("expected an error, got {got}")),
        (Err(err), Expected::Schema(_)) => Err(format!("unexpected error: {err}")),
    }
}

fn options_for(case: &Value) -> Result<StrictOptions, String> {
    let mut options = StrictOptions::default();
    if let Some(config) = case.get("config") {
        match config.get("max_schema_nodes").and_then(Value::as_u64) {
            Some(n) => options.max_schema_nodes = n as usize,
            None => return Err(format!("unsupported config {config}")),
        }
    }
    if let Some(extra) = case.get("options") {
        match extra.get("reject_open_objects").and_then(Value::as_bool) {
            Some(flag) => options.reject_open_objects = flag,
            None => return Err(format!("unsupported options {extra}")),
        }
    }
    Ok(options)
}

/// Builds `input_generator` inputs. Built with maps, not `json!`, which would
/// re-serialize the growing value recursively.
fn generate(generator: &Value) -> Result<Value, String> {
    if generator["kind"] != "nested_object_schema" {
        return Err(format!("unknown generator {generator}"));
    }
    let depth = generator["depth"].as_u64().ok_or("generator depth")?;
    let mut schema = json!({"type": "object", "properties": {}});
    for _ in 0..depth {
        let mut properties = Map::new();
        properties.insert("child".into(), schema);
        let mut object = Map::new();
        object.insert("type".into(), json!("object"));
        object.insert("properties".into(), Value::Object(properties));
        schema = Value::Object(object);
    }
    Ok(schema)
}

fn patch(mut schema: Value, patches: &[(&str, &str)]) -> Result<Value, String> {
    for (pointer, replacement) in patches {
        let replacement: Value = serde_json::from_str(replacement).map_err(|e| e.to_string())?;
        let slot = schema
            .pointer_mut(pointer)
            .ok_or_else(|| format!("patch target {pointer} missing"))?;
        *slot = replacement;
    }
    Ok(schema)
}

/// Sorts every `required` array: it is a set, and its order follows map key order.
fn normalized(mut value: Value) -> Value {
    let mut stack = vec![&mut value];
    while let Some(value) = stack.pop() {
        match value {
            Value::Object(map) => {
                for (key, child) in map.iter_mut() {
                    if key == "required"
                        && let Value::Array(names) = child
                    {
                        names.sort_by_key(|name| name.to_string());
                    }
                    stack.push(child);
                }
            }
            Value::Array(items) => stack.extend(items.iter_mut()),
            _ => {}
        }
    }
    value
}
