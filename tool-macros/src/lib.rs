//! The `#[tool]` attribute of `tool-core`. Use it through `tool_core::tool`
//! (`tool-core`'s default `macros` feature), never as a dependency of its
//! own: the code it generates names `tool-core`'s items, and the two
//! crates' versions go together. `tool_core` documents every key.
//!
//! ```
//! use tool_core::{tool, Tool};
//!
//! /// Add two numbers
//! #[tool]
//! async fn add(a: f64, b: f64) -> f64 {
//!     a + b
//! }
//!
//! // `AddTool` derives its input schema from the parameters.
//! let tool = Tool::from(AddTool);
//! assert_eq!(tool.id(), "add");
//! assert_eq!(tool.definition().input_schema["required"], serde_json::json!(["a", "b"]));
//! ```
//!
//! The expansion runs in stages, one module each: `attr` parses the
//! attribute, `ast` models the function, `valid` checks both, and
//! `expand` generates code. Errors from every stage are collected in a
//! `ctxt::Ctxt` and reported together; on error the function is still
//! emitted unchanged, with a stand-in for the tool type
//! (`expand::fallback`), so the rest of the crate keeps compiling.

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
            let error = not_a_function(error, item.clone()).into_compile_error();
            let item = proc_macro2::TokenStream::from(item);
            return quote!(#error #item).into();
        }
    };
    let cx = ctxt::Ctxt::new();
    let attrs = attr::parse(&cx, args.into());
    let tool = ast::ToolFn::from_item(item);
    valid::check(&cx, &attrs, &tool);
    match cx.check() {
        Ok(()) => expand::expand(&attrs, &tool).into(),
        Err(error) => {
            let error = error.into_compile_error();
            let fallback = expand::fallback(&attrs, &tool);
            quote!(#error #fallback).into()
        }
    }
}

/// The error for an item that is not a function with a body: named after
/// what it is and spanned on its keyword when it parses as another item.
fn not_a_function(error: syn::Error, item: TokenStream) -> syn::Error {
    let (span, what): (proc_macro2::Span, &str) = match syn::parse::<syn::Item>(item) {
        Ok(syn::Item::Struct(item)) => (item.struct_token.span, "a struct"),
        Ok(syn::Item::Enum(item)) => (item.enum_token.span, "an enum"),
        Ok(syn::Item::Union(item)) => (item.union_token.span, "a union"),
        Ok(syn::Item::Impl(item)) => (
            item.impl_token.span,
            "an impl block (put it on a free function)",
        ),
        Ok(syn::Item::Trait(item)) => (item.trait_token.span, "a trait"),
        Ok(syn::Item::Mod(item)) => (item.mod_token.span, "a module"),
        Ok(syn::Item::Const(item)) => (item.const_token.span, "a const"),
        Ok(syn::Item::Static(item)) => (item.static_token.span, "a static"),
        Ok(syn::Item::Type(item)) => (item.type_token.span, "a type alias"),
        Ok(syn::Item::Use(item)) => (item.use_token.span, "a use declaration"),
        Ok(_) | Err(_) => {
            return syn::Error::new(error.span(), format!("#[tool] goes on a function: {error}"));
        }
    };
    syn::Error::new(
        span,
        format!("#[tool] goes on an `async fn` or `fn` with a body, not on {what}"),
    )
}
