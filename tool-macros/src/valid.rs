//! Checks of the attribute against the function; every failure is recorded
//! with the span of the token to fix.

use quote::ToTokens;
use syn::ext::IdentExt as _;
use syn::{Pat, Safety, Type};

use crate::ast::{Input, Output, ToolFn, find_impl_trait, is_tool_context};
use crate::attr::{Attrs, Description, InputShape, suggest};
use crate::ctxt::Ctxt;

pub fn check(cx: &Ctxt, attrs: &Attrs, tool: &ToolFn) {
    check_signature(cx, attrs, tool);
    check_id(cx, attrs, tool);
    check_description(cx, attrs, tool);
    check_input(cx, attrs, tool);
    check_editable(cx, attrs, tool);
    check_context(cx, attrs, tool);
    check_state(cx, attrs, tool);
    check_output(cx, tool);
}

fn check_signature(cx: &Ctxt, attrs: &Attrs, tool: &ToolFn) {
    let sig = &tool.item.sig;
    for receiver in &tool.receivers {
        cx.error_spanned_by(
            receiver.self_token,
            "#[tool] goes on a free function: `self` parameters are not supported (call a method from inside the function instead)",
        );
    }
    if !sig.generics.params.is_empty() || sig.generics.where_clause.is_some() {
        cx.error_spanned_by(
            &sig.generics,
            "a tool function cannot be generic: its schemas are derived from concrete types",
        );
    }
    if let Some(constness) = &sig.constness {
        cx.error_spanned_by(constness, "a tool function cannot be `const`");
    }
    if let Safety::Unsafe(unsafety) = &sig.safety {
        cx.error_spanned_by(
            unsafety,
            "a tool function cannot be `unsafe`: the model calls it with arbitrary arguments",
        );
    }
    if let Some(abi) = &sig.abi {
        cx.error_spanned_by(abi, "a tool function cannot have an `extern` ABI");
    }
    if let Some(variadic) = &sig.variadic {
        cx.error_spanned_by(variadic, "a tool function cannot be variadic");
    }
    if let Some(background) = &attrs.background
        && sig.asyncness.is_none()
    {
        cx.syn_error(syn::Error::new(
                sig.fn_token.span,
                "a background tool must be `async fn`: a blocking function cannot be timed out or aborted",
            ));
        // Point at the key too, so both ends of the conflict are visible.
        cx.syn_error(syn::Error::new(
            background.span,
            "`background` declared here requires an `async fn`",
        ));
    }
    let task_required = attrs
        .mcp
        .as_ref()
        .and_then(|mcp| mcp.task_required)
        .filter(|(required, _)| *required);
    let background = attrs
        .background
        .as_ref()
        .filter(|b| b.enabled && !b.foreground);
    if let (Some((_, span)), None) = (task_required, background) {
        cx.syn_error(syn::Error::new(
            span,
            "`mcp(task_required)` is for background tools: add `background` (deferred), whose calls an MCP task can carry",
        ));
    }
}

fn check_id(cx: &Ctxt, attrs: &Attrs, tool: &ToolFn) {
    // Keep in sync with `tool_core::is_valid_tool_id` (tool-core/src/error.rs):
    // a proc-macro crate cannot call into the crate that re-exports it.
    let valid = |id: &str| {
        (1..=64).contains(&id.len())
            && id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    };
    match &attrs.id {
        Some(id) if !valid(&id.value()) => cx.error_spanned_by(
            id,
            format!(
                "invalid tool id {:?}: ids must match ^[a-zA-Z0-9_-]{{1,64}}$ (letters, digits, '_' and '-', at most 64), the names every provider accepts",
                id.value()
            ),
        ),
        Some(_) => {}
        None => {
            let name = tool.name().to_string();
            let name = name.strip_prefix("r#").unwrap_or(&name);
            if !valid(name) {
                cx.error_spanned_by(
                    tool.name(),
                    format!(
                        "the function name {name:?} is not a valid tool id (^[a-zA-Z0-9_-]{{1,64}}$); set one with `id = \"...\"`"
                    ),
                );
            }
        }
    }
}

fn check_description(cx: &Ctxt, attrs: &Attrs, tool: &ToolFn) {
    match &attrs.description {
        Some(Description::Literal(description)) if description.value().trim().is_empty() => cx.error_spanned_by(
            description,
            "the description is empty: the model reads it to decide when to call the tool",
        ),
        Some(_) => {}
        // A misspelled or malformed `description` key has its own error.
        None if tool.docs.is_none() && !attrs.description_attempted => cx.error_spanned_by(
            tool.name(),
            "missing tool description: add a `///` doc comment to the function or `description = \"...\"` to #[tool]",
        ),
        None => {}
    }
}

fn check_input(cx: &Ctxt, attrs: &Attrs, tool: &ToolFn) {
    for param in &tool.params {
        if let Some(found) = find_impl_trait(&param.ty) {
            cx.error_spanned_by(
                found,
                "a tool parameter needs a concrete type, not `impl Trait`: the input schema is derived from it",
            );
        }
    }
    if let Some((InputShape::Whole, value)) = &attrs.input
        && tool.params.len() != 1
    {
        cx.error_spanned_by(
                value,
                format!(
                    "`input = whole` takes the function's one parameter (besides the context) as the whole input, but it has {}",
                    match tool.params.len() {
                        0 => "none".to_owned(),
                        n => n.to_string(),
                    }
                ),
            );
    }
    if let Input::Params(params) = tool.input(attrs.input_shape()) {
        for param in params {
            match &*param.pat {
                Pat::Ident(ident) if ident.by_ref.is_none() && ident.subpat.is_none() => {}
                pat => cx.error_spanned_by(
                    pat,
                    "tool parameters become input properties and need plain names; to destructure, take one struct as the whole input",
                ),
            }
        }
    }
    for param in &tool.params {
        if let Type::Reference(reference) = &*param.ty {
            if is_tool_context(&reference.elem) {
                cx.error_spanned_by(
                    reference,
                    format!(
                        "take the context by value: `{}: {}`",
                        pretty(&param.pat),
                        pretty(&reference.elem)
                    ),
                );
            } else {
                cx.error_spanned_by(
                    reference,
                    format!(
                        "tool parameters are deserialized from the model's arguments and must be owned: use `{}` instead of `{}`",
                        owned_form(&reference.elem),
                        pretty(reference)
                    ),
                );
            }
        }
    }
}

/// The names of `require_approval(editable(...))`: each given once, and,
/// where the macro generates the input struct from the parameters, each
/// one of them. A struct taken as the whole input (or a lone parameter,
/// whose shape its schema decides) has fields the macro cannot see: the
/// tool's build checks those names against the input schema.
fn check_editable(cx: &Ctxt, attrs: &Attrs, tool: &ToolFn) {
    let Some(editable) = &attrs.editable else {
        return;
    };
    let properties: Option<Vec<String>> = match tool.input(attrs.input_shape()) {
        Input::Params(params) => Some(
            params
                .iter()
                .map(|param| param.property().unraw().to_string())
                .collect(),
        ),
        Input::Struct(_) | Input::Lone(_) => None,
    };
    let mut seen: Vec<&str> = Vec::new();
    for field in &editable.fields {
        let name = field.name.as_str();
        if name.is_empty() {
            cx.syn_error(syn::Error::new(
                field.span,
                "an editable field needs a name: an input property's",
            ));
            continue;
        }
        if seen.contains(&name) {
            cx.syn_error(syn::Error::new(
                field.span,
                format!("duplicate field `{name}` in editable(...): each field is listed once"),
            ));
            continue;
        }
        seen.push(name);
        let Some(properties) = &properties else {
            continue;
        };
        if properties.iter().any(|property| property == name) {
            continue;
        }
        let names: Vec<&str> = properties.iter().map(String::as_str).collect();
        let hint = suggest(name, &names).map_or_else(String::new, |closest| {
            format!(": did you mean `{closest}`?")
        });
        let listed = if names.is_empty() {
            "it takes no parameters, so it has no input fields".to_owned()
        } else {
            format!("its input fields are its parameters: {}", names.join(", "))
        };
        cx.syn_error(syn::Error::new(
            field.span,
            format!(
                "`{name}` is not an input field of `{}`{hint}\n{listed}",
                tool.name().unraw()
            ),
        ));
    }
}

/// What to write instead of a borrowed `&elem` parameter.
fn owned_form(elem: &Type) -> String {
    match elem {
        Type::Path(path) if path.path.is_ident("str") => "String".to_owned(),
        Type::Path(path) if path.path.is_ident("Path") => "PathBuf".to_owned(),
        Type::Slice(slice) => format!("Vec<{}>", pretty(&slice.elem)),
        other => pretty(other),
    }
}

/// Tokens as a user would write them (`&str`, `Vec<String>`), not as
/// `TokenStream`'s `Display` spaces them (`& str`, `Vec < String >`).
pub fn pretty(tokens: impl ToTokens) -> String {
    let mut text = tokens.to_token_stream().to_string();
    for (from, to) in [
        (" :: ", "::"),
        (":: ", "::"),
        (" ::", "::"),
        (" < ", "<"),
        ("< ", "<"),
        (" <", "<"),
        (" >", ">"),
        (" ,", ","),
        ("& ", "&"),
        ("( ", "("),
        (" )", ")"),
        ("[ ", "["),
        (" ]", "]"),
        (" ;", ";"),
    ] {
        text = text.replace(from, to);
    }
    text
}

fn check_context(cx: &Ctxt, attrs: &Attrs, tool: &ToolFn) {
    for extra in tool.contexts.iter().skip(1) {
        cx.error_spanned_by(&extra.ty, "a tool takes at most one ToolContext parameter");
    }
    let Some(context) = tool.contexts.first() else {
        for ty in [&attrs.suspend, &attrs.resume].into_iter().flatten() {
            cx.error_spanned_by(
                ty,
                "a tool that suspends needs a `ToolContext<Suspend, Resume>` parameter to call `suspend` and read resume data",
            );
        }
        return;
    };
    // The context's generics are the suspend and resume types; the
    // attribute may repeat them, and must then say the same.
    let spelled = |ty: &Type| pretty(ty);
    let wanted = |attr: &Option<Type>, declared: &Option<Type>| {
        attr.as_ref()
            .or(declared.as_ref())
            .map_or_else(|| "()".to_owned(), spelled)
    };
    let expected = format!(
        "ToolContext<{}, {}>",
        wanted(&attrs.suspend, &context.suspend),
        wanted(&attrs.resume, &context.resume)
    );
    for (key, attr, declared) in [
        ("suspend", &attrs.suspend, &context.suspend),
        ("resume", &attrs.resume, &context.resume),
    ] {
        match (attr, declared) {
            (Some(attr), None) => cx.error_spanned_by(
                &context.ty,
                format!(
                    "`{key} = {}` in #[tool] needs this context to carry it: `{expected}`",
                    spelled(attr)
                ),
            ),
            (Some(attr), Some(declared)) if spelled(attr) != spelled(declared) => cx
                .error_spanned_by(
                    declared,
                    format!(
                        "the context's {key} type `{}` disagrees with `{key} = {}` in #[tool]; the ToolContext generics are enough, so drop `{key} = ...` or make them the same",
                        spelled(declared),
                        spelled(attr)
                    ),
                ),
            _ => {}
        }
    }
}

/// The workflow state: `workflow_state = Type` needs a context to read it through,
/// and the body's `ctx.workflow::<T>()` and `set_state` calls must agree
/// with it. `ToolContext` does not carry the state type (it would take a
/// third generic in every signature), so these checks read the body, the
/// way a type would have been checked; `workflow::<T>()` also checks `T`
/// when it runs.
fn check_state(cx: &Ctxt, attrs: &Attrs, tool: &ToolFn) {
    if let Some(state) = &attrs.workflow_state
        && tool.contexts.is_empty()
    {
        cx.error_spanned_by(
            state,
            "a tool with a workflow state needs a `ToolContext` parameter to read it (`ctx.workflow::<State>()`) and set it",
        );
    }
    let mut calls = StateCalls::default();
    syn::visit::Visit::visit_block(&mut calls, &tool.item.block);
    let declared = attrs.workflow_state.as_ref().map(pretty);
    for read in &calls.typed_reads {
        if is_json_value(read) {
            continue;
        }
        let read_as = pretty(read);
        match &declared {
            Some(declared) if *declared == read_as => {}
            Some(declared) => cx.error_spanned_by(
                read,
                format!(
                    "this tool declares `workflow_state = {declared}`: read the workflow state as `ctx.workflow::<{declared}>()` (or as `serde_json::Value`)"
                ),
            ),
            None => cx.error_spanned_by(
                read,
                format!(
                    "this tool declares no workflow state: add `workflow_state = {read_as}` to #[tool] to read the state as `{read_as}`"
                ),
            ),
        }
    }
    if declared.is_none() && calls.reads_workflow {
        for set in &calls.set_state {
            cx.error_spanned_by(
                set,
                "`set_state` needs the tool to declare its workflow state: add `workflow_state = Type` to #[tool]",
            );
        }
    }
}

/// `.workflow::<T>()` and `.set_state(..)` calls in a function body.
#[derive(Default)]
struct StateCalls {
    /// The `T` of every `.workflow::<T>()`.
    typed_reads: Vec<Type>,
    /// Whether the body calls `.workflow` at all.
    reads_workflow: bool,
    /// The method name of every `.set_state(..)`.
    set_state: Vec<syn::Ident>,
}

impl<'ast> syn::visit::Visit<'ast> for StateCalls {
    fn visit_expr_method_call(&mut self, call: &'ast syn::ExprMethodCall) {
        if call.method == "workflow" {
            self.reads_workflow = true;
            if let Some(turbofish) = &call.turbofish {
                for arg in &turbofish.args {
                    if let syn::GenericArgument::Type(ty) = arg {
                        self.typed_reads.push(ty.clone());
                    }
                }
            }
        } else if call.method == "set_state" {
            self.set_state.push(call.method.clone());
        }
        syn::visit::visit_expr_method_call(self, call);
    }
}

/// `Value` or a path ending in it (`serde_json::Value`): the untyped state.
fn is_json_value(ty: &Type) -> bool {
    matches!(ty, Type::Path(path) if path.qself.is_none() && path.path.segments.last().is_some_and(|last| last.ident == "Value" && last.arguments.is_empty()))
}

fn check_output(cx: &Ctxt, tool: &ToolFn) {
    let types = match &tool.output {
        Output::Unit => Vec::new(),
        Output::Plain(ty) => vec![ty],
        Output::Result { ok, err } => std::iter::once(ok).chain(err).collect(),
    };
    if let Some(found) = types.into_iter().find_map(|ty| find_impl_trait(ty)) {
        cx.error_spanned_by(
            found,
            "a tool returns a concrete type (or Result<Output, Error>), not `impl Trait`: the output schema is derived from the type",
        );
    }
}

#[cfg(test)]
mod tests {
    use super::pretty;

    #[test]
    fn pretty_spells_types_as_written() {
        let ty: syn::Type =
            syn::parse_quote!(&'a mut std::collections::HashMap<String, Vec<(u8, i8)>>);
        assert_eq!(
            pretty(&ty),
            "&'a mut std::collections::HashMap<String, Vec<(u8, i8)>>"
        );
        let ty: syn::Type = syn::parse_quote!(&[u8; 4]);
        assert_eq!(pretty(&ty), "&[u8; 4]");
        let ty: syn::Type = syn::parse_quote!(ToolContext<(), Answer>);
        assert_eq!(pretty(&ty), "ToolContext<(), Answer>");
    }
}
