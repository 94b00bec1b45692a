//! Typed values that a transport or host attaches to a call, for the tool
//! to read: how MCP elicitation and the agent running a call
//! ([`AgentContext`](crate::AgentContext), set by `CallContext::with_agent`)
//! reach a running tool without the contract depending on them. The
//! workflow context is a typed field instead: admission decodes its state
//! into the tool's declared state type.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

/// A map from type to one value of that type, cheap to clone (values are
/// shared). A host puts values in with
/// [`CallContext::with_extension`](crate::CallContext::with_extension); the tool reads them with
/// [`ToolContext::extension`](crate::ToolContext::extension). An add-on
/// crate usually wraps the lookup in an extension trait (`ctx.mcp()`).
///
/// ```
/// use tool_core::Extensions;
///
/// #[derive(Debug, PartialEq)]
/// struct TenantId(u32);
///
/// let mut extensions = Extensions::new();
/// assert!(extensions.is_empty());
/// extensions.insert(TenantId(7));
/// assert_eq!(extensions.get::<TenantId>(), Some(&TenantId(7)));
/// assert_eq!(extensions.get::<String>(), None);
/// ```
#[derive(Clone, Default)]
pub struct Extensions {
    // `None` until the first insert: most calls carry no extension.
    map: Option<HashMap<TypeId, Arc<dyn Any + Send + Sync>>>,
}

impl Extensions {
    /// An empty map.
    pub fn new() -> Self {
        Extensions::default()
    }

    /// Adds `value`, replacing the value of the same type if there was one.
    pub fn insert<T: Send + Sync + 'static>(&mut self, value: T) {
        self.map
            .get_or_insert_with(HashMap::new)
            .insert(TypeId::of::<T>(), Arc::new(value));
    }

    /// The value of type `T`, if there is one.
    pub fn get<T: Send + Sync + 'static>(&self) -> Option<&T> {
        self.map
            .as_ref()?
            .get(&TypeId::of::<T>())
            .and_then(|value| value.downcast_ref())
    }

    /// Whether there is a value of type `T`.
    pub fn contains<T: Send + Sync + 'static>(&self) -> bool {
        self.get::<T>().is_some()
    }

    /// Whether there is a value of the type `type_id` names.
    pub(crate) fn contains_type(&self, type_id: TypeId) -> bool {
        self.map
            .as_ref()
            .is_some_and(|map| map.contains_key(&type_id))
    }

    /// The number of values.
    pub fn len(&self) -> usize {
        self.map.as_ref().map_or(0, HashMap::len)
    }

    /// True when there are no values.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Adds every value of `other`, replacing values of the same types.
    pub fn extend(&mut self, other: Extensions) {
        if let Some(values) = other.map {
            self.map.get_or_insert_with(HashMap::new).extend(values);
        }
    }
}

impl fmt::Debug for Extensions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Extensions")
            .field("len", &self.len())
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_value_of_a_type_replaces_the_first_and_clones_share_values() {
        let mut extensions = Extensions::new();
        extensions.insert(1_u8);
        extensions.insert(2_u8);
        extensions.insert("text");
        assert_eq!(extensions.len(), 2);
        let copy = extensions.clone();
        assert!(std::ptr::eq(
            copy.get::<u8>().unwrap(),
            extensions.get::<u8>().unwrap()
        ));
        let mut other = Extensions::new();
        other.insert(3_u8);
        extensions.extend(other);
        assert_eq!(extensions.get::<u8>(), Some(&3));
        assert_eq!(copy.get::<u8>(), Some(&2));
    }
}
