//! The application's state that every call of a tool sees: a database
//! pool, an HTTP client, a configuration. The host (the runtime's
//! `RuntimeBuilder::state`) gives it to every call it runs, however the
//! call got there (first run, after approval, after resume, on another
//! instance or in a worker); it is never stored with a call. A tool reads
//! it with a [`State<T>`] parameter in a `#[tool]` function, or with
//! [`ToolContext::state`](crate::ToolContext::state), and declares what it
//! needs, so that a host that lacks it is told when it is built.

use std::any::{TypeId, type_name};
use std::fmt;
use std::sync::Arc;

use crate::extensions::Extensions;

/// The application's state: one value per type, shared by every call
/// (cloning it clones one `Arc`). A host builds it once and gives it to
/// each call with [`CallContext::with_state`](crate::CallContext::with_state).
///
/// ```
/// use tool_core::AppState;
///
/// #[derive(Clone, Debug, PartialEq)]
/// struct Pool(&'static str);
///
/// let state = AppState::new().with(Pool("postgres://ledger"));
/// assert_eq!(state.get::<Pool>(), Some(&Pool("postgres://ledger")));
/// assert!(!state.contains::<String>());
/// ```
#[derive(Clone, Default)]
pub struct AppState {
    values: Arc<Extensions>,
}

impl AppState {
    /// No state.
    pub fn new() -> Self {
        AppState::default()
    }

    /// `self` with `value`, replacing the value of the same type.
    #[must_use]
    pub fn with<T: Send + Sync + 'static>(mut self, value: T) -> Self {
        self.insert(value);
        self
    }

    /// Adds `value`, replacing the value of the same type.
    pub fn insert<T: Send + Sync + 'static>(&mut self, value: T) {
        Arc::make_mut(&mut self.values).insert(value);
    }

    /// The value of type `T`, if there is one.
    pub fn get<T: Send + Sync + 'static>(&self) -> Option<&T> {
        self.values.get()
    }

    /// Whether there is a value of type `T`.
    pub fn contains<T: Send + Sync + 'static>(&self) -> bool {
        self.values.contains::<T>()
    }

    /// Whether there is a value of the type `required` names.
    pub fn satisfies(&self, required: &StateRequirement) -> bool {
        self.values.contains_type(required.type_id)
    }

    /// The number of values.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// True when there are no values.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }
}

impl fmt::Debug for AppState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AppState")
            .field("values", &self.values.len())
            .finish()
    }
}

/// A type of application state a tool needs
/// ([`Tool::required_state`](crate::Tool::required_state)): declared by a
/// [`State<T>`] parameter of a `#[tool]` function, or by
/// [`ToolBuilder::requires_state`](crate::ToolBuilder::requires_state).
///
/// ```
/// use tool_core::StateRequirement;
///
/// struct Pool;
/// let required = StateRequirement::of::<Pool>();
/// assert!(required.type_name().ends_with("Pool"));
/// ```
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct StateRequirement {
    type_id: TypeId,
    type_name: &'static str,
}

impl StateRequirement {
    /// The requirement of a value of type `T`.
    pub fn of<T: Send + Sync + 'static>() -> Self {
        StateRequirement {
            type_id: TypeId::of::<T>(),
            type_name: type_name::<T>(),
        }
    }

    /// The type's name, as `std::any::type_name` gives it: what an error
    /// about missing state names.
    pub fn type_name(&self) -> &'static str {
        self.type_name
    }
}

impl fmt::Debug for StateRequirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.type_name)
    }
}

/// The application state of type `T`, as a parameter of a `#[tool]`
/// function (the way axum's `State` is an extractor): the macro declares
/// the requirement, and the call gets a clone of the host's value. `T` is
/// usually cheap to clone (a pool, a client, an `Arc`).
///
/// ```
/// use std::sync::Arc;
/// use tool_core::{AppState, CallContext, State, Tool, tool};
///
/// #[derive(Clone)]
/// struct Ledger { currency: Arc<str> }
///
/// /// Formats an amount in the ledger's currency.
/// #[tool]
/// async fn format_amount(amount: u32, State(ledger): State<Ledger>) -> String {
///     format!("{amount} {}", ledger.currency)
/// }
///
/// let tool = Tool::from(FormatAmountTool);
/// assert_eq!(tool.required_state()[0].type_name(), std::any::type_name::<Ledger>());
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let state = AppState::new().with(Ledger { currency: "EUR".into() });
/// let outcome = tool.execute(serde_json::json!({ "amount": 5 }), CallContext::new("c1").with_state(state)).await;
/// assert_eq!(outcome.output(), Some(&serde_json::json!("5 EUR")));
/// // Without it, the call fails before the function runs, naming the type.
/// let outcome = tool.execute(serde_json::json!({ "amount": 5 }), CallContext::new("c2")).await;
/// assert!(outcome.error().unwrap().message().contains("Ledger"));
/// # });
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct State<T>(pub T);

/// The message of a call refused for missing state.
pub(crate) fn missing_state_message(tool_id: &str, missing: &[&StateRequirement]) -> String {
    let names: Vec<&str> = missing.iter().map(|r| r.type_name()).collect();
    format!(
        "Tool {tool_id} needs application state that its host did not give: {} (give it to the runtime with RuntimeBuilder::state, or to the call with CallContext::with_state)",
        names.join(", ")
    )
}
