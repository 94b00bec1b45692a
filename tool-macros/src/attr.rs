//! Parsing of the attribute's arguments, `#[tool(key = value, ...)]`, into
//! [`Attrs`]. Unknown, duplicate and malformed keys are recorded and parsing
//! goes on, so every mistake is reported.

use proc_macro2::{Span, TokenStream};
use syn::meta::ParseNestedMeta;
use syn::parse::{ParseStream, Parser};
use syn::{Ident, LitBool, LitInt, LitStr, Path, Token, Type};

use crate::ctxt::Ctxt;

pub const KEYS: &[&str] = &[
    "id",
    "description",
    "title",
    "strict",
    "require_approval",
    "suspend",
    "resume",
    "request_context",
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
    "crate",
];

const MCP_KEYS: &[&str] = &[
    "title",
    "read_only",
    "destructive",
    "idempotent",
    "open_world",
    "meta",
];

const BACKGROUND_KEYS: &[&str] = &["enabled", "disposition", "timeout_ms", "max_retries"];

pub enum Approval {
    Always(bool),
    Policy(Path),
}

#[derive(Default)]
pub struct Mcp {
    pub title: Option<LitStr>,
    pub read_only: Option<bool>,
    pub destructive: Option<bool>,
    pub idempotent: Option<bool>,
    pub open_world: Option<bool>,
    pub meta: Option<Path>,
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

/// Everything the attribute says.
#[derive(Default)]
pub struct Attrs {
    pub id: Option<LitStr>,
    pub description: Option<LitStr>,
    pub title: Option<LitStr>,
    pub strict: Option<bool>,
    pub approval: Option<Approval>,
    pub suspend: Option<Type>,
    pub resume: Option<Type>,
    pub request_context: Option<Type>,
    pub to_model_output: Option<Path>,
    pub transform: Option<Path>,
    pub mcp: Option<Mcp>,
    pub provider_options: Option<Path>,
    pub input_examples: Option<Path>,
    pub background: Option<Background>,
    pub hooks: Hooks,
    pub warn_on_invalid_output: Option<bool>,
    pub krate: Option<Path>,
}

pub fn parse(cx: &Ctxt, args: TokenStream) -> Attrs {
    let mut attrs = Attrs::default();
    let mut seen: Vec<String> = Vec::new();
    let parser = syn::meta::parser(|meta| {
        let key = key_name(&meta);
        if seen.contains(&key) {
            cx.error_spanned_by(&meta.path, format!("duplicate key `{key}` in #[tool]"));
            return skip_value(&meta);
        }
        seen.push(key.clone());
        parse_key(cx, &mut attrs, &key, &meta)
    });
    if let Err(error) = parser.parse2(args) {
        cx.syn_error(error);
    }
    attrs
}

fn key_name(meta: &ParseNestedMeta<'_>) -> String {
    let path = &meta.path;
    path.get_ident()
        .map_or_else(|| quote::quote!(#path).to_string(), Ident::to_string)
}

/// Consumes `= value` or `(...)` after a key that was already rejected.
fn skip_value(meta: &ParseNestedMeta<'_>) -> syn::Result<()> {
    if meta.input.peek(Token![=]) {
        meta.value()?.parse::<syn::Expr>()?;
    } else if meta.input.peek(syn::token::Paren) {
        meta.parse_nested_meta(|inner| skip_value(&inner))?;
    }
    Ok(())
}

fn parse_key(cx: &Ctxt, attrs: &mut Attrs, key: &str, meta: &ParseNestedMeta<'_>) -> syn::Result<()> {
    let span = meta.path.get_ident().map_or_else(Span::call_site, Ident::span);
    match key {
        "id" => attrs.id = Some(meta.value()?.parse()?),
        "description" => attrs.description = Some(meta.value()?.parse()?),
        "title" => attrs.title = Some(meta.value()?.parse()?),
        "strict" => attrs.strict = Some(flag(meta)?),
        "require_approval" => {
            let value = if meta.input.peek(Token![=]) {
                let input = meta.value()?;
                if input.peek(LitBool) {
                    Approval::Always(input.parse::<LitBool>()?.value)
                } else {
                    Approval::Policy(input.parse()?)
                }
            } else {
                Approval::Always(true)
            };
            attrs.approval = Some(value);
        }
        "suspend" => attrs.suspend = Some(meta.value()?.parse()?),
        "resume" => attrs.resume = Some(meta.value()?.parse()?),
        "request_context" => attrs.request_context = Some(meta.value()?.parse()?),
        "to_model_output" => attrs.to_model_output = Some(meta.value()?.parse()?),
        "transform" => attrs.transform = Some(meta.value()?.parse()?),
        "provider_options" => attrs.provider_options = Some(meta.value()?.parse()?),
        "input_examples" => attrs.input_examples = Some(meta.value()?.parse()?),
        "on_input_start" => attrs.hooks.on_input_start = Some(meta.value()?.parse()?),
        "on_input_delta" => attrs.hooks.on_input_delta = Some(meta.value()?.parse()?),
        "on_input_available" => attrs.hooks.on_input_available = Some(meta.value()?.parse()?),
        "on_output" => attrs.hooks.on_output = Some(meta.value()?.parse()?),
        "crate" => attrs.krate = Some(meta.value()?.parse()?),
        "output_validation" => {
            let mode: LitStr = meta.value()?.parse()?;
            match mode.value().as_str() {
                "strict" => attrs.warn_on_invalid_output = Some(false),
                "warn" => attrs.warn_on_invalid_output = Some(true),
                other => cx.error_spanned_by(
                    &mode,
                    format!("unknown output_validation {other:?}: expected \"strict\" or \"warn\""),
                ),
            }
        }
        "mcp" => attrs.mcp = Some(parse_mcp(cx, meta)?),
        "background" => attrs.background = Some(parse_background(cx, meta, span)?),
        _ => {
            cx.error_spanned_by(
                &meta.path,
                format!(
                    "unknown key `{key}` in #[tool]; valid keys are: {}",
                    KEYS.join(", ")
                ),
            );
            return skip_value(meta);
        }
    }
    Ok(())
}

/// `key` alone means true; `key = true|false` is explicit.
fn flag(meta: &ParseNestedMeta<'_>) -> syn::Result<bool> {
    if meta.input.peek(Token![=]) {
        Ok(meta.value()?.parse::<LitBool>()?.value)
    } else {
        Ok(true)
    }
}

fn parse_mcp(cx: &Ctxt, meta: &ParseNestedMeta<'_>) -> syn::Result<Mcp> {
    let mut mcp = Mcp::default();
    let mut seen: Vec<String> = Vec::new();
    meta.parse_nested_meta(|inner| {
        let key = key_name(&inner);
        if seen.contains(&key) {
            cx.error_spanned_by(&inner.path, format!("duplicate key `{key}` in mcp(...)"));
            return skip_value(&inner);
        }
        seen.push(key.clone());
        match key.as_str() {
            "title" => mcp.title = Some(inner.value()?.parse()?),
            "read_only" => mcp.read_only = Some(flag(&inner)?),
            "destructive" => mcp.destructive = Some(flag(&inner)?),
            "idempotent" => mcp.idempotent = Some(flag(&inner)?),
            "open_world" => mcp.open_world = Some(flag(&inner)?),
            "meta" => mcp.meta = Some(inner.value()?.parse()?),
            _ => {
                cx.error_spanned_by(
                    &inner.path,
                    format!(
                        "unknown mcp annotation `{key}`; valid entries are: {}",
                        MCP_KEYS.join(", ")
                    ),
                );
                return skip_value(&inner);
            }
        }
        Ok(())
    })?;
    Ok(mcp)
}

fn parse_background(cx: &Ctxt, meta: &ParseNestedMeta<'_>, span: Span) -> syn::Result<Background> {
    let mut background = Background {
        span,
        enabled: true,
        foreground: false,
        timeout_ms: None,
        max_retries: 0,
    };
    if !meta.input.peek(syn::token::Paren) {
        return Ok(background);
    }
    let mut seen: Vec<String> = Vec::new();
    meta.parse_nested_meta(|inner| {
        let key = key_name(&inner);
        if seen.contains(&key) {
            cx.error_spanned_by(&inner.path, format!("duplicate key `{key}` in background(...)"));
            return skip_value(&inner);
        }
        seen.push(key.clone());
        match key.as_str() {
            "enabled" => background.enabled = flag(&inner)?,
            "disposition" => {
                let lit: LitStr = inner.value()?.parse()?;
                match lit.value().as_str() {
                    "deferred" => background.foreground = false,
                    "foreground" => background.foreground = true,
                    other => cx.error_spanned_by(
                        &lit,
                        format!("unknown disposition {other:?}: expected \"deferred\" or \"foreground\""),
                    ),
                }
            }
            "timeout_ms" => background.timeout_ms = Some(int(&inner)?),
            "max_retries" => background.max_retries = int(&inner)?,
            _ => {
                cx.error_spanned_by(
                    &inner.path,
                    format!(
                        "unknown background setting `{key}`; valid entries are: {}",
                        BACKGROUND_KEYS.join(", ")
                    ),
                );
                return skip_value(&inner);
            }
        }
        Ok(())
    })?;
    Ok(background)
}

fn int<N: std::str::FromStr>(meta: &ParseNestedMeta<'_>) -> syn::Result<N>
where
    N::Err: std::fmt::Display,
{
    let input: ParseStream<'_> = meta.value()?;
    input.parse::<LitInt>()?.base10_parse()
}
