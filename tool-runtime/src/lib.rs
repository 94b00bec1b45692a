//! Runtime for `tool-core` tools (see the issue tracker: built on the core).
