//! Helpers shared by the workspace integration tests.
//!
//! Conformance tests read recorded data from `../shared/fixtures/` beside the
//! repository. A user's clone has no `../shared`: there the tests print a
//! notice and skip. CI sets `REQUIRE_SHARED_FIXTURES=1` so that a missing
//! fixture fails instead of silently passing.

use std::path::PathBuf;

/// Path of a shared fixture, relative to `../shared/fixtures/`.
///
/// Returns `None` after printing a skip notice when the file is absent, unless
/// `REQUIRE_SHARED_FIXTURES=1`, in which case a missing fixture panics.
///
/// ```
/// if let Some(path) = integration_tests::shared_fixture("strict/openai-strict-cases.json") {
///     assert!(path.is_file());
/// }
/// ```
pub fn shared_fixture(relative: &str) -> Option<PathBuf> {
    // Cargo sets the variable when it runs a test; the compile-time value is
    // the fallback (and can be stale if the crate was built elsewhere).
    let package = std::env::var_os("CARGO_MANIFEST_DIR")
        .map_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")), PathBuf::from);
    let path = package.join("../../shared/fixtures").join(relative);
    if path.is_file() {
        return Some(path);
    }
    let required = std::env::var("REQUIRE_SHARED_FIXTURES").is_ok_and(|v| v == "1");
    assert!(
        !required,
        "REQUIRE_SHARED_FIXTURES=1 but the fixture {} is missing",
        path.display()
    );
    eprintln!(
        "skipping: shared fixture {} is absent (set REQUIRE_SHARED_FIXTURES=1 to fail instead)",
        path.display()
    );
    None
}

/// Runs a future to completion on a fresh current-thread runtime (with timers).
///
/// ```
/// assert_eq!(integration_tests::block_on(async { 2 + 2 }), 4);
/// ```
pub fn block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a current-thread runtime")
        .block_on(future)
}
