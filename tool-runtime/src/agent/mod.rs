//! The agent side (feature `agent`): a loop that calls a model, runs the
//! tool calls it makes through a [`Runtime`](crate::Runtime), pauses for
//! approval and suspension, and goes on when they are decided.

mod model;
mod models;

pub use model::{
    Message, Model, ModelError, ModelEvent, ModelFinish, ModelRequest, ModelStream, ToolCallRequest,
};
pub use models::{AnthropicModel, OpenAiChatModel, OpenAiResponsesModel};
