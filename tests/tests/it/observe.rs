//! `ToolContext::observe()`: spans and events of a tool nest under the call's
//! span; without a subscriber nothing is recorded and nothing fails.

use std::sync::{Arc, Mutex};

use integration_tests::block_on;
use serde_json::json;
use tool_core::{CallContext, Tool, ToolContext, tool};
use tracing::span::{Attributes, Id};
use tracing::{Event, Subscriber};
use tracing_subscriber::Layer;
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;

/// Fetch a page, observed
#[tool]
async fn fetch_page(url: String, ctx: ToolContext) -> usize {
    let span = ctx.observe().span("download");
    let _guard = span.enter();
    ctx.observe().info("downloading");
    url.len()
}

/// Records each span with the chain of its ancestors' names, and each event
/// with the chain of spans it happened in.
#[derive(Clone, Default)]
struct Recorder {
    spans: Arc<Mutex<Vec<Vec<String>>>>,
    events: Arc<Mutex<Vec<Vec<String>>>>,
}

fn chain<S: Subscriber + for<'a> LookupSpan<'a>>(ctx: &Context<'_, S>, id: &Id) -> Vec<String> {
    ctx.span_scope(id)
        .map(|scope| {
            scope
                .from_root()
                .map(|span| span_label(span.name(), span.extensions().get::<Label>()))
                .collect()
        })
        .unwrap_or_default()
}

struct Label(String);

fn span_label(name: &str, label: Option<&Label>) -> String {
    match label {
        Some(Label(label)) => format!("{name}({label})"),
        None => name.to_owned(),
    }
}

struct FieldText(String);

impl tracing::field::Visit for FieldText {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        if matches!(field.name(), "name" | "tool_id" | "message") {
            self.0 = format!("{value:?}").trim_matches('"').to_owned();
        }
    }
}

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Recorder {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let mut text = FieldText(String::new());
        attrs.record(&mut text);
        if let Some(span) = ctx.span(id) {
            span.extensions_mut().insert(Label(text.0));
        }
        self.spans.lock().unwrap().push(chain(&ctx, id));
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        let mut text = FieldText(String::new());
        event.record(&mut text);
        let mut scope: Vec<String> = ctx
            .event_scope(event)
            .map(|scope| {
                scope
                    .from_root()
                    .map(|span| span_label(span.name(), span.extensions().get::<Label>()))
                    .collect()
            })
            .unwrap_or_default();
        scope.push(text.0);
        self.events.lock().unwrap().push(scope);
    }
}

#[test]
fn observe_spans_and_events_are_children_of_the_call_span() {
    let recorder = Recorder::default();
    let subscriber = tracing_subscriber::registry().with(recorder.clone());
    let outcome = tracing::subscriber::with_default(subscriber, || {
        block_on(
            Tool::from(FetchPageTool)
                .execute(json!({ "url": "https://a.b" }), CallContext::new("call-7")),
        )
    });
    assert_eq!(outcome.output(), Some(&json!(11)));
    let spans = recorder.spans.lock().unwrap().clone();
    assert!(
        spans.contains(&vec![
            "tool.execute(fetch_page)".to_owned(),
            "tool.observe(download)".to_owned()
        ]),
        "{spans:?}"
    );
    let events = recorder.events.lock().unwrap().clone();
    assert!(
        events.contains(&vec![
            "tool.execute(fetch_page)".to_owned(),
            "tool.observe(download)".to_owned(),
            "downloading".to_owned()
        ]),
        "{events:?}"
    );
}

#[test]
fn a_parent_span_given_by_the_caller_encloses_the_call() {
    let recorder = Recorder::default();
    let subscriber = tracing_subscriber::registry().with(recorder.clone());
    tracing::subscriber::with_default(subscriber, || {
        let agent = tracing::info_span!("agent.step", name = "step-1");
        block_on(Tool::from(FetchPageTool).execute(
            json!({ "url": "x" }),
            CallContext::new("c").with_parent_span(agent),
        ))
    });
    let spans = recorder.spans.lock().unwrap().clone();
    assert!(
        spans.contains(&vec![
            "agent.step(step-1)".to_owned(),
            "tool.execute(fetch_page)".to_owned(),
            "tool.observe(download)".to_owned()
        ]),
        "{spans:?}"
    );
}

#[test]
fn without_a_subscriber_observe_is_a_no_op() {
    let outcome =
        block_on(Tool::from(FetchPageTool).execute(json!({ "url": "abc" }), CallContext::new("c")));
    assert_eq!(outcome.output(), Some(&json!(3)));
}

/// Fetch a city's forecast, observed with structured fields
#[tool]
async fn forecast(city: String, ctx: ToolContext) -> usize {
    let span = ctx
        .observe()
        .span_with("fetch", json!({ "city": city, "days": 3 }));
    let _guard = span.enter();
    ctx.observe().log(
        tracing::Level::WARN,
        "slow answer",
        json!({ "ms": 1200, "city": city }),
    );
    city.len()
}

/// Every field of every span and event, as `name=value` text.
#[derive(Clone, Default)]
struct Fields(Arc<Mutex<Vec<String>>>);

struct AllFields(Vec<String>);

impl tracing::field::Visit for AllFields {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        self.0.push(format!("{}={value:?}", field.name()));
    }
}

impl<S: Subscriber> Layer<S> for Fields {
    fn on_new_span(&self, attrs: &Attributes<'_>, _id: &Id, _ctx: Context<'_, S>) {
        let mut fields = AllFields(Vec::new());
        attrs.record(&mut fields);
        self.0.lock().unwrap().extend(fields.0);
    }
    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        let mut fields = AllFields(Vec::new());
        event.record(&mut fields);
        self.0.lock().unwrap().extend(fields.0);
    }
}

#[test]
fn observe_logs_and_spans_carry_structured_fields_to_tracing_and_to_the_caller() {
    let fields = Fields::default();
    let subscriber = tracing_subscriber::registry().with(fields.clone());
    let logged = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&logged);
    let ctx = CallContext::new("c1").on_log(move |record| sink.lock().unwrap().push(record));
    tracing::subscriber::with_default(subscriber, || {
        let tool: Tool = ForecastTool.into();
        let outcome = block_on(tool.execute(json!({ "city": "Paris" }), ctx));
        assert_eq!(outcome.output(), Some(&json!(5)));
    });
    let fields = fields.0.lock().unwrap().clone();
    let json_field = |name: &str| -> serde_json::Value {
        let text = fields
            .iter()
            .find_map(|field| field.strip_prefix(&format!("{name}=")))
            .unwrap_or_else(|| panic!("no field {name}: {fields:?}"));
        serde_json::from_str(text).unwrap()
    };
    assert_eq!(
        json_field("attributes"),
        json!({ "city": "Paris", "days": 3 })
    );
    assert_eq!(json_field("data"), json!({ "ms": 1200, "city": "Paris" }));
    let logged = logged.lock().unwrap();
    assert_eq!(logged.len(), 1);
    assert_eq!(logged[0].level, tracing::Level::WARN);
    assert_eq!(logged[0].message, "slow answer");
    assert_eq!(logged[0].data, Some(json!({ "ms": 1200, "city": "Paris" })));
}
