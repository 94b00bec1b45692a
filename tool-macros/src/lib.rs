//! The `#[tool]` attribute.
