//! A typed tool whose input is its function's one parameter
//! ([`TypedTool::INPUT_PARAMETER`]): the parameter's value is the whole input
//! when its JSON Schema is an object with named properties (a struct, a
//! newtype of one), or else the one property of an object `{"<name>": value}`
//! (an enum, a `Vec`, a map, a scalar, an alias of any of these). Providers
//! and MCP take an object as a tool's input, and `#[tool]` cannot tell an enum
//! from a struct by its name, so the schema decides, once per input type.
//!
//! Every typed path (execute, reconcile, approval policies, input hooks and
//! examples) reads the input through [`typed_input`](crate::tool), so a tool
//! deserializes its input one way, from the validated arguments.

use std::any::{TypeId, type_name};
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::marker::PhantomData;
use std::sync::{PoisonError, RwLock};

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer};
use serde_json::Value;

use crate::__private_0_1_0::{ParamDeserialize, ParamSchema, ParamSerialize};
use crate::RequestContext;
use crate::approval::{ApprovalPolicyReturn, PolicyAnswer};
use crate::schema::{is_object_root, schema_for};
use crate::tool::{TypedTool, typed_input};

/// The one parameter a [`TypedTool`]'s input is: its name, under which the
/// value is the input's one property when its schema is not an object, and
/// its docs, that property's title and description.
///
/// ```
/// use tool_core::{InputParameter, NoSuspend, Tool, ToolContext, ToolError, TypedTool};
///
/// struct TagsTool;
///
/// impl TypedTool for TagsTool {
///     type Input = Vec<String>;
///     type Output = usize;
///     type Suspend = NoSuspend;
///     type Resume = NoSuspend;
///     const ID: &'static str = "count-tags";
///     const DESCRIPTION: &'static str = "Counts tags";
///     const INPUT_PARAMETER: Option<InputParameter> =
///         Some(InputParameter::new("tags").docs("The tags to count"));
///
///     async fn execute(&self, tags: Vec<String>, _: ToolContext) -> Result<usize, ToolError> {
///         Ok(tags.len())
///     }
/// }
///
/// // A list is not an object: the model sends `{"tags": [...]}`.
/// let tool = Tool::from(TagsTool);
/// let schema = tool.definition().input_schema.clone();
/// assert_eq!(schema["required"], serde_json::json!(["tags"]));
/// assert_eq!(schema["properties"]["tags"]["description"], "The tags to count");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InputParameter {
    name: &'static str,
    docs: &'static str,
    optional: bool,
}

impl InputParameter {
    /// The parameter `name`, required and without docs.
    pub const fn new(name: &'static str) -> Self {
        Self {
            name,
            docs: "",
            optional: false,
        }
    }

    /// Its doc comment, lines joined by newlines as schemars joins them: a
    /// first paragraph on one line becomes the property's title, the rest
    /// its description (else all of it is the description).
    #[must_use]
    pub const fn docs(self, docs: &'static str) -> Self {
        Self { docs, ..self }
    }

    /// Whether the property may be left out (an `Option`, read as `None`).
    #[must_use]
    pub const fn optional(self, optional: bool) -> Self {
        Self { optional, ..self }
    }

    /// The parameter's name.
    pub const fn name(&self) -> &'static str {
        self.name
    }

    /// Whether the property may be left out.
    pub const fn is_optional(&self) -> bool {
        self.optional
    }
}

/// The parameter of `T` when its input is wrapped as `{"<name>": value}`;
/// `None` when the input is the value itself. Decided from the input type's
/// schema on first use, and remembered per type.
pub(crate) fn wrapping<T: TypedTool>() -> Option<InputParameter> {
    // One map for every tool: a generic function has no statics of its own.
    static WRAPS: RwLock<BTreeMap<TypeId, bool>> = RwLock::new(BTreeMap::new());
    let parameter = T::INPUT_PARAMETER?;
    let id = TypeId::of::<T::Input>();
    let known = WRAPS
        .read()
        .unwrap_or_else(PoisonError::into_inner)
        .get(&id)
        .copied();
    let wraps = known.unwrap_or_else(|| {
        let wraps =
            !schema_for::<T::Input>().is_some_and(|schema| is_object_root(&schema, &schema));
        WRAPS
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(id, wraps);
        wraps
    });
    wraps.then_some(parameter)
}

/// `T`'s input schema: the input type's, or the object that wraps it.
pub(crate) fn input_schema<T: TypedTool>() -> Option<Value> {
    match wrapping::<T>() {
        Some(_) => schema_for::<Wrapped<T>>(),
        None => schema_for::<T::Input>(),
    }
}

/// The object `{"<name>": value}` of a wrapped input, as a JSON Schema: what
/// schemars' derive makes of a struct with that one field (the property's
/// title and description from the parameter's docs, an optional one not
/// required and defaulting to null), titled after the tool (`XxxToolInput`).
struct Wrapped<T>(PhantomData<T>);

impl<T: TypedTool> JsonSchema for Wrapped<T> {
    fn schema_name() -> Cow<'static, str> {
        Cow::Owned(format!("{}Input", short_type_name::<T>()))
    }

    fn schema_id() -> Cow<'static, str> {
        Cow::Owned(format!("{}Input", type_name::<T>()))
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let parameter = T::INPUT_PARAMETER.unwrap_or(InputParameter::new("input"));
        let mut property = generator.subschema_for::<T::Input>();
        let (title, description) = schemars::_private::get_title_and_description(parameter.docs);
        schemars::_private::insert_metadata_property_if_nonempty(&mut property, "title", title);
        schemars::_private::insert_metadata_property_if_nonempty(
            &mut property,
            "description",
            description,
        );
        if parameter.optional {
            property.insert("default".into(), Value::Null);
        }
        let mut schema = schemars::json_schema!({ "type": "object" });
        let optional = parameter.optional && generator.contract().is_deserialize();
        schemars::_private::insert_object_property(&mut schema, parameter.name, optional, property);
        schema
    }
}

/// `T`'s name without its path or generics (`WeatherTool`).
fn short_type_name<T>() -> &'static str {
    let path = type_name::<T>();
    let path = path.split('<').next().unwrap_or(path);
    path.rsplit("::").next().unwrap_or(path)
}

/// The input of a `#[tool]` function with one parameter: the parameter's
/// value, whose traits are checked through bounds that name the tool
/// parameter (reported on its type), with the value's own schema and
/// deserialization.
#[derive(Debug)]
pub struct Param<V>(pub V);

impl<'de, V: ParamDeserialize<'de>> Deserialize<'de> for Param<V> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        V::deserialize(deserializer).map(Param)
    }
}

impl<V: ParamSchema> JsonSchema for Param<V> {
    fn inline_schema() -> bool {
        V::inline_schema()
    }

    fn schema_name() -> Cow<'static, str> {
        V::schema_name()
    }

    fn schema_id() -> Cow<'static, str> {
        V::schema_id()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        V::json_schema(generator)
    }
}

/// The input of a one-parameter `#[tool]` ([`Param`]): what policies and
/// examples are written against, named through the tool's input type so
/// that the tool, not the policy or the examples, decides it.
pub trait LoneInput {
    /// The parameter's type.
    type Value;
    /// The parameter's value.
    fn into_value(self) -> Self::Value;
}

impl<V> LoneInput for Param<V> {
    type Value = V;

    fn into_value(self) -> V {
        self.0
    }
}

/// The parameter's type of one-parameter tool `T`.
type LoneValue<T> = <<T as TypedTool>::Input as LoneInput>::Value;

/// Marks an approval policy or input examples of a one-parameter tool
/// written against the generated input struct.
pub struct ByStruct;

/// Marks an approval policy or input examples of a one-parameter tool
/// written against the parameter's type.
pub struct ByValue;

/// An approval policy of a tool with one parameter of type `V`: a function
/// of the value, or of the generated input struct `S`, that returns its
/// decision or a future of it (marker `(ByStruct | ByValue, Returns | Awaits)`).
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not an approval policy of this tool",
    label = "expected `fn(&T, &RequestContext) -> bool`",
    note = "a tool with one parameter of type `T` takes `fn(&T, &RequestContext) -> bool` (or a function of the generated input struct, `fn(&XxxToolInput, &RequestContext) -> bool`); it may return `Result<bool, E>`, or a `Send + 'static` future of either"
)]
pub trait LonePolicy<V, S, M>: Send + Sync + 'static {
    /// Whether the call needs approval; `to_struct` makes the generated
    /// struct from the value.
    fn requires_approval(
        &self,
        value: V,
        to_struct: fn(V) -> S,
        request_context: &RequestContext,
    ) -> PolicyAnswer;
}

impl<V, S, F, R, A> LonePolicy<V, S, (ByStruct, A)> for F
where
    F: Fn(&S, &RequestContext) -> R + Send + Sync + 'static,
    R: ApprovalPolicyReturn<A>,
{
    fn requires_approval(
        &self,
        value: V,
        to_struct: fn(V) -> S,
        request_context: &RequestContext,
    ) -> PolicyAnswer {
        self(&to_struct(value), request_context).into_answer()
    }
}

impl<V, S, F, R, A> LonePolicy<V, S, (ByValue, A)> for F
where
    F: Fn(&V, &RequestContext) -> R + Send + Sync + 'static,
    R: ApprovalPolicyReturn<A>,
{
    fn requires_approval(
        &self,
        value: V,
        _: fn(V) -> S,
        request_context: &RequestContext,
    ) -> PolicyAnswer {
        self(&value, request_context).into_answer()
    }
}

/// Runs a typed approval policy (sync or async) of tool `T` over validated
/// JSON input; input that no longer fits the type needs approval.
pub fn typed_policy<T, R, A>(
    input: &Value,
    request_context: &RequestContext,
    policy: impl Fn(&T::Input, &RequestContext) -> R,
) -> PolicyAnswer
where
    T: TypedTool,
    R: ApprovalPolicyReturn<A>,
{
    match typed_input::<T>(input) {
        Ok(input) => policy(&input, request_context).into_answer(),
        Err(_) => true.into_answer(),
    }
}

/// Runs a [`LonePolicy`] of tool `T` over validated JSON input, as
/// [`typed_policy`].
pub fn lone_policy<T, S, M>(
    input: &Value,
    request_context: &RequestContext,
    policy: &impl LonePolicy<LoneValue<T>, S, M>,
    to_struct: fn(LoneValue<T>) -> S,
) -> PolicyAnswer
where
    T: TypedTool<Input: LoneInput>,
{
    match typed_input::<T>(input) {
        Ok(input) => policy.requires_approval(input.into_value(), to_struct, request_context),
        Err(_) => true.into_answer(),
    }
}

/// The input examples of a tool with one parameter of type `V`: values of
/// it, or of the generated input struct `S`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` are not input examples of this tool",
    label = "expected `Vec<T>`",
    note = "a tool with one parameter of type `T` takes `fn() -> Vec<T>` (or `fn() -> Vec<XxxToolInput>`, of the generated input struct)"
)]
pub trait LoneExamples<V, S, M> {
    /// The examples, as values; `from_struct` takes the value out of the
    /// generated struct.
    fn into_values(self, from_struct: fn(S) -> V) -> Vec<V>;
}

impl<V, S> LoneExamples<V, S, ByStruct> for Vec<S> {
    fn into_values(self, from_struct: fn(S) -> V) -> Vec<V> {
        self.into_iter().map(from_struct).collect()
    }
}

impl<V, S> LoneExamples<V, S, ByValue> for Vec<V> {
    fn into_values(self, _: fn(S) -> V) -> Vec<V> {
        self
    }
}

/// Serializes an input example; one that cannot be serialized becomes `null`.
pub fn example_to_value<T: serde::Serialize + ?Sized>(example: &T) -> Value {
    serde_json::to_value(example).unwrap_or(Value::Null)
}

/// Input examples of one-parameter tool `T`, in the input's decided shape.
pub fn lone_examples<T, S, M>(
    examples: impl LoneExamples<LoneValue<T>, S, M>,
    from_struct: fn(S) -> LoneValue<T>,
) -> Vec<Value>
where
    T: TypedTool<Input: LoneInput<Value: ParamSerialize>>,
{
    let wrapping = wrapping::<T>();
    examples
        .into_values(from_struct)
        .iter()
        .map(|example| {
            let value = example_to_value(example);
            match wrapping {
                Some(parameter) => {
                    Value::Object([(parameter.name.to_owned(), value)].into_iter().collect())
                }
                None => value,
            }
        })
        .collect()
}
