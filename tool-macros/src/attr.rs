//! Parsing of the attribute's arguments, `#[tool(key = value, ...)]`, into
//! [`Attrs`]. Unknown, duplicate and malformed keys are recorded and parsing
//! goes on with the next key, so every mistake is reported at once.

use heck::ToSnakeCase;
use proc_macro2::{Span, TokenStream, TokenTree};
use syn::ext::IdentExt as _;
use syn::meta::ParseNestedMeta;
use syn::parse::{ParseStream, Parser};
use syn::spanned::Spanned as _;
use syn::{Expr, ExprLit, Ident, Lit, LitBool, LitInt, LitStr, Path, Token, Type};

use crate::ctxt::Ctxt;

pub const KEYS: &[&str] = &[
    "id",
    "description",
    "title",
    "strict",
    "require_approval",
    "retry_safe",
    "transactional",
    "reconcile",
    "suspend",
    "resume",
    "request_context",
    "workflow_state",
    "to_model_output",
    "transform",
    "mcp",
    "provider_options",
    "input_examples",
    "background",
    "on_input_start",
    "on_input_delta",
    "on_input_available",
    "on_output",
    "output_validation",
    "input",
    "crate",
];

const MCP_KEYS: &[&str] = &[
    "title",
    "read_only",
    "destructive",
    "idempotent",
    "open_world",
    "meta",
    "task_required",
];

const DESCRIPTION_FORM: &str = "a string literal, or a macro producing one: `description = \"What the tool does\"`, `description = include_str!(\"weather.md\")`";

const BACKGROUND_KEYS: &[&str] = &["enabled", "disposition", "timeout_ms", "max_retries"];

const APPROVAL_KEYS: &[&str] = &["policy", "editable"];

const EDITABLE_FORM: &str = "`editable` lists the input fields a reviewer may change before approving: `editable(amount, memo)`, or `editable(\"amountCents\")` for a property serde renames";

pub enum Approval {
    Always(bool),
    Policy(Path),
}

/// `editable(a, b)` inside `require_approval(...)`: the input fields a
/// reviewer may change.
pub struct Editable {
    pub fields: Vec<EditableField>,
}

/// One name of `editable(...)`, as the input property it names.
pub struct EditableField {
    /// The property's name (an identifier without `r#`, or a string).
    pub name: String,
    pub span: Span,
}

#[derive(Default)]
pub struct Mcp {
    pub title: Option<LitStr>,
    pub read_only: Option<bool>,
    pub destructive: Option<bool>,
    pub idempotent: Option<bool>,
    pub open_world: Option<bool>,
    pub meta: Option<Path>,
    /// `task_required`, and where it was written.
    pub task_required: Option<(bool, Span)>,
}

pub struct Background {
    pub span: Span,
    pub enabled: bool,
    pub foreground: bool,
    pub timeout_ms: Option<u64>,
    pub max_retries: u32,
}

#[derive(Default)]
pub struct Hooks {
    pub on_input_start: Option<Path>,
    pub on_input_delta: Option<Path>,
    pub on_input_available: Option<Path>,
    pub on_output: Option<Path>,
}

/// `input = whole | params`: how the parameters make the input, overriding
/// the default decided from the parameter's type name (see
/// `ast::ToolFn::input`).
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum InputShape {
    /// The one parameter's type is the whole input.
    Whole,
    /// The input struct is generated from the parameters, even from one.
    Params,
}

/// `description = ...`: a string literal, or a macro producing one
/// (`concat!`, `include_str!`), which the compiler evaluates.
pub enum Description {
    Literal(LitStr),
    Macro(syn::ExprMacro),
}

/// Everything the attribute says.
#[derive(Default)]
pub struct Attrs {
    pub id: Option<LitStr>,
    pub description: Option<Description>,
    /// A `description` key was written but rejected (malformed, or
    /// misspelled): its error already says what to fix, so a missing
    /// description is not reported on top of it.
    pub description_attempted: bool,
    pub title: Option<LitStr>,
    pub strict: Option<bool>,
    pub retry_safe: Option<bool>,
    pub transactional: Option<bool>,
    /// `reconcile = path`: the reconcile hook.
    pub reconcile: Option<Path>,
    pub approval: Option<Approval>,
    /// `require_approval(editable(...))`.
    pub editable: Option<Editable>,
    pub suspend: Option<Type>,
    pub resume: Option<Type>,
    pub request_context: Option<Type>,
    /// `workflow_state = Type`: the workflow state type.
    pub workflow_state: Option<Type>,
    pub to_model_output: Option<Path>,
    pub transform: Option<Path>,
    pub mcp: Option<Mcp>,
    pub provider_options: Option<Path>,
    pub input_examples: Option<Path>,
    pub background: Option<Background>,
    pub hooks: Hooks,
    pub warn_on_invalid_output: Option<bool>,
    /// `input = ...`, with the value as written (for spans).
    pub input: Option<(InputShape, Ident)>,
    pub krate: Option<Path>,
}

impl Attrs {
    pub fn input_shape(&self) -> Option<InputShape> {
        self.input.as_ref().map(|(shape, _)| *shape)
    }
}

pub fn parse(cx: &Ctxt, args: TokenStream) -> Attrs {
    let mut attrs = Attrs::default();
    let mut seen: Vec<String> = Vec::new();
    let parser = syn::meta::parser(|meta| {
        let key = key_name(&meta);
        if seen.contains(&key) {
            cx.error_spanned_by(
                &meta.path,
                format!("duplicate key `{key}` in #[tool]: each key is given once"),
            );
            return skip_entry(&meta);
        }
        seen.push(key.clone());
        if let Err(error) = parse_key(cx, &mut attrs, &key, &meta) {
            if key == "description" {
                attrs.description_attempted = true;
            }
            cx.syn_error(error);
            return skip_entry(&meta);
        }
        end_of_entry(cx, &meta, "#[tool] keys")
    });
    if let Err(error) = parser.parse2(args) {
        cx.syn_error(error);
    }
    attrs
}

fn key_name(meta: &ParseNestedMeta<'_>) -> String {
    let path = &meta.path;
    path.get_ident().map_or_else(
        || quote::quote!(#path).to_string().replace(' ', ""),
        Ident::to_string,
    )
}

/// Consumes what is left of a rejected entry, up to the next `,`, so that
/// parsing goes on with the next key.
fn skip_entry(meta: &ParseNestedMeta<'_>) -> syn::Result<()> {
    while !meta.input.is_empty() && !meta.input.peek(Token![,]) {
        meta.input.parse::<TokenTree>()?;
    }
    Ok(())
}

/// After a well-formed value: anything but `,` or the end is a mistake
/// (`id = "a" "b"`, `strict(true)`); report it and skip to the next entry.
fn end_of_entry(cx: &Ctxt, meta: &ParseNestedMeta<'_>, what: &str) -> syn::Result<()> {
    if meta.input.is_empty() || meta.input.peek(Token![,]) {
        return Ok(());
    }
    let rest = meta.input.parse::<TokenTree>()?;
    cx.error_spanned_by(
        &rest,
        format!("unexpected `{rest}`: {what} are separated by `,`"),
    );
    skip_entry(meta)
}

/// Replaces a parser's generic message ("expected string literal") with
/// one that names the key and shows its form.
fn expecting<T>(result: syn::Result<T>, key: &str, form: &str) -> syn::Result<T> {
    result.map_err(|error| syn::Error::new(error.span(), format!("`{key}` takes {form}")))
}

fn string_value(meta: &ParseNestedMeta<'_>, key: &str, example: &str) -> syn::Result<LitStr> {
    expecting(
        meta.value().and_then(|input| input.parse::<LitStr>()),
        key,
        &format!("a string literal: `{key} = \"{example}\"`"),
    )
}

fn type_value(meta: &ParseNestedMeta<'_>, key: &str) -> syn::Result<Type> {
    expecting(
        meta.value().and_then(|input| input.parse::<Type>()),
        key,
        &format!("a type: `{key} = MyType`"),
    )
}

fn path_value(meta: &ParseNestedMeta<'_>, key: &str, signature: &str) -> syn::Result<Path> {
    expecting(
        meta.value().and_then(|input| input.parse::<Path>()),
        key,
        &format!("the path of a function {signature}: `{key} = my_fn`"),
    )
}

fn parse_key(
    cx: &Ctxt,
    attrs: &mut Attrs,
    key: &str,
    meta: &ParseNestedMeta<'_>,
) -> syn::Result<()> {
    let span = meta
        .path
        .get_ident()
        .map_or_else(Span::call_site, Ident::span);
    match key {
        "id" => attrs.id = Some(string_value(meta, key, "get-weather")?),
        "description" => {
            attrs.description = Some(
                match expecting(
                    meta.value().and_then(|input| input.parse::<Expr>()),
                    key,
                    DESCRIPTION_FORM,
                )? {
                    Expr::Lit(ExprLit {
                        lit: Lit::Str(lit), ..
                    }) => Description::Literal(lit),
                    Expr::Macro(mac) => Description::Macro(mac),
                    other => {
                        return Err(syn::Error::new_spanned(
                            other,
                            format!("`description` takes {DESCRIPTION_FORM}"),
                        ));
                    }
                },
            );
        }
        "title" => attrs.title = Some(string_value(meta, key, "Weather Lookup")?),
        "strict" => attrs.strict = Some(flag(meta, key)?),
        "retry_safe" => attrs.retry_safe = Some(flag(meta, key)?),
        "transactional" => attrs.transactional = Some(flag(meta, key)?),
        "reconcile" => {
            attrs.reconcile = Some(path_value(
                meta,
                key,
                "`async fn(Input, IdempotencyKey, ToolContext) -> Result<Reconciled<Output>, Error>`",
            )?);
        }
        "require_approval" => {
            let value = if meta.input.peek(Token![=]) {
                let input = meta.value()?;
                if input.peek(LitBool) {
                    Approval::Always(input.parse::<LitBool>()?.value)
                } else {
                    Approval::Policy(expecting(
                        input.parse(),
                        key,
                        "no value, `true`/`false`, or the path of a `fn(&Input, &RequestContext) -> bool`: `require_approval = needs_approval`",
                    )?)
                }
            } else if meta.input.peek(syn::token::Paren) {
                let (policy, editable) = parse_approval(cx, meta)?;
                attrs.editable = editable;
                policy.map_or(Approval::Always(true), Approval::Policy)
            } else {
                Approval::Always(true)
            };
            attrs.approval = Some(value);
        }
        "suspend" => attrs.suspend = Some(type_value(meta, key)?),
        "resume" => attrs.resume = Some(type_value(meta, key)?),
        "request_context" => attrs.request_context = Some(type_value(meta, key)?),
        "workflow_state" => attrs.workflow_state = Some(type_value(meta, key)?),
        "to_model_output" => {
            attrs.to_model_output = Some(path_value(meta, key, "`fn(&Output) -> ModelOutput`")?);
        }
        "transform" => attrs.transform = Some(path_value(meta, key, "`fn() -> ToolTransform`")?),
        "provider_options" => {
            attrs.provider_options = Some(path_value(meta, key, "returning a JSON object")?);
        }
        "input_examples" => {
            attrs.input_examples = Some(path_value(meta, key, "returning a list of inputs")?);
        }
        "on_input_start" | "on_input_delta" | "on_input_available" | "on_output" => {
            let path = path_value(meta, key, "(a lifecycle hook)")?;
            let slot = match key {
                "on_input_start" => &mut attrs.hooks.on_input_start,
                "on_input_delta" => &mut attrs.hooks.on_input_delta,
                "on_input_available" => &mut attrs.hooks.on_input_available,
                _ => &mut attrs.hooks.on_output,
            };
            *slot = Some(path);
        }
        "crate" => {
            attrs.krate = Some(expecting(
                meta.value().and_then(|input| input.parse::<Path>()),
                key,
                "the path tool-core is reachable at: `crate = ::tool_core`",
            )?);
        }
        "output_validation" => {
            let mode = string_value(meta, key, "warn")?;
            match mode.value().as_str() {
                "strict" => attrs.warn_on_invalid_output = Some(false),
                "warn" => attrs.warn_on_invalid_output = Some(true),
                other => cx.error_spanned_by(
                    &mode,
                    format!("unknown output_validation {other:?}: expected \"strict\" (invalid output fails the call) or \"warn\" (it is logged and returned)"),
                ),
            }
        }
        "input" => {
            let value = expecting(
                meta.value().and_then(|input| input.parse::<Ident>()),
                key,
                "`whole` or `params`: `input = params`",
            )?;
            let shape = match value.to_string().as_str() {
                "whole" => InputShape::Whole,
                "params" => InputShape::Params,
                other => {
                    cx.error_spanned_by(
                        &value,
                        format!("unknown input shape `{other}`: expected `whole` (the one parameter's type is the whole input) or `params` (the input struct is generated from the parameters, even from one)"),
                    );
                    return Ok(());
                }
            };
            attrs.input = Some((shape, value));
        }
        "mcp" => attrs.mcp = Some(parse_mcp(cx, meta)?),
        "background" => attrs.background = Some(parse_background(cx, meta, span)?),
        _ => {
            if suggest(key, KEYS) == Some("description") {
                attrs.description_attempted = true;
            }
            cx.error_spanned_by(&meta.path, unknown_key_message(key));
            return skip_entry(meta);
        }
    }
    Ok(())
}

/// "unknown key" with the likely intended key, then the valid ones.
fn unknown_key_message(key: &str) -> String {
    let hint = if MCP_KEYS.contains(&key) && !KEYS.contains(&key) {
        format!(": MCP annotations go inside `mcp(...)`: `mcp({key})`")
    } else if key == "editable" {
        ": editable fields go inside `require_approval(...)`: `require_approval(editable(amount, memo))`".to_owned()
    } else if key == "policy" {
        ": an approval policy goes inside `require_approval(...)`: `require_approval(policy = my_policy)`, or `require_approval = my_policy`".to_owned()
    } else if BACKGROUND_KEYS.contains(&key) {
        format!(": background settings go inside `background(...)`: `background({key} = ...)`")
    } else if let Some(nested) = suggest(key, MCP_KEYS).filter(|s| !KEYS.contains(s)) {
        format!(": did you mean `mcp({nested})`?")
    } else {
        match key.to_snake_case().as_str() {
            "input_schema" | "parameters" | "schema" => {
                ": the input schema is derived from the function's parameters".to_owned()
            }
            "output_schema" => ": the output schema is derived from the return type".to_owned(),
            "name" => ": did you mean `id`? (it defaults to the function name)".to_owned(),
            "state" => ": the workflow's state is `workflow_state = Type`; application state (a pool, a client) is a `State<T>` parameter".to_owned(),
            _ => suggest(key, KEYS).map_or_else(String::new, |s| format!(": did you mean `{s}`?")),
        }
    };
    format!(
        "unknown key `{key}` in #[tool]{hint}\nvalid keys are: {}",
        KEYS.join(", ")
    )
}

/// The entry of `valid` closest to `key`: the same in snake case (Mastra's
/// `requireApproval`), or within a small edit distance.
pub fn suggest<'a>(key: &str, valid: &[&'a str]) -> Option<&'a str> {
    let snake = key.to_snake_case();
    if let Some(exact) = valid.iter().find(|v| **v == snake) {
        return Some(exact);
    }
    if snake.len() >= 4
        && let Some(longer) = valid.iter().find(|v| v.starts_with(snake.as_str()))
    {
        return Some(longer);
    }
    let limit = (key.len() / 3).clamp(1, 3);
    valid
        .iter()
        .map(|v| (edit_distance(&snake, v), *v))
        .filter(|(distance, _)| *distance <= limit)
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, v)| v)
}

/// Levenshtein distance, counting a swap of neighbours as one edit.
fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut rows = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in rows.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in rows[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (rows[i - 1][j] + 1)
                .min(rows[i][j - 1] + 1)
                .min(rows[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(rows[i - 2][j - 2] + 1);
            }
            rows[i][j] = best;
        }
    }
    rows[a.len()][b.len()]
}

/// `key` alone means true; `key = true|false` is explicit.
fn flag(meta: &ParseNestedMeta<'_>, key: &str) -> syn::Result<bool> {
    if meta.input.peek(Token![=]) {
        expecting(
            meta.value().and_then(|input| input.parse::<LitBool>()),
            key,
            &format!("no value or a boolean: `{key}` or `{key} = false`"),
        )
        .map(|lit| lit.value)
    } else if meta.input.peek(syn::token::Paren) {
        Err(meta.error(format!(
            "`{key}` is a flag: write `{key}` or `{key} = false`"
        )))
    } else {
        Ok(true)
    }
}

/// How a nested list such as `mcp(...)` names itself in messages.
struct List {
    /// `mcp(...)`.
    name: &'static str,
    /// `annotation`: what one entry is.
    entry: &'static str,
    /// `each annotation is given once`.
    once: &'static str,
    /// `mcp(...) entries`, for the separator check.
    entries: &'static str,
    keys: &'static [&'static str],
}

const MCP_LIST: List = List {
    name: "mcp(...)",
    entry: "mcp annotation",
    once: "each annotation is given once",
    entries: "mcp(...) entries",
    keys: MCP_KEYS,
};

const APPROVAL_LIST: List = List {
    name: "require_approval(...)",
    entry: "require_approval entry",
    once: "each entry is given once",
    entries: "require_approval(...) entries",
    keys: APPROVAL_KEYS,
};

const BACKGROUND_LIST: List = List {
    name: "background(...)",
    entry: "background setting",
    once: "each setting is given once",
    entries: "background(...) settings",
    keys: BACKGROUND_KEYS,
};

/// Parses the entries of a nested list with `entry`, which returns false for
/// a key it does not know. Duplicate and unknown keys are recorded (with a
/// suggestion), a malformed entry is recorded and skipped, and parsing goes
/// on, so every mistake in the list is reported.
fn parse_list(
    cx: &Ctxt,
    meta: &ParseNestedMeta<'_>,
    list: &List,
    mut entry: impl FnMut(&ParseNestedMeta<'_>, &str) -> syn::Result<bool>,
) -> syn::Result<()> {
    let mut seen: Vec<String> = Vec::new();
    meta.parse_nested_meta(|inner| {
        let key = key_name(&inner);
        if seen.contains(&key) {
            cx.error_spanned_by(
                &inner.path,
                format!("duplicate key `{key}` in {}: {}", list.name, list.once),
            );
            return skip_entry(&inner);
        }
        seen.push(key.clone());
        match entry(&inner, &key) {
            Ok(true) => end_of_entry(cx, &inner, list.entries),
            Ok(false) => {
                let hint = suggest(&key, list.keys)
                    .map_or_else(String::new, |s| format!(": did you mean `{s}`?"));
                cx.error_spanned_by(
                    &inner.path,
                    format!(
                        "unknown {} `{key}`{hint}\nvalid entries are: {}",
                        list.entry,
                        list.keys.join(", ")
                    ),
                );
                skip_entry(&inner)
            }
            Err(error) => {
                cx.syn_error(error);
                skip_entry(&inner)
            }
        }
    })
}

fn parse_mcp(cx: &Ctxt, meta: &ParseNestedMeta<'_>) -> syn::Result<Mcp> {
    if !meta.input.peek(syn::token::Paren) {
        return Err(meta.error(
            "`mcp` takes a list of annotations: `mcp(title = \"...\", read_only, idempotent)`",
        ));
    }
    let mut mcp = Mcp::default();
    parse_list(cx, meta, &MCP_LIST, |inner, key| {
        match key {
            "title" => mcp.title = Some(string_value(inner, "title", "Weather Lookup")?),
            "read_only" => mcp.read_only = Some(flag(inner, key)?),
            "destructive" => mcp.destructive = Some(flag(inner, key)?),
            "idempotent" => mcp.idempotent = Some(flag(inner, key)?),
            "open_world" => mcp.open_world = Some(flag(inner, key)?),
            "meta" => mcp.meta = Some(path_value(inner, "meta", "returning a JSON object")?),
            "task_required" => {
                mcp.task_required = Some((flag(inner, key)?, inner.path.span()));
            }
            _ => return Ok(false),
        }
        Ok(true)
    })?;
    Ok(mcp)
}

/// `require_approval(policy = path, editable(a, b))`, either entry optional
/// but not both: the policy, and the editable fields.
fn parse_approval(
    cx: &Ctxt,
    meta: &ParseNestedMeta<'_>,
) -> syn::Result<(Option<Path>, Option<Editable>)> {
    let content;
    syn::parenthesized!(content in meta.input.fork());
    if content.is_empty() {
        return Err(syn::Error::new(
            meta.path.span(),
            "`require_approval(...)` lists `policy = path` and/or `editable(field, ...)`; for approval of every call, write `require_approval`",
        ));
    }
    let mut policy = None;
    let mut editable = None;
    parse_list(cx, meta, &APPROVAL_LIST, |inner, key| {
        match key {
            "policy" => {
                policy = Some(path_value(
                    inner,
                    key,
                    "`fn(&Input, &RequestContext) -> bool`",
                )?);
            }
            "editable" => editable = Some(parse_editable(inner)?),
            _ => return Ok(false),
        }
        Ok(true)
    })?;
    Ok((policy, editable))
}

/// The names of `editable(...)`, at least one.
fn parse_editable(meta: &ParseNestedMeta<'_>) -> syn::Result<Editable> {
    if !meta.input.peek(syn::token::Paren) {
        return Err(meta.error(EDITABLE_FORM));
    }
    let content;
    syn::parenthesized!(content in meta.input);
    let fields = content.parse_terminated(editable_field, Token![,])?;
    if fields.is_empty() {
        return Err(syn::Error::new(meta.path.span(), EDITABLE_FORM));
    }
    Ok(Editable {
        fields: fields.into_iter().collect(),
    })
}

/// One name of `editable(...)`: an identifier (a keyword too, or a raw
/// one) or a string literal.
fn editable_field(input: ParseStream<'_>) -> syn::Result<EditableField> {
    if input.peek(LitStr) {
        let name: LitStr = input.parse()?;
        return Ok(EditableField {
            name: name.value(),
            span: name.span(),
        });
    }
    let name =
        Ident::parse_any(input).map_err(|error| syn::Error::new(error.span(), EDITABLE_FORM))?;
    Ok(EditableField {
        name: name.unraw().to_string(),
        span: name.span(),
    })
}

fn parse_background(cx: &Ctxt, meta: &ParseNestedMeta<'_>, span: Span) -> syn::Result<Background> {
    let mut background = Background {
        span,
        enabled: true,
        foreground: false,
        timeout_ms: None,
        max_retries: 0,
    };
    if meta.input.peek(Token![=]) {
        return Err(meta.error(
            "`background` takes no value or a list of settings: `background` or `background(timeout_ms = 30_000, max_retries = 2)`",
        ));
    }
    if !meta.input.peek(syn::token::Paren) {
        return Ok(background);
    }
    parse_list(cx, meta, &BACKGROUND_LIST, |inner, key| {
        match key {
            "enabled" => background.enabled = flag(inner, key)?,
            "disposition" => {
                let lit = string_value(inner, "disposition", "foreground")?;
                match lit.value().as_str() {
                    "deferred" => background.foreground = false,
                    "foreground" => background.foreground = true,
                    other => cx.error_spanned_by(
                        &lit,
                        format!("unknown disposition {other:?}: expected \"deferred\" (the call returns a task id at once) or \"foreground\" (the caller waits for the result)"),
                    ),
                }
            }
            "timeout_ms" => background.timeout_ms = Some(int(inner, key, "30_000")?),
            "max_retries" => background.max_retries = int(inner, key, "2")?,
            _ => return Ok(false),
        }
        Ok(true)
    })?;
    Ok(background)
}

fn int<N: std::str::FromStr>(meta: &ParseNestedMeta<'_>, key: &str, example: &str) -> syn::Result<N>
where
    N::Err: std::fmt::Display,
{
    let input: ParseStream<'_> = meta.value()?;
    let lit = expecting(
        input.parse::<LitInt>(),
        key,
        &format!("an integer literal: `{key} = {example}`"),
    )?;
    lit.base10_parse()
        .map_err(|error| syn::Error::new(lit.span(), format!("`{key}`: {error}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggestions() {
        assert_eq!(suggest("descripton", KEYS), Some("description"));
        assert_eq!(suggest("requireApproval", KEYS), Some("require_approval"));
        assert_eq!(suggest("toModelOutput", KEYS), Some("to_model_output"));
        assert_eq!(suggest("stirct", KEYS), Some("strict"));
        assert_eq!(suggest("read_olny", MCP_KEYS), Some("read_only"));
        assert_eq!(suggest("readonly", MCP_KEYS), Some("read_only"));
        assert_eq!(suggest("readOnly", MCP_KEYS), Some("read_only"));
        assert_eq!(suggest("timeout", BACKGROUND_KEYS), Some("timeout_ms"));
        assert_eq!(suggest("banana", KEYS), None);
        assert_eq!(suggest("x", KEYS), None);
    }

    #[test]
    fn unknown_keys_point_inside_nested_lists() {
        assert!(unknown_key_message("read_only").contains("`mcp(read_only)`"));
        assert!(unknown_key_message("read_olny").contains("`mcp(read_only)`"));
        assert!(unknown_key_message("timeout_ms").contains("background(timeout_ms = ...)"));
        assert!(
            unknown_key_message("inputSchema").contains("derived from the function's parameters")
        );
        assert!(unknown_key_message("descripton").contains("did you mean `description`?"));
        assert!(
            unknown_key_message("editable").contains("`require_approval(editable(amount, memo))`")
        );
        assert!(unknown_key_message("policy").contains("`require_approval(policy = my_policy)`"));
    }
}
