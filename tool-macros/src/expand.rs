//! Code generation: the `XxxTool` type, its `TypedTool` impl and, for plain
//! parameters, the input struct. Generated code reaches serde and schemars
//! only through tool-core's hidden module, `tool_core::__private_X_Y_Z` (see
//! [`private_path`]).

use heck::ToUpperCamelCase;
use proc_macro2::{Group, Span, TokenStream, TokenTree};
use quote::{format_ident, quote, quote_spanned};
use syn::ext::IdentExt;
use syn::spanned::Spanned;
use syn::{Ident, Path, Type};

use crate::ast::{Docs, Input, Output, Param, StateParam, ToolFn};
use crate::attr::{Approval, Attrs, Description};

pub fn expand(attrs: &Attrs, tool: &ToolFn) -> TokenStream {
    let krate = krate(attrs);
    let private = private_path(&krate);
    let item = &tool.item;
    let vis = &item.vis;
    let fn_name = tool.name();
    let base = base_name(tool);
    let base = base.as_str();
    let tool_ident = tool_ident(tool);
    let id = attrs
        .id
        .as_ref()
        .map_or_else(|| base.to_owned(), syn::LitStr::value);
    // Literal text, or an expression of macros (`concat!`, `include_str!`)
    // that the compiler evaluates.
    let description = match (&attrs.description, &tool.docs) {
        (Some(Description::Literal(lit)), _) => Docs::Text(lit.value()),
        (Some(Description::Macro(mac)), _) => Docs::Concat {
            expr: quote!(#mac),
            span: mac.mac.path.span(),
        },
        (None, Some(docs)) => docs.clone(),
        // Rejected by validation.
        (None, None) => Docs::Text(String::new()),
    };

    let InputParts {
        ty: input_ty,
        def: input_def,
        call_args,
        lone,
        parameter: input_parameter,
    } = input_parts(&krate, attrs, tool, &tool_ident);
    let probes = probes(&private, attrs, tool);
    let output_ty = output_type(&tool.output);
    let context = tool.contexts.first();
    let declared_suspend = attrs
        .suspend
        .clone()
        .or_else(|| context.and_then(|c| c.suspend.clone()));
    // A declared payload type must serialize: checked on the type itself.
    let suspend_check = declared_suspend.as_ref().map(|ty| {
        let check = respan(quote!(#private::suspend_payload::<#ty>), ty.span());
        quote!(const _: () = #check();)
    });
    let suspend_ty = declared_suspend.unwrap_or_else(|| syn::parse_quote!(#krate::NoSuspend));
    let resume_ty = attrs
        .resume
        .clone()
        .or_else(|| context.and_then(|c| c.resume.clone()))
        .unwrap_or_else(|| syn::parse_quote!(#krate::NoSuspend));
    let call = quote!(#fn_name(#(#call_args),*));
    let is_async = tool.item.sig.asyncness.is_some();
    // The function's future or value as the tool's, through generic
    // functions of tool-core rather than an async block per tool.
    let future = match &tool.output {
        Output::Result { err, .. } => {
            // Spanned on the error type: if it does not convert, the error
            // (with its hint) points there.
            let span = err
                .as_ref()
                .map_or_else(|| tool.item.sig.output.span(), |err| err.span());
            let convert = respan(quote!(#private::into_tool_error), span);
            if is_async {
                // An error type that is `ToolError` (under any name: told
                // apart by a probe of the type, not by its name) needs no
                // conversion, so the function's future is the tool's: one
                // state machine less per tool.
                match err {
                    Some(err) => quote! {
                        {
                            use #private::probe::*;
                            #private::Probe::<#err>::OF.error_kind()
                        }
                        .future(#call, #convert)
                    },
                    None => quote!(#private::result(#call, #convert)),
                }
            } else {
                quote!(#private::call(move || ::core::result::Result::map_err(#call, #convert)))
            }
        }
        Output::Plain(_) | Output::Unit if is_async => quote!(#private::ok(#call)),
        Output::Plain(_) | Output::Unit => {
            quote!(#private::call(move || ::core::result::Result::Ok(#call)))
        }
    };
    // Spanned on the function's name: a future that is not `Send` (a
    // non-`Send` value held across an `.await`) is reported there, by
    // rustc's own diagnostic, which names the value and the `.await`. It
    // cannot carry advice of ours: rustc reports a coroutine that is not
    // `Send` in its own words even through a bound with
    // `#[diagnostic::on_unimplemented]`.
    let future_ty = respan(
        quote! {
            impl ::core::future::Future<
                Output = ::core::result::Result<Self::Output, #krate::ToolError>,
            > + ::core::marker::Send
        },
        fn_name.span(),
    );
    // `State<T>` parameters: each a clone of the call's state, taken from
    // the context before the call is made (admission refused a call
    // without it); the bound is checked on `T`, where a type that cannot
    // be state is reported.
    let future = if tool.states.is_empty() {
        future
    } else {
        let names = state_bindings(tool);
        let takes = tool.states.iter().map(|state| {
            let ty = &state.inner;
            respan(quote!(#private::state::<#ty, _, _>(&ctx)), ty.span())
        });
        quote! {
            #private::with_state(
                (|| ::core::option::Option::Some((#(#takes?,)*)))()
                    .map(move |(#(#names,)*)| #future),
            )
        }
    };
    let uses_context = context.is_some() || !tool.states.is_empty();
    let ctx_binding = if uses_context {
        quote!(ctx)
    } else {
        quote!(_ctx)
    };
    // What a reconcile function takes: what the tool's function takes (a
    // lone parameter's type, else the input type), and how it is made from
    // the input.
    let reconcile_input = match tool.input(attrs.input_shape()) {
        Input::Lone(param) => ((*param.ty).clone(), quote!(input.0)),
        Input::Struct(_) | Input::Params(_) => (input_ty.clone(), quote!(input)),
    };
    let configure = configure(
        &krate,
        attrs,
        &tool.states,
        &input_ty,
        lone.as_ref(),
        &reconcile_input,
    );
    let to_model_output = attrs.to_model_output.as_ref().map(|path| {
        // A call (not a fn pointer) so that deref coercions apply (`&str` for
        // a `String` output); spanned on the path, where a mismatch is shown.
        let map = quote_spanned!(path.span()=> #path(output));
        quote! {
            const MAPS_OUTPUT: bool = true;
            fn to_model_output(output: &Self::Output) -> ::core::option::Option<#krate::ModelOutput> {
                ::core::option::Option::Some(#map)
            }
        }
    });
    let tool_doc = format!("The `{id}` tool, generated by `#[tool]` from [`{base}`]: ");
    let (tool_doc, description, description_check) = match description {
        Docs::Text(text) => {
            let doc = format!("{tool_doc}{text}");
            (quote!(#doc), quote!(#text), None)
        }
        // Trimmed like literal doc comments are (an included file ends with
        // a newline), and checked for being empty when it is known.
        Docs::Concat { expr, span } => (
            quote!(::core::concat!(#tool_doc, #expr)),
            quote!(::core::primitive::str::trim_ascii(#expr)),
            Some(quote_spanned! {span=>
                const _: () = ::core::assert!(
                    !<#tool_ident as #krate::TypedTool>::DESCRIPTION.is_empty(),
                    "the tool description is empty: the model reads it to decide when to call the tool",
                );
            }),
        ),
    };

    quote! {
        #item

        #input_def

        #[doc = #tool_doc]
        #[derive(::core::fmt::Debug, ::core::clone::Clone, ::core::marker::Copy, ::core::default::Default)]
        #vis struct #tool_ident;

        impl #tool_ident {
            /// The tool's id.
            pub const ID: &'static str = #id;
        }

        #suspend_check

        impl #krate::TypedTool for #tool_ident {
            type Input = #input_ty;
            type Output = #output_ty;
            type Suspend = #suspend_ty;
            type Resume = #resume_ty;
            const ID: &'static str = #id;
            const DESCRIPTION: &'static str = #description;

            #configure

            #to_model_output

            #input_parameter

            fn execute(
                &self,
                input: Self::Input,
                #ctx_binding: #krate::ToolContext<Self::Suspend, Self::Resume>,
            ) -> #future_ty {
                #probes
                #future
            }
        }

        #description_check
    }
}

/// What is emitted instead of [`expand`] when the attribute or the function
/// has errors, as thiserror's `fallback.rs`: the function, and the tool type
/// with the impl that every use of it goes through (`Tool::from`, `.tool(..)`
/// taking `impl Into<Tool>`), so those uses add no errors of their own. The
/// crate does not compile anyway: the impl is never run.
pub fn fallback(attrs: &Attrs, tool: &ToolFn) -> TokenStream {
    let item = &tool.item;
    // A method (`self`, already an error) sits in an impl block or trait,
    // where a struct or impl cannot go.
    if !tool.receivers.is_empty() {
        return quote!(#item);
    }
    let krate = krate(attrs);
    let vis = &item.vis;
    let tool_ident = tool_ident(tool);
    let doc = format!(
        "The tool generated by `#[tool]` from [`{}`] (not generated: `#[tool]` reported errors).",
        base_name(tool)
    );
    quote! {
        #item

        #[doc = #doc]
        #[derive(::core::fmt::Debug, ::core::clone::Clone, ::core::marker::Copy, ::core::default::Default)]
        #vis struct #tool_ident;

        impl ::core::convert::From<#tool_ident> for #krate::Tool {
            fn from(_: #tool_ident) -> Self {
                ::core::unreachable!()
            }
        }
    }
}

/// The local each `State<T>` parameter's value is bound to.
fn state_bindings(tool: &ToolFn) -> Vec<Ident> {
    (0..tool.states.len())
        .map(|index| format_ident!("__state_{}", index))
        .collect()
}

/// The path to tool-core: `crate = path`, or `::tool_core`.
fn krate(attrs: &Attrs) -> Path {
    attrs
        .krate
        .clone()
        .unwrap_or_else(|| syn::parse_quote!(::tool_core))
}

/// The function's name without `r#`: the default id.
fn base_name(tool: &ToolFn) -> String {
    let name = tool.name().to_string();
    name.strip_prefix("r#").unwrap_or(&name).to_owned()
}

/// `XxxTool`, spanned on the function's name.
fn tool_ident(tool: &ToolFn) -> Ident {
    format_ident!(
        "{}Tool",
        base_name(tool).to_upper_camel_case(),
        span = tool.name().span()
    )
}

/// `krate::__private_X_Y_Z`, tool-core's hidden module, named after the
/// version of this crate: tool-core depends on exactly this version (`=`),
/// and a mismatched pair fails on this path rather than somewhere inside
/// the generated code. tool-core asserts that the module's name matches.
fn private_path(krate: &Path) -> TokenStream {
    let version = env!("CARGO_PKG_VERSION").replace(|c: char| !c.is_ascii_alphanumeric(), "_");
    let module = format_ident!("__private_{}", version);
    quote!(#krate::#module)
}

/// Compile-time probes of the parameters' types, for what `ast` decides
/// from their names and so cannot see through an alias: an `input = whole`
/// whose JSON Schema is not an object, and a `ToolContext` taken as input.
/// Each failure is reported on the parameter's type. A block of `execute`:
/// its calls do nothing when run.
fn probes(private: &TokenStream, attrs: &Attrs, tool: &ToolFn) -> TokenStream {
    let whole = match tool.input(attrs.input_shape()) {
        Input::Struct(param) => Some(param),
        Input::Lone(_) | Input::Params(_) => None,
    };
    let checks = tool.params.iter().map(|param| {
        let context = probe(private, &param.ty, "input_param", "context_kind");
        let object = whole
            .filter(|whole| whole.position == param.position)
            .map(|_| probe(private, &param.ty, "whole_input", "object_kind"));
        quote!(#context #object)
    });
    quote! {
        {
            use #private::probe::*;
            #(#checks)*
        }
    }
}

/// `check::<ty, _>(Probe::<ty>::OF.kind());`, spanned on `ty` (on its
/// first token: a proc macro cannot join spans on stable).
fn probe(private: &TokenStream, ty: &Type, check: &str, kind: &str) -> TokenStream {
    let check = Ident::new(check, Span::call_site());
    let kind = Ident::new(kind, Span::call_site());
    respan(
        quote!(#private::#check::<#ty, _>(#private::Probe::<#ty>::OF.#kind());),
        ty.span(),
    )
}

/// The input as the generated code handles it.
struct InputParts {
    /// `TypedTool::Input`.
    ty: Type,
    /// The generated input struct, if any.
    def: TokenStream,
    /// The arguments of the call to the user's function.
    call_args: Vec<TokenStream>,
    /// For a lone parameter with an approval policy or input examples: the
    /// generated struct and its field, which a policy or examples may be
    /// written against instead of the parameter's type.
    lone: Option<(Ident, Ident)>,
    /// For a lone parameter: `TypedTool::INPUT_PARAMETER`.
    parameter: TokenStream,
}

fn input_parts(krate: &Path, attrs: &Attrs, tool: &ToolFn, tool_ident: &Ident) -> InputParts {
    let mut args: Vec<(usize, TokenStream)> = tool
        .contexts
        .first()
        .map(|c| (c.position, quote!(ctx)))
        .into_iter()
        .chain(
            tool.states
                .iter()
                .zip(state_bindings(tool))
                .map(|(state, name)| (state.position, quote!(#name))),
        )
        .collect();
    let ident = format_ident!("{}Input", tool_ident);
    let private = private_path(krate);
    let mut parameter = TokenStream::new();
    let (ty, def, lone) = match tool.input(attrs.input_shape()) {
        // Its traits are checked by `TypedTool::Input`'s bounds, reported
        // once on the parameter's type.
        Input::Struct(param) => {
            args.push((param.position, quote!(input)));
            ((*param.ty).clone(), TokenStream::new(), None)
        }
        // The parameter's value is the input, its shape decided by tool-core
        // from its schema; its traits are checked by `TypedTool::Input`'s
        // bounds through `Param`'s.
        Input::Lone(param) => {
            args.push((param.position, quote!(input.0)));
            parameter = input_parameter(krate, param);
            let ty = &param.ty;
            // Spanned on the parameter's type, where a missing trait is
            // reported (on its first token: a proc macro cannot join spans).
            let input_ty = respan(quote!(#private::Param<#ty>), ty.span());
            let takes_struct = matches!(attrs.approval, Some(Approval::Policy(_)))
                || attrs.input_examples.is_some();
            let (def, lone) = if takes_struct {
                let def = input_struct(
                    krate,
                    attrs,
                    tool,
                    &ident,
                    std::slice::from_ref(param),
                    false,
                );
                (def, Some((ident, param.property())))
            } else {
                (TokenStream::new(), None)
            };
            (syn::parse_quote!(#input_ty), def, lone)
        }
        Input::Params(params) => {
            for param in params {
                let name = param.property();
                args.push((param.position, quote!(input.#name)));
            }
            let def = input_struct(krate, attrs, tool, &ident, params, true);
            (syn::parse_quote!(#ident), def, None)
        }
    };
    args.sort_by_key(|(position, _)| *position);
    InputParts {
        ty,
        def,
        call_args: args.into_iter().map(|(_, a)| a).collect(),
        lone,
        parameter,
    }
}

/// `TypedTool::INPUT_PARAMETER` of a lone parameter: its name, docs and
/// whether it may be left out.
fn input_parameter(krate: &Path, param: &Param) -> TokenStream {
    let name = param.property().unraw().to_string();
    let docs = (!param.docs.is_empty()).then(|| {
        let docs = doc_text(&param.docs);
        quote!(.docs(#docs))
    });
    let optional = is_option(&param.ty).then(|| quote!(.optional(true)));
    quote! {
        const INPUT_PARAMETER: ::core::option::Option<#krate::InputParameter> =
            ::core::option::Option::Some(#krate::InputParameter::new(#name) #docs #optional);
    }
}

/// The doc comment `docs` as schemars' derive reads it: one line per
/// attribute, joined by newlines, each without its first space.
fn doc_text(docs: &[syn::Attribute]) -> TokenStream {
    let lines: Vec<TokenStream> = docs
        .iter()
        .filter_map(|attr| attr.meta.require_name_value().ok())
        .map(|line| match &line.value {
            syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(text),
                ..
            }) => {
                let text = text.value();
                let text = text.strip_prefix(' ').unwrap_or(&text);
                quote!(#text)
            }
            other => quote!(#other),
        })
        .collect();
    if lines.is_empty() {
        quote!("")
    } else {
        quote!(::core::concat!(#(#lines),*))
    }
}

/// The generated input struct. `derive`: whether it derives its
/// deserialization and schema (plain parameters); a lone parameter's struct
/// derives nothing: policies and examples written against it are converted
/// to and from the parameter's value.
fn input_struct(
    krate: &Path,
    attrs: &Attrs,
    tool: &ToolFn,
    ident: &Ident,
    params: &[Param],
    derive: bool,
) -> TokenStream {
    let vis = &tool.item.vis;
    let private = private_path(krate);
    let private_text = private.to_string();
    let serde_path = quote!(#private::serde).to_string();
    let schemars_path = quote!(#private::schemars).to_string();
    // Examples of plain parameters are serialized as the struct; a lone
    // parameter's, as its value.
    let serialize = attrs
        .input_examples
        .as_ref()
        .filter(|_| derive)
        .map(|_| quote!(#private::serde::Serialize,));
    let fields = params.iter().map(|param| {
        let name = param.property();
        let ty = &param.ty;
        let docs = &param.docs;
        // A doc comment would reach the schema; an undocumented parameter
        // must not make `missing_docs` point at the attribute.
        let allow = docs.is_empty().then(|| quote!(#[allow(missing_docs)]));
        // Each field goes through a hidden-module helper whose bound names the
        // missing trait in terms of the tool, spanned on the parameter's
        // type: one error per missing trait instead of several from inside
        // the derives.
        let span = ty.span();
        let derived = derive.then(|| {
            let default = is_option(ty).then(|| quote!(#[serde(default)]));
            let deserialize_with =
                syn::LitStr::new(&format!("{private_text}::deserialize_param"), span);
            let schema_with = syn::LitStr::new(
                &format!("{private_text}::param_schema::<{}>", quote!(#ty)),
                span,
            );
            quote! {
                #default
                #[serde(deserialize_with = #deserialize_with)]
                #[schemars(schema_with = #schema_with)]
            }
        });
        let serialize_with = serialize.as_ref().map(|_| {
            let path = syn::LitStr::new(
                &format!("{private_text}::serialize_param::<{}, _, _>", quote!(#ty)),
                span,
            );
            quote!(#[serde(serialize_with = #path)])
        });
        quote! {
            #(#docs)*
            #allow
            #derived
            #serialize_with
            pub #name: #ty,
        }
    });
    let fn_name = tool.name();
    let doc = format!("Arguments of [`{fn_name}`], generated by `#[tool]` from its parameters.");
    let derives = derive.then(|| {
        quote! {
            #[derive(#serialize #private::serde::Deserialize, #private::schemars::JsonSchema)]
            #[serde(crate = #serde_path)]
            #[schemars(crate = #schemars_path)]
            // The doc comment is for rustdoc; the model reads the tool's
            // description, not a note about code generation.
            #[schemars(description = "")]
        }
    });
    quote! {
        #[doc = #doc]
        #derives
        #vis struct #ident {
            #(#fields)*
        }
    }
}

fn is_option(ty: &Type) -> bool {
    matches!(ty, Type::Path(p) if p.qself.is_none() && p.path.segments.last().is_some_and(|s| s.ident == "Option"))
}

/// The output type. Its traits are checked by `TypedTool::Output`'s bounds,
/// reported once on the user's type (its tokens keep their spans).
fn output_type(output: &Output) -> Type {
    match output {
        Output::Unit => syn::parse_quote!(()),
        Output::Plain(ty) | Output::Result { ok: ty, .. } => (**ty).clone(),
    }
}

/// The user's function `path` coerced to the fn pointer type `expected`,
/// spanned on the path: a wrong signature is reported there, as "expected
/// fn pointer `...`, found fn item `...`", both signatures spelled out.
fn fn_pointer(path: &Path, expected: TokenStream) -> TokenStream {
    let expected = respan(expected, path.span());
    quote_spanned! {path.span()=>
        {
            let function: #expected = #path;
            function
        }
    }
}

/// `tokens` with every span set to `span`, so that an error about the
/// expression they form points at the user's token.
fn respan(tokens: TokenStream, span: Span) -> TokenStream {
    tokens
        .into_iter()
        .map(|token| match token {
            TokenTree::Group(group) => {
                let mut respanned = Group::new(group.delimiter(), respan(group.stream(), span));
                respanned.set_span(span);
                TokenTree::Group(respanned)
            }
            mut other => {
                other.set_span(span);
                other
            }
        })
        .collect()
}

/// The body of `TypedTool::configure`: every option of the attribute.
fn configure(
    krate: &Path,
    attrs: &Attrs,
    states: &[StateParam],
    input_ty: &Type,
    lone: Option<&(Ident, Ident)>,
    reconcile_input: &(Type, TokenStream),
) -> TokenStream {
    let private = private_path(krate);
    // What tool-core reads the input with, as the tool's own paths do.
    let parameter = quote!(<Self as #krate::TypedTool>::INPUT_PARAMETER);
    let mut steps = Vec::new();
    if let Some(title) = &attrs.title {
        steps.push(quote!(.title(#title)));
    }
    if let Some(strict) = attrs.strict {
        steps.push(quote!(.strict(#strict)));
    }
    if let Some(retry_safe) = attrs.retry_safe {
        steps.push(quote!(.retry_safe(#retry_safe)));
    }
    if let Some(transactional) = attrs.transactional {
        steps.push(quote!(.transactional(#transactional)));
    }
    match &attrs.approval {
        Some(Approval::Always(required)) => steps.push(quote!(.require_approval(#required))),
        // The coercion to the expected fn pointer, spanned on the path, is
        // where a wrong signature is reported.
        // Sync or async, told apart by trait impls; a mismatch is reported
        // on the path.
        Some(Approval::Policy(path)) => {
            let run = match lone {
                // Either signature (the parameter or the generated struct).
                Some((ident, field)) => quote! {
                    #private::lone_policy::<#input_ty, #ident, _>(input, request_context, &policy, |value| #ident { #field: value }, wraps)
                },
                None => quote! {
                    #private::typed_policy::<#input_ty, _, _>(input, request_context, &policy, wraps)
                },
            };
            let run = respan(run, path.span());
            // Whether a parameter wraps the input is looked at once, here.
            steps.push(quote! {
                .approval_policy({
                    let policy = #path;
                    let wraps = #private::wrapping::<#input_ty>(#parameter);
                    move |input, request_context| #run
                })
            });
        }
        None => {}
    }
    if let Some(editable) = &attrs.editable {
        let names = editable.fields.iter().map(|field| &field.name);
        steps.push(quote!(.editable([#(#names),*])));
    }
    for state in states {
        let ty = &state.inner;
        steps.push(quote!(.requires_state::<#ty>()));
    }
    // A function rather than a method so that it goes first in the chain
    // and its bound is reported on the user's type.
    let mut start = quote!(builder);
    for (ty, setter) in [
        (&attrs.request_context, quote!(request_context_type)),
        (&attrs.workflow_state, quote!(workflow_state_type)),
    ] {
        if let Some(ty) = ty {
            let set = respan(quote!(#private::#setter), ty.span());
            start = quote!(#set::<#ty>(#start));
        }
    }
    // The function's signature is the bound of `typed_reconcile`, reported
    // on the path (the argument it constrains).
    if let Some(path) = &attrs.reconcile {
        let (reconcile_ty, from_input) = reconcile_input;
        let set = respan(
            quote!(#private::typed_reconcile::<Self, #reconcile_ty, _>),
            path.span(),
        );
        start = quote!(#set(#start, #path, |input| #from_input));
    }
    if let Some(path) = &attrs.transform {
        let transform = fn_pointer(path, quote!(fn() -> #krate::ToolTransform));
        steps.push(quote!(.transform((#transform)())));
    }
    if let Some(path) = &attrs.provider_options {
        let options = fn_pointer(path, quote!(fn() -> #private::serde_json::Value));
        steps.push(
            quote!(.provider_options(#private::json_object((#options)(), "provider_options"))),
        );
    }
    if let Some(path) = &attrs.input_examples {
        let examples = match lone {
            Some((ident, field)) => respan(
                quote!(#private::lone_examples::<#input_ty, #ident, _>(#path(), |input| input.#field, #parameter)),
                path.span(),
            ),
            None => quote!(#path().iter().map(#private::example_to_value)),
        };
        steps.push(quote!(.input_examples(#examples)));
    }
    if let Some(warn) = attrs.warn_on_invalid_output {
        let mode = if warn { quote!(Warn) } else { quote!(Strict) };
        steps.push(quote!(.output_validation(#krate::OutputValidation::#mode)));
    }
    if let Some(mcp) = &attrs.mcp {
        let mut options = vec![quote!(#krate::McpOptions::default())];
        if let Some(title) = &mcp.title {
            options.push(quote!(.title(#title)));
        }
        for (value, setter) in [
            (mcp.read_only, quote!(read_only)),
            (mcp.destructive, quote!(destructive)),
            (mcp.idempotent, quote!(idempotent)),
            (mcp.open_world, quote!(open_world)),
        ] {
            if let Some(value) = value {
                options.push(quote!(.#setter(#value)));
            }
        }
        if let Some(meta) = &mcp.meta {
            let meta = fn_pointer(meta, quote!(fn() -> #private::serde_json::Value));
            options.push(quote!(.meta(#private::json_object((#meta)(), "mcp meta"))));
        }
        if let Some((required, _)) = mcp.task_required {
            options.push(quote!(.task_required(#required)));
        }
        steps.push(quote!(.mcp(#(#options)*)));
    }
    if let Some(background) = &attrs.background {
        let enabled = background.enabled;
        let disposition = if background.foreground {
            quote!(Foreground)
        } else {
            quote!(Deferred)
        };
        let max_retries = background.max_retries;
        let timeout = background.timeout_ms.map(|ms| quote!(.timeout_ms(#ms)));
        steps.push(quote! {
            .background(
                #krate::BackgroundConfig::new()
                    .enabled(#enabled)
                    .disposition(#krate::Disposition::#disposition)
                    .max_retries(#max_retries)
                    #timeout
            )
        });
    }
    let hooks = &attrs.hooks;
    // The input and output hooks see the tool's types: the input as the
    // tool's function takes it (made from the input type as for a reconcile
    // function), the output as it returns it. The setter is spanned on the
    // path, where a hook of another type is reported.
    let (hook_input_ty, from_input) = reconcile_input;
    let typed_setters = [
        (
            &hooks.on_input_available,
            quote!(.on_input_available_via::<#input_ty, #hook_input_ty, _, _, _>),
            quote!(, #parameter, |input| #from_input),
        ),
        (
            &hooks.on_output,
            quote!(.on_output_as::<<Self as #krate::TypedTool>::Output, _, _, _>),
            TokenStream::new(),
        ),
    ];
    let hook_steps: Vec<TokenStream> = [
        (
            &hooks.on_input_start,
            quote!(.on_input_start),
            TokenStream::new(),
        ),
        (
            &hooks.on_input_delta,
            quote!(.on_input_delta),
            TokenStream::new(),
        ),
    ]
    .into_iter()
    .chain(typed_setters)
    .filter_map(|(path, setter, rest)| {
        path.as_ref().map(|path| {
            let setter = respan(setter, path.span());
            quote!(#setter(#path #rest))
        })
    })
    .collect();
    if !hook_steps.is_empty() {
        steps.push(quote!(.hooks(#krate::Hooks::new() #(#hook_steps)*)));
    }
    if steps.is_empty()
        && attrs.request_context.is_none()
        && attrs.workflow_state.is_none()
        && attrs.reconcile.is_none()
    {
        return TokenStream::new();
    }
    quote! {
        fn configure(builder: #krate::ToolBuilder) -> #krate::ToolBuilder {
            #start #(#steps)*
        }
    }
}
