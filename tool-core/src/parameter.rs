//! A typed tool whose input is its function's one parameter
//! ([`TypedTool::INPUT_PARAMETER`](crate::TypedTool::INPUT_PARAMETER)): the parameter's value is the whole input
//! when its JSON Schema is an object with named properties (a struct, a
//! newtype of one), or else the one property of an object `{"<name>": value}`
//! (an enum, a `Vec`, a map, a scalar, an alias of any of these). Providers
//! and MCP take an object as a tool's input, and `#[tool]` cannot tell an enum
//! from a struct by its name, so the schema decides, once per input type.
//!
//! Every typed path (execute, reconcile, approval policies, input hooks and
//! examples) reads the input through [`typed_input`], so a tool
//! deserializes its input one way, from the validated arguments.

use std::any::TypeId;
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::{PoisonError, RwLock};

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};

use crate::excerpt::Excerpt;
use crate::locate::{Refused, Track};
use crate::schema::{is_object_root, raw_root_schema, root_schema, schema_for};

/// The one parameter a [`TypedTool`](crate::TypedTool)'s input is: its name, under which the
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

/// Whether each one-parameter input type is wrapped, by type: one map for
/// every tool, since a generic function has no statics of its own.
static WRAPS: RwLock<BTreeMap<TypeId, bool>> = RwLock::new(BTreeMap::new());

/// The parameter when input type `I` is wrapped in it as `{"<name>": value}`
/// (`parameter` is the tool's [`TypedTool::INPUT_PARAMETER`]); `None` when
/// the input is the value itself. Decided from the input type's schema on
/// first use (usually when the tool is built, as its input schema is made), and
/// remembered per type.
///
/// [`TypedTool::INPUT_PARAMETER`]: crate::TypedTool::INPUT_PARAMETER
pub fn wrapping<I: JsonSchema + 'static>(
    parameter: Option<InputParameter>,
) -> Option<InputParameter> {
    wrapping_of(TypeId::of::<I>(), raw_root_schema::<I>, parameter)
}

/// [`wrapping`] of the input type `id`, whose root schema `raw` makes: not
/// generic, so that its closure is not one more function per input type.
fn wrapping_of(
    id: TypeId,
    raw: fn() -> schemars::Schema,
    parameter: Option<InputParameter>,
) -> Option<InputParameter> {
    let parameter = parameter?;
    wraps(id, &|| root_schema(raw())).then_some(parameter)
}

/// The input schema of a tool (its type named `tool`) whose input type is
/// `I`: the input type's, or the object that wraps it in `parameter`.
pub(crate) fn input_schema<I: JsonSchema + 'static>(
    parameter: Option<InputParameter>,
    tool: &'static str,
) -> Option<Value> {
    let Some(parameter) = parameter else {
        return schema_for::<I>();
    };
    let input = Input {
        id: TypeId::of::<I>(),
        inline: I::inline_schema(),
        name: I::schema_name(),
        tool: short_type_name(tool),
    };
    Some(input.schema(raw_root_schema::<I>(), parameter))
}

/// What the schema of a one-parameter input needs from its types, gathered
/// by the generic caller so that the work is not generic.
struct Input {
    id: TypeId,
    /// Whether schemars inlines the value's schema (else a `$ref` to it).
    inline: bool,
    /// The value type's schema name, its definition's name.
    name: Cow<'static, str>,
    /// The tool type's name, for the wrapping object's title.
    tool: &'static str,
}

impl Input {
    /// The input schema made from the value type's root schema `raw`.
    fn schema(self, raw: schemars::Schema, parameter: InputParameter) -> Value {
        let whole = root_schema(raw.clone());
        let wrapped = wraps(self.id, &|| whole.clone());
        if wrapped {
            root_schema(self.wrap(raw, parameter))
        } else {
            whole
        }
    }

    /// `{"<name>": value}` as a JSON Schema, from the value's root schema:
    /// what schemars' derive makes of a struct with that one field (the
    /// property's title and description from the parameter's docs, an
    /// optional one not required and defaulting to null), titled after the
    /// tool (`XxxToolInput`).
    fn wrap(self, raw: schemars::Schema, parameter: InputParameter) -> schemars::Schema {
        let mut value = raw.to_value();
        let mut definitions = Map::new();
        if let Some(object) = value.as_object_mut() {
            object.remove("$schema");
            if let Some(Value::Object(defs)) = object.remove("$defs") {
                definitions = defs;
            }
            // The root's title is schemars' addition, not the value's.
            if object.get("title").and_then(Value::as_str) == Some(&*self.name) {
                object.remove("title");
            }
        }
        let mut property = if self.inline {
            schemars::Schema::try_from(value).unwrap_or_default()
        } else {
            // The value's definition moves from the root to `$defs`, and so
            // does the target of every reference to it (a recursive type's).
            let reference = format!("#/$defs/{}", self.name);
            retarget_root_refs(&mut value, &reference);
            definitions
                .values_mut()
                .for_each(|definition| retarget_root_refs(definition, &reference));
            definitions.insert(self.name.to_string(), value);
            schemars::json_schema!({ "$ref": reference })
        };
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
        schemars::_private::insert_object_property(
            &mut schema,
            parameter.name,
            parameter.optional,
            property,
        );
        schema.insert("title".into(), format!("{}Input", self.tool).into());
        if !definitions.is_empty() {
            schema.insert("$defs".into(), Value::Object(definitions));
        }
        schema
    }
}

/// Points every `{"$ref": "#"}` (the root) in `schema` at `reference`.
fn retarget_root_refs(schema: &mut Value, reference: &str) {
    match schema {
        Value::Object(object) => {
            for (key, value) in object.iter_mut() {
                if key == "$ref" && value.as_str() == Some("#") {
                    *value = reference.into();
                } else {
                    retarget_root_refs(value, reference);
                }
            }
        }
        Value::Array(items) => items
            .iter_mut()
            .for_each(|item| retarget_root_refs(item, reference)),
        _ => {}
    }
}

/// Whether the input type `id` is wrapped: remembered, or decided from its
/// root schema (it is not an object with named properties) and remembered.
fn wraps(id: TypeId, schema: &dyn Fn() -> Value) -> bool {
    let known = WRAPS
        .read()
        .unwrap_or_else(PoisonError::into_inner)
        .get(&id)
        .copied();
    known.unwrap_or_else(|| {
        let schema = schema();
        let wraps = !is_object_root(&schema, &schema);
        WRAPS
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(id, wraps);
        wraps
    })
}

/// A type's name without its path or generics (`WeatherTool`).
fn short_type_name(path: &'static str) -> &'static str {
    let path = path.split('<').next().unwrap_or(path);
    path.rsplit("::").next().unwrap_or(path)
}

/// Input type `I` from the validated arguments `input`, the one way every
/// typed path (execute, reconcile, policies, input hooks) reads it: by
/// reference (the arguments stay available to store with a suspension and
/// to quote in an error), the property of `wraps` picked out when a
/// parameter wraps the input ([`wrapping`]'s answer, which the paths that
/// run on every call get once, when they are set up).
// `?` would be one more function per input type (its `FromResidual`).
#[allow(clippy::question_mark)]
pub(crate) fn typed_input<I: DeserializeOwned>(
    input: &Value,
    wraps: Option<InputParameter>,
) -> Result<I, InputMismatch> {
    // Only the deserialization is generic over the tool's types.
    let (value, path) = match input_value(input, wraps) {
        Ok(found) => found,
        Err(mismatch) => return Err(mismatch),
    };
    let track = Track::default();
    match I::deserialize(track.root(value)) {
        Ok(input) => Ok(input),
        Err(error) => Err(InputMismatch::at(path, track.refused(error))),
    }
}

/// Input type `I` from the validated arguments `input`, read as
/// [`typed_input`] reads it, for a path that only asks whether it reads (an
/// approval policy: input that does not needs approval), so that no path
/// is tracked for an error nobody quotes.
pub(crate) fn input_if_fits<I: DeserializeOwned>(
    input: &Value,
    wraps: Option<InputParameter>,
) -> Option<I> {
    let value = match wraps {
        None => input,
        Some(parameter) => match input.get(parameter.name) {
            Some(value) => value,
            None if parameter.optional => &Value::Null,
            None => return None,
        },
    };
    I::deserialize(value).ok()
}

/// The value a typed input is deserialized from, and its path: the
/// arguments, or the property of the parameter that wraps them.
fn input_value(
    input: &Value,
    wrapping: Option<InputParameter>,
) -> Result<(&Value, Vec<String>), InputMismatch> {
    let Some(parameter) = wrapping else {
        return Ok((input, Vec::new()));
    };
    match input.get(parameter.name) {
        Some(value) => Ok((value, vec![parameter.name.to_owned()])),
        // As serde's derive reads an absent field: `None`, or an error.
        None if parameter.optional => Ok((&Value::Null, Vec::new())),
        None => Err(InputMismatch {
            path: Vec::new(),
            reason: format!("missing field `{}`", parameter.name),
        }),
    }
}

/// Where and why validated arguments did not deserialize into a typed
/// tool's input.
pub(crate) struct InputMismatch {
    /// Property names and array indexes.
    pub(crate) path: Vec<String>,
    pub(crate) reason: String,
}

impl InputMismatch {
    /// The mismatch `error` reports, under `path`.
    fn at(mut path: Vec<String>, refused: Refused) -> Self {
        path.extend(refused.path);
        Self {
            path,
            // serde's message quotes the value it refused (`invalid type:
            // string "..."`), so the model reads an excerpt of it.
            reason: Excerpt::of(&refused.error.to_string()).to_string(),
        }
    }
}

impl fmt::Display for InputMismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            f.write_str(&self.reason)
        } else {
            write!(f, "at `{}`: {}", self.path.join("."), self.reason)
        }
    }
}

/// A parameter type of a `#[tool]` function (a field of the generated
/// input struct) that can be deserialized.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a tool parameter: it does not implement `serde::Deserialize`",
    label = "the model's arguments are deserialized into this type",
    note = "derive it with `#[derive(serde::Deserialize)]`, or use a type that implements it"
)]
pub trait ParamDeserialize<'de>: serde::Deserialize<'de> {}

impl<'de, T: serde::Deserialize<'de>> ParamDeserialize<'de> for T {}

/// A parameter type of a `#[tool]` function with a JSON Schema.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a tool parameter: it does not implement `schemars::JsonSchema`",
    label = "the input schema shown to the model is derived from this type",
    note = "derive it with `#[derive(schemars::JsonSchema)]`, or use a type that implements it"
)]
pub trait ParamSchema: schemars::JsonSchema {}

impl<T: schemars::JsonSchema + ?Sized> ParamSchema for T {}

/// A parameter type that `input_examples` can serialize.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a parameter of a tool with `input_examples`: it does not implement `serde::Serialize`",
    label = "input examples are serialized, so this type must be too",
    note = "derive it with `#[derive(serde::Serialize)]`, or use a type that implements it"
)]
pub trait ParamSerialize: serde::Serialize {}

impl<T: serde::Serialize + ?Sized> ParamSerialize for T {}

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

/// The parameter's type of a one-parameter tool whose input type is `I`.
pub(crate) type LoneValue<I> = <I as LoneInput>::Value;

/// Marks an approval policy or input examples of a one-parameter tool
/// written against the generated input struct.
pub struct ByStruct;

/// Marks an approval policy or input examples of a one-parameter tool
/// written against the parameter's type.
pub struct ByValue;

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

/// Input examples of a one-parameter tool whose input type is `I` (its
/// `TypedTool::INPUT_PARAMETER` is `parameter`), in the input's decided
/// shape.
pub fn lone_examples<I, S, M>(
    examples: impl LoneExamples<LoneValue<I>, S, M>,
    from_struct: fn(S) -> LoneValue<I>,
    parameter: Option<InputParameter>,
) -> Vec<Value>
where
    I: LoneInput<Value: ParamSerialize> + JsonSchema + 'static,
{
    let wrapping = wrapping::<I>(parameter);
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

#[cfg(test)]
mod tests {
    use std::any::type_name;
    use std::collections::BTreeMap;

    use schemars::JsonSchema;
    use serde::Deserialize;
    use serde_json::json;

    use super::{InputParameter, input_schema, short_type_name};
    use crate::{NoSuspend, ToolContext, ToolError, TypedTool, schema_for};

    /// A recursive enum: its schema refers to itself.
    #[derive(Deserialize, JsonSchema)]
    #[allow(dead_code)]
    enum Expr {
        Num(f64),
        Add(Box<Expr>, Box<Expr>),
    }

    /// A unit.
    ///
    /// Of temperature.
    #[derive(Deserialize, serde::Serialize, JsonSchema)]
    #[allow(dead_code)]
    enum Unit {
        Celsius,
        Fahrenheit,
    }

    /// A tool `$tool` whose input is the parameter `$name: $value`, and the
    /// struct `$derived` that schemars' derive makes of that parameter.
    macro_rules! case {
        ($tool:ident, $derived:ident, $value:ty, $parameter:expr, { $($field:tt)* }) => {
            struct $tool;

            impl TypedTool for $tool {
                type Input = $value;
                type Output = ();
                type Suspend = NoSuspend;
                type Resume = NoSuspend;
                const ID: &'static str = "t";
                const DESCRIPTION: &'static str = "d";
                const INPUT_PARAMETER: Option<InputParameter> = Some($parameter);

                async fn execute(&self, _: $value, _: ToolContext) -> Result<(), ToolError> {
                    Ok(())
                }
            }

            #[derive(JsonSchema)]
            #[schemars(title = "", description = "")]
            #[allow(dead_code)]
            struct $derived { $($field)* }
        };
    }

    case!(ExprTool, ExprInput, Expr, InputParameter::new("expr"), { expr: Expr });
    case!(UnitTool, UnitInput, Option<Unit>, InputParameter::new("unit").docs("The unit\n\nCelsius unless given.").optional(true), {
        /// The unit
        ///
        /// Celsius unless given.
        #[serde(default)]
        unit: Option<Unit>
    });
    case!(TagsTool, TagsInput, Vec<String>, InputParameter::new("tags").docs("Tags"), {
        /// Tags
        tags: Vec<String>
    });
    case!(CountsTool, CountsInput, BTreeMap<String, u32>, InputParameter::new("counts"), { counts: BTreeMap<String, u32> });
    case!(LimitTool, LimitInput, u8, InputParameter::new("limit"), { limit: u8 });

    /// `T`'s input schema is what schemars' derive gives for `D`, titled as
    /// the wrapping object is.
    fn assert_derived<T: TypedTool, D: JsonSchema + 'static>() {
        let mut derived = schema_for::<D>().unwrap();
        let object = derived.as_object_mut().unwrap();
        object.remove("description");
        let title = format!("{}Input", short_type_name(type_name::<T>()));
        object.insert("title".into(), title.clone().into());
        let schema = input_schema::<T::Input>(T::INPUT_PARAMETER, type_name::<T>());
        assert_eq!(schema.unwrap(), derived, "{title}");
    }

    #[test]
    fn a_wrapped_input_has_the_schema_of_the_derived_struct() {
        assert_derived::<ExprTool, ExprInput>();
        assert_derived::<UnitTool, UnitInput>();
        assert_derived::<TagsTool, TagsInput>();
        assert_derived::<CountsTool, CountsInput>();
        assert_derived::<LimitTool, LimitInput>();
        // The property's metadata, from the parameter's docs.
        let unit = input_schema::<Option<Unit>>(UnitTool::INPUT_PARAMETER, "UnitTool").unwrap();
        assert_eq!(
            unit["properties"]["unit"]["description"],
            "The unit\n\nCelsius unless given."
        );
        assert_eq!(unit["properties"]["unit"]["default"], json!(null));
        assert_eq!(unit.get("required"), None);
    }
}
