//! Which generation of MCP a request speaks, resolved once per request from
//! the protocol version it negotiated (or carries in its `_meta`) and the
//! capabilities its client declared. Three generations are served at once:
//! the `initialize` handshake (2025-11-25 and older, with 2025-11-25's
//! tasks), the stateless 2026-07-28 protocol, and the tasks extension
//! (SEP-2663) as rmcp 3.11 implements it. `tools/call` dispatches on the
//! resolved [`Protocol`], one handler per [`Generation`] (`dispatch.rs`).

use rmcp::model::ProtocolVersion;
use rmcp::service::{RequestContext, RoleServer};

use crate::compat_2025;
use crate::input_rounds::Asks;

/// How one `tools/call` is served: its generation, and what its client can
/// be asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Protocol {
    pub(crate) generation: Generation,
    /// The peer speaks 2026-07-28 or newer ([`modern`]), whatever its
    /// generation's task protocol: no logging and no sampling (SEP-2577),
    /// and output schemas of any root.
    pub(crate) modern: bool,
    /// How the client can be asked for input.
    pub(crate) elicit: Elicit,
    /// The client's model can be asked (`sampling/createMessage`): a client
    /// before 2026-07-28 that declared sampling.
    pub(crate) sampling: bool,
    /// The client's roots can be asked with a request (`roots/list`): a
    /// client before 2026-07-28 that declared roots.
    pub(crate) roots: bool,
    /// What the client declared it can be asked, and whether this server
    /// asks users: a running tool's questions on 2026-07-28 (SEP-2322's
    /// `input_required` rounds, `input_rounds.rs`).
    pub(crate) asks: Asks,
}

/// The generation of MCP a `tools/call` is served under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Generation {
    /// 2025-11-25 and older, over the `initialize` handshake, no task: the
    /// request waits for the call's outcome; the client is asked with
    /// requests of the server's own on the session (`elicitation/create`,
    /// `sampling/createMessage`). `declared_tasks`: the client declared
    /// 2025-11-25's `capabilities.tasks`, so a task-only tool called
    /// without a `task` param is "method not found", as that protocol says.
    Handshake {
        /// The client declared 2025-11-25's `capabilities.tasks`.
        declared_tasks: bool,
    },
    /// 2026-07-28: stateless (each request carries its `_meta`), no task:
    /// the request waits for the call's outcome; a question is an
    /// `input_required` result the client retries with its answer.
    Stateless2026,
    /// The tasks extension (SEP-2663), declared by a client of either
    /// protocol above: a deferred background tool's call is a task at
    /// once, whose questions wait for `tasks/update`.
    Sep2663,
    /// 2025-11-25's tasks (SEP-1686): a `tools/call` with a `task` param
    /// from a client that declared `capabilities.tasks`, which reaches the
    /// server through `compat_2025` (rmcp 3.11 does not model it): a task
    /// at once, whose questions `tasks/result` asks.
    Tasks2025,
}

/// How the client of a request can be asked for input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Elicit {
    /// It cannot: report pending calls.
    Unsupported,
    /// Send it an `elicitation/create` request (protocol before 2026-07-28).
    Request,
    /// Return an `input_required` result; it retries with the answer.
    InputRequired,
}

impl Protocol {
    /// A `tools/call` as rmcp hands it over. `elicitation`: the server asks
    /// clients that can show forms ([`McpServerBuilder::elicitation`]).
    ///
    /// [`McpServerBuilder::elicitation`]: crate::McpServerBuilder::elicitation
    pub(crate) fn of_call(context: &RequestContext<RoleServer>, elicitation: bool) -> Self {
        let generation = if context
            .client_capabilities()
            .is_some_and(|caps| caps.supports_tasks())
        {
            Generation::Sep2663
        } else if modern(context) {
            Generation::Stateless2026
        } else {
            Generation::Handshake {
                declared_tasks: compat_2025::peer_declared(context),
            }
        };
        Protocol::new(generation, context, elicitation)
    }

    /// A 2025-11-25 `tools/call` with a `task` param (`compat_2025`).
    pub(crate) fn of_task_2025(context: &RequestContext<RoleServer>, elicitation: bool) -> Self {
        Protocol::new(Generation::Tasks2025, context, elicitation)
    }

    fn new(
        generation: Generation,
        context: &RequestContext<RoleServer>,
        elicitation: bool,
    ) -> Self {
        let modern = modern(context);
        let capabilities = context.client_capabilities();
        let forms = capabilities
            .as_ref()
            .and_then(|caps| caps.elicitation.as_ref())
            // No mode named means form (2025-06-18).
            .is_some_and(|e| e.form.is_some() || e.url.is_none());
        let elicit = match (elicitation && forms, modern) {
            (false, _) => Elicit::Unsupported,
            (true, false) => Elicit::Request,
            (true, true) => Elicit::InputRequired,
        };
        let declared_sampling = capabilities
            .as_ref()
            .is_some_and(|caps| caps.sampling.is_some());
        let declared_roots = capabilities
            .as_ref()
            .is_some_and(|caps| caps.roots.is_some());
        Protocol {
            generation,
            modern,
            elicit,
            // Requests of the server's: not part of the 2026-07-28 protocol.
            sampling: !modern && declared_sampling,
            roots: !modern && declared_roots,
            asks: Asks {
                server_elicits: elicitation,
                forms,
                sampling: declared_sampling,
                roots: declared_roots,
            },
        }
    }

    /// The call is served under a task protocol: a background tool's call
    /// is (or may become) a task.
    pub(crate) fn tasks(&self) -> bool {
        matches!(self.generation, Generation::Sep2663 | Generation::Tasks2025)
    }
}

/// Whether the request's peer speaks the 2026-07-28 protocol or newer.
pub(crate) fn modern(context: &RequestContext<RoleServer>) -> bool {
    context
        .protocol_version()
        .is_some_and(|v| v.as_str() >= ProtocolVersion::V_2026_07_28.as_str())
}
