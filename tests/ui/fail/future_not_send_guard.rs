// The tool's future is not Send: a `std::sync::MutexGuard` is held across an
// `.await`.
use std::sync::Mutex;
use tool_core::tool;

static COUNTER: Mutex<u32> = Mutex::new(0);

async fn fetch() {}

/// Count the calls
#[tool]
async fn count() -> u32 {
    let mut guard = COUNTER.lock().unwrap();
    fetch().await;
    *guard += 1;
    *guard
}

fn main() {}
