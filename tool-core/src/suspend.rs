//! The type-level answer to "can this tool suspend?".

use std::borrow::Cow;
use std::fmt;

use serde::{Deserialize, Deserializer, Serialize};

/// The suspend payload and resume data type of a tool that does not
/// suspend: the default of [`ToolContext`](crate::ToolContext)'s type
/// parameters. It has no values and does not implement `Serialize`, so such
/// a tool's context has no callable `suspend`: a compile error, not a
/// failure at run time.
///
/// ```compile_fail
/// use tool_core::{ToolContext, ToolError};
///
/// async fn delete(ctx: ToolContext) -> Result<String, ToolError> {
///     ctx.suspend(()) // error: this tool cannot suspend
/// }
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub enum NoSuspend {}

impl fmt::Debug for NoSuspend {
    fn fmt(&self, _: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {}
    }
}

impl<'de> Deserialize<'de> for NoSuspend {
    fn deserialize<D: Deserializer<'de>>(_: D) -> Result<Self, D::Error> {
        Err(serde::de::Error::custom(
            "this tool does not suspend, so it takes no suspend payload or resume data",
        ))
    }
}

impl schemars::JsonSchema for NoSuspend {
    fn schema_name() -> Cow<'static, str> {
        Cow::Borrowed("NoSuspend")
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        // No value matches; `schema_for` reports no schema for this type.
        schemars::Schema::from(false)
    }
}

/// A type a tool can suspend with: any `Serialize` type. [`NoSuspend`] is
/// not one, which is what makes `suspend` uncallable for tools that declare
/// no suspend payload type.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a suspend payload: it does not implement `serde::Serialize`",
    label = "`suspend` serializes its payload",
    note = "a tool whose context is a plain `ToolContext` (suspend type `NoSuspend`) does not suspend: take the context as `ToolContext<Payload, Resume>` with a `Serialize` payload type, or set `suspend = Type` and `resume = Type` in `#[tool]`"
)]
pub trait SuspendPayload: Serialize {}

impl<T: Serialize> SuspendPayload for T {}
