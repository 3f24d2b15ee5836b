//! The field names serde knows for a struct, read from its own
//! `Deserialize` implementation: derived code hands them to
//! `Deserializer::deserialize_struct`, and a deserializer that only records
//! them gets them without a value to parse. So a list of known keys can
//! never fall behind the struct (a field added later is known at once).
//!
//! Works for structs without `#[serde(flatten)]` (those are read as maps,
//! with no field list); such structs keep their unknown keys themselves.

use serde::Deserialize;
use serde::de::{self, Deserializer, Visitor};

/// The fields of `T`, or `None` when `T` does not name them.
pub(super) fn of<'de, T: Deserialize<'de>>() -> Option<&'static [&'static str]> {
    let mut recorder = Recorder { fields: None };
    let _ = T::deserialize(&mut recorder);
    recorder.fields
}

struct Recorder {
    fields: Option<&'static [&'static str]>,
}

/// The error that ends the recording.
#[derive(Debug)]
struct Recorded;

impl std::fmt::Display for Recorded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("field names recorded")
    }
}

impl std::error::Error for Recorded {}

impl de::Error for Recorded {
    fn custom<M: std::fmt::Display>(_: M) -> Self {
        Recorded
    }
}

impl<'de> Deserializer<'de> for &mut Recorder {
    type Error = Recorded;

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        _visitor: V,
    ) -> Result<V::Value, Recorded> {
        self.fields = Some(fields);
        Err(Recorded)
    }

    fn deserialize_any<V: Visitor<'de>>(self, _visitor: V) -> Result<V::Value, Recorded> {
        Err(Recorded)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct map enum identifier ignored_any
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Deserialize)]
    #[allow(dead_code)]
    struct Sample {
        name: String,
        #[serde(default)]
        later: Option<u32>,
    }

    #[test]
    fn the_fields_come_from_the_struct() {
        assert_eq!(of::<Sample>(), Some(&["name", "later"][..]));
        assert_eq!(of::<String>(), None);
    }
}
