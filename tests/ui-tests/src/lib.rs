//! Compile tests of `#[tool]` only: the cases are in `ui/`, run by `tests/ui.rs`.
