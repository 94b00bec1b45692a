//! A `tracing` layer that turns the events a tool's code emits inside its
//! call into the runtime's [`EventKind::Log`](crate::EventKind::Log) events, which the MCP server
//! forwards to its client as `notifications/message`.

use std::fmt::Write as _;

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id};
use tracing::{Event, Subscriber};
use tracing_subscriber::layer::{Context, Layer};
use tracing_subscriber::registry::LookupSpan;

use std::sync::Arc;

use crate::abort::CancelRegistry;
use crate::events::{EventBus, Notice};

/// Where this library's own events come from.
const OWN_TARGETS: [&str; 5] = [
    "tool_runtime",
    "tool_core",
    "tool_mcp",
    "tool_agent",
    "rmcp",
];

/// The name of the span the runtime opens for each call.
const CALL_SPAN: &str = "tool.call";

/// Forwards the `tracing` events the tool's code emits inside the calls of
/// one runtime (not this library's own) as [`EventKind::Log`](crate::EventKind::Log) events (so that an MCP client gets them as
/// `notifications/message`). Add it to your subscriber; made by
/// [`Runtime::log_layer`](crate::Runtime::log_layer). Events written with `ctx.observe()` reach the
/// runtime's events without it, and are not sent twice.
///
/// ```
/// use tracing_subscriber::layer::SubscriberExt as _;
/// use tool_runtime::Runtime;
///
/// let runtime = Runtime::builder().build().unwrap();
/// let subscriber = tracing_subscriber::registry().with(runtime.log_layer());
/// # let _ = subscriber;
/// ```
#[derive(Debug, Clone)]
pub struct CallLogLayer {
    events: EventBus,
    running: Arc<CancelRegistry>,
}

impl CallLogLayer {
    /// The layer of the calls running in `running`, noticed on `events`.
    pub(crate) fn new(events: EventBus, running: Arc<CancelRegistry>) -> Self {
        CallLogLayer { events, running }
    }
}

/// The call a span is, kept in its extensions.
struct CallSpan {
    call_id: String,
    tool_id: String,
}

impl<S> Layer<S> for CallLogLayer
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        if attrs.metadata().name() != CALL_SPAN {
            return;
        }
        let mut fields = CallFields::default();
        attrs.record(&mut fields);
        if let (Some(call_id), Some(tool_id), Some(span)) =
            (fields.call_id, fields.tool_id, ctx.span(id))
        {
            span.extensions_mut().insert(CallSpan { call_id, tool_id });
        }
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        // The runtime's own events (and the MCP SDK's) are not the tool's logs.
        let target = event.metadata().target();
        if OWN_TARGETS.iter().any(|own| target.starts_with(own)) {
            return;
        }
        let Some(scope) = ctx.event_scope(event) else {
            return;
        };
        let call = scope.into_iter().find_map(|span| {
            span.extensions()
                .get::<CallSpan>()
                .map(|call| (call.call_id.clone(), call.tool_id.clone()))
        });
        let Some((call_id, tool_id)) = call else {
            return;
        };
        if !self.events.noticed(&call_id) || !self.running.is_running(&call_id) {
            return;
        }
        let mut message = Message::default();
        event.record(&mut message);
        if message.observed {
            return;
        }
        let record = tool_core::LogRecord::new(*event.metadata().level(), message.text);
        self.events.notice(&call_id, &tool_id, Notice::Log(record));
    }
}

/// The call span's ids.
#[derive(Default)]
struct CallFields {
    call_id: Option<String>,
    tool_id: Option<String>,
}

impl Visit for CallFields {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        match field.name() {
            "call_id" => self.call_id = Some(format!("{value:?}")),
            "tool_id" => self.tool_id = Some(format!("{value:?}")),
            _ => {}
        }
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        match field.name() {
            "call_id" => self.call_id = Some(value.to_owned()),
            "tool_id" => self.tool_id = Some(value.to_owned()),
            _ => {}
        }
    }
}

/// An event's message, then its other fields as `name=value`.
#[derive(Default)]
struct Message {
    text: String,
    observed: bool,
}

impl Visit for Message {
    fn record_bool(&mut self, field: &Field, value: bool) {
        if field.name() == "observed" {
            self.observed = value;
        } else {
            self.record_debug(field, &value);
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            let fields = std::mem::take(&mut self.text);
            let _ = write!(self.text, "{value:?}");
            self.text.push_str(&fields);
        } else {
            let _ = write!(self.text, " {}={value:?}", field.name());
        }
    }
}
