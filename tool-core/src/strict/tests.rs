//! Unit tests: schemars-shaped inputs, error paths, limits and NullMap round trips.

use serde_json::{Map, Value, json};

use super::*;

fn strict(schema: Value) -> StrictSchema {
    openai_strict_with_map(&schema).unwrap_or_else(|e| panic!("{e}"))
}

fn error(schema: Value) -> StrictError {
    openai_strict(&schema).expect_err("conversion should fail")
}

/// What schemars 1.x emits for a struct with a doc comment, a defaulted `u32`,
/// an `Option<Struct>`, a `Vec<String>` and a unit enum.
fn schemars_query() -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "Query",
        "description": "A query",
        "type": "object",
        "properties": {
            "text": {"description": "Search text", "type": "string"},
            "limit": {"description": "Max results", "type": "integer", "format": "uint32", "minimum": 0, "default": 10},
            "filter": {"anyOf": [{"$ref": "#/$defs/Filter"}, {"type": "null"}]},
            "tags": {"type": "array", "items": {"type": "string"}},
            "sort": {"$ref": "#/$defs/Sort", "description": "Sort order"}
        },
        "required": ["text", "tags", "sort"],
        "$defs": {
            "Filter": {
                "type": "object",
                "properties": {
                    "field": {"type": "string"},
                    "value": {"type": ["string", "null"]},
                    "weight": {"type": "number", "format": "double"}
                },
                "required": ["field"]
            },
            "Sort": {"type": "string", "enum": ["Asc", "Desc"]}
        }
    })
}

#[test]
fn schemars_struct_becomes_strict() {
    let out = strict(schemars_query());
    assert_eq!(
        out.schema,
        json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": "Query",
            "description": "A query",
            "type": "object",
            "properties": {
                "text": {"description": "Search text", "type": "string"},
                "limit": {"description": "Max results", "type": ["integer", "null"], "minimum": 0},
                "filter": {"anyOf": [{"$ref": "#/$defs/Filter"}, {"type": "null"}]},
                "tags": {"type": "array", "items": {"type": "string"}},
                "sort": {"description": "Sort order", "type": "string", "enum": ["Asc", "Desc"]}
            },
            // Order follows map key order; checked as a set below.
            "required": out.schema["required"].clone(),
            "additionalProperties": false,
            "$defs": {
                "Filter": {
                    "type": "object",
                    "properties": {
                        "field": {"type": "string"},
                        "value": {"type": ["string", "null"]},
                        "weight": {"type": ["number", "null"]}
                    },
                    "required": out.schema["$defs"]["Filter"]["required"].clone(),
                    "additionalProperties": false
                },
                "Sort": {"type": "string", "enum": ["Asc", "Desc"]}
            }
        })
    );
    let mut required: Vec<&str> = out.schema["required"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    required.sort_unstable();
    assert_eq!(required, ["filter", "limit", "sort", "tags", "text"]);
    // `filter` and `value` were optional but already nullable: not relaxed.
    let mut paths = out.relaxed.relaxed_paths().to_vec();
    paths.sort();
    assert_eq!(
        paths,
        ["/$defs/Filter/properties/weight", "/properties/limit"]
    );
}

#[test]
fn restore_turns_relaxed_nulls_back_into_absent_keys() {
    let out = strict(schemars_query());
    let mut value = json!({
        "text": "t", "limit": null, "tags": [], "sort": "Asc",
        "filter": {"field": "f", "value": null, "weight": null}
    });
    out.relaxed.restore(&mut value);
    assert_eq!(
        value,
        json!({"text": "t", "tags": [], "sort": "Asc", "filter": {"field": "f", "value": null}})
    );
    // A null `filter` stays: `Option<Filter>` accepts null.
    let mut value = json!({"text": "t", "limit": 3, "tags": [], "sort": "Asc", "filter": null});
    let before = value.clone();
    out.relaxed.restore(&mut value);
    assert_eq!(value, before);
}

#[test]
fn tagged_enum_becomes_any_of_and_restore_picks_the_branch_by_tag() {
    // schemars: `#[serde(tag = "kind")] enum Shape { Circle { r: f64, label: Option<String> }, Square { side: f64, #[serde(default)] rotated: bool } }`
    let schema = json!({
        "type": "object",
        "properties": {"shapes": {"type": "array", "items": {"$ref": "#/$defs/Shape"}}},
        "required": ["shapes"],
        "$defs": {"Shape": {"oneOf": [
            {"type": "object", "properties": {
                "kind": {"type": "string", "const": "Circle"},
                "r": {"type": "number", "format": "double"},
                "label": {"type": ["string", "null"]}},
             "required": ["kind", "r"]},
            {"type": "object", "properties": {
                "kind": {"type": "string", "const": "Square"},
                "side": {"type": "number", "format": "double"},
                "rotated": {"type": "boolean", "default": false}},
             "required": ["kind", "side"]}
        ]}}
    });
    let out = strict(schema);
    let shape = &out.schema["$defs"]["Shape"];
    assert!(shape.get("oneOf").is_none());
    assert_eq!(
        shape["anyOf"][0]["properties"]["r"],
        json!({"type": "number"})
    );
    assert_eq!(
        shape["anyOf"][1]["properties"]["rotated"],
        json!({"type": ["boolean", "null"]})
    );
    assert_eq!(shape["anyOf"][1]["additionalProperties"], json!(false));
    assert_eq!(
        out.relaxed.relaxed_paths(),
        ["/$defs/Shape/anyOf/1/properties/rotated"]
    );

    let mut value = json!({"shapes": [
        {"kind": "Circle", "r": 1.0, "label": null},
        {"kind": "Square", "side": 2.0, "rotated": null}
    ]});
    out.relaxed.restore(&mut value);
    assert_eq!(
        value,
        json!({"shapes": [
            {"kind": "Circle", "r": 1.0, "label": null},
            {"kind": "Square", "side": 2.0}
        ]})
    );
}

#[test]
fn unit_variants_as_one_of_consts() {
    let out = strict(json!({
        "type": "object",
        "properties": {"mode": {"oneOf": [
            {"type": "string", "const": "fast", "description": "Fast"},
            {"type": "string", "const": "slow", "description": "Slow"}
        ]}}
    }));
    assert_eq!(
        out.schema["properties"]["mode"],
        json!({"anyOf": [
            {"type": "string", "const": "fast", "description": "Fast"},
            {"type": "string", "const": "slow", "description": "Slow"},
            {"type": "null"}
        ]})
    );
    let mut value = json!({"mode": null});
    out.relaxed.restore(&mut value);
    assert_eq!(value, json!({}));
}

#[test]
fn optional_const_and_untyped_enum_are_made_nullable() {
    let out = strict(json!({
        "type": "object",
        "properties": {
            "a": {"type": "string", "const": "x"},
            "b": {"type": "string", "enum": ["p", "q"]},
            "c": {"enum": [1, 2], "description": "untyped"}
        }
    }));
    let p = &out.schema["properties"];
    assert_eq!(
        p["a"],
        json!({"type": ["string", "null"], "enum": ["x", null]})
    );
    assert_eq!(
        p["b"],
        json!({"type": ["string", "null"], "enum": ["p", "q", null]})
    );
    assert_eq!(
        p["c"],
        json!({"description": "untyped", "anyOf": [{"enum": [1, 2]}, {"type": "null"}]})
    );
}

#[test]
fn hash_map_field_is_an_open_map_error_with_its_path() {
    // schemars: `tags: HashMap<String, String>`
    let err = error(json!({
        "type": "object",
        "properties": {"tags": {"type": "object", "additionalProperties": {"type": "string"}}},
        "required": ["tags"]
    }));
    assert_eq!(err.path(), "/properties/tags/additionalProperties");
    assert_eq!(err.rule(), &StrictRule::OpenMap);
    assert_eq!(
        err.to_string(),
        "cannot make schema strict at /properties/tags/additionalProperties: \
         open map (additionalProperties) is not allowed in strict mode"
    );
    // Inside a definition, the path points into `$defs`.
    let err = error(json!({
        "type": "object",
        "properties": {"m": {"$ref": "#/$defs/M"}},
        "$defs": {"M": {"type": "object", "additionalProperties": true}}
    }));
    assert_eq!(err.path(), "/$defs/M/additionalProperties");
}

#[test]
fn formats_are_filtered() {
    let out = strict(json!({
        "type": "object",
        "properties": {
            "when": {"type": "string", "format": "date-time"},
            "id": {"type": "string", "format": "uuid"},
            "site": {"type": "string", "format": "uri"},
            "n": {"type": "integer", "format": "int64"},
            "u": {"type": "integer", "format": "uint8", "minimum": 0, "maximum": 255},
            "f": {"type": "number", "format": "float"},
            "odd": {"type": "integer", "format": "date"}
        },
        "required": ["when", "id", "site", "n", "u", "f", "odd"]
    }));
    let p = &out.schema["properties"];
    assert_eq!(p["when"], json!({"type": "string", "format": "date-time"}));
    assert_eq!(p["id"], json!({"type": "string", "format": "uuid"}));
    assert_eq!(p["site"], json!({"type": "string"}));
    assert_eq!(p["n"], json!({"type": "integer"}));
    assert_eq!(
        p["u"],
        json!({"type": "integer", "minimum": 0, "maximum": 255})
    );
    assert_eq!(p["f"], json!({"type": "number"}));
    assert_eq!(p["odd"], json!({"type": "integer"}));
    assert!(out.relaxed.is_empty());
}

#[test]
fn all_of_entries_merge_when_exact_and_fail_with_path_otherwise() {
    let out = strict(json!({
        "type": "object",
        "allOf": [
            {"properties": {"a": {"type": "string"}}, "required": ["a"]},
            {"required": ["b"], "description": "d"}
        ],
        "properties": {}
    }));
    assert_eq!(out.schema["properties"], json!({"a": {"type": "string"}}));
    assert_eq!(out.schema["description"], json!("d"));
    // Numbers compare by value when merging.
    let out = strict(json!({
        "type": "object",
        "properties": {"x": {"type": "number", "const": 1.0, "allOf": [{"const": 1}]}},
        "required": ["x"]
    }));
    assert_eq!(out.schema["properties"]["x"]["type"], json!("number"));
    let err = error(json!({
        "type": "object",
        "properties": {"x": {"allOf": [{"type": "string"}, {"type": "integer"}]}}
    }));
    assert_eq!(err.path(), "/properties/x/allOf/1");
    assert_eq!(err.rule(), &StrictRule::AllOfConflict(vec!["type".into()]));
    let err = error(json!({
        "type": "object",
        "properties": {"x": {"allOf": [
            {"type": "object", "properties": {"a": {"type": "string"}}},
            {"type": "object", "properties": {"b": {"type": "string"}}}
        ]}}
    }));
    assert_eq!(err.path(), "/properties/x/allOf/1");
}

#[test]
fn recursive_schemas_keep_refs_and_restore_through_them() {
    // schemars: `struct Node { value: i32, children: Vec<Node>, #[serde(default)] note: String }`
    let out = strict(json!({
        "type": "object",
        "properties": {"root": {"$ref": "#/$defs/Node", "description": "the tree"}},
        "required": ["root"],
        "$defs": {"Node": {
            "type": "object",
            "properties": {
                "value": {"type": "integer", "format": "int32"},
                "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}},
                "next": {"$ref": "#/$defs/Node", "description": "sibling"},
                "note": {"type": "string", "default": ""}
            },
            "required": ["value", "children"]
        }}
    }));
    let node = &out.schema["$defs"]["Node"];
    assert_eq!(
        node["properties"]["children"]["items"],
        json!({"$ref": "#/$defs/Node"})
    );
    // Inlined once at `root`; the recursion inside falls back to a plain `$ref`.
    assert_eq!(
        out.schema["properties"]["root"]["properties"]["next"],
        json!({"anyOf": [{"$ref": "#/$defs/Node"}, {"type": "null"}]})
    );
    let mut value = json!({"root": {
        "value": 1, "note": null, "next": null,
        "children": [{"value": 2, "note": null, "next": null, "children": [
            {"value": 3, "note": "n", "next": {"value": 4, "note": null, "next": null, "children": []}, "children": []}
        ]}]
    }});
    out.relaxed.restore(&mut value);
    assert_eq!(
        value,
        json!({"root": {
            "value": 1,
            "children": [{"value": 2, "children": [
                {"value": 3, "note": "n", "next": {"value": 4, "children": []}, "children": []}
            ]}]
        }})
    );
}

#[test]
fn root_recursion_with_hash_ref() {
    let out = strict(json!({
        "type": "object",
        "properties": {"name": {"type": "string"}, "sub": {"type": "array", "items": {"$ref": "#"}}},
        "required": ["sub"]
    }));
    assert_eq!(
        out.schema["properties"]["sub"]["items"],
        json!({"$ref": "#"})
    );
    let mut value =
        json!({"name": null, "sub": [{"name": null, "sub": []}, {"name": "x", "sub": []}]});
    out.relaxed.restore(&mut value);
    assert_eq!(
        value,
        json!({"sub": [{"sub": []}, {"name": "x", "sub": []}]})
    );
}

#[test]
fn ambiguous_unions_are_left_alone() {
    let out = strict(json!({
        "type": "object",
        "properties": {"v": {"anyOf": [
            {"type": "object", "properties": {"a": {"type": "string"}}},
            {"type": "object", "properties": {"a": {"type": ["string", "null"]}}}
        ]}},
        "required": ["v"]
    }));
    let mut value = json!({"v": {"a": null}});
    out.relaxed.restore(&mut value);
    assert_eq!(value, json!({"v": {"a": null}}));
}

#[test]
fn rejected_keywords_and_refs_name_their_path() {
    let cases = [
        (
            json!({"type": "object", "properties": {"x": {"type": "string", "not": {"const": ""}}}}),
            "/properties/x/not",
        ),
        (
            json!({"type": "object", "properties": {"t": {"type": "array", "prefixItems": [{"type": "string"}]}}}),
            "/properties/t/prefixItems",
        ),
        (
            json!({"type": "object", "properties": {"x": {"$ref": "#/$defs/Missing"}}}),
            "/properties/x/$ref",
        ),
        (
            json!({"type": "object", "properties": {"x": {"$ref": "https://example.com/s.json"}}}),
            "/properties/x/$ref",
        ),
        (
            json!({"type": "object", "properties": {"x": true}}),
            "/properties/x",
        ),
        (
            json!({"type": "object", "properties": {"x": {}}}),
            "/properties/x",
        ),
        (
            json!({"type": "object", "properties": {"x": {"description": "any"}}}),
            "/properties/x",
        ),
        (
            json!({"type": "object", "patternProperties": {"^a": {"type": "string"}}}),
            "/patternProperties",
        ),
        (json!({"type": ["object", "null"], "properties": {}}), ""),
        (
            json!({"type": "object", "properties": {"x": {"$ref": "#/$defs/A"}},
                "$defs": {"A": {"$ref": "#/$defs/B", "title": "a"}, "B": {"$ref": "#/$defs/A", "title": "b"}}}),
            "/$defs/A/$ref",
        ),
    ];
    for (schema, path) in cases {
        let err = error(schema.clone());
        assert_eq!(err.path(), path, "{schema}: {err}");
    }
}

#[test]
fn object_nesting_limit_counts_levels_below_the_root() {
    fn nest(levels: usize) -> Value {
        let mut schema = json!({"type": "object", "properties": {"leaf": {"type": "string"}}, "required": ["leaf"]});
        for _ in 0..levels {
            schema = json!({"type": "object", "properties": {"n": schema}, "required": ["n"]});
        }
        schema
    }
    assert!(openai_strict(&nest(10)).is_ok());
    let err = openai_strict(&nest(11)).unwrap_err();
    assert_eq!(err.rule(), &StrictRule::NestingLimit(10));
    assert_eq!(err.path(), "/properties/n".repeat(11));
    // Arrays add no level.
    let arrays = json!({"type": "object", "properties": {"a": {"type": "array", "items": nest(9)}}, "required": ["a"]});
    assert!(openai_strict(&arrays).is_ok());
}

#[test]
fn size_limits() {
    let many: Map<String, Value> = (0..5001)
        .map(|i| (format!("p{i}"), json!({"type": "string"})))
        .collect();
    let err = error(json!({"type": "object", "properties": many}));
    assert_eq!(err.rule(), &StrictRule::PropertyLimit(5000));

    let values: Vec<String> = (0..251).map(|i| format!("{i:0>60}")).collect();
    let err = error(
        json!({"type": "object", "properties": {"e": {"type": "string", "enum": values}}, "required": ["e"]}),
    );
    assert_eq!(
        err.rule(),
        &StrictRule::LargeEnumLimit {
            threshold: 250,
            limit: 15_000
        }
    );
    assert_eq!(err.path(), "/properties/e");

    let options = StrictOptions {
        max_string_length: 3,
        ..StrictOptions::default()
    };
    let err = openai_strict_with(
        &json!({"type": "object", "properties": {"abcd": {"type": "string"}}}),
        &options,
    )
    .unwrap_err();
    assert_eq!(err.rule(), &StrictRule::StringLengthLimit(3));
}

#[test]
fn deep_input_is_refused_without_recursion() {
    let mut schema = json!({"type": "object", "properties": {}});
    for _ in 0..5000 {
        let mut properties = Map::new();
        properties.insert("child".into(), schema);
        let mut object = Map::new();
        object.insert("type".into(), json!("object"));
        object.insert("properties".into(), Value::Object(properties));
        schema = Value::Object(object);
    }
    let err = openai_strict(&schema).unwrap_err();
    assert_eq!(err.rule(), &StrictRule::TooDeep(100));
    assert!(err.path().starts_with("/properties/child/properties/child"));
    // serde_json drops recursively; take the value apart iteratively.
    let mut stack = vec![schema];
    while let Some(mut value) = stack.pop() {
        if let Some(object) = value.as_object_mut() {
            let keys: Vec<String> = object.keys().cloned().collect();
            stack.extend(keys.iter().filter_map(|k| object.remove(k)));
        }
    }
}

#[test]
fn ref_expansion_is_bounded() {
    // Each level references the next twice, with siblings, so it must be inlined.
    let mut defs = Map::new();
    for i in 0..40 {
        defs.insert(
            format!("L{i}"),
            json!({"type": "object", "properties": {
                "a": {"$ref": format!("#/$defs/L{}", i + 1), "title": "t"},
                "b": {"$ref": format!("#/$defs/L{}", i + 1), "title": "t"}}}),
        );
    }
    defs.insert("L40".into(), json!({"type": "string"}));
    let schema = json!({"type": "object", "properties": {"r": {"$ref": "#/$defs/L0", "title": "t"}}, "$defs": defs});
    let err = openai_strict(&schema).unwrap_err();
    assert!(
        matches!(
            err.rule(),
            StrictRule::TooManyNodes(_) | StrictRule::TooDeep(_)
        ),
        "{err}"
    );
}

#[test]
fn no_panic_on_malformed_schemas() {
    let inputs = [
        json!(null),
        json!(1),
        json!("s"),
        json!(true),
        json!({"type": 1}),
        json!({"type": "object", "properties": []}),
        json!({"type": "object", "properties": {"a": 1}}),
        json!({"type": "object", "required": "a", "properties": {"a": {"type": "string"}}}),
        json!({"type": "object", "properties": {"a": {"anyOf": {}}}}),
        json!({"type": "object", "properties": {"a": {"oneOf": [1]}}}),
        json!({"type": "object", "allOf": 3}),
        json!({"type": "object", "allOf": [false]}),
        json!({"type": "object", "properties": {"a": {"$ref": 5}}}),
        json!({"type": "object", "properties": {"a": {"$ref": "#/%zz"}}}),
        json!({"type": "object", "properties": {"a": {"$ref": "#/~2"}}}),
        json!({"type": "object", "properties": {"a": {"$ref": "#/properties/a", "title": "loop"}}}),
        json!({"type": "object", "properties": {"a": {"$ref": "#/properties/a"}}}),
        json!({"type": "object", "properties": {"a": {"$ref": "#/properties"}}}),
        json!({"$ref": "#"}),
        json!({"$ref": "#", "title": "x"}),
        json!({"type": "object", "properties": {"a": {"$ref": "#/$defs/A"}}, "$defs": {"A": {"allOf": [{"$ref": "#/$defs/A"}]}}}),
        json!({"type": "object", "properties": {"a": {"$ref": "#/$defs/A"}}, "$defs": {"A": {"$ref": "#/$defs/A"}}}),
        json!({"type": "object", "properties": {"a": {"$ref": "#/anyOf/0"}}}),
        json!({"type": "object", "$defs": [], "properties": {}}),
        json!({"type": "object", "properties": {"a": {"type": "array", "items": [{"type": "string"}]}}}),
        json!({"type": "object", "properties": {"a": {"type": "string", "format": 7, "enum": "x"}}}),
    ];
    for input in inputs {
        let _ = openai_strict(&input);
        if let Ok(out) = openai_strict_with_map(&input) {
            let mut v = json!({"a": null, "b": [null, {"c": null}]});
            out.relaxed.restore(&mut v);
        }
    }
}

#[test]
fn reject_open_objects_option() {
    let options = StrictOptions {
        reject_open_objects: true,
        ..StrictOptions::default()
    };
    let err = openai_strict_with(
        &json!({"type": "object", "properties": {"meta": {"type": "object"}}, "required": ["meta"]}),
        &options,
    )
    .unwrap_err();
    assert_eq!(
        (err.path(), err.rule()),
        ("/properties/meta", &StrictRule::OpenObject)
    );
    // Without the option such an object is closed (it then only accepts `{}`).
    let out = openai_strict(&json!({"type": "object", "properties": {"meta": {"type": "object"}}, "required": ["meta"]}))
        .unwrap();
    assert_eq!(
        out["properties"]["meta"],
        json!({"type": "object", "additionalProperties": false})
    );
}

/// The hardening issue: strict export kept keywords OpenAI's structured
/// outputs do not support (`minLength` on a string inlined from a `$ref`).
/// Every keyword outside the documented list is dropped; the listed ones stay.
#[test]
fn only_keywords_openai_documents_are_kept() {
    let converted = strict(json!({
        "type": "object",
        "title": "T",
        "description": "d",
        "properties": {
            "name": { "$ref": "#/$defs/Name", "description": "inlined" },
            "code": { "type": "string", "pattern": "^[A-Z]+$", "format": "uuid", "examples": ["AB"], "deprecated": true },
            "n": { "type": "number", "minimum": 0, "maximum": 10, "exclusiveMinimum": 0, "exclusiveMaximum": 10, "multipleOf": 0.5, "readOnly": true },
            "list": { "type": "array", "items": { "enum": ["a", "b"] }, "minItems": 1, "maxItems": 3 },
            "fixed": { "const": "x", "contentMediaType": "text/plain" }
        },
        "required": ["name", "code", "n", "list", "fixed"],
        "$defs": { "Name": { "type": "string", "minLength": 2, "maxLength": 20 } }
    }))
    .schema;
    let name = &converted["properties"]["name"];
    assert_eq!(name["type"], "string", "{converted}");
    for (at, dropped) in [
        (name, "minLength"),
        (name, "maxLength"),
        (&converted["$defs"]["Name"], "minLength"),
        (&converted["properties"]["code"], "examples"),
        (&converted["properties"]["code"], "deprecated"),
        (&converted["properties"]["n"], "readOnly"),
        (&converted["properties"]["fixed"], "contentMediaType"),
    ] {
        assert!(at.get(dropped).is_none(), "{dropped} kept: {converted}");
    }
    for (at, kept) in [
        (&converted["properties"]["code"], "pattern"),
        (&converted["properties"]["code"], "format"),
        (&converted["properties"]["n"], "minimum"),
        (&converted["properties"]["n"], "maximum"),
        (&converted["properties"]["n"], "exclusiveMinimum"),
        (&converted["properties"]["n"], "exclusiveMaximum"),
        (&converted["properties"]["n"], "multipleOf"),
        (&converted["properties"]["list"], "minItems"),
        (&converted["properties"]["list"], "maxItems"),
        (&converted["properties"]["fixed"], "const"),
        (&converted, "title"),
        (&converted, "description"),
    ] {
        assert!(at.get(kept).is_some(), "{kept} dropped: {converted}");
    }
}

/// A property `name` referring to `$defs/Name` with `siblings`, strictly.
fn ref_with_siblings(name: Value, siblings: Value) -> Result<Value, StrictError> {
    let mut property = siblings.as_object().cloned().unwrap_or_default();
    property.insert("$ref".into(), json!("#/$defs/Name"));
    openai_strict(&json!({
        "type": "object",
        "properties": {"name": property},
        "required": ["name"],
        "$defs": {"Name": name}
    }))
}

/// Issue 25: `{"$ref": ..., "minLength": 3}` lost its `minLength` (merged
/// into the inlined target, then dropped as strict mode has no such
/// keyword), so the model saw a looser schema. It is refused now, naming
/// the sibling's path and the rule, as openai-agents refuses it.
#[test]
fn a_ref_sibling_strict_mode_cannot_express_is_refused() {
    let err = ref_with_siblings(json!({"type": "string"}), json!({"minLength": 3})).unwrap_err();
    assert_eq!(
        (err.path(), err.rule()),
        (
            "/properties/name/minLength",
            &StrictRule::RefSiblingUnsupported(vec!["minLength".into()])
        )
    );
    assert_eq!(
        err.to_string(),
        "cannot make schema strict at /properties/name/minLength: `$ref` has sibling \
         constraint(s) minLength that strict mode cannot express; dropping them would \
         accept values the schema refuses"
    );
    // With siblings strict mode supports too, every unexpressed one is named.
    let err = ref_with_siblings(
        json!({"type": "array", "items": {"type": "string"}}),
        json!({"minItems": 1, "uniqueItems": true, "maxLength": 3, "description": "d"}),
    )
    .unwrap_err();
    assert_eq!(
        err.rule(),
        &StrictRule::RefSiblingUnsupported(vec!["maxLength".into(), "uniqueItems".into()])
    );
    // Such a constraint inside the definition itself is dropped as before
    // (validation against the tool's own schema enforces it).
    let out = ref_with_siblings(
        json!({"type": "string", "minLength": 3}),
        json!({"description": "d"}),
    )
    .unwrap();
    assert_eq!(
        out["properties"]["name"],
        json!({"type": "string", "description": "d"})
    );
}

/// Siblings strict mode supports are merged into the inlined target: a
/// bound on both sides becomes the tighter one (both apply), others are
/// taken, annotations from the referring side win.
#[test]
fn supported_ref_siblings_are_merged_into_the_inlined_target() {
    let count = json!({"type": "integer", "minimum": 0, "maximum": 4294967295_u64, "description": "A count"});
    let out = ref_with_siblings(
        count,
        json!({"minimum": 1, "maximum": 10, "multipleOf": 2, "description": "how many"}),
    )
    .unwrap();
    assert_eq!(
        out["properties"]["name"],
        json!({"type": "integer", "minimum": 1, "maximum": 10, "multipleOf": 2, "description": "how many"})
    );
    // The tighter bound wins whichever side has it.
    let out = ref_with_siblings(
        json!({"type": "array", "items": {"type": "string"}, "maxItems": 3}),
        json!({"maxItems": 5, "minItems": 1, "pattern": "^a"}),
    )
    .unwrap();
    let name = &out["properties"]["name"];
    assert_eq!(
        (&name["maxItems"], &name["minItems"]),
        (&json!(3), &json!(1))
    );
}

/// Siblings that constrain the same keyword differently, where no one
/// value says both, are refused with the path and the keywords.
#[test]
fn conflicting_ref_siblings_are_refused() {
    let err = ref_with_siblings(
        json!({"type": "string", "pattern": "^[A-Z]+$"}),
        json!({"pattern": "^[a-z]+$", "type": "integer"}),
    )
    .unwrap_err();
    assert_eq!(
        (err.path(), err.rule()),
        (
            "/properties/name",
            &StrictRule::RefSiblingConflict(vec!["pattern".into(), "type".into()])
        )
    );
}
