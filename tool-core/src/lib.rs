//! The tool library facade.
