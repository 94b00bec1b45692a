//! The annotated function as a typed model: its parameters sorted into the
//! context and the input, and its return type into output and error.

use heck::ToSnakeCase;
use proc_macro2::{Span, TokenStream};
use quote::quote;
use syn::spanned::Spanned;

use crate::attr::InputShape;
use syn::{
    Attribute, Expr, FnArg, GenericArgument, Ident, ItemFn, Lit, Meta, Pat, PathArguments,
    ReturnType, Type,
};

/// A function parameter other than the context.
pub struct Param {
    pub pat: Box<Pat>,
    pub ty: Box<Type>,
    /// `///` comments on the parameter: property descriptions.
    pub docs: Vec<Attribute>,
    /// Position among all parameters, to rebuild the call.
    pub position: usize,
}

/// The `ToolContext<S, R>` parameter.
pub struct ContextParam {
    pub ty: Box<Type>,
    pub suspend: Option<Type>,
    pub resume: Option<Type>,
    pub position: usize,
}

/// A `State<T>` parameter: application state, not input.
pub struct StateParam {
    /// `T`.
    pub inner: Type,
    pub position: usize,
}

/// Where the tool's arguments come from.
pub enum Input<'a> {
    /// One parameter taken as the whole input (`input = whole`).
    Struct(&'a Param),
    /// One parameter whose type may have an object schema: the whole input
    /// if it does, else the one property of an input object, decided by
    /// tool-core from the schema (`TypedTool::INPUT_PARAMETER`).
    Lone(&'a Param),
    /// Plain parameters: the macro generates the input struct.
    Params(&'a [Param]),
}

pub enum Output {
    /// No return type.
    Unit,
    /// `-> O`.
    Plain(Box<Type>),
    /// `-> Result<O, E>` (`err` is `None` for one-argument aliases like `io::Result<O>`).
    Result {
        ok: Box<Type>,
        err: Option<Box<Type>>,
    },
}

pub struct ToolFn {
    /// The function as it will be emitted (parameter docs removed, which
    /// rustc does not accept on parameters).
    pub item: ItemFn,
    pub params: Vec<Param>,
    pub contexts: Vec<ContextParam>,
    pub states: Vec<StateParam>,
    pub receivers: Vec<syn::Receiver>,
    pub output: Output,
    pub docs: Option<Docs>,
}

impl ToolFn {
    pub fn from_item(mut item: ItemFn) -> Self {
        let mut params = Vec::new();
        let mut contexts = Vec::new();
        let mut states = Vec::new();
        let mut receivers = Vec::new();
        for (position, arg) in item.sig.inputs.iter_mut().enumerate() {
            match arg {
                FnArg::Receiver(receiver) => receivers.push(receiver.clone()),
                FnArg::Typed(typed) => {
                    let docs: Vec<Attribute> = typed
                        .attrs
                        .iter()
                        .filter(|a| a.path().is_ident("doc"))
                        .cloned()
                        .collect();
                    typed.attrs.retain(|a| !a.path().is_ident("doc"));
                    if let Some(inner) = state_inner(&typed.ty) {
                        states.push(StateParam { inner, position });
                    } else if let Some((suspend, resume)) = context_generics(&typed.ty) {
                        contexts.push(ContextParam {
                            ty: typed.ty.clone(),
                            suspend,
                            resume,
                            position,
                        });
                    } else {
                        params.push(Param {
                            pat: typed.pat.clone(),
                            ty: typed.ty.clone(),
                            docs,
                            position,
                        });
                    }
                }
            }
        }
        let output = match &item.sig.output {
            ReturnType::Default => Output::Unit,
            ReturnType::Type(_, ty) => output_of(ty),
        };
        let docs = doc_text(&item.attrs);
        ToolFn {
            item,
            params,
            contexts,
            states,
            receivers,
            output,
            docs,
        }
    }

    pub fn name(&self) -> &Ident {
        &self.item.sig.ident
    }

    /// The input shape: as `input = whole | params` says, or else, for a
    /// single parameter, decided from its type's schema once the tool is
    /// built (a type's name says too little: an alias, an enum, a struct
    /// named `Value`). `input = whole` with other than one parameter is
    /// reported by `valid`; the parameters are then taken as plain.
    pub fn input(&self, shape: Option<InputShape>) -> Input<'_> {
        match (shape, self.params.as_slice()) {
            (Some(InputShape::Whole), [single]) => Input::Struct(single),
            (None, [single]) => Input::Lone(single),
            (_, params) => Input::Params(params),
        }
    }
}

impl Param {
    /// The input property the parameter becomes: its name, or for a
    /// destructuring pattern (a lone struct that turns out not to be an
    /// object, `Ids(ids): Ids`) its type's name in snake case.
    pub fn property(&self) -> Ident {
        match &*self.pat {
            Pat::Ident(pat) => pat.ident.clone(),
            other => {
                let name = match &*self.ty {
                    Type::Path(path) => path.path.segments.last().map(|s| s.ident.to_string()),
                    _ => None,
                };
                let name = name.map_or_else(|| "input".to_owned(), |name| name.to_snake_case());
                Ident::new_raw(&name, other.span())
            }
        }
    }
}

/// True for `ToolContext` (with any generics), however it is qualified.
pub fn is_tool_context(ty: &Type) -> bool {
    context_generics(ty).is_some()
}

/// The first `impl Trait` inside `ty`, if any.
pub fn find_impl_trait(ty: &Type) -> Option<&syn::TypeImplTrait> {
    match ty {
        Type::ImplTrait(found) => Some(found),
        Type::Path(path) => path
            .path
            .segments
            .iter()
            .flat_map(|segment| match &segment.arguments {
                PathArguments::AngleBracketed(args) => args
                    .args
                    .iter()
                    .filter_map(|arg| match arg {
                        GenericArgument::Type(ty) => find_impl_trait(ty),
                        _ => None,
                    })
                    .collect::<Vec<_>>(),
                _ => Vec::new(),
            })
            .next(),
        Type::Reference(inner) => find_impl_trait(&inner.elem),
        Type::Slice(inner) => find_impl_trait(&inner.elem),
        Type::Array(inner) => find_impl_trait(&inner.elem),
        Type::Ptr(inner) => find_impl_trait(&inner.elem),
        Type::Paren(inner) => find_impl_trait(&inner.elem),
        Type::Group(inner) => find_impl_trait(&inner.elem),
        Type::Tuple(tuple) => tuple.elems.iter().find_map(find_impl_trait),
        _ => None,
    }
}

/// `Some(T)` when `ty` is `State<T>` (however it is qualified): the
/// application state extractor, told apart by its name and its one type
/// argument.
fn state_inner(ty: &Type) -> Option<Type> {
    let Type::Path(path) = ty else { return None };
    let last = path.path.segments.last()?;
    if last.ident != "State" {
        return None;
    }
    match generic_types(&last.arguments).as_slice() {
        [inner] => Some(inner.clone()),
        _ => None,
    }
}

/// `Some((S, R))` when `ty` is `ToolContext`, `ToolContext<S>` or `ToolContext<S, R>`.
fn context_generics(ty: &Type) -> Option<(Option<Type>, Option<Type>)> {
    let Type::Path(path) = ty else { return None };
    let last = path.path.segments.last()?;
    if last.ident != "ToolContext" {
        return None;
    }
    let mut types = generic_types(&last.arguments).into_iter();
    Some((types.next(), types.next()))
}

fn generic_types(arguments: &PathArguments) -> Vec<Type> {
    match arguments {
        PathArguments::AngleBracketed(args) => args
            .args
            .iter()
            .filter_map(|arg| match arg {
                GenericArgument::Type(ty) => Some(ty.clone()),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

fn output_of(ty: &Type) -> Output {
    if let Type::Path(path) = ty
        && let Some(last) = path.path.segments.last()
        && last.ident == "Result"
    {
        let mut types = generic_types(&last.arguments).into_iter();
        if let Some(ok) = types.next() {
            return Output::Result {
                ok: Box::new(ok),
                err: types.next().map(Box::new),
            };
        }
    }
    match ty {
        Type::Tuple(tuple) if tuple.elems.is_empty() => Output::Unit,
        other => Output::Plain(Box::new(other.clone())),
    }
}

/// A description, as the function's doc attributes give it.
#[derive(Clone)]
pub enum Docs {
    /// Only literal lines (`///` comments): their text, joined.
    Text(String),
    /// Some lines are macros (`#[doc = include_str!("...")]`): a `concat!`
    /// of every line, evaluated by the compiler; `span` is the first
    /// macro's, for errors about the result.
    Concat { expr: TokenStream, span: Span },
}

/// The function's doc attributes: the text of `///` comments, lines joined
/// with their leading space and trailing whitespace trimmed, or, when some
/// line is a macro, the `concat!` of the lines. `None` when there is none,
/// or only blank lines.
pub fn doc_text(attrs: &[Attribute]) -> Option<Docs> {
    enum Line<'a> {
        Text(String),
        Macro(&'a syn::ExprMacro),
    }
    let lines: Vec<Line<'_>> = attrs
        .iter()
        .filter_map(|attr| match &attr.meta {
            Meta::NameValue(nv) if nv.path.is_ident("doc") => match &nv.value {
                Expr::Lit(lit) => match &lit.lit {
                    Lit::Str(s) => {
                        let line = s.value();
                        let line = line.strip_prefix(' ').unwrap_or(&line).trim_end();
                        Some(Line::Text(line.to_owned()))
                    }
                    _ => None,
                },
                Expr::Macro(mac) => Some(Line::Macro(mac)),
                _ => None,
            },
            _ => None,
        })
        .collect();
    if lines.iter().any(|line| matches!(line, Line::Macro(_))) {
        let mut parts = Vec::new();
        for (index, line) in lines.iter().enumerate() {
            if index > 0 {
                parts.push(quote!("\n"));
            }
            parts.push(match line {
                Line::Text(text) => quote!(#text),
                Line::Macro(mac) => quote!(#mac),
            });
        }
        let span = lines
            .iter()
            .find_map(|line| match line {
                Line::Macro(mac) => Some(mac.mac.path.span()),
                Line::Text(_) => None,
            })
            .unwrap_or_else(Span::call_site);
        return Some(Docs::Concat {
            expr: quote!(::core::concat!(#(#parts),*)),
            span,
        });
    }
    let text = lines
        .iter()
        .filter_map(|line| match line {
            Line::Text(text) => Some(text.as_str()),
            Line::Macro(_) => None,
        })
        .collect::<Vec<_>>()
        .join("\n");
    let text = text.trim();
    (!text.is_empty()).then(|| Docs::Text(text.to_owned()))
}
