//! The `#[tool]` attribute of `tool-core`. Use it through `tool_core::tool`;
//! see that crate for documentation.
//!
//! The expansion runs in stages, one module each: [`attr`] parses the
//! attribute, [`ast`] models the function, [`valid`] checks both, and
//! [`expand`] generates code. Errors from every stage are collected in a
//! [`ctxt::Ctxt`] and reported together; on error the function is still
//! emitted unchanged so the rest of the crate keeps compiling.

mod ast;
mod attr;
mod ctxt;
mod expand;
mod valid;

use proc_macro::TokenStream;
use quote::quote;

/// Declares a tool on a function. See `tool_core` for the keys.
#[proc_macro_attribute]
pub fn tool(args: TokenStream, item: TokenStream) -> TokenStream {
    let item = match syn::parse::<syn::ItemFn>(item.clone()) {
        Ok(item) => item,
        Err(error) => {
            let error = syn::Error::new(
                error.span(),
                format!("#[tool] goes on a function: {error}"),
            )
            .into_compile_error();
            let item = proc_macro2::TokenStream::from(item);
            return quote!(#error #item).into();
        }
    };
    let cx = ctxt::Ctxt::default();
    let attrs = attr::parse(&cx, args.into());
    let tool = ast::ToolFn::from_item(item);
    valid::check(&cx, &attrs, &tool);
    match cx.check() {
        Ok(()) => expand::expand(&attrs, &tool).into(),
        Err(error) => {
            let error = error.into_compile_error();
            let item = &tool.item;
            quote!(#error #item).into()
        }
    }
}
