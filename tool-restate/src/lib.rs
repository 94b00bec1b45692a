//! tool-runtime's tools on [Restate](https://restate.dev): each tool call is
//! a virtual object of a Restate server (keyed by the call's id, so one
//! step of a call runs at a time), each step of it (the call, a decision)
//! a journaled action of the object, and a call waiting for approval waits
//! in the object's state, surviving every process.
//!
//! The application registers the same tools it gives a
//! [`Runtime`](tool_runtime::Runtime) ([`RestateTools::new`]), serves the
//! SDK's endpoint, registers it with the Restate server, and calls through
//! the ingress ([`RestateClient`]). A step is taken by a runtime built
//! from the application's configuration on a memory store restored from
//! the object's state, so a call is admitted, validated, approval-gated
//! (principal, digest, N of M, groups, separation of duties, expiry),
//! executed and settled as `Runtime::call` does, with the same
//! [`CallOutcome`](tool_runtime::CallOutcome).
//!
//! What "once" means here: Restate journals a step's result once; a step
//! whose process died before that is taken again. A tool declared
//! `retry_safe` then simply runs again. Any other tool's run first enters
//! the call's fence (the object `ToolCallFences`, through the ingress; for
//! a decision or a task, right before the tool runs, after the decision is
//! recorded and audited): an execution that finds an earlier one entered
//! recovers the call as the runtime recovers an interrupted one (settled
//! as interrupted, or asked to reconcile), and never runs the tool twice.
//!
//! Waiting calls are listed from the server's SQL introspection of the
//! objects' state ([`RestateClient::waiting`]).
//! An approval that expires is declined by a durable timer of the call's
//! object (its `expire` handler, sent by the step that stored the call).
//!
//! A background tool's call answers at once
//! ([`CallOutcome::BackgroundStarted`](tool_runtime::CallOutcome::BackgroundStarted));
//! its task runs in an invocation of the object's own (`settle`), with the
//! tool's time limit and retries and the runtime's completion hooks, and
//! [`RestateClient::wait`] answers its outcome.
//!
//! Standing rules are kept in the object `ToolRules` ([`RestateRules`]),
//! made and revoked with [`RestateTools::rules`], and applied by every
//! call's step.
//!
//! Not served here (yet): agent runs as workflows, and tool-inbox's page
//! over a Restate deployment.

mod client;
mod document;
#[cfg(feature = "postgres")]
pub mod effects;
mod error;
mod ingress;
mod rules;
mod service;
mod wire;

pub use client::RestateClient;
pub use document::{CallDocument, DocumentState};
pub use error::RestateError;
pub use rules::{RestateRules, ToolRules};
pub use service::{RestateTools, ToolCallFences, ToolCalls};
pub use wire::{Answer, CallRequest, DecideRequest, Reply, WireDecision};
