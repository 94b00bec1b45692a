//! Helpers shared by the runtime's integration tests.
#![allow(dead_code)]

use std::fmt::Write as _;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tool_core::{Tool, ToolBuilder, ToolContext, ToolError};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id};
use tracing::{Event, Subscriber};
use tracing_subscriber::layer::{Context, Layer};
use tracing_subscriber::registry::LookupSpan;

/// Every runtime approves calls `c{first}` to `c{last}` at once: each answer is
/// the call's outcome (from the decision that ran it, or recorded) or
/// "running" (the other decision was running it).
pub async fn approve_all_at_once(
    runtimes: &[tool_runtime::Runtime],
    ids: std::ops::RangeInclusive<usize>,
) {
    let mut approvals = Vec::new();
    for i in ids {
        for runtime in runtimes {
            let runtime = runtime.clone();
            approvals.push(tokio::spawn(async move {
                runtime.approve(&format!("c{i}")).await
            }));
        }
    }
    for approval in approvals {
        match approval.await.unwrap() {
            Ok(outcome) => assert!(outcome.output().is_some(), "{outcome:?}"),
            Err(tool_runtime::RuntimeError::Running { .. }) => {}
            Err(other) => panic!("{other}"),
        }
    }
}

/// What a recording tool saw, one entry per execution.
pub type Runs = Arc<Mutex<Vec<Value>>>;

/// A tool that records every execution's input and returns `{"echo": input}`.
pub fn echo_tool(id: &str, configure: impl FnOnce(ToolBuilder) -> ToolBuilder) -> (Tool, Runs) {
    let runs: Runs = Arc::default();
    let seen = Arc::clone(&runs);
    let builder = Tool::builder(id).description("Echoes its input").execute(
        move |input: Value, _ctx: ToolContext<Value, Value>| {
            seen.lock().unwrap().push(input.clone());
            async move { Ok::<_, ToolError>(json!({ "echo": input })) }
        },
    );
    (configure(builder).build().unwrap(), runs)
}

/// A tool that suspends with `{"asked": input}` on its first run and, on
/// resume, returns the input, the resume data and the earlier payload.
pub fn asking_tool(id: &str) -> (Tool, Runs) {
    let runs: Runs = Arc::default();
    let seen = Arc::clone(&runs);
    let tool = Tool::builder(id)
        .description("Asks a question before answering")
        .suspend_schema(
            json!({ "type": "object", "properties": { "asked": {} }, "required": ["asked"] }),
        )
        .resume_schema(json!({ "type": ["boolean", "number", "string", "object"] }))
        .execute(move |input: Value, ctx: ToolContext<Value, Value>| {
            let resume = ctx.resume_data().cloned();
            let payload = ctx.suspend_payload().cloned();
            seen.lock()
                .unwrap()
                .push(json!({ "input": input, "resume": resume, "payload": payload }));
            async move {
                match resume {
                    None => ctx.suspend(json!({ "asked": input })),
                    Some(data) => Ok::<_, ToolError>(
                        json!({ "input": input, "data": data, "payload": payload }),
                    ),
                }
            }
        })
        .build()
        .unwrap();
    (tool, runs)
}

/// A span as created: its name, its parent's name, its fields.
#[derive(Debug, Clone)]
pub struct SpanRecord {
    pub name: String,
    pub parent: Option<String>,
    pub fields: String,
}

/// A `tracing` layer that records spans and log lines.
#[derive(Clone, Default)]
pub struct Capture {
    pub spans: Arc<Mutex<Vec<SpanRecord>>>,
    pub logs: Arc<Mutex<Vec<String>>>,
}

struct Fields<'a>(&'a mut String);

impl Visit for Fields<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        let _ = write!(self.0, "{}={:?} ", field.name(), value);
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        let _ = write!(self.0, "{}={} ", field.name(), value);
    }
}

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Capture {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let mut fields = String::new();
        attrs.record(&mut Fields(&mut fields));
        let parent = ctx
            .span(id)
            .and_then(|span| span.parent().map(|p| p.name().to_owned()));
        self.spans.lock().unwrap().push(SpanRecord {
            name: attrs.metadata().name().to_owned(),
            parent,
            fields,
        });
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        let mut line = format!("{} ", event.metadata().level());
        event.record(&mut Fields(&mut line));
        if let Some(scope) = ctx.event_scope(event) {
            for span in scope.from_root() {
                let _ = write!(line, " in:{}", span.name());
            }
        }
        self.logs.lock().unwrap().push(line);
    }
}

impl Capture {
    /// Installs the layer for the current thread until the guard drops.
    pub fn install(&self) -> tracing::subscriber::DefaultGuard {
        use tracing_subscriber::layer::SubscriberExt as _;
        tracing::subscriber::set_default(tracing_subscriber::registry().with(self.clone()))
    }

    pub fn logs(&self) -> Vec<String> {
        self.logs.lock().unwrap().clone()
    }

    pub fn spans(&self) -> Vec<SpanRecord> {
        self.spans.lock().unwrap().clone()
    }
}
pub mod contract;
pub mod deciders;
pub mod drops;
pub mod faulty;
pub mod respond;

/// The calls of a store's listing, without their lifecycle fields.
pub fn calls(listed: Vec<tool_runtime::StoredCall>) -> Vec<tool_runtime::PendingCall> {
    listed.into_iter().map(|stored| stored.call).collect()
}

/// The name libtest knows test `test` of the module at `module_path` by
/// (`module_path!()` there), for running it alone in a child process with
/// `--exact`: the module's path without the test binary's crate.
pub fn test_name(module_path: &str, test: &str) -> String {
    let module = module_path
        .split_once("::")
        .map_or("", |(_, module)| module);
    format!("{module}::{test}")
}
