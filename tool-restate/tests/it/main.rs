//! tool-restate's integration tests, against a real Restate server
//! (`RESTATE_SERVER`: the `restate-server` binary, which `.ci/run` installs
//! from npm). Without one they skip with a notice; with `REQUIRE_RESTATE=1`
//! they fail instead.

mod background;
mod calls;
#[cfg(feature = "postgres")]
mod effects;
mod kill;
mod malformed;
mod parity;
mod rules;
mod server;
mod setup;
mod tools;
