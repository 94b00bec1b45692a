//! Display and transcript transforms: what UIs and stored transcripts show of
//! a call, phase by phase, while execute and the model keep the raw values.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use serde_json::{Value, json};

/// Where a projected payload goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Target {
    /// Events for UIs.
    Display,
    /// Entries of the stored conversation transcript.
    Transcript,
}

/// The phase of a call a payload belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Phase {
    /// A streamed fragment of the arguments.
    InputDelta,
    /// The complete arguments.
    Input,
    /// The tool's output.
    Output,
    /// An error result.
    Error,
    /// An approval request.
    Approval,
    /// A suspension payload.
    Suspend,
    /// Resume data.
    Resume,
}

impl Phase {
    /// The phases whose payload is a whole value (every one but
    /// [`InputDelta`](Phase::InputDelta)).
    pub const WHOLE: [Phase; 6] = [
        Phase::Input,
        Phase::Output,
        Phase::Error,
        Phase::Approval,
        Phase::Suspend,
        Phase::Resume,
    ];

    /// The reference's name for the phase (`input-available`, `output-available`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::InputDelta => "input-delta",
            Phase::Input => "input-available",
            Phase::Output => "output-available",
            Phase::Error => "error",
            Phase::Approval => "approval",
            Phase::Suspend => "suspend",
            Phase::Resume => "resume",
        }
    }
}

/// What a transformer is given.
#[derive(Debug, Clone, Copy)]
pub struct TransformContext<'a> {
    /// Where the result goes.
    pub target: Target,
    /// Which phase of the call.
    pub phase: Phase,
    /// The tool's id.
    pub tool_id: &'a str,
    /// The call's id.
    pub call_id: &'a str,
    /// The raw payload of this phase.
    pub payload: &'a Value,
}

/// The result of projecting one payload for one target.
#[derive(Debug, Clone, PartialEq)]
pub enum Projection {
    /// No transform is configured for the target: use the raw payload.
    Unchanged,
    /// Nothing is shown (unhandled or failed input deltas).
    Suppressed,
    /// Show this instead of the raw payload.
    Projected(Value),
}

type Transformer = Arc<dyn Fn(&TransformContext<'_>) -> Option<Value> + Send + Sync>;

/// Per-phase transformers for the display and transcript targets.
///
/// A target with at least one transformer is *configured*; for a configured
/// target, a phase without a transformer (or whose transformer returns `None`
/// or panics) shows `{"message": "Tool <phase> payload unavailable"}`, and
/// input deltas are suppressed. Unconfigured targets show raw payloads.
///
/// ```
/// use serde_json::json;
/// use tool_core::transform::{Phase, Projection, Target, ToolTransform, TransformContext};
///
/// let transform = ToolTransform::new()
///     .display(Phase::Input, |ctx| Some(json!({ "city": ctx.payload["location"] })));
/// let payload = json!({ "location": "Paris" });
/// let ctx = TransformContext { target: Target::Display, phase: Phase::Input, tool_id: "weather", call_id: "c1", payload: &payload };
/// assert_eq!(transform.project(&ctx), Projection::Projected(json!({ "city": "Paris" })));
///
/// let output = json!({ "temperature": 21 });
/// let ctx = TransformContext { phase: Phase::Output, payload: &output, ..ctx };
/// assert_eq!(transform.project(&ctx), Projection::Projected(json!({ "message": "Tool output-available payload unavailable" })));
///
/// let ctx = TransformContext { target: Target::Transcript, ..ctx };
/// assert_eq!(transform.project(&ctx), Projection::Unchanged);
/// ```
#[derive(Clone, Default)]
pub struct ToolTransform {
    transformers: HashMap<(Target, Phase), Transformer>,
}

impl fmt::Debug for ToolTransform {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut keys: Vec<_> = self.transformers.keys().collect();
        keys.sort_by_key(|(t, p)| (*t as u8, *p as u8));
        f.debug_struct("ToolTransform")
            .field("phases", &keys)
            .finish()
    }
}

impl ToolTransform {
    /// No transformers: every target shows raw payloads.
    pub fn new() -> Self {
        ToolTransform::default()
    }

    /// Sets the display transformer of `phase`.
    #[must_use]
    pub fn display<F>(self, phase: Phase, transformer: F) -> Self
    where
        F: Fn(&TransformContext<'_>) -> Option<Value> + Send + Sync + 'static,
    {
        self.with(Target::Display, phase, transformer)
    }

    /// Sets the transcript transformer of `phase`.
    #[must_use]
    pub fn transcript<F>(self, phase: Phase, transformer: F) -> Self
    where
        F: Fn(&TransformContext<'_>) -> Option<Value> + Send + Sync + 'static,
    {
        self.with(Target::Transcript, phase, transformer)
    }

    /// Sets the transformer of `target` for `phase`.
    #[must_use]
    pub fn with<F>(mut self, target: Target, phase: Phase, transformer: F) -> Self
    where
        F: Fn(&TransformContext<'_>) -> Option<Value> + Send + Sync + 'static,
    {
        self.transformers
            .insert((target, phase), Arc::new(transformer));
        self
    }

    /// Shows, for `target`, every phase that has no transformer yet as it
    /// is, so configuring one phase does not hide the others. Input deltas
    /// (partial argument text, which a transformer of the whole input cannot
    /// see into) stay suppressed.
    ///
    /// ```
    /// use serde_json::json;
    /// use tool_core::transform::{Phase, Projection, Target, ToolTransform, TransformContext};
    ///
    /// let transform = ToolTransform::new()
    ///     .display(Phase::Output, |_ctx| Some(json!("done")))
    ///     .pass_through_others(Target::Display);
    /// let input = json!({ "city": "Paris" });
    /// let ctx = TransformContext { target: Target::Display, phase: Phase::Input, tool_id: "t", call_id: "c1", payload: &input };
    /// assert_eq!(transform.project(&ctx), Projection::Projected(input.clone()));
    /// let ctx = TransformContext { phase: Phase::Output, ..ctx };
    /// assert_eq!(transform.project(&ctx), Projection::Projected(json!("done")));
    /// let delta = json!("{\"ci");
    /// let ctx = TransformContext { phase: Phase::InputDelta, payload: &delta, ..ctx };
    /// assert_eq!(transform.project(&ctx), Projection::Suppressed);
    /// ```
    #[must_use]
    pub fn pass_through_others(mut self, target: Target) -> Self {
        for phase in Phase::WHOLE {
            self.transformers.entry((target, phase)).or_insert_with(|| {
                Arc::new(|ctx: &TransformContext<'_>| Some(ctx.payload.clone()))
            });
        }
        self
    }

    /// Shows `target`'s payloads of every phase with the object fields named
    /// `fields` removed, at any depth (an API token in the input, an email
    /// in the output or in a suspension's payload); input deltas, whose
    /// partial text could carry them, are suppressed. Replaces the target's
    /// transformers.
    ///
    /// ```
    /// use serde_json::json;
    /// use tool_core::transform::{Phase, Projection, Target, ToolTransform, TransformContext};
    ///
    /// let transform = ToolTransform::new().redact(Target::Display, &["token"]);
    /// let input = json!({ "city": "Paris", "auth": { "token": "s3cret" } });
    /// let ctx = TransformContext { target: Target::Display, phase: Phase::Approval, tool_id: "t", call_id: "c1", payload: &input };
    /// assert_eq!(transform.project(&ctx), Projection::Projected(json!({ "city": "Paris", "auth": {} })));
    /// ```
    #[must_use]
    pub fn redact(mut self, target: Target, fields: &[&str]) -> Self {
        let fields: Arc<[String]> = fields.iter().map(|f| (*f).to_owned()).collect();
        self.transformers.retain(|(t, _), _| *t != target);
        for phase in Phase::WHOLE {
            let fields = Arc::clone(&fields);
            self.transformers.insert(
                (target, phase),
                Arc::new(move |ctx: &TransformContext<'_>| {
                    let mut shown = ctx.payload.clone();
                    remove_fields(&mut shown, &fields);
                    Some(shown)
                }),
            );
        }
        self
    }

    /// True when `target` has at least one transformer.
    pub fn is_configured(&self, target: Target) -> bool {
        self.transformers.keys().any(|(t, _)| *t == target)
    }

    /// Projects the payload of `ctx` for its target.
    pub fn project(&self, ctx: &TransformContext<'_>) -> Projection {
        if !self.is_configured(ctx.target) {
            return Projection::Unchanged;
        }
        let unavailable = || {
            if ctx.phase == Phase::InputDelta {
                Projection::Suppressed
            } else {
                Projection::Projected(
                    json!({ "message": format!("Tool {} payload unavailable", ctx.phase.as_str()) }),
                )
            }
        };
        let Some(transformer) = self.transformers.get(&(ctx.target, ctx.phase)) else {
            return unavailable();
        };
        match crate::panic::catch_panic(|| transformer(ctx)) {
            Ok(Some(value)) => Projection::Projected(value),
            Ok(None) => unavailable(),
            Err(_) => {
                tracing::warn!(
                    tool_id = ctx.tool_id,
                    call_id = ctx.call_id,
                    target = ?ctx.target,
                    phase = ctx.phase.as_str(),
                    "tool payload transform panicked; showing a placeholder"
                );
                unavailable()
            }
        }
    }

    /// The payload to show for `ctx`: projected, raw when unconfigured, `None` when suppressed.
    pub fn apply(&self, ctx: &TransformContext<'_>) -> Option<Value> {
        match self.project(ctx) {
            Projection::Unchanged => Some(ctx.payload.clone()),
            Projection::Suppressed => None,
            Projection::Projected(value) => Some(value),
        }
    }
}

/// Removes the object fields named `fields` from `value`, at any depth.
fn remove_fields(value: &mut Value, fields: &[String]) {
    match value {
        Value::Object(object) => {
            object.retain(|key, _| !fields.contains(key));
            for inner in object.values_mut() {
                remove_fields(inner, fields);
            }
        }
        Value::Array(items) => {
            for item in items {
                remove_fields(item, fields);
            }
        }
        _ => {}
    }
}
