// Tool futures that are not `Send`, reported by rustc on the function's name.

// The tool's future is not Send: an `Rc` is held across an `.await`.
mod future_not_send {
    use std::rc::Rc;
    use tool_core::tool;

    async fn fetch() {}

    /// Get the weather
    #[tool]
    async fn weather(city: String) -> String {
        let shared = Rc::new(city);
        fetch().await;
        shared.to_string()
    }
}

// The tool's future is not Send: a `std::sync::MutexGuard` is held across an
// `.await`.
mod future_not_send_guard {
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
}

fn main() {}
