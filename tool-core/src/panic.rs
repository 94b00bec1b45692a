//! Containing panics of user code (tools, hooks, policies, transforms,
//! callbacks), payload included.

use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind};

/// Runs `f`; a panic becomes its message (`"the tool panicked"` when the
/// payload is not a string). The payload is dropped under the same guard,
/// and a payload whose own `Drop` panics is forgotten instead, so nothing
/// of the panic escapes to the caller. Whatever `f` touched may be left
/// half-updated, as after any caught panic: use it for calls into user code
/// whose failure the caller reports and moves on from.
///
/// ```
/// struct Bomb;
/// impl Drop for Bomb {
///     fn drop(&mut self) {
///         panic!("the payload panics too");
///     }
/// }
///
/// assert_eq!(tool_core::catch_panic(|| 2 + 2), Ok(4));
/// assert_eq!(tool_core::catch_panic(|| -> u8 { panic!("boom") }), Err("boom".to_owned()));
/// let caught = tool_core::catch_panic(|| -> u8 { std::panic::panic_any(Bomb) });
/// assert_eq!(caught, Err("the tool panicked".to_owned()));
/// ```
pub fn catch_panic<R>(f: impl FnOnce() -> R) -> Result<R, String> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(value) => Ok(value),
        Err(payload) => {
            let message = panic_message(&*payload);
            if let Err(second) = catch_unwind(AssertUnwindSafe(move || drop(payload))) {
                // Its drop panicked again: dropping it once more could too.
                std::mem::forget(second);
            }
            Err(message)
        }
    }
}

fn panic_message(panic: &(dyn Any + Send)) -> String {
    if let Some(text) = panic.downcast_ref::<&str>() {
        (*text).to_owned()
    } else if let Some(text) = panic.downcast_ref::<String>() {
        text.clone()
    } else {
        "the tool panicked".to_owned()
    }
}

/// Starts a future with `start` and drives it to its end; a panic, in
/// `start` or in any poll, becomes its message, as with [`catch_panic`].
pub(crate) async fn catch_panic_async<F: Future>(
    start: impl FnOnce() -> F,
) -> Result<F::Output, String> {
    let mut running = std::pin::pin!(catch_panic(start)?);
    std::future::poll_fn(|cx| match catch_panic(|| running.as_mut().poll(cx)) {
        Ok(std::task::Poll::Ready(value)) => std::task::Poll::Ready(Ok(value)),
        Ok(std::task::Poll::Pending) => std::task::Poll::Pending,
        Err(message) => std::task::Poll::Ready(Err(message)),
    })
    .await
}
