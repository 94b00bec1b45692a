//! The rewriting of JSON-RPC messages in front of rmcp, for both
//! transports: a 2025-11-25 client's `capabilities.tasks` kept where rmcp
//! keeps it ([`inbound`]), the server's added to the `initialize` result
//! ([`outbound_initialize`]), and the requests rmcp would answer in other
//! shapes renamed, for a session that declared tasks ([`rename`]).

use rmcp::model::ProtocolVersion;
use rmcp::service::{RequestContext, RoleServer};
use serde_json::{Map, Value, json};

/// Where [`inbound`] keeps a 2025-11-25 client's `capabilities.tasks`:
/// under `capabilities.experimental`, which rmcp keeps.
const CLIENT_TASKS_KEY: &str = "tool-runtime/tasks-2025-11-25";

/// What [`inbound`] did to a message (or batch).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Inbound {
    /// It changed: serialize it again.
    pub(crate) changed: bool,
    /// It holds a 2025-11-25 `initialize` that declares `capabilities.tasks`:
    /// its result gets the server's ([`outbound_initialize`]).
    pub(crate) declares_tasks: bool,
}

/// Keeps what rmcp's types would drop from a client's `initialize` (or a
/// batch holding one): a 2025-11-25 `initialize`'s `capabilities.tasks`,
/// copied under `experimental`. An entry a client sent under that key
/// itself is removed: only the protocol's own field counts.
pub(crate) fn inbound(message: &mut Value) -> Inbound {
    let mut seen = Inbound::default();
    match message {
        Value::Array(batch) => batch.iter_mut().for_each(|m| inbound_one(m, &mut seen)),
        message => inbound_one(message, &mut seen),
    }
    seen
}

fn inbound_one(message: &mut Value, seen: &mut Inbound) {
    if message.get("method").and_then(Value::as_str) != Some("initialize") {
        return;
    }
    let Some(params) = message.get_mut("params").and_then(Value::as_object_mut) else {
        return;
    };
    let version = params.get("protocolVersion").and_then(Value::as_str);
    let legacy = version == Some(ProtocolVersion::V_2025_11_25.as_str());
    let Some(capabilities) = params
        .get_mut("capabilities")
        .and_then(Value::as_object_mut)
    else {
        return;
    };
    let tasks = capabilities.get("tasks").filter(|t| t.is_object()).cloned();
    let experimental = capabilities
        .entry("experimental")
        .or_insert_with(|| Value::Object(Map::new()));
    let Some(experimental) = experimental.as_object_mut() else {
        return;
    };
    seen.changed |= experimental.remove(CLIENT_TASKS_KEY).is_some();
    if let (true, Some(tasks)) = (legacy, tasks) {
        experimental.insert(CLIENT_TASKS_KEY.to_owned(), tasks);
        seen.changed = true;
        seen.declares_tasks = true;
    }
}

/// The method a request of a session that declared 2025-11-25 tasks is
/// renamed to: one rmcp hands to `on_custom_request` as it came.
pub(crate) const RENAMED: &str = "tool-runtime/2025-11-25/";

/// Renames, in a message (or batch) of a session that declared 2025-11-25
/// tasks, the requests rmcp would answer in other shapes: `tools/list`
/// (tools get `execution`), a `tools/call` with a `task` param, `tasks/get`
/// and `tasks/cancel`. Whether any was.
pub(crate) fn rename(message: &mut Value) -> bool {
    match message {
        Value::Array(batch) => batch
            .iter_mut()
            .fold(false, |renamed, m| rename_one(m) | renamed),
        message => rename_one(message),
    }
}

fn rename_one(message: &mut Value) -> bool {
    let Some(method) = message.get("method").and_then(Value::as_str) else {
        return false;
    };
    let renamed = match method {
        "tools/list" | "tasks/get" | "tasks/cancel" => true,
        "tools/call" => message
            .get("params")
            .and_then(|p| p.get("task"))
            .is_some_and(Value::is_object),
        _ => false,
    };
    if renamed {
        message["method"] = Value::String(format!("{RENAMED}{method}"));
    }
    renamed
}

/// Adds the server's `capabilities.tasks` to a 2025-11-25 `initialize`
/// result (for a client that declared its own); whether it changed.
pub(crate) fn outbound_initialize(message: &mut Value) -> bool {
    let Some(result) = message.get_mut("result").and_then(Value::as_object_mut) else {
        return false;
    };
    if result.get("protocolVersion").and_then(Value::as_str)
        != Some(ProtocolVersion::V_2025_11_25.as_str())
    {
        return false;
    }
    let Some(capabilities) = result
        .get_mut("capabilities")
        .and_then(Value::as_object_mut)
    else {
        return false;
    };
    capabilities.insert(
        "tasks".to_owned(),
        json!({ "list": {}, "cancel": {}, "requests": { "tools": { "call": {} } } }),
    );
    true
}

/// Whether the request's peer negotiated 2025-11-25 and declared
/// `capabilities.tasks`.
pub(crate) fn peer_declared(context: &RequestContext<RoleServer>) -> bool {
    context.protocol_version() == Some(ProtocolVersion::V_2025_11_25)
        && context.peer.peer_info().is_some_and(|info| {
            info.capabilities
                .experimental
                .as_ref()
                .is_some_and(|e| e.contains_key(CLIENT_TASKS_KEY))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_edge_keeps_the_declaration_and_renames_what_rmcp_would_answer_otherwise() {
        let mut initialize = json!({
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": { "protocolVersion": "2025-11-25", "capabilities": { "tasks": { "list": {} } },
                "clientInfo": { "name": "c", "version": "1" } }
        });
        let seen = inbound(&mut initialize);
        assert!(seen.changed && seen.declares_tasks);
        assert_eq!(
            initialize["params"]["capabilities"]["experimental"][CLIENT_TASKS_KEY],
            json!({ "list": {} })
        );
        // Another version's initialize, or a client's own entry, declares nothing.
        let mut older = json!({ "method": "initialize", "params": { "protocolVersion": "2025-06-18",
            "capabilities": { "tasks": {}, "experimental": { CLIENT_TASKS_KEY: {} } } } });
        let seen = inbound(&mut older);
        assert!(seen.changed && !seen.declares_tasks);
        assert_eq!(older["params"]["capabilities"]["experimental"], json!({}));
        let mut batch = json!([
            { "method": "tools/call", "params": { "name": "t", "task": { "ttl": 5 } } },
            { "method": "tools/call", "params": { "name": "t" } },
            { "method": "tasks/get", "params": { "taskId": "x" } },
            { "method": "tasks/result", "params": { "taskId": "x" } },
            { "method": "tools/list" },
        ]);
        assert!(!inbound(&mut batch).changed);
        assert!(rename(&mut batch));
        let methods: Vec<&str> = (0..5)
            .map(|i| batch[i]["method"].as_str().unwrap())
            .collect();
        assert_eq!(
            methods,
            [
                "tool-runtime/2025-11-25/tools/call",
                "tools/call",
                "tool-runtime/2025-11-25/tasks/get",
                "tasks/result",
                "tool-runtime/2025-11-25/tools/list"
            ]
        );
        let mut plain = json!({ "method": "tools/call", "params": { "name": "t" } });
        assert!(!rename(&mut plain));

        let mut result =
            json!({ "id": 1, "result": { "protocolVersion": "2025-11-25", "capabilities": {} } });
        assert!(outbound_initialize(&mut result));
        assert_eq!(
            result["result"]["capabilities"]["tasks"]["requests"]["tools"]["call"],
            json!({})
        );
        let mut newer =
            json!({ "id": 1, "result": { "protocolVersion": "2026-07-28", "capabilities": {} } });
        assert!(!outbound_initialize(&mut newer));
    }
}
