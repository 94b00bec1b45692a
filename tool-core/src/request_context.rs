//! Per-request values given to every tool of a request.

use std::sync::{Arc, LazyLock};

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::error::ToolError;

/// Per-request values (user id, locale, API keys...) given to every tool of a
/// request, validated against the tool's request-context schema before it runs.
///
/// ```
/// use tool_core::RequestContext;
///
/// let ctx = RequestContext::new().with("userId", "u-42").with("tier", 2);
/// assert_eq!(ctx.get("userId").unwrap(), "u-42");
/// assert_eq!(ctx.get_as::<u8>("tier"), Some(2));
///
/// #[derive(serde::Deserialize)]
/// #[serde(rename_all = "camelCase")]
/// struct Session { user_id: String, tier: u8 }
/// let session: Session = ctx.parse().unwrap();
/// assert_eq!(session.user_id, "u-42");
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RequestContext {
    // Shared: a call's context is handed to the tool, kept for a pending
    // call and copied into events without copying the values; `None` while
    // empty, so calls without one allocate nothing.
    values: Option<Arc<Map<String, Value>>>,
}

/// What an empty request context reads as.
static NO_VALUES: LazyLock<Map<String, Value>> = LazyLock::new(Map::new);

impl RequestContext {
    /// An empty request context.
    pub fn new() -> Self {
        RequestContext::default()
    }

    /// Adds a value; a value that cannot be serialized is stored as `null`.
    #[must_use]
    pub fn with(mut self, key: impl Into<String>, value: impl Serialize) -> Self {
        self.insert(key, value);
        self
    }

    /// Sets a value; a value that cannot be serialized is stored as `null`.
    pub fn insert(&mut self, key: impl Into<String>, value: impl Serialize) {
        let value = serde_json::to_value(value).unwrap_or(Value::Null);
        Arc::make_mut(self.values.get_or_insert_with(Arc::default)).insert(key.into(), value);
    }

    /// The JSON value of `key`.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.values().get(key)
    }

    /// The value of `key` as `T`, when present and of that type.
    pub fn get_as<T: DeserializeOwned>(&self, key: &str) -> Option<T> {
        self.get(key).and_then(|v| T::deserialize(v).ok())
    }

    /// All values as one typed struct (the tool's `request_context` type).
    pub fn parse<T: DeserializeOwned>(&self) -> Result<T, ToolError> {
        T::deserialize(&self.to_value()).map_err(|e| {
            ToolError::new(format!(
                "request context does not have the expected shape: {e}"
            ))
        })
    }

    /// All values as JSON.
    pub fn values(&self) -> &Map<String, Value> {
        self.values.as_deref().unwrap_or(&NO_VALUES)
    }

    /// True when there are no values.
    pub fn is_empty(&self) -> bool {
        self.values().is_empty()
    }

    /// All values as a JSON object.
    pub fn to_value(&self) -> Value {
        Value::Object(self.values().clone())
    }
}

impl From<Map<String, Value>> for RequestContext {
    fn from(values: Map<String, Value>) -> Self {
        RequestContext {
            values: (!values.is_empty()).then(|| Arc::new(values)),
        }
    }
}

impl<K: Into<String>> FromIterator<(K, Value)> for RequestContext {
    fn from_iter<I: IntoIterator<Item = (K, Value)>>(iter: I) -> Self {
        let values: Map<String, Value> = iter.into_iter().map(|(k, v)| (k.into(), v)).collect();
        RequestContext::from(values)
    }
}
