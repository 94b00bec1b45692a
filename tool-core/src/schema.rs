//! JSON Schemas derived from Rust types with `schemars`.

use std::any::TypeId;

use schemars::JsonSchema;
use serde_json::Value;

/// The JSON Schema (draft 2020-12) of `T`, as the model is shown it.
///
/// Integer types up to 32 bits (`i8` to `i32`, `u8` to `u32`) carry their
/// type's `minimum` and `maximum`, so a value the type refuses is refused by
/// the schema, with a message naming the bound. 64-bit and wider types
/// carry no maximum, and the unsigned ones `minimum: 0` only: their bounds
/// exceed 2^53, past which JSON numbers lose precision in most parsers; a
/// value past their range is refused when the input is deserialized.
///
/// Returns `None` for `()` (a tool with unit output has no output schema)
/// and for [`NoSuspend`](crate::NoSuspend) (a tool that does not suspend has
/// no suspend or resume schema).
///
/// ```
/// #[derive(schemars::JsonSchema)]
/// struct Input {
///     /// City name
///     location: String,
/// }
///
/// let schema = tool_core::schema_for::<Input>().unwrap();
/// assert_eq!(schema["properties"]["location"]["description"], "City name");
/// assert_eq!(schema["required"][0], "location");
/// assert!(tool_core::schema_for::<()>().is_none());
/// // An integer type up to 32 bits advertises its bounds; a 64-bit one no
/// // maximum (its bounds exceed 2^53), an unsigned one `minimum: 0`.
/// let count = tool_core::schema_for::<u32>().unwrap();
/// assert_eq!((count["minimum"].as_u64(), count["maximum"].as_u64()), (Some(0), Some(4294967295)));
/// let id = tool_core::schema_for::<u64>().unwrap();
/// assert_eq!((id["minimum"].as_u64(), id.get("maximum")), (Some(0), None));
/// assert!(tool_core::schema_for::<i64>().unwrap().get("minimum").is_none());
/// assert!(tool_core::schema_for::<tool_core::NoSuspend>().is_none());
/// ```
pub fn schema_for<T: JsonSchema + ?Sized + 'static>() -> Option<Value> {
    // Generic only where it must be: this runs once per type of every tool.
    // No closure: it would be one more function per type.
    if has_schema(TypeId::of::<T>()) {
        Some(root_schema(raw_root_schema::<T>()))
    } else {
        None
    }
}

/// `T`'s root schema as schemars makes it, before [`root_schema`].
pub(crate) fn raw_root_schema<T: JsonSchema + ?Sized>() -> schemars::Schema {
    schemars::SchemaGenerator::default().into_root_schema_for::<T>()
}

fn has_schema(id: TypeId) -> bool {
    id != TypeId::of::<()>() && id != TypeId::of::<crate::NoSuspend>()
}

/// A root schema as the model is shown it: without `$schema`, a root `$ref`
/// inlined, integer bounds advertised.
pub(crate) fn root_schema(schema: schemars::Schema) -> Value {
    let mut schema = schema.to_value();
    if let Some(map) = schema.as_object_mut() {
        // The dialect marker is noise for models and rejected by some providers.
        map.remove("$schema");
        inline_root_ref(map);
    }
    advertise_integer_bounds(&mut schema);
    schema
}

/// The range of the integer types whose bounds a model can be told: up to
/// 32 bits (64-bit bounds exceed 2^53, past which JSON numbers lose
/// precision in most parsers; `u64` keeps schemars' `minimum: 0` only).
fn integer_range(format: &str) -> Option<(i64, i64)> {
    Some(match format {
        "int8" => (i8::MIN.into(), i8::MAX.into()),
        "int16" => (i16::MIN.into(), i16::MAX.into()),
        "int32" => (i32::MIN.into(), i32::MAX.into()),
        "uint8" => (0, u8::MAX.into()),
        "uint16" => (0, u16::MAX.into()),
        "uint32" => (0, u32::MAX.into()),
        _ => return None,
    })
}

/// Adds to each integer schema of a type up to 32 bits (schemars' `format`
/// says which) the bounds of its type, so that a value the type refuses is
/// refused by the schema the model sees, with a message naming the bound.
/// A bound the schema already has and that is tighter stays.
fn advertise_integer_bounds(schema: &mut Value) {
    match schema {
        Value::Object(map) => {
            let integer = match map.get("type") {
                Some(Value::String(kind)) => kind == "integer",
                Some(Value::Array(kinds)) => kinds.iter().any(|kind| kind == "integer"),
                _ => false,
            };
            if let Some((low, high)) = map
                .get("format")
                .and_then(Value::as_str)
                .and_then(integer_range)
                .filter(|_| integer)
            {
                let tighter =
                    |current: Option<&Value>, bound: i64, keep: fn(f64, f64) -> bool| match current
                        .and_then(Value::as_f64)
                    {
                        Some(current) if keep(current, bound as f64) => None,
                        _ => Some(Value::from(bound)),
                    };
                if let Some(low) = tighter(map.get("minimum"), low, |current, low| current >= low) {
                    map.insert("minimum".to_owned(), low);
                }
                if let Some(high) =
                    tighter(map.get("maximum"), high, |current, high| current <= high)
                {
                    map.insert("maximum".to_owned(), high);
                }
            }
            map.values_mut().for_each(advertise_integer_bounds);
        }
        Value::Array(items) => items.iter_mut().for_each(advertise_integer_bounds),
        _ => {}
    }
}

/// Replaces a root that only refers to a definition (a newtype's schema,
/// `{"$ref": "#/$defs/Inner"}`) by that definition, through newtypes of
/// newtypes: providers and MCP read the root's `type` and `properties`. The
/// root then is the definition, so references to it become `#`, as
/// schemars writes a recursive root.
fn inline_root_ref(root: &mut serde_json::Map<String, Value>) {
    // Each step takes one definition out of `$defs`: the loop ends.
    while inline_one_root_ref(root) {}
}

/// One step of [`inline_root_ref`]: false when the root is not a `$ref`
/// to a definition.
fn inline_one_root_ref(root: &mut serde_json::Map<String, Value>) -> bool {
    let Some(Value::String(reference)) = root.get("$ref") else {
        return false;
    };
    let reference = reference.clone();
    let Ok(tokens) = parse_ref(&reference) else {
        return false;
    };
    let [defs, name] = tokens.as_slice() else {
        return false;
    };
    let Some(Value::Object(definitions)) = root.get_mut("$defs").filter(|_| defs == "$defs") else {
        return false;
    };
    let Some(Value::Object(target)) = definitions.remove(name) else {
        return false;
    };
    if definitions.is_empty() {
        root.remove("$defs");
    }
    root.remove("$ref");
    for (key, value) in target {
        // The root's own keys (its title, a description) win.
        root.entry(key).or_insert(value);
    }
    for value in root.values_mut() {
        refer_to_root(value, &reference);
    }
    true
}

/// Rewrites every `$ref` to `reference` inside `schema` as `#`.
fn refer_to_root(schema: &mut Value, reference: &str) {
    match schema {
        Value::Object(map) => {
            for (key, value) in map.iter_mut() {
                if key == "$ref" && value == reference {
                    *value = Value::String("#".to_owned());
                } else {
                    refer_to_root(value, reference);
                }
            }
        }
        Value::Array(items) => {
            for item in items {
                refer_to_root(item, reference);
            }
        }
        _ => {}
    }
}

/// True when the schema describes objects (the reference turns a `null`
/// argument into `{}` for such tools).
pub(crate) fn expects_object(schema: &Value) -> bool {
    match schema.get("type") {
        Some(Value::String(t)) => t == "object",
        Some(Value::Array(types)) => types.iter().any(|t| t == "object"),
        _ => schema.get("properties").is_some(),
    }
}

/// True when `schema` (after its `$ref`s into `root`) describes objects with
/// named properties, as a tool's whole input must: a struct's, not a map's
/// (`additionalProperties` only), an enum's (`oneOf`), an option's
/// (`["object", "null"]`) or a scalar's.
pub(crate) fn is_object_root(root: &Value, schema: &Value) -> bool {
    let target = resolve(root, schema);
    target.get("type").and_then(Value::as_str) == Some("object")
        && (target.get("properties").is_some()
            || matches!(
                target.get("additionalProperties"),
                None | Some(Value::Bool(false))
            ))
}

/// Follows local `$ref`s (`#/$defs/X`, `#/definitions/X`, any JSON Pointer)
/// to the schema they end at; a `$ref` that does not resolve, or a chain that
/// comes back to a `$ref` already followed, stops where it is.
pub(crate) fn resolve<'a>(root: &'a Value, schema: &'a Value) -> &'a Value {
    let mut current = schema;
    let mut followed: Vec<&str> = Vec::new();
    while let Some(reference) = current.get("$ref").and_then(Value::as_str) {
        if followed.contains(&reference) {
            return current;
        }
        match resolve_ref(root, reference, false) {
            Ok(target) => current = target.value,
            Err(_) => return current,
        }
        followed.push(reference);
    }
    current
}

/// Where a local `$ref` leads. Input repair reads only `value`; strict
/// conversion (feature `strict`) reads the rest.
pub(crate) struct RefTarget<'a> {
    /// The decoded JSON Pointer tokens (empty: the root).
    #[cfg_attr(not(feature = "strict"), allow(dead_code))]
    pub(crate) tokens: Vec<String>,
    /// The value they point at.
    pub(crate) value: &'a Value,
    /// Whether the pointer passed through (or landed on) a non-root schema
    /// with a string `$id`, where the walk stopped (with `stop_at_id`).
    #[cfg_attr(not(feature = "strict"), allow(dead_code))]
    pub(crate) crosses_id: bool,
}

/// The one `$ref` resolver: a local reference (`#` or `#/json/pointer`)
/// against the document root. The error says why it does not resolve.
///
/// A non-root schema with a string `$id` starts a resource whose references
/// resolve against another base, so a root-relative pointer into it would mean
/// something else: with `stop_at_id` the walk stops there and says so in
/// [`RefTarget::crosses_id`], for callers that refuse such references.
pub(crate) fn resolve_ref<'a>(
    root: &'a Value,
    reference: &str,
    stop_at_id: bool,
) -> Result<RefTarget<'a>, String> {
    let tokens = parse_ref(reference)?;
    let mut value = root;
    for token in &tokens {
        value = step(value, token).ok_or("does not resolve in this schema")?;
        if stop_at_id && value.get("$id").is_some_and(Value::is_string) {
            return Ok(RefTarget {
                tokens,
                value,
                crosses_id: true,
            });
        }
    }
    Ok(RefTarget {
        tokens,
        value,
        crosses_id: false,
    })
}

/// Escapes one JSON Pointer token (RFC 6901).
pub(crate) fn escape_token(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

/// Splits a `$ref` into decoded pointer tokens; `#` is the root (no tokens).
///
/// The fragment is percent-decoded first (it is a URI fragment), then each token
/// is unescaped with a left-to-right scan so `~01` means `~1`, not `/`.
pub(crate) fn parse_ref(reference: &str) -> Result<Vec<String>, String> {
    let Some(fragment) = reference.strip_prefix('#') else {
        return Err("only local references starting with `#` are supported".into());
    };
    let fragment = percent_decode(fragment)?;
    if fragment.is_empty() {
        return Ok(Vec::new());
    }
    let Some(pointer) = fragment.strip_prefix('/') else {
        return Err("plain-name fragments (`$anchor`) are not supported; use `#/...`".into());
    };
    pointer.split('/').map(unescape_token).collect()
}

fn unescape_token(raw: &str) -> Result<String, String> {
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.chars();
    while let Some(c) = chars.next() {
        if c != '~' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('0') => out.push('~'),
            Some('1') => out.push('/'),
            _ => return Err(format!("invalid escape in pointer token `{raw}`")),
        }
    }
    Ok(out)
}

fn percent_decode(s: &str) -> Result<String, String> {
    if !s.contains('%') {
        return Ok(s.to_owned());
    }
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = s
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| format!("invalid percent-encoding in `{s}`"))?;
            out.push(hex);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| format!("percent-encoding in `{s}` is not UTF-8"))
}

/// One JSON Pointer step: an object member, or an array element by index.
fn step<'a>(value: &'a Value, token: &str) -> Option<&'a Value> {
    match value {
        Value::Object(map) => map.get(token),
        Value::Array(items) => token.parse::<usize>().ok().and_then(|i| items.get(i)),
        _ => None,
    }
}

/// True when a value of `json_type` may match `schema`, looking through
/// local `$ref`s and `anyOf`/`oneOf` branches.
pub(crate) fn admits(root: &Value, schema: &Value, json_type: &str) -> bool {
    admits_within(root, schema, json_type, 0)
}

fn admits_within(root: &Value, schema: &Value, json_type: &str, depth: usize) -> bool {
    // Bounded so recursive schemas cannot recurse forever.
    if depth > 16 {
        return false;
    }
    let schema = resolve(root, schema);
    match schema.get("type") {
        Some(Value::String(t)) => return t == json_type,
        Some(Value::Array(types)) => return types.iter().any(|t| t == json_type),
        _ => {}
    }
    ["anyOf", "oneOf"].iter().any(|key| {
        schema
            .get(*key)
            .and_then(Value::as_array)
            .is_some_and(|branches| {
                branches
                    .iter()
                    .any(|b| admits_within(root, b, json_type, depth + 1))
            })
    })
}

/// True when any part of the schema admits integers (`"type": "integer"`,
/// alone or in a type array).
pub(crate) fn mentions_integers(schema: &Value) -> bool {
    match schema {
        Value::Object(map) => {
            let typed = match map.get("type") {
                Some(Value::String(t)) => t == "integer",
                Some(Value::Array(types)) => types.iter().any(|t| t == "integer"),
                _ => false,
            };
            typed || map.values().any(mentions_integers)
        }
        Value::Array(items) => items.iter().any(mentions_integers),
        _ => false,
    }
}
