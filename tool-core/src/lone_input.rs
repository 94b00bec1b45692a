//! The input of a `#[tool]` function with one parameter: the whole input
//! when the parameter's JSON Schema is an object with named properties (a
//! struct, a newtype of one), or else the one property of the generated
//! struct (an enum, a `Vec`, a map, a scalar, an alias of any of these).
//! Providers and MCP take an object as a tool's input, and the macro cannot
//! tell an enum from a struct by its name, so the schema decides, once per
//! tool. Used by generated code through `__private`.
//!
//! Everything goes through the generated struct `P` (`{ <name>: T }`), whose
//! derives carry the spanned checks of the parameter's traits: nothing here
//! bounds `T` itself, so a missing trait is reported once, on the type.

use std::borrow::Cow;
use std::sync::OnceLock;

use serde::de::value::BorrowedStrDeserializer;
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, Visitor};
use serde_json::Value;

use crate::RequestContext;
use crate::approval::{ApprovalPolicyReturn, PolicyAnswer};

/// The generated input struct of a `#[tool]` function with one parameter,
/// which holds the parameter's value under its name.
pub trait LoneParam: Sized + 'static {
    /// The parameter's type.
    type Value;
    /// The name of the struct's one property (the parameter's).
    const NAME: &'static str;
    /// Where the tool keeps its decision, made on first use: one static per
    /// tool, since a generic function has no statics of its own.
    fn decision() -> &'static OnceLock<LoneShape>;
    /// The struct holding `value`.
    fn from_value(value: Self::Value) -> Self;
    /// The parameter's value.
    fn value(&self) -> &Self::Value;
}

/// The decided shape of a [`Lone`] input.
#[derive(Debug)]
pub struct LoneShape {
    /// Whether the parameter is the whole input.
    whole: bool,
    /// The input schema's title: the parameter type's name when whole, else
    /// the generated struct's.
    title: Cow<'static, str>,
}

/// The decision for `P`, made from the generated struct's schema: the
/// parameter is the whole input when its property's schema (after its
/// `$ref`) is an object with named properties.
fn shape<P: LoneParam + schemars::JsonSchema>() -> &'static LoneShape {
    P::decision().get_or_init(|| {
        let schema = crate::schema::schema_for::<P>().unwrap_or(Value::Null);
        let property = &schema["properties"][P::NAME];
        if !crate::schema::is_object_root(&schema, property) {
            return LoneShape {
                whole: false,
                title: P::schema_name(),
            };
        }
        let title = property
            .get("$ref")
            .and_then(Value::as_str)
            .and_then(|reference| crate::schema::parse_ref(reference).ok()?.pop())
            .map_or_else(P::schema_name, Cow::Owned);
        LoneShape { whole: true, title }
    })
}

/// The input of a tool with one parameter ([`LoneParam`]): the parameter's
/// value itself when it is the whole input, else `{"<name>": value}`. Its
/// schema and deserialization follow the decision.
#[derive(Debug)]
pub struct Lone<P>(pub P);

impl<'de, P> serde::Deserialize<'de> for Lone<P>
where
    P: LoneParam + schemars::JsonSchema + serde::Deserialize<'de>,
{
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        if shape::<P>().whole {
            // The generated struct, fed its one property: the parameter's
            // checks and `deserialize_with` stay the struct's, and error
            // paths stay relative to the value.
            P::deserialize(OneEntry {
                name: P::NAME,
                value: Some(deserializer),
            })
            .map(Lone)
        } else {
            P::deserialize(deserializer).map(Lone)
        }
    }
}

impl<P: LoneParam + schemars::JsonSchema> schemars::JsonSchema for Lone<P> {
    fn schema_name() -> Cow<'static, str> {
        shape::<P>().title.clone()
    }

    fn schema_id() -> Cow<'static, str> {
        P::schema_id()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let wrapped = P::json_schema(generator);
        if !shape::<P>().whole {
            return wrapped;
        }
        // The property's schema, a `$ref` to the parameter type's
        // definition, which the root schema then inlines. The parameter's
        // docs described the property; the whole input has the tool's.
        let mut property = wrapped
            .get("properties")
            .and_then(|properties| properties.get(P::NAME))
            .cloned()
            .unwrap_or(Value::Bool(true));
        if let Some(object) = property.as_object_mut() {
            object.remove("description");
        }
        schemars::Schema::try_from(property).unwrap_or_default()
    }
}

/// A deserializer of a one-entry map `{name: value}`, `value` being another
/// deserializer's.
struct OneEntry<D> {
    name: &'static str,
    value: Option<D>,
}

impl<'de, D: Deserializer<'de>> Deserializer<'de> for OneEntry<D> {
    type Error = D::Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        visitor.visit_map(OneEntryAccess {
            name: Some(self.name),
            value: self.value,
        })
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct map struct enum identifier ignored_any
    }
}

struct OneEntryAccess<D> {
    name: Option<&'static str>,
    value: Option<D>,
}

impl<'de, D: Deserializer<'de>> MapAccess<'de> for OneEntryAccess<D> {
    type Error = D::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, D::Error> {
        self.name
            .take()
            .map(|name| seed.deserialize(BorrowedStrDeserializer::new(name)))
            .transpose()
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, D::Error> {
        match self.value.take() {
            Some(value) => seed.deserialize(value),
            None => Err(de::Error::custom("the input's value was already read")),
        }
    }

    fn size_hint(&self) -> Option<usize> {
        Some(usize::from(self.name.is_some()))
    }
}

/// Marks an approval policy or input examples of a [`Lone`] tool written
/// against the generated input struct.
pub struct ByStruct;

/// Marks an approval policy or input examples of a [`Lone`] tool written
/// against the parameter's type.
pub struct ByValue;

/// An approval policy of a tool with one parameter ([`Lone`]): a function
/// of the parameter's value, or of the generated struct, that returns its
/// decision or a future of it (marker `(ByStruct | ByValue, Returns | Awaits)`).
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an approval policy of this tool",
    label = "expected `fn(&T, &RequestContext) -> bool`",
    note = "a tool with one parameter of type `T` takes `fn(&T, &RequestContext) -> bool` (or a function of the generated input struct, `fn(&XxxToolInput, &RequestContext) -> bool`); it may return `Result<bool, E>`, or a `Send + 'static` future of either"
)]
pub trait LonePolicy<P: LoneParam, M>: Send + Sync + 'static {
    /// Whether the call needs approval.
    fn requires_approval(&self, input: &P, request_context: &RequestContext) -> PolicyAnswer;
}

impl<P, F, R, A> LonePolicy<P, (ByStruct, A)> for F
where
    P: LoneParam,
    F: Fn(&P, &RequestContext) -> R + Send + Sync + 'static,
    R: ApprovalPolicyReturn<A>,
{
    fn requires_approval(&self, input: &P, request_context: &RequestContext) -> PolicyAnswer {
        self(input, request_context).into_answer()
    }
}

impl<P, F, R, A> LonePolicy<P, (ByValue, A)> for F
where
    P: LoneParam,
    F: Fn(&P::Value, &RequestContext) -> R + Send + Sync + 'static,
    R: ApprovalPolicyReturn<A>,
{
    fn requires_approval(&self, input: &P, request_context: &RequestContext) -> PolicyAnswer {
        self(input.value(), request_context).into_answer()
    }
}

/// Runs a typed approval policy (sync or async) over validated JSON input;
/// input that no longer fits the type needs approval.
pub fn typed_policy<I, R, A>(
    input: &Value,
    request_context: &RequestContext,
    policy: impl Fn(&I, &RequestContext) -> R,
) -> PolicyAnswer
where
    I: serde::de::DeserializeOwned,
    R: ApprovalPolicyReturn<A>,
{
    match I::deserialize(input) {
        Ok(input) => policy(&input, request_context).into_answer(),
        Err(_) => true.into_answer(),
    }
}

/// Runs a [`LonePolicy`] over validated JSON input, as [`typed_policy`].
pub fn lone_policy<P, M>(
    input: &Value,
    request_context: &RequestContext,
    policy: &impl LonePolicy<P, M>,
) -> PolicyAnswer
where
    P: LoneParam + schemars::JsonSchema + serde::de::DeserializeOwned,
{
    match <Lone<P> as serde::Deserialize>::deserialize(input) {
        Ok(Lone(input)) => policy.requires_approval(&input, request_context),
        Err(_) => true.into_answer(),
    }
}

/// The input examples of a tool with one parameter ([`Lone`]): values of
/// the parameter's type, or of the generated struct.
#[diagnostic::on_unimplemented(
    message = "`{Self}` are not input examples of this tool",
    label = "expected `Vec<T>`",
    note = "a tool with one parameter of type `T` takes `fn() -> Vec<T>` (or `fn() -> Vec<XxxToolInput>`, of the generated input struct)"
)]
pub trait LoneExamples<P: LoneParam, M> {
    /// The examples, as the generated struct.
    fn into_structs(self) -> Vec<P>;
}

impl<P: LoneParam> LoneExamples<P, ByStruct> for Vec<P> {
    fn into_structs(self) -> Vec<P> {
        self
    }
}

impl<P: LoneParam> LoneExamples<P, ByValue> for Vec<P::Value> {
    fn into_structs(self) -> Vec<P> {
        self.into_iter().map(P::from_value).collect()
    }
}

/// Serializes an input example; one that cannot be serialized becomes `null`.
pub fn example_to_value<T: serde::Serialize>(example: &T) -> Value {
    serde_json::to_value(example).unwrap_or(Value::Null)
}

/// Input examples of a [`Lone`] tool, in the input's decided shape.
pub fn lone_examples<P, M>(examples: impl LoneExamples<P, M>) -> Vec<Value>
where
    P: LoneParam + schemars::JsonSchema + serde::Serialize,
{
    let whole = shape::<P>().whole;
    examples
        .into_structs()
        .iter()
        .map(|example| match example_to_value(example) {
            Value::Object(mut object) if whole => object.remove(P::NAME).unwrap_or(Value::Null),
            other => other,
        })
        .collect()
}
