//! The input of a `#[tool]` function with one parameter: the whole input
//! when the parameter's JSON Schema is an object with named properties (a
//! struct, a newtype of one), or else the one property of the generated
//! struct (an enum, a `Vec`, a map, a scalar, an alias of any of these).
//! Providers and MCP take an object as a tool's input, and the macro cannot
//! tell an enum from a struct by its name, so the schema decides, once per
//! tool. Used by generated code through `__private`.
//!
//! The generated struct `P` (`{ <name>: T }`) derives nothing: its schema
//! and deserialization are written here once, generic over [`LoneParam`],
//! rather than derived for every tool. The generated impl reaches `T`'s
//! traits through two functions whose bounds carry the messages, spanned on
//! the parameter's type, so a missing trait is reported once, there.

use std::any::type_name;
use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;
use std::sync::OnceLock;

use schemars::JsonSchema;
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};
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
    /// The parameter's doc comment, lines joined as schemars joins them:
    /// the property's description.
    const DOC: &'static str;
    /// Whether the parameter is an `Option` (by its name), a property that
    /// may be left out.
    const OPTIONAL: bool;
    /// Where the tool keeps its decision, made on first use: one static per
    /// tool, since a generic function has no statics of its own.
    fn decision() -> &'static OnceLock<LoneShape>;
    /// The parameter's value, deserialized (`deserialize_param`).
    fn deserialize_value<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Self::Value, D::Error>;
    /// The parameter type's schema (`param_schema`).
    fn value_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema;
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
fn shape<P: LoneParam>() -> &'static LoneShape {
    P::decision().get_or_init(|| {
        let schema = crate::schema::schema_for::<Struct<P>>().unwrap_or(Value::Null);
        let property = &schema["properties"][P::NAME];
        if !crate::schema::is_object_root(&schema, property) {
            return LoneShape {
                whole: false,
                title: Struct::<P>::schema_name(),
            };
        }
        let title = property
            .get("$ref")
            .and_then(Value::as_str)
            .and_then(|reference| crate::schema::parse_ref(reference).ok()?.pop())
            .map_or_else(Struct::<P>::schema_name, Cow::Owned);
        LoneShape { whole: true, title }
    })
}

/// The generated struct's name (`XxxToolInput`).
fn struct_name<P>() -> &'static str {
    let path = type_name::<P>();
    path.rsplit("::").next().unwrap_or(path)
}

/// The generated struct as a JSON Schema, `{"<name>": value}`: what
/// schemars' derive made of it (the property's title and description from
/// the parameter's docs, an `Option` not required and defaulting to null).
struct Struct<P>(PhantomData<P>);

impl<P: LoneParam> JsonSchema for Struct<P> {
    fn schema_name() -> Cow<'static, str> {
        Cow::Borrowed(struct_name::<P>())
    }

    fn schema_id() -> Cow<'static, str> {
        Cow::Borrowed(type_name::<P>())
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let mut property = P::value_schema(generator);
        let (title, description) = schemars::_private::get_title_and_description(P::DOC);
        schemars::_private::insert_metadata_property_if_nonempty(&mut property, "title", title);
        schemars::_private::insert_metadata_property_if_nonempty(
            &mut property,
            "description",
            description,
        );
        if P::OPTIONAL {
            property.insert("default".into(), Value::Null);
        }
        let mut schema = schemars::json_schema!({ "type": "object" });
        let optional = P::OPTIONAL && generator.contract().is_deserialize();
        schemars::_private::insert_object_property(&mut schema, P::NAME, optional, property);
        schema
    }
}

/// The input of a tool with one parameter ([`LoneParam`]): the parameter's
/// value itself when it is the whole input, else `{"<name>": value}`. Its
/// schema and deserialization follow the decision.
#[derive(Debug)]
pub struct Lone<P>(pub P);

impl<'de, P: LoneParam> serde::Deserialize<'de> for Lone<P> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        if shape::<P>().whole {
            // Error paths stay relative to the value.
            P::deserialize_value(deserializer).map(|value| Lone(P::from_value(value)))
        } else {
            deserializer
                .deserialize_struct(struct_name::<P>(), &[P::NAME], StructVisitor(PhantomData))
                .map(Lone)
        }
    }
}

impl<P: LoneParam> JsonSchema for Lone<P> {
    fn schema_name() -> Cow<'static, str> {
        shape::<P>().title.clone()
    }

    fn schema_id() -> Cow<'static, str> {
        Struct::<P>::schema_id()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let wrapped = Struct::<P>::json_schema(generator);
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

/// Deserializes the generated struct as serde's derive does: its one
/// property once, other keys ignored, a missing `Option` read as `None`.
/// Not from a sequence, which serde's derive also accepts: the input was
/// validated against its schema, an object, and every deserialization path
/// is one more copy of the parameter type's code per tool.
struct StructVisitor<P>(PhantomData<P>);

impl<'de, P: LoneParam> Visitor<'de> for StructVisitor<P> {
    type Value = P;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "struct {}", struct_name::<P>())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<P, A::Error> {
        let mut value = None;
        while let Some(ours) = map.next_key_seed(Key(P::NAME))? {
            if !ours {
                map.next_value::<IgnoredAny>()?;
            } else if value.is_some() {
                return Err(de::Error::duplicate_field(P::NAME));
            } else {
                value = Some(map.next_value_seed(ValueSeed::<P>(PhantomData))?);
            }
        }
        let value = match value {
            Some(value) => value,
            // A branch on a constant: a required parameter's function is
            // not instantiated once more for `Missing`.
            None if P::OPTIONAL => P::deserialize_value(Missing(P::NAME, PhantomData))?,
            None => return Err(de::Error::missing_field(P::NAME)),
        };
        Ok(P::from_value(value))
    }
}

/// The parameter's value, as a seed.
struct ValueSeed<P>(PhantomData<P>);

impl<'de, P: LoneParam> DeserializeSeed<'de> for ValueSeed<P> {
    type Value = P::Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<P::Value, D::Error> {
        P::deserialize_value(deserializer)
    }
}

/// A key of the generated struct: whether it is the property's (by name, or
/// by index as serde's derive also accepts).
struct Key(&'static str);

impl<'de> DeserializeSeed<'de> for Key {
    type Value = bool;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<bool, D::Error> {
        deserializer.deserialize_identifier(self)
    }
}

impl Visitor<'_> for Key {
    type Value = bool;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("field identifier")
    }

    fn visit_u64<E: de::Error>(self, index: u64) -> Result<bool, E> {
        Ok(index == 0)
    }

    fn visit_str<E: de::Error>(self, key: &str) -> Result<bool, E> {
        Ok(key == self.0)
    }

    fn visit_bytes<E: de::Error>(self, key: &[u8]) -> Result<bool, E> {
        Ok(key == self.0.as_bytes())
    }
}

/// The value of a property that is absent: `None` for an `Option`, else
/// serde's "missing field" error (what its derive does).
struct Missing<E>(&'static str, PhantomData<E>);

impl<'de, E: de::Error> Deserializer<'de> for Missing<E> {
    type Error = E;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, E> {
        Err(de::Error::missing_field(self.0))
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, E> {
        visitor.visit_none()
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf unit unit_struct newtype_struct seq tuple
        tuple_struct map struct enum identifier ignored_any
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
    P: LoneParam,
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
    P: LoneParam + serde::Serialize,
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
