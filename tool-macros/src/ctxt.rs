//! Error collection: every stage records its errors here, with their spans,
//! so one expansion reports every mistake of an item at once.
//!
//! As serde's `internals/ctxt.rs`: the errors must be taken with
//! [`Ctxt::check`]; dropping a `Ctxt` that was not checked panics, so a new
//! stage cannot record errors that nobody reports.

use std::cell::RefCell;
use std::fmt::Display;
use std::thread;

use quote::ToTokens;

pub struct Ctxt {
    /// `None` once `check` has taken the errors.
    errors: RefCell<Option<Vec<syn::Error>>>,
}

impl Ctxt {
    pub fn new() -> Self {
        Ctxt {
            errors: RefCell::new(Some(Vec::new())),
        }
    }

    /// Records an error spanned on `tokens`.
    pub fn error_spanned_by<T: ToTokens>(&self, tokens: T, message: impl Display) {
        self.syn_error(syn::Error::new_spanned(tokens.into_token_stream(), message));
    }

    /// Records an error produced by a parser.
    pub fn syn_error(&self, error: syn::Error) {
        self.errors
            .borrow_mut()
            .as_mut()
            .expect("only `check`, which consumes the Ctxt, takes the errors")
            .push(error);
    }

    /// All recorded errors combined into one, or `Ok` when there were none.
    pub fn check(self) -> syn::Result<()> {
        let errors = self
            .errors
            .borrow_mut()
            .take()
            .expect("`check` runs once: it consumes the Ctxt");
        let mut errors = errors.into_iter();
        let Some(mut combined) = errors.next() else {
            return Ok(());
        };
        for error in errors {
            combined.combine(error);
        }
        Err(combined)
    }
}

impl Drop for Ctxt {
    fn drop(&mut self) {
        if !thread::panicking() && self.errors.borrow().is_some() {
            panic!("forgot to check for errors");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Ctxt;

    #[test]
    fn check_returns_every_error() {
        let cx = Ctxt::new();
        cx.syn_error(syn::Error::new(proc_macro2::Span::call_site(), "first"));
        cx.syn_error(syn::Error::new(proc_macro2::Span::call_site(), "second"));
        let messages: Vec<String> = cx
            .check()
            .unwrap_err()
            .into_iter()
            .map(|e| e.to_string())
            .collect();
        assert_eq!(messages, ["first", "second"]);
        assert!(Ctxt::new().check().is_ok());
    }

    #[test]
    #[should_panic(expected = "forgot to check for errors")]
    fn unchecked_ctxt_panics_on_drop() {
        drop(Ctxt::new());
    }
}
