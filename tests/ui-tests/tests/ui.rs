//! Compile tests of `#[tool]`: every misuse is a compile error pointing at the
//! token to fix (`ui/fail/*.rs`, with the expected `.stderr` committed), and
//! every supported shape compiles and runs (`ui/pass/*.rs`).
//!
//! trybuild builds each file as a crate of its own, so cases are grouped, one
//! module each, into a file per stage that reports them: the macro's own
//! errors (it reports every one and still emits the item), type checking,
//! and the later checks (a future that is not `Send`, const evaluation),
//! which rustc may skip once earlier errors exist.
//!
//! The `.stderr` files are for the toolchain CI uses; regenerate them with
//! `TRYBUILD=overwrite cargo test -p ui-tests` and read
//! every diff as a user would.

#[test]
fn ui() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("ui/fail/*.rs");
    cases.pass("ui/pass/*.rs");
}
