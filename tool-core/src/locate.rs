//! Deserializing validated JSON into a Rust type, and locating where the
//! type refused it: the schema admits what a type may still refuse (a
//! custom `Deserialize`, `try_from`, a range the schema does not state), and
//! the model reads the path of the value (`target.lat`).
//!
//! Written here rather than through serde_path_to_error's adapter, which
//! wraps every visitor and seed of the type in a tracking twin forwarding
//! every method: 929 debug LLVM lines per tool in a user's crate, over
//! serde_json's `&Value` deserializer's 712, where this one is 746 in all
//! (BENCHMARKS.md, issue 33). It walks the borrowed `Value` itself, so it
//! notes the path as it descends and wraps no visitor. What it reports is what the adapter
//! over serde_json's `&Value` reported: serde_json's messages, and the path
//! of the innermost property, index or variant the error passed through.

use std::borrow::Cow;
use std::cell::RefCell;

use serde::de::{
    self, DeserializeSeed, EnumAccess, IntoDeserializer, MapAccess, SeqAccess, Unexpected,
    VariantAccess, Visitor,
};
use serde_json::{Error, Map, Value};

use crate::excerpt::Excerpt;

/// Why a value did not deserialize: where (property names, array indexes
/// and enum variants from the value's root; a name from the value as an
/// excerpt), and serde_json's error.
pub(crate) struct Refused {
    pub(crate) path: Vec<String>,
    pub(crate) error: Error,
}

/// Where a deserializer is: a chain from the root, one link per property,
/// index or variant.
#[derive(Clone, Copy)]
enum At<'a> {
    Root,
    /// A property, or an enum's variant (a path names both alike).
    Name(&'a At<'a>, &'a str),
    Index(&'a At<'a>, usize),
}

/// Where the deserialization of one value went wrong: the path of the
/// first error noted, which is the innermost (an error is noted where it
/// arose, then again by every level it passes through). A caller
/// deserializes `T` from [`root`](Self::root) and, on an error, asks
/// [`refused`](Self::refused) where: the only generic code is `T`'s.
#[derive(Default)]
pub(crate) struct Track {
    path: RefCell<Option<Vec<String>>>,
}

impl Track {
    /// The deserializer of `value`, the root.
    pub(crate) fn root<'a>(&'a self, value: &'a Value) -> impl de::Deserializer<'a, Error = Error> {
        Tracked {
            value,
            at: &At::Root,
            track: self,
        }
    }

    /// Where and why the value was refused with `error`.
    pub(crate) fn refused(&self, error: Error) -> Refused {
        Refused {
            path: self.path.take().unwrap_or_default(),
            error,
        }
    }

    fn note(&self, at: &At<'_>) {
        let mut path = self.path.borrow_mut();
        if path.is_none() {
            let mut segments = Vec::new();
            let mut link = at;
            loop {
                match link {
                    At::Root => break,
                    At::Name(parent, name) => {
                        segments.push(Excerpt::of(name).to_string());
                        link = parent;
                    }
                    At::Index(parent, index) => {
                        segments.push(index.to_string());
                        link = parent;
                    }
                }
            }
            segments.reverse();
            *path = Some(segments);
        }
    }

    /// `error`, noted at `at`.
    fn noted(&self, error: Error, at: &At<'_>) -> Error {
        self.note(at);
        error
    }
}

/// `result`, its error noted at `at`.
fn noted<T>(result: Result<T, Error>, at: &At<'_>, track: &Track) -> Result<T, Error> {
    match result {
        Ok(value) => Ok(value),
        Err(error) => Err(track.noted(error, at)),
    }
}

/// A deserializer of the value at `at`.
#[derive(Clone, Copy)]
struct Tracked<'de, 'a> {
    value: &'de Value,
    at: &'a At<'a>,
    track: &'a Track,
}

/// serde_json's `visit_array_ref`: `items` (at `at`), each element tracked.
fn seq<'de, V: Visitor<'de>>(
    items: &'de [Value],
    at: &At<'_>,
    track: &Track,
    visitor: V,
) -> Result<V::Value, Error> {
    let mut seq = TrackedSeq {
        items: items.iter(),
        index: 0,
        at,
        track,
    };
    match visitor.visit_seq(&mut seq) {
        Ok(value) => match seq.end(items.len()) {
            Ok(()) => Ok(value),
            Err(error) => Err(error),
        },
        Err(error) => Err(error),
    }
}

/// serde_json's `visit_object_ref`: `map` (at `at`), each entry tracked.
fn map<'de, V: Visitor<'de>>(
    map: &'de Map<String, Value>,
    at: &At<'_>,
    track: &Track,
    visitor: V,
) -> Result<V::Value, Error> {
    let mut entries = TrackedMap {
        entries: map.iter(),
        value: None,
        at,
        track,
    };
    match visitor.visit_map(&mut entries) {
        Ok(value) => match entries.end(map.len()) {
            Ok(()) => Ok(value),
            Err(error) => Err(error),
        },
        Err(error) => Err(error),
    }
}

/// Methods whose value is never a container: serde_json's, noted.
macro_rules! leaves {
    ($($method:ident($($arg:ident: $ty:ty),*)),* $(,)?) => {$(
        fn $method<V: Visitor<'de>>(self, $($arg: $ty,)* visitor: V) -> Result<V::Value, Error> {
            noted(self.value.$method($($arg,)* visitor), self.at, self.track)
        }
    )*};
}

impl<'de> de::Deserializer<'de> for Tracked<'de, '_> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        let result = match self.value {
            Value::Array(items) => seq(items, self.at, self.track, visitor),
            Value::Object(entries) => map(entries, self.at, self.track, visitor),
            // As serde_json visits them (its own method would instantiate
            // its container code for every visitor too).
            Value::Null => visitor.visit_unit(),
            Value::Bool(value) => visitor.visit_bool(*value),
            Value::Number(number) => number.deserialize_any(visitor),
            Value::String(text) => visitor.visit_borrowed_str(text),
        };
        noted(result, self.at, self.track)
    }

    leaves!(
        deserialize_bool(),
        deserialize_i8(),
        deserialize_i16(),
        deserialize_i32(),
        deserialize_i64(),
        deserialize_i128(),
        deserialize_u8(),
        deserialize_u16(),
        deserialize_u32(),
        deserialize_u64(),
        deserialize_u128(),
        deserialize_f32(),
        deserialize_f64(),
        deserialize_char(),
        deserialize_str(),
        deserialize_string(),
        deserialize_unit(),
        deserialize_unit_struct(name: &'static str),
        deserialize_identifier(),
        deserialize_ignored_any(),
    );

    fn deserialize_bytes<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        let result = match self.value {
            Value::String(text) => visitor.visit_borrowed_str(text),
            Value::Array(items) => seq(items, self.at, self.track, visitor),
            leaf => Err(refused(leaf, &visitor)),
        };
        noted(result, self.at, self.track)
    }

    fn deserialize_byte_buf<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_bytes(visitor)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        let result = match self.value {
            Value::Null => visitor.visit_none(),
            _ => visitor.visit_some(self),
        };
        noted(result, self.at, self.track)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        // serde_json's `RawValue` (with its `raw_value` feature) reads the
        // value's text, not its contents.
        let result = if name == "$serde_json::private::RawValue" {
            self.value.deserialize_newtype_struct(name, visitor)
        } else {
            visitor.visit_newtype_struct(self)
        };
        noted(result, self.at, self.track)
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        let result = match self.value {
            Value::Array(items) => seq(items, self.at, self.track, visitor),
            leaf => Err(refused(leaf, &visitor)),
        };
        noted(result, self.at, self.track)
    }

    fn deserialize_tuple<V: Visitor<'de>>(
        self,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, Error> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, Error> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        let result = match self.value {
            Value::Object(entries) => map(entries, self.at, self.track, visitor),
            leaf => Err(refused(leaf, &visitor)),
        };
        noted(result, self.at, self.track)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        let result = match self.value {
            Value::Array(items) => seq(items, self.at, self.track, visitor),
            Value::Object(entries) => map(entries, self.at, self.track, visitor),
            leaf => Err(refused(leaf, &visitor)),
        };
        noted(result, self.at, self.track)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        // As serde_json: a variant's name, or a map of one entry, the
        // variant's name to its contents.
        let result = match self.value {
            Value::String(name) => visitor.visit_enum(TrackedEnum {
                name,
                contents: None,
                at: self.at,
                track: self.track,
            }),
            Value::Object(entries) => match one_entry(entries) {
                Ok((name, contents)) => visitor.visit_enum(TrackedEnum {
                    name,
                    contents: Some(contents),
                    at: self.at,
                    track: self.track,
                }),
                Err(error) => Err(error),
            },
            leaf => Err(refused(leaf, &"string or map")),
        };
        noted(result, self.at, self.track)
    }
}

/// The one entry of a map that stands for an enum, or serde_json's error.
fn one_entry(map: &Map<String, Value>) -> Result<(&str, &Value), Error> {
    let mut entries = map.iter();
    match (entries.next(), entries.next()) {
        (Some((variant, value)), None) => Ok((variant, value)),
        _ => Err(de::Error::invalid_value(
            Unexpected::Map,
            &"map with a single key",
        )),
    }
}

/// A sequence's elements, each at its index.
struct TrackedSeq<'de, 'a> {
    items: std::slice::Iter<'de, Value>,
    index: usize,
    at: &'a At<'a>,
    track: &'a Track,
}

impl TrackedSeq<'_, '_> {
    /// serde_json's check that the visitor took every element.
    fn end(&self, len: usize) -> Result<(), Error> {
        if self.items.len() == 0 {
            Ok(())
        } else {
            Err(de::Error::invalid_length(len, &"fewer elements in array"))
        }
    }
}

impl<'de> SeqAccess<'de> for TrackedSeq<'de, '_> {
    type Error = Error;

    fn next_element_seed<S: DeserializeSeed<'de>>(
        &mut self,
        seed: S,
    ) -> Result<Option<S::Value>, Error> {
        let Some(value) = self.items.next() else {
            return Ok(None);
        };
        let at = At::Index(self.at, self.index);
        self.index += 1;
        let element = Tracked {
            value,
            at: &at,
            track: self.track,
        };
        match seed.deserialize(element) {
            Ok(element) => Ok(Some(element)),
            Err(error) => Err(self.track.noted(error, &at)),
        }
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.items.len())
    }
}

/// A map's entries, each value at its key.
struct TrackedMap<'de, 'a> {
    entries: serde_json::map::Iter<'de>,
    /// The entry whose key was read last, until its value is.
    value: Option<(&'de str, &'de Value)>,
    at: &'a At<'a>,
    track: &'a Track,
}

impl TrackedMap<'_, '_> {
    /// serde_json's check that the visitor took every entry.
    fn end(&self, len: usize) -> Result<(), Error> {
        if self.entries.len() == 0 {
            Ok(())
        } else {
            Err(de::Error::invalid_length(len, &"fewer elements in map"))
        }
    }
}

impl<'de> MapAccess<'de> for TrackedMap<'de, '_> {
    type Error = Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Error> {
        let Some((key, value)) = self.entries.next() else {
            return Ok(None);
        };
        self.value = Some((key, value));
        // A key refused (an unknown field) is the path of its error.
        let at = At::Name(self.at, key);
        match seed.deserialize(Key(key)) {
            Ok(key) => Ok(Some(key)),
            Err(error) => Err(self.track.noted(error, &at)),
        }
    }

    fn next_value_seed<S: DeserializeSeed<'de>>(&mut self, seed: S) -> Result<S::Value, Error> {
        let Some((key, value)) = self.value.take() else {
            return Err(de::Error::custom("value is missing"));
        };
        let at = At::Name(self.at, key);
        let value = Tracked {
            value,
            at: &at,
            track: self.track,
        };
        noted(seed.deserialize(value), &at, self.track)
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.entries.len())
    }
}

/// An enum's variant `name` and its contents (none for a variant's bare
/// name), which are at the variant.
struct TrackedEnum<'de, 'a> {
    name: &'de str,
    contents: Option<&'de Value>,
    at: &'a At<'a>,
    track: &'a Track,
}

impl<'de, 'a> EnumAccess<'de> for TrackedEnum<'de, 'a> {
    type Error = Error;
    type Variant = Self;

    fn variant_seed<S: DeserializeSeed<'de>>(self, seed: S) -> Result<(S::Value, Self), Error> {
        match seed.deserialize(self.name.into_deserializer()) {
            Ok(variant) => Ok((variant, self)),
            Err(error) => Err(error),
        }
    }
}

impl<'de> VariantAccess<'de> for TrackedEnum<'de, '_> {
    type Error = Error;

    fn unit_variant(self) -> Result<(), Error> {
        let at = At::Name(self.at, self.name);
        match self.contents {
            Some(contents) => noted(de::Deserialize::deserialize(contents), &at, self.track),
            None => Ok(()),
        }
    }

    fn newtype_variant_seed<S: DeserializeSeed<'de>>(self, seed: S) -> Result<S::Value, Error> {
        let at = At::Name(self.at, self.name);
        let result = match self.contents {
            Some(value) => seed.deserialize(Tracked {
                value,
                at: &at,
                track: self.track,
            }),
            None => Err(de::Error::invalid_type(
                Unexpected::UnitVariant,
                &"newtype variant",
            )),
        };
        noted(result, &at, self.track)
    }

    fn tuple_variant<V: Visitor<'de>>(self, _len: usize, visitor: V) -> Result<V::Value, Error> {
        let at = At::Name(self.at, self.name);
        let result = match self.contents {
            Some(Value::Array(items)) if items.is_empty() => visitor.visit_unit(),
            Some(Value::Array(items)) => seq(items, &at, self.track, visitor),
            Some(other) => Err(refused(other, &"tuple variant")),
            None => Err(de::Error::invalid_type(
                Unexpected::UnitVariant,
                &"tuple variant",
            )),
        };
        noted(result, &at, self.track)
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        let at = At::Name(self.at, self.name);
        let result = match self.contents {
            Some(Value::Object(entries)) => map(entries, &at, self.track, visitor),
            Some(other) => Err(refused(other, &"struct variant")),
            None => Err(de::Error::invalid_type(
                Unexpected::UnitVariant,
                &"struct variant",
            )),
        };
        noted(result, &at, self.track)
    }
}

/// serde_json's error for a value that is not the kind `expected`
/// (`invalid type: ..., expected ...`), made by serde_json itself, which
/// describes its numbers as its features say; not generic, so that no
/// visitor instantiates serde_json's container code for its errors.
fn refused(value: &Value, expected: &dyn de::Expected) -> Error {
    match de::Deserializer::deserialize_unit(value, Refuse(expected)) {
        Ok(()) => de::Error::invalid_type(Unexpected::Unit, expected),
        Err(error) => error,
    }
}

/// A visitor that accepts only a unit, and expects what `.0` expects.
struct Refuse<'a>(&'a dyn de::Expected);

impl Visitor<'_> for Refuse<'_> {
    type Value = ();

    fn expecting(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(formatter)
    }

    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
}

/// A map's key, read as serde_json reads the keys of a `&Value`'s map: a
/// string, a number in quotes, `"true"` or `"false"`.
struct Key<'de>(&'de str);

/// serde_json's refusal of a key that is not a number in quotes.
fn expected_numeric_key() -> Error {
    de::Error::custom("invalid value: expected key to be a number in quotes")
}

/// Numeric methods: the key parsed as serde_json parses a key, the whole
/// key a number.
macro_rules! numeric_keys {
    ($($method:ident),* $(,)?) => {$(
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
            if !matches!(self.0.as_bytes().first(), Some(b'0'..=b'9' | b'-')) {
                return Err(expected_numeric_key());
            }
            let mut parser = serde_json::Deserializer::from_str(self.0);
            let number = de::Deserializer::$method(&mut parser, visitor)?;
            // Nothing may follow the number, whitespace included.
            if parser.end().is_err() || self.0.ends_with([' ', '\n', '\t', '\r']) {
                return Err(expected_numeric_key());
            }
            Ok(number)
        }
    )*};
}

impl<'de> de::Deserializer<'de> for Key<'de> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_borrowed_str(self.0)
    }

    numeric_keys!(
        deserialize_i8,
        deserialize_i16,
        deserialize_i32,
        deserialize_i64,
        deserialize_i128,
        deserialize_u8,
        deserialize_u16,
        deserialize_u32,
        deserialize_u64,
        deserialize_u128,
        deserialize_f32,
        deserialize_f64,
    );

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.0 {
            "true" => visitor.visit_bool(true),
            "false" => visitor.visit_bool(false),
            other => Err(de::Error::invalid_type(Unexpected::Str(other), &visitor)),
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        // Map keys cannot be null.
        visitor.visit_some(self)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        de::Deserializer::deserialize_enum(
            IntoDeserializer::<Error>::into_deserializer(Cow::Borrowed(self.0)),
            name,
            variants,
            visitor,
        )
    }

    serde::forward_to_deserialize_any! {
        char str string bytes byte_buf unit unit_struct seq tuple tuple_struct
        map struct identifier ignored_any
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, HashMap};

    use serde::Deserialize;
    use serde_json::{Value, json};

    use super::Track;

    /// `T` from `value`, as tool-core reads a typed input.
    fn deserialize<T: serde::de::DeserializeOwned>(value: &Value) -> Result<T, super::Refused> {
        let track = Track::default();
        T::deserialize(track.root(value)).map_err(|error| track.refused(error))
    }

    /// A latitude: the schema would say "number", the type refuses more.
    #[derive(Debug, Deserialize)]
    #[serde(try_from = "f64")]
    struct Latitude(#[allow(dead_code)] f64);

    impl TryFrom<f64> for Latitude {
        type Error = String;

        fn try_from(lat: f64) -> Result<Self, String> {
            if (-90.0..=90.0).contains(&lat) {
                Ok(Latitude(lat))
            } else {
                Err(format!("latitude {lat} is out of range"))
            }
        }
    }

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Point {
        lat: Latitude,
        lon: f64,
    }

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    enum Shape {
        Dot,
        Circle(Point, f64),
        Around(Point),
        Square { corner: Point, side: u8 },
    }

    #[derive(Debug, Deserialize, PartialEq, Eq, PartialOrd, Ord)]
    enum Unit {
        Dot,
        Line,
    }

    #[derive(Debug, Deserialize)]
    #[serde(tag = "kind", rename_all = "snake_case")]
    #[allow(dead_code)]
    enum Target {
        City { name: String },
        Coords { lat: Latitude, lon: f64 },
    }

    #[derive(Debug, Deserialize)]
    #[serde(untagged)]
    #[allow(dead_code)]
    enum Either {
        Point(Point),
        Name(String),
    }

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Input {
        target: Option<Point>,
        #[serde(default)]
        points: Vec<Point>,
        #[serde(default)]
        named: BTreeMap<String, Point>,
        #[serde(default)]
        by_id: HashMap<u32, Latitude>,
        #[serde(default)]
        flags: BTreeMap<bool, u8>,
        #[serde(default)]
        shapes: Vec<Shape>,
        #[serde(default)]
        tagged: Option<Target>,
        #[serde(default)]
        either: Option<Either>,
        #[serde(default)]
        pair: Option<(u8, Latitude)>,
        #[serde(default)]
        bytes: Option<serde_bytes_like::Bytes>,
    }

    /// A type that asks for bytes, to reach `deserialize_bytes`.
    mod serde_bytes_like {
        #[derive(Debug)]
        pub struct Bytes(#[allow(dead_code)] pub Vec<u8>);

        impl<'de> serde::Deserialize<'de> for Bytes {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                struct Visitor;
                impl<'de> serde::de::Visitor<'de> for Visitor {
                    type Value = Bytes;
                    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                        f.write_str("bytes")
                    }
                    fn visit_seq<A: serde::de::SeqAccess<'de>>(
                        self,
                        mut seq: A,
                    ) -> Result<Bytes, A::Error> {
                        let mut bytes = Vec::new();
                        while let Some(byte) = seq.next_element()? {
                            bytes.push(byte);
                        }
                        Ok(Bytes(bytes))
                    }
                    fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<Bytes, E> {
                        Ok(Bytes(text.as_bytes().to_vec()))
                    }
                }
                deserializer.deserialize_bytes(Visitor)
            }
        }
    }

    /// What serde_path_to_error over serde_json's `&Value` reports: the
    /// path's tokens as tool-core wrote them, and the message.
    fn reference<T: serde::de::DeserializeOwned>(
        value: &Value,
    ) -> Result<T, (Vec<String>, String)> {
        use serde_path_to_error::Segment;
        serde_path_to_error::deserialize::<_, T>(value).map_err(|error| {
            let path = error
                .path()
                .iter()
                .map(|segment| match segment {
                    Segment::Seq { index } => index.to_string(),
                    Segment::Map { key } => crate::Excerpt::of(key).to_string(),
                    Segment::Enum { variant } => crate::Excerpt::of(variant).to_string(),
                    Segment::Unknown => "?".to_owned(),
                })
                .collect();
            (path, error.into_inner().to_string())
        })
    }

    /// Both deserialize `value` alike: both accept it, or both refuse it
    /// with the same path and message.
    fn same<T: serde::de::DeserializeOwned + std::fmt::Debug>(
        value: Value,
    ) -> Option<(Vec<String>, String)> {
        let expected = reference::<T>(&value);
        let found =
            deserialize::<T>(&value).map_err(|refused| (refused.path, refused.error.to_string()));
        match (&expected, &found) {
            (Ok(expected), Ok(found)) => assert_eq!(format!("{expected:?}"), format!("{found:?}")),
            (Err((path, message)), Err((found_path, found_message))) => {
                assert_eq!(message, found_message, "{value}");
                // Where the reference could not read a key (a key of a
                // number, enum, option or newtype type that was refused, or
                // whose value was) it wrote `?`, and of a number key with
                // characters after the number, the number: here the path
                // names the key as written.
                assert_eq!(
                    path.len(),
                    found_path.len(),
                    "{value}: {path:?} {found_path:?}"
                );
                for (expected, found) in path.iter().zip(found_path) {
                    let number_of =
                        expected.parse::<i128>().is_ok() && found.starts_with(expected.as_str());
                    assert!(
                        expected == found || expected == "?" || number_of,
                        "{value}: {path:?} {found_path:?}"
                    );
                }
            }
            _ => panic!("{value}: expected {expected:?}, found {found:?}"),
        }
        found.err()
    }

    #[test]
    fn refusals_are_located_as_serde_path_to_error_located_them() {
        let point = json!({ "lat": 1.0, "lon": 2.0 });
        let far = json!({ "lat": 91.0, "lon": 2.0 });
        let cases = [
            json!({}),
            json!({ "target": point }),
            json!({ "target": far }),
            json!({ "target": { "lat": 1.0 } }),
            json!({ "target": { "lat": "north", "lon": 2.0 } }),
            json!({ "target": [1.0, 2.0] }),
            json!({ "target": [91.0, 2.0] }),
            json!({ "target": [1.0, 2.0, 3.0] }),
            json!({ "target": [1.0] }),
            json!({ "target": 7 }),
            json!({ "target": -7 }),
            json!({ "target": 7.5 }),
            json!({ "target": point, "extra": 1 }),
            json!({ "target": point, "target": point }),
            json!({ "points": [point, point, far] }),
            json!({ "points": point }),
            json!({ "named": { "a": point, "b": far } }),
            json!({ "named": { "a": point, "b": { "lat": 1.0, "lon": 2.0, "up": 3 } } }),
            json!({ "by_id": { "1": 2.0, "20": 95.0 } }),
            json!({ "by_id": { "x": 2.0 } }),
            json!({ "by_id": { "-": 2.0 } }),
            json!({ "by_id": { "1 ": 2.0 } }),
            json!({ "by_id": { "1x": 2.0 } }),
            json!({ "by_id": { "": 2.0 } }),
            json!({ "by_id": { "99999999999": 2.0 } }),
            json!({ "flags": { "true": 1, "false": 2 } }),
            json!({ "flags": { "yes": 1 } }),
            json!({ "shapes": ["Dot", { "Dot": null }, { "Dot": 1 }] }),
            json!({ "shapes": [{ "Circle": [point, 2.0] }] }),
            json!({ "shapes": [{ "Circle": [far, 2.0] }] }),
            json!({ "shapes": [{ "Circle": [] }] }),
            json!({ "shapes": [{ "Circle": null }] }),
            json!({ "shapes": [{ "Circle": 3 }] }),
            json!({ "shapes": ["Circle"] }),
            json!({ "shapes": [{ "Around": far }] }),
            json!({ "shapes": ["Around"] }),
            json!({ "shapes": [{ "Square": { "corner": far, "side": 1 } }] }),
            json!({ "shapes": [{ "Square": { "corner": point, "side": 300 } }] }),
            json!({ "shapes": [{ "Square": [point, 1] }] }),
            json!({ "shapes": [{ "Square": "big" }] }),
            json!({ "shapes": ["Square"] }),
            json!({ "shapes": [{ "Hexagon": 1 }] }),
            json!({ "shapes": [{ "Dot": null, "Circle": null }] }),
            json!({ "shapes": [{}] }),
            json!({ "shapes": [7] }),
            json!({ "shapes": [[1]] }),
            json!({ "tagged": { "kind": "coords", "lat": 1.0, "lon": 2.0 } }),
            json!({ "tagged": { "kind": "coords", "lat": 91.0, "lon": 2.0 } }),
            json!({ "tagged": { "kind": "coords", "lon": 2.0 } }),
            json!({ "tagged": { "kind": "planet" } }),
            json!({ "either": point }),
            json!({ "either": "Oslo" }),
            json!({ "either": 3 }),
            json!({ "pair": [1, 2.0] }),
            json!({ "pair": [1, 92.0] }),
            json!({ "pair": [1] }),
            json!({ "bytes": [1, 2, 3] }),
            json!({ "bytes": [1, 256] }),
            json!({ "bytes": "abc" }),
            json!({ "bytes": 1 }),
            json!(null),
            json!([]),
            json!("text"),
        ];
        for case in cases {
            same::<Input>(case);
        }
        // A key the type refused, or whose value it refused, is named.
        let refused = same::<Input>(json!({ "by_id": { "x": 2.0 } })).unwrap();
        assert_eq!(refused.0, ["by_id", "x"]);
        let refused = same::<BTreeMap<Unit, Latitude>>(json!({ "Dot": 95.0 })).unwrap();
        assert_eq!(refused.0, ["Dot"]);
        // The example: the path of a value the schema admits and
        // the type refuses.
        let refused = same::<Input>(json!({ "target": far })).unwrap();
        assert_eq!(
            refused,
            (
                vec!["target".into(), "lat".into()],
                "latitude 91 is out of range".into()
            )
        );
    }

    #[test]
    fn scalars_and_containers_at_the_root_are_located_alike() {
        same::<u8>(json!(300));
        same::<u8>(json!("1"));
        same::<Option<u8>>(json!(null));
        same::<Option<u8>>(json!(-1));
        same::<Vec<Option<Latitude>>>(json!([null, 1.0, 100.0]));
        same::<HashMap<String, Vec<u8>>>(json!({ "a": [1], "b": [1, "2"] }));
        same::<(u8, u8)>(json!([1, 2, 3]));
        same::<()>(json!(null));
        same::<()>(json!(1));
        same::<Value>(json!({ "a": [1, { "b": null }] }));
        same::<char>(json!("ab"));
        same::<String>(json!(1));
        same::<bool>(json!("true"));
        same::<i128>(json!(-5));
        same::<u128>(json!(5));
        same::<f32>(json!(1.5));
        same::<Shape>(json!("Dot"));
        same::<Shape>(json!(true));
        same::<BTreeMap<char, u8>>(json!({ "a": 1, "bc": 2 }));
        same::<BTreeMap<Unit, u8>>(json!({ "Dot": 1, "Line": 2 }));
        same::<BTreeMap<Unit, u8>>(json!({ "Square": 1 }));
        same::<BTreeMap<Option<u8>, u8>>(json!({ "1": 1, "x": 2 }));
        same::<BTreeMap<i128, u8>>(json!({ "-1": 1 }));
        same::<BTreeMap<i8, u8>>(json!({ "1.5": 1 }));
        same::<BTreeMap<i8, u8>>(json!({ "1e400": 1 }));
        same::<BTreeMap<i8, u8>>(json!({ "300": 1 }));
    }
}
