//! JSON from outside, bounded in shape before it is built (appliance.md §13).
//!
//! A JSON document costs far more in memory once parsed than on the wire: `0,` is two bytes
//! and a 32-byte `serde_json::Value` in a vector that doubles as it grows, and `{"a":0}` is
//! seven bytes and a B-tree node of about 600. A 40 MiB `/v1/send` whose `data` was an array
//! of zeros took 1.28 GB before the answer. So every document read from a client or a remote
//! server is first walked by [`check`], which builds nothing (no value, no string: serde hands
//! it borrowed text) and counts as it reads, stopping at the first value past a limit of
//! [`Limits`]: how many values (keys included), how many objects and how deep. Only a
//! document within them is parsed into its type, so the memory a parsed body can take is
//! bounded whatever its size (`tests/integration/memory_bounds.rs` measures it on the server).
//!
//! [`from_slice`] is the one way to parse such a document.

use std::fmt;

use serde::de::{self, DeserializeOwned, DeserializeSeed, MapAccess, SeqAccess, Visitor};

/// How much one document may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Values, counting each object key as one.
    pub values: usize,
    /// Objects (each costs a map in memory, far more than its text).
    pub objects: usize,
    /// Arrays and objects nested within one another.
    pub depth: usize,
}

/// The limits of a request body, and of an answer a workflow's WEBHOOK step reads: 50,000
/// values, 5,000 objects, 32 levels. An email's `data` of 2,000 order lines of ten fields
/// each is 22,000 values and 2,000 objects; a condition tree's five levels are 20 JSON levels.
pub const REQUEST: Limits = Limits { values: 50_000, objects: 5_000, depth: 32 };

/// Which limit a document went past.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exceeded {
    Values(usize),
    Objects(usize),
    Depth(usize),
}

impl fmt::Display for Exceeded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Exceeded::Values(n) => write!(f, "holds more than {n} JSON values (object keys count as values)"),
            Exceeded::Objects(n) => write!(f, "holds more than {n} JSON objects"),
            Exceeded::Depth(n) => write!(f, "nests arrays and objects more than {n} levels deep"),
        }
    }
}

/// Why a document was not parsed.
#[derive(Debug)]
pub enum Error {
    /// Past one of the [`Limits`]; nothing was built.
    Exceeded(Exceeded),
    /// Not JSON, or not of the type asked for.
    Json(serde_json::Error),
}

/// Walks `bytes` as one JSON document without building it; an error if it is past `limits`
/// (or not JSON at all: then the serde error, for the caller's own parse to describe).
pub fn check(bytes: &[u8], limits: Limits) -> Result<(), Error> {
    let mut counter = Counter { limits, values: 0, objects: 0, depth: 0, exceeded: None };
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let walked = Walk(&mut counter).deserialize(&mut de).and_then(|()| de.end());
    match (counter.exceeded, walked) {
        (Some(exceeded), _) => Err(Error::Exceeded(exceeded)),
        (None, Err(e)) => Err(Error::Json(e)),
        (None, Ok(())) => Ok(()),
    }
}

/// Parses `bytes` into `T` once [`check`] has found it within `limits`.
pub fn from_slice<T: DeserializeOwned>(bytes: &[u8], limits: Limits) -> Result<T, Error> {
    check(bytes, limits)?;
    serde_json::from_slice(bytes).map_err(Error::Json)
}

struct Counter {
    limits: Limits,
    values: usize,
    objects: usize,
    depth: usize,
    exceeded: Option<Exceeded>,
}

impl Counter {
    fn stop<E: de::Error>(&mut self, exceeded: Exceeded) -> E {
        self.exceeded = Some(exceeded);
        E::custom(exceeded)
    }

    fn value<E: de::Error>(&mut self) -> Result<(), E> {
        self.values += 1;
        if self.values > self.limits.values {
            return Err(self.stop(Exceeded::Values(self.limits.values)));
        }
        Ok(())
    }

    fn enter<E: de::Error>(&mut self, object: bool) -> Result<(), E> {
        self.value()?;
        self.depth += 1;
        if self.depth > self.limits.depth {
            return Err(self.stop(Exceeded::Depth(self.limits.depth)));
        }
        if object {
            self.objects += 1;
            if self.objects > self.limits.objects {
                return Err(self.stop(Exceeded::Objects(self.limits.objects)));
            }
        }
        Ok(())
    }
}

/// One value of the document, counted and dropped.
struct Walk<'a>(&'a mut Counter);

impl<'de> DeserializeSeed<'de> for Walk<'_> {
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Walk<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        self.0.value()
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        self.0.value()
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        self.0.value()
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        self.0.value()
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        self.0.value()
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        self.0.value()
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        self.0.enter(false)?;
        while seq.next_element_seed(Walk(self.0))?.is_some() {}
        self.0.depth -= 1;
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        self.0.enter(true)?;
        while map.next_key_seed(Walk(self.0))?.is_some() {
            map.next_value_seed(Walk(self.0))?;
        }
        self.0.depth -= 1;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    const SMALL: Limits = Limits { values: 10, objects: 2, depth: 3 };

    fn exceeded(text: &str) -> Option<Exceeded> {
        match check(text.as_bytes(), SMALL) {
            Err(Error::Exceeded(e)) => Some(e),
            Err(Error::Json(e)) => panic!("{text}: {e}"),
            Ok(()) => None,
        }
    }

    #[test]
    fn documents_within_the_limits_parse_as_serde_json_parses_them() {
        for text in [r#"{"a":[1,2.5,"x",null,true]}"#, "[]", "0", r#""\u00e9\n""#, r#"[{"a":{}}]"#] {
            assert_eq!(exceeded(text), None, "{text}");
            let parsed: Value = from_slice(text.as_bytes(), SMALL).unwrap();
            assert_eq!(parsed, serde_json::from_str::<Value>(text).unwrap());
        }
    }

    #[test]
    fn each_limit_stops_the_walk_at_the_first_value_past_it() {
        assert_eq!(exceeded("[0,0,0,0,0,0,0,0,0]"), None, "ten values");
        assert_eq!(exceeded("[0,0,0,0,0,0,0,0,0,0]"), Some(Exceeded::Values(10)));
        assert_eq!(exceeded(r#"{"a":0,"b":0,"c":0,"d":0,"e":0}"#), Some(Exceeded::Values(10)), "keys count");
        assert_eq!(exceeded("[{},{},{}]"), Some(Exceeded::Objects(2)));
        assert_eq!(exceeded("[[[0]]]"), None);
        assert_eq!(exceeded("[[[[]]]]"), Some(Exceeded::Depth(3)));
        // Syntax is still the parser's to judge, limits first when both apply.
        assert_eq!(exceeded("[0,0,0,0,0,0,0,0,0,0,"), Some(Exceeded::Values(10)));
        assert!(matches!(check(b"[0,", SMALL), Err(Error::Json(_))));
        assert!(matches!(check(b"[0] 1", SMALL), Err(Error::Json(_))));
    }

    #[test]
    fn depth_is_counted_back_down_when_a_level_closes() {
        assert_eq!(exceeded("[[[0]],[[0]]]"), None);
    }
}
