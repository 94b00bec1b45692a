//! Compile tests of `#[tool]`: every misuse is a compile error pointing at the
//! token to fix (`ui/fail/*.rs`, with the expected `.stderr` committed), and
//! every supported shape compiles and runs (`ui/pass/*.rs`).
//!
//! The `.stderr` files are for the toolchain CI uses; regenerate them with
//! `TRYBUILD=overwrite cargo test -p integration-tests --test ui` and read
//! every diff as a user would.

#[test]
fn ui() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("ui/fail/*.rs");
    cases.pass("ui/pass/*.rs");
}
