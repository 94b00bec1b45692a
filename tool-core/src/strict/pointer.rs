//! Local `$ref` parsing and resolution (`#` and `#/json/pointer`).

use serde_json::Value;

use super::error::{StrictError, StrictRule};

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

/// Resolves a `$ref` against the document root.
///
/// Refuses to pass through (or land on) a non-root schema that declares a string
/// `$id`: that starts a new resource whose references resolve against a different
/// base, so a root-relative pointer into it would mean something else.
pub(crate) fn resolve<'a>(
    root: &'a Value,
    reference: &str,
    path: &str,
) -> Result<(Vec<String>, &'a Value), StrictError> {
    let invalid = |reason: String| {
        StrictError::new(
            path,
            StrictRule::InvalidRef {
                reference: reference.to_owned(),
                reason,
            },
        )
    };
    let tokens = parse_ref(reference).map_err(invalid)?;
    let mut current = root;
    for token in &tokens {
        current = step(current, token)
            .ok_or_else(|| invalid("does not resolve in this schema".into()))?;
        if current.get("$id").is_some_and(Value::is_string) {
            return Err(StrictError::new(path, StrictRule::NestedIdRef));
        }
    }
    Ok((tokens, current))
}

/// One JSON Pointer step: an object member, or an array element by index.
pub(crate) fn step<'a>(value: &'a Value, token: &str) -> Option<&'a Value> {
    match value {
        Value::Object(map) => map.get(token),
        Value::Array(items) => token.parse::<usize>().ok().and_then(|i| items.get(i)),
        _ => None,
    }
}

/// Whether a reference points at a definition we keep as a `$ref` target:
/// the root itself or a root-level `$defs`/`definitions` entry.
pub(crate) fn is_kept_target(tokens: &[String]) -> bool {
    tokens.is_empty() || (tokens.len() == 2 && (tokens[0] == "$defs" || tokens[0] == "definitions"))
}
