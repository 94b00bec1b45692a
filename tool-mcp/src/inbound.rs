//! What both transports check of a client's message before rmcp reads it,
//! so that each problem gets the JSON-RPC answer the specification names
//! (rmcp answers some with the wrong code, or not at all): a message over
//! the size limit, text that is not JSON (`-32700`), a message that is not
//! a JSON-RPC request, notification or response (`-32600`, with its id
//! when it has one), and a `tools/call` without a string `name` or with
//! `arguments` that are not an object (`-32602`).

use serde_json::{Value, json};

/// The largest message a client may send, by default: 4 MiB.
pub(crate) const MAX_MESSAGE: usize = 4 * 1024 * 1024;

/// A client message refused before rmcp reads it: the JSON-RPC error it
/// is answered with.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Refusal {
    /// The message's id, or `null` when it has none (or it could not be read).
    pub(crate) id: Value,
    pub(crate) code: i64,
    pub(crate) message: String,
}

impl Refusal {
    /// The JSON-RPC error response.
    pub(crate) fn to_json(&self) -> Value {
        json!({ "jsonrpc": "2.0", "id": self.id, "error": { "code": self.code, "message": self.message } })
    }

    /// A message longer than `limit` bytes (its id unread).
    pub(crate) fn too_large(limit: usize) -> Self {
        Refusal {
            id: Value::Null,
            code: -32600,
            message: format!(
                "Invalid Request: the message is over the server's limit of {limit} bytes \
                 (McpServerBuilder::max_message_size)"
            ),
        }
    }

    /// Text that is not JSON.
    pub(crate) fn parse_error(error: &serde_json::Error) -> Self {
        Refusal {
            id: Value::Null,
            code: -32700,
            message: format!("Parse error: {error}"),
        }
    }
}

/// Why `message` (valid JSON) cannot be served, if it cannot. Batches
/// (arrays) are left to rmcp.
pub(crate) fn check(message: &Value) -> Option<Refusal> {
    let object = match message {
        Value::Object(object) => object,
        Value::Array(_) => return None,
        _ => return Some(invalid(Value::Null, "a message must be a JSON object")),
    };
    let id = match object.get("id") {
        None => Value::Null,
        Some(id @ (Value::String(_) | Value::Number(_))) => id.clone(),
        Some(_) => return Some(invalid(Value::Null, "`id` must be a string or a number")),
    };
    if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Some(invalid(id, "`jsonrpc` must be \"2.0\""));
    }
    match object.get("method") {
        Some(Value::String(method)) if method == "tools/call" => {
            tools_call(id, object.get("params"))
        }
        Some(Value::String(_)) => None,
        Some(_) => Some(invalid(id, "`method` must be a string")),
        None if id.is_null() => Some(invalid(
            id,
            "a message needs a `method` (a request or notification) or an `id` (a response)",
        )),
        None if object.contains_key("result") != object.contains_key("error") => None,
        None => Some(invalid(
            id,
            "a response needs exactly one of `result` and `error`",
        )),
    }
}

fn invalid(id: Value, why: &str) -> Refusal {
    Refusal {
        id,
        code: -32600,
        message: format!("Invalid Request: {why}"),
    }
}

/// A `tools/call` needs the tool's `name` (a string) and, if any,
/// `arguments` as an object. A notification (no id) is not answered.
fn tools_call(id: Value, params: Option<&Value>) -> Option<Refusal> {
    if id.is_null() {
        return None;
    }
    let problem = match params {
        None => "tools/call needs params: the tool's `name` and its `arguments`",
        Some(Value::Object(params)) => match (params.get("name"), params.get("arguments")) {
            (Some(Value::String(_)), None | Some(Value::Object(_))) => return None,
            (Some(Value::String(_)), Some(_)) => "tools/call `arguments` must be an object",
            (None, _) => "tools/call params need the tool's `name`",
            (Some(_), _) => "tools/call `name` must be a string",
        },
        Some(_) => "tools/call params must be an object",
    };
    Some(Refusal {
        id,
        code: -32602,
        message: format!("Invalid params: {problem}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code_and_id(message: Value) -> Option<(i64, Value)> {
        check(&message).map(|refusal| (refusal.code, refusal.id))
    }

    #[test]
    fn requests_notifications_responses_and_batches_pass() {
        for message in [
            json!({ "jsonrpc": "2.0", "id": 1, "method": "ping" }),
            json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }),
            json!({ "jsonrpc": "2.0", "id": "a", "result": {} }),
            json!({ "jsonrpc": "2.0", "id": 2, "error": { "code": 1, "message": "no" } }),
            json!({ "jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": { "name": "t" } }),
            json!([{ "jsonrpc": "2.0", "id": 1, "method": "ping" }]),
        ] {
            assert_eq!(check(&message), None, "{message}");
        }
    }

    #[test]
    fn what_is_not_json_rpc_is_an_invalid_request_answered_with_its_id() {
        assert_eq!(code_and_id(json!(42)), Some((-32600, Value::Null)));
        assert_eq!(
            code_and_id(json!({ "id": 7, "method": "ping" })),
            Some((-32600, json!(7)))
        );
        assert_eq!(
            code_and_id(json!({ "jsonrpc": "2.0", "id": 8 })),
            Some((-32600, json!(8)))
        );
        assert_eq!(
            code_and_id(json!({ "jsonrpc": "2.0", "id": 9, "method": 3 })),
            Some((-32600, json!(9)))
        );
        assert_eq!(
            code_and_id(json!({ "jsonrpc": "2.0", "id": [1], "method": "ping" })),
            Some((-32600, Value::Null))
        );
    }

    #[test]
    fn a_tools_call_without_a_name_or_with_arguments_that_are_no_object_is_invalid_params() {
        let call = |params: Value| json!({ "jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": params });
        for params in [
            json!({ "arguments": {} }),
            json!({ "name": 3 }),
            json!({ "name": "t", "arguments": [1] }),
            json!("t"),
        ] {
            assert_eq!(
                code_and_id(call(params.clone())),
                Some((-32602, json!(5))),
                "{params}"
            );
        }
    }
}
