//! The keys a type knows at a place in it, read from its own `Deserialize`
//! implementation.
//!
//! Derived code hands a struct's field names to
//! `Deserializer::deserialize_struct`. A deserializer that follows a
//! [`KeyPath`] — offering, at each level, only the one key (or array
//! element) of the path — reaches the struct at the path's end, records
//! its fields and stops, without a value ever being parsed. So the keys a
//! "did you mean" chooses from can never fall behind the types (a field
//! added later is known at once), and no program keeps a list of its keys
//! by hand.
//!
//! A struct with `#[serde(flatten)]` is read as a map, with no field list:
//! there the answer is `None`.

use std::cell::Cell;

use serde::Deserialize;
use serde::de::value::StrDeserializer;
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

use super::location::KeyPath;

/// The keys `T` knows in the table at `table` (the top level for an empty
/// path), or `None` when that table is not a struct that names its fields.
pub(super) fn known_at<T: for<'de> Deserialize<'de>>(
    table: &KeyPath,
) -> Option<&'static [&'static str]> {
    let found = Cell::new(None);
    let steps: Vec<Result<&str, usize>> = table.steps().collect();
    let _ = T::deserialize(Probe {
        steps: &steps,
        found: &found,
    });
    found.get()
}

/// Follows `steps`; records the fields of the struct where they end.
struct Probe<'a> {
    steps: &'a [Result<&'a str, usize>],
    found: &'a Cell<Option<&'static [&'static str]>>,
}

impl<'a> Probe<'a> {
    fn next(&self) -> Self {
        Probe {
            steps: &self.steps[1..],
            found: self.found,
        }
    }
}

/// The error that ends the walk, whether the fields were found or not.
#[derive(Debug)]
struct Stop;

impl std::fmt::Display for Stop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the walk to a table's fields ended")
    }
}

impl std::error::Error for Stop {}

impl de::Error for Stop {
    fn custom<M: std::fmt::Display>(_: M) -> Self {
        Stop
    }
}

impl<'de> Deserializer<'de> for Probe<'_> {
    type Error = Stop;

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Stop> {
        if self.steps.is_empty() {
            self.found.set(Some(fields));
            return Err(Stop);
        }
        self.deserialize_map(visitor)
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Stop> {
        match self.steps.first() {
            Some(Ok(key)) => visitor.visit_map(OneEntry {
                key: Some(*key),
                value: self.next(),
            }),
            _ => Err(Stop),
        }
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Stop> {
        match self.steps.first() {
            // Every element has the same type: the first one stands for
            // the one the path names.
            Some(Err(_)) => visitor.visit_seq(OneElement {
                element: Some(self.next()),
            }),
            _ => Err(Stop),
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Stop> {
        visitor.visit_some(self)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Stop> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_any<V: Visitor<'de>>(self, _visitor: V) -> Result<V::Value, Stop> {
        Err(Stop)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf unit unit_struct tuple tuple_struct enum identifier
        ignored_any
    }
}

/// A map (or struct) with the one key of the path.
struct OneEntry<'a> {
    key: Option<&'a str>,
    value: Probe<'a>,
}

impl<'de> MapAccess<'de> for OneEntry<'_> {
    type Error = Stop;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Stop> {
        match self.key.take() {
            Some(key) => seed
                .deserialize(StrDeserializer::<Stop>::new(key))
                .map(Some),
            None => Ok(None),
        }
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Stop> {
        seed.deserialize(Probe {
            steps: self.value.steps,
            found: self.value.found,
        })
    }
}

/// An array with one element, standing for the one the path names.
struct OneElement<'a> {
    element: Option<Probe<'a>>,
}

impl<'de> SeqAccess<'de> for OneElement<'_> {
    type Error = Stop;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, Stop> {
        match self.element.take() {
            Some(probe) => seed.deserialize(probe).map(Some),
            None => Ok(None),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    #[derive(Deserialize)]
    #[allow(dead_code)]
    struct Top {
        name: String,
        #[serde(default)]
        later: Option<u32>,
        inner: Option<Inner>,
        #[serde(default)]
        list: Vec<Inner>,
        #[serde(default)]
        named: BTreeMap<String, Inner>,
        #[serde(default)]
        wrapped: Wrapped,
    }

    #[derive(Deserialize, Default)]
    #[allow(dead_code)]
    struct Inner {
        deep: u32,
        deeper: bool,
    }

    #[derive(Deserialize, Default)]
    #[allow(dead_code)]
    struct Wrapped(Inner);

    #[derive(Deserialize)]
    #[allow(dead_code)]
    struct Flat {
        #[serde(flatten)]
        rest: BTreeMap<String, u32>,
    }

    #[test]
    fn the_fields_come_from_the_types_along_the_path() {
        let top = ["name", "later", "inner", "list", "named", "wrapped"];
        let inner = Some(&["deep", "deeper"][..]);
        assert_eq!(known_at::<Top>(&KeyPath::default()), Some(&top[..]));
        assert_eq!(known_at::<Top>(&KeyPath::keys(&["inner"])), inner);
        assert_eq!(known_at::<Top>(&KeyPath::keys(&["list"]).index(3)), inner);
        assert_eq!(known_at::<Top>(&KeyPath::keys(&["named", "any"])), inner);
        assert_eq!(known_at::<Top>(&KeyPath::keys(&["wrapped"])), inner);
        // No struct there, or no field list.
        assert_eq!(known_at::<Top>(&KeyPath::keys(&["name"])), None);
        assert_eq!(known_at::<Top>(&KeyPath::keys(&["nothing"])), None);
        assert_eq!(known_at::<Flat>(&KeyPath::default()), None);
        assert_eq!(known_at::<String>(&KeyPath::default()), None);
    }
}
