//! Helpers shared by the agent's integration tests.
#![allow(dead_code)]

pub mod postgres;
pub mod provider;
