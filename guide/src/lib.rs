//! The README and the guide pages in `docs/`, compiled and run as doctests:
//! every Rust block of them is a test of this package (`cargo test -p guide
//! --doc`), so a page cannot show code that no longer builds. Nothing here
//! is published.

/// README.md's Rust blocks.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct Readme;
