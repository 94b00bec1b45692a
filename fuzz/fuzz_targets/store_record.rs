//! The SQLite store's record encoding on any JSON value as a call's
//! arguments and payload: a stored call reads back exactly, or storing it is
//! refused; a record that cannot be read back is never written.
#![no_main]

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use tool_runtime::store::{CallStore, SqliteStore};
use tool_runtime::{PendingCall, PendingKind};

fn store() -> &'static SqliteStore {
    static STORE: OnceLock<SqliteStore> = OnceLock::new();
    STORE.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("tool-fuzz-store-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        SqliteStore::open(dir.join("pending.sqlite")).expect("store")
    })
}

fuzz_target!(|data: &[u8]| {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let Ok(value) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    let id = format!("c{}", NEXT.fetch_add(1, Ordering::Relaxed));
    let mut call = PendingCall::new(id.as_str(), "t", PendingKind::Suspended, value.clone());
    call.payload = Some(value);
    let runtime = tokio::runtime::Builder::new_current_thread().build().expect("tokio");
    runtime.block_on(async {
        if store().insert(call.clone()).await.is_ok() {
            let stored = store().get(&id).await.expect("a stored call reads back").expect("present");
            assert_eq!(stored.call, call);
        }
    });
});
