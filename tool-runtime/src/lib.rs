//! Runtime for [`tool_core`] tools: the call pipeline of Mastra's
//! `createTool` and more, around [`tool_core::Tool::execute`].
//!
//! Use it when a call needs more than running the tool: a person's approval
//! (or edit, or answer), suspend and resume, lifecycle hooks, arguments
//! streamed from a provider, background tasks, cancellation and time limits,
//! events for a UI, or calls stored so that no crash, dropped future or
//! second instance loses or repeats them (SQLite on one host, PostgreSQL
//! across hosts, workers). Build one [`Runtime`] with your tools and a store,
//! and send it every call the model makes; `tool-mcp`, `tool-agent`,
//! `tool-inbox` and `tool-rig` all work on a runtime.
//!
//! - [`Runtime::call`] runs a [`ToolCall`]: validation, hooks, approval
//!   gate, execute, output; a failure is a [`CallOutcome::Failed`] the model reads.
//! - Streaming input: [`Runtime::begin`] → [`InputStream::push`] /
//!   [`InputStream::partial`] → [`InputStream::finish`], with the
//!   `on_input_start` / `on_input_delta` / `on_input_available` / `on_output` hooks.
//! - Human approval: [`Runtime::approve`] / [`Runtime::decline`];
//!   suspend/resume: [`Runtime::resume`]. Stored calls live in a store
//!   ([`store::MemoryStore`], or the durable `SqliteStore` of feature
//!   `sqlite` and `PostgresStore` of feature `postgres`; your own implements
//!   [`store::CallStore`], [`store::RunStore`] and [`store::AuditLog`])
//!   through their lifecycle, pending → running (claimed under a lease) → settled
//!   ([`CallState`]); [`Runtime::recover`] takes over the calls of a runtime
//!   that died.
//! - Background tasks ([`CallOutcome::BackgroundStarted`], [`Runtime::wait`]),
//!   cancellation and time limits ([`Runtime::cancel`], [`CallOutcome::Aborted`]).
//! - [`Runtime::events`] streams a [`ToolEvent`] for every phase, with display
//!   and transcript payloads.
//! - Feature `provider`: [`ToolCallAssembler`] turns a provider's decoded
//!   tool-call events into runtime calls, and [`ProviderStream`] drives
//!   streaming input with it from a
//!   provider's streamed response (the decoders of `tool_core::provider`).
//! - Feature `log-layer`: [`Runtime::log_layer`], a `tracing` layer that
//!   turns what a tool's code logs inside its call into the call's log
//!   notices ([`Runtime::watch`]).
//! - MCP is crate `tool-mcp`: it serves a runtime's tools over stdio and
//!   streamable HTTP and uses a remote MCP server's tools, on this crate's
//!   public API.
//! - Feature `async-openai`: `openai` converts tools, tool calls and tool
//!   results to and from async-openai's Chat Completions and Responses types.
//!
//! Every call runs in a `tracing` span `tool.call` with `tool_id` and
//! `call_id`; the tool's own span and its `observe()` spans nest inside it.
//!
//! ```
//! use serde_json::json;
//! use tool_core::{Tool, ToolError};
//! use tool_runtime::{CallOutcome, Runtime, ToolCall};
//!
//! # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
//! let transfer = Tool::builder("transfer")
//!     .description("Transfer money")
//!     .require_approval(true)
//!     .execute(|input, _ctx| async move { Ok::<_, ToolError>(json!({ "sent": input["amount"] })) })
//!     .build()
//!     .unwrap();
//! let runtime = Runtime::builder().tool(transfer).build().unwrap();
//!
//! let outcome = runtime.call(ToolCall::new("call-1", "transfer", json!({ "amount": 10 }))).await;
//! assert!(matches!(outcome, CallOutcome::ApprovalRequired { .. }));
//! let outcome = runtime.approve("call-1").await.unwrap();
//! assert_eq!(outcome.output(), Some(&json!({ "sent": 10 })));
//! # });
//! ```

#![cfg_attr(docsrs, feature(doc_cfg))]

mod abort;
mod approval_policy;
mod approval_rules;
#[cfg(feature = "provider")]
mod assembler;
mod background;
mod before_run;
mod call;
mod call_inbox;
mod call_outcome;
mod call_path;
mod claims;
mod decide;
mod decision;
mod digest;
mod dispatcher;
mod error;
mod events;
mod hook_queue;
#[cfg(feature = "log-layer")]
mod log_layer;
mod notifications;
#[cfg(feature = "async-openai")]
#[cfg_attr(docsrs, doc(cfg(feature = "async-openai")))]
pub mod openai;
mod outage;
mod principal;
#[cfg(feature = "provider")]
mod provider_stream;
mod rule_predicates;
mod runs;
mod runtime;
mod standing_rules;
pub mod store;
mod stream;
mod worker;

pub use approval_policy::ApprovalCheck;
#[cfg(feature = "provider")]
#[cfg_attr(docsrs, doc(cfg(feature = "provider")))]
pub use assembler::{Assembled, CompleteCall, ToolCallAssembler};
pub use background::BackgroundResult;
pub use before_run::RunCheck;
pub use call::{CallHead, ToolCall};
pub use call_inbox::CallInbox;
pub use call_outcome::CallOutcome;
pub use decide::{Approvals, Recovered};
pub use decision::Decision;
pub use digest::Digest;
pub use dispatcher::{
    DispatchReport, Dispatcher, DispatcherBuilder, NotificationSink, RetryPolicy, SinkError,
    SinkLimits,
};
pub use error::RuntimeError;
pub use events::{CallWatch, EventKind, Events, Notice, Payload, ToolEvent, TranscriptEntry};
pub use hook_queue::{DEFAULT_APPROVAL_TIMEOUT, DEFAULT_HOOK_TIMEOUT};
#[cfg(feature = "log-layer")]
#[cfg_attr(docsrs, doc(cfg(feature = "log-layer")))]
pub use log_layer::CallLogLayer;
pub use principal::{Decider, Principal};
#[cfg(feature = "provider")]
#[cfg_attr(docsrs, doc(cfg(feature = "provider")))]
pub use provider_stream::{ProviderStream, Pushed, StreamedCall};
pub use rule_predicates::{RulePredicates, RuleSubject};
pub use runs::Runs;
pub use runtime::{Runtime, RuntimeBuilder};
pub use standing_rules::StandingRules;
// The stores' vocabulary that `Runtime`'s own methods speak; the rest of
// what a store implementer needs is under `store`.
pub use store::{CallState, PendingCall, PendingKind, StandingRule, StoreError, StoredCall};
pub use stream::InputStream;
pub use worker::Worker;
