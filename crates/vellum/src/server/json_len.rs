//! [`json_len`]: about the memory a value takes when kept as parsed JSON, measured by
//! serializing it into a counter (a `serde::Serializer` of its own, writing nothing) that
//! gives up as soon as the count passes a bound. A string is weighed by its length before
//! any of its bytes is read, so a 4 MB string costs no more to refuse than a short one: what
//! a refused `initialize` or task costs the runtime worker that measures it is its parse,
//! not a second pass over its bytes.
//!
//! Not here: the limits it is measured against (`limits.rs`).

use serde::Serialize;
use serde::ser::{self, Impossible};

/// What one value kept as a `serde_json::Value` takes beyond its JSON text: the value itself
/// and as much again of room in the vector or B-tree node holding it (both grow by halves
/// and doubles).
pub(crate) const VALUE_COST: usize = 2 * std::mem::size_of::<serde_json::Value>();

/// What one object member takes beyond its JSON text and its value: the key's `String` and
/// its heap block (an allocator's smallest is 16 to 32 bytes).
pub(crate) const MEMBER_COST: usize = std::mem::size_of::<String>() + 32;

/// The struct name through which `serde_json::value::RawValue` serializes its text.
const RAW_VALUE: &str = "$serde_json::private::RawValue";

/// About the memory `value` takes when kept as parsed JSON (`serde_json::Value`): its
/// compact JSON bytes plus [`VALUE_COST`] per value and [`MEMBER_COST`] per object member;
/// `None` when that is more than `max` (or it cannot be serialized: then nothing of it can
/// be kept either). A value of many tiny nodes (`{"a":0,...}`, `[[],[],...]`) takes 10-25
/// times its JSON bytes in memory; this counts it so.
pub(crate) fn json_len<T: Serialize + ?Sized>(value: &T, max: usize) -> Option<usize> {
    let mut m = Meter { n: 0, max };
    value.serialize(&mut m).ok()?;
    Some(m.n)
}

/// The count so far, and the bound it may not pass.
struct Meter {
    n: usize,
    max: usize,
}

/// The count passed the bound (or the value cannot be serialized).
#[derive(Debug)]
struct Past;

impl std::fmt::Display for Past {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("past the bound")
    }
}

impl std::error::Error for Past {}

impl ser::Error for Past {
    fn custom<T: std::fmt::Display>(_: T) -> Self {
        Past
    }
}

impl Meter {
    fn add(&mut self, n: usize) -> Result<(), Past> {
        self.n = self.n.saturating_add(n);
        if self.n > self.max {
            return Err(Past);
        }
        Ok(())
    }

    /// A JSON string of `s`, quotes and escapes included (no value cost: the caller adds
    /// it, or not for a key).
    fn string(&mut self, s: &str) -> Result<(), Past> {
        // Escapes only lengthen it: past the bound as it is, it is past it escaped.
        self.add(s.len() + 2)?;
        let escapes: usize = s.bytes().map(escape_extra).sum();
        self.add(escapes)
    }

    /// A scalar written as `len` bytes of JSON.
    fn scalar(&mut self, len: usize) -> Result<(), Past> {
        self.add(VALUE_COST + len)
    }

    /// The start of an object or array (`{` or `[`).
    fn open(&mut self) -> Result<(), Past> {
        self.add(VALUE_COST + 1)
    }

    /// `{"variant":` of an externally tagged enum variant; its closing `}` is the caller's.
    fn variant_key(&mut self, variant: &str) -> Result<(), Past> {
        self.open()?;
        self.add(MEMBER_COST)?;
        self.string(variant)?;
        self.add(1)
    }
}

/// The bytes JSON adds to escape `b` (serde_json's escapes: `\n`-style for five controls,
/// `\u00XX` for the other controls, a backslash before `"` and `\`).
fn escape_extra(b: u8) -> usize {
    match b {
        b'"' | b'\\' | 0x08 | 0x09 | 0x0a | 0x0c | 0x0d => 1,
        0..0x20 => 5,
        _ => 0,
    }
}

/// Decimal digits of `n`.
fn digits(mut n: u128) -> usize {
    let mut d = 1;
    while n >= 10 {
        n /= 10;
        d += 1;
    }
    d
}

fn signed(n: i128) -> usize {
    usize::from(n < 0) + digits(n.unsigned_abs())
}

/// serde_json's text of a float (`null` when not finite).
fn float(v: f64) -> usize {
    serde_json::to_vec(&v).map_or(4, |t| t.len())
}

/// An object, array or raw value being counted.
struct Compound<'a> {
    m: &'a mut Meter,
    first: bool,
    /// Closing bytes counted at its end (`]`, `}`, and a variant's `}`).
    close: usize,
    /// A `RawValue`: its one field is JSON text, counted as it is.
    raw: bool,
}

impl Compound<'_> {
    fn comma(&mut self) -> Result<(), Past> {
        if !std::mem::replace(&mut self.first, false) {
            self.m.add(1)?;
        }
        Ok(())
    }

    fn element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Past> {
        self.comma()?;
        value.serialize(&mut *self.m)
    }

    fn member<T: Serialize + ?Sized>(&mut self, key: &str, value: &T) -> Result<(), Past> {
        if self.raw {
            return value.serialize(RawText(&mut *self.m));
        }
        self.comma()?;
        self.m.add(MEMBER_COST)?;
        self.m.string(key)?;
        self.m.add(1)?;
        value.serialize(&mut *self.m)
    }

    fn end(self) -> Result<(), Past> {
        self.m.add(self.close)
    }
}

impl<'a> Compound<'a> {
    fn new(m: &'a mut Meter, close: usize) -> Result<Self, Past> {
        m.open()?;
        Ok(Compound {
            m,
            first: true,
            close,
            raw: false,
        })
    }
}

/// Implements a compound trait of `Compound` whose elements are values.
macro_rules! elements {
    ($($tr:ident :: $method:ident),*) => {$(
        impl ser::$tr for Compound<'_> {
            type Ok = ();
            type Error = Past;
            fn $method<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Past> {
                self.element(value)
            }
            fn end(self) -> Result<(), Past> {
                Compound::end(self)
            }
        }
    )*};
}

elements!(
    SerializeSeq::serialize_element,
    SerializeTuple::serialize_element,
    SerializeTupleStruct::serialize_field,
    SerializeTupleVariant::serialize_field
);

/// Implements a compound trait of `Compound` whose members have static names.
macro_rules! members {
    ($($tr:ident),*) => {$(
        impl ser::$tr for Compound<'_> {
            type Ok = ();
            type Error = Past;
            fn serialize_field<T: Serialize + ?Sized>(
                &mut self,
                key: &'static str,
                value: &T,
            ) -> Result<(), Past> {
                self.member(key, value)
            }
            fn end(self) -> Result<(), Past> {
                Compound::end(self)
            }
        }
    )*};
}

members!(SerializeStruct, SerializeStructVariant);

impl ser::SerializeMap for Compound<'_> {
    type Ok = ();
    type Error = Past;

    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), Past> {
        self.comma()?;
        self.m.add(MEMBER_COST)?;
        key.serialize(Key(&mut *self.m))?;
        self.m.add(1)
    }

    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Past> {
        value.serialize(&mut *self.m)
    }

    fn end(self) -> Result<(), Past> {
        Compound::end(self)
    }
}

impl<'a> ser::Serializer for &'a mut Meter {
    type Ok = ();
    type Error = Past;
    type SerializeSeq = Compound<'a>;
    type SerializeTuple = Compound<'a>;
    type SerializeTupleStruct = Compound<'a>;
    type SerializeTupleVariant = Compound<'a>;
    type SerializeMap = Compound<'a>;
    type SerializeStruct = Compound<'a>;
    type SerializeStructVariant = Compound<'a>;

    fn serialize_bool(self, v: bool) -> Result<(), Past> {
        self.scalar(if v { 4 } else { 5 })
    }
    fn serialize_i8(self, v: i8) -> Result<(), Past> {
        self.scalar(signed(v.into()))
    }
    fn serialize_i16(self, v: i16) -> Result<(), Past> {
        self.scalar(signed(v.into()))
    }
    fn serialize_i32(self, v: i32) -> Result<(), Past> {
        self.scalar(signed(v.into()))
    }
    fn serialize_i64(self, v: i64) -> Result<(), Past> {
        self.scalar(signed(v.into()))
    }
    fn serialize_i128(self, v: i128) -> Result<(), Past> {
        self.scalar(signed(v))
    }
    fn serialize_u8(self, v: u8) -> Result<(), Past> {
        self.scalar(digits(v.into()))
    }
    fn serialize_u16(self, v: u16) -> Result<(), Past> {
        self.scalar(digits(v.into()))
    }
    fn serialize_u32(self, v: u32) -> Result<(), Past> {
        self.scalar(digits(v.into()))
    }
    fn serialize_u64(self, v: u64) -> Result<(), Past> {
        self.scalar(digits(v.into()))
    }
    fn serialize_u128(self, v: u128) -> Result<(), Past> {
        self.scalar(digits(v))
    }
    fn serialize_f32(self, v: f32) -> Result<(), Past> {
        self.scalar(float(v.into()))
    }
    fn serialize_f64(self, v: f64) -> Result<(), Past> {
        self.scalar(float(v))
    }
    fn serialize_char(self, v: char) -> Result<(), Past> {
        self.serialize_str(v.encode_utf8(&mut [0; 4]))
    }
    fn serialize_str(self, v: &str) -> Result<(), Past> {
        self.add(VALUE_COST)?;
        self.string(v)
    }
    fn serialize_bytes(self, v: &[u8]) -> Result<(), Past> {
        // An array of numbers, as serde_json writes bytes.
        let mut seq = Compound::new(self, 1)?;
        for b in v {
            ser::SerializeSeq::serialize_element(&mut seq, b)?;
        }
        seq.end()
    }
    fn serialize_none(self) -> Result<(), Past> {
        self.scalar(4)
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<(), Past> {
        value.serialize(self)
    }
    fn serialize_unit(self) -> Result<(), Past> {
        self.scalar(4)
    }
    fn serialize_unit_struct(self, _name: &'static str) -> Result<(), Past> {
        self.scalar(4)
    }
    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
    ) -> Result<(), Past> {
        self.serialize_str(variant)
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        value: &T,
    ) -> Result<(), Past> {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<(), Past> {
        self.variant_key(variant)?;
        value.serialize(&mut *self)?;
        self.add(1)
    }
    fn serialize_seq(self, _len: Option<usize>) -> Result<Compound<'a>, Past> {
        Compound::new(self, 1)
    }
    fn serialize_tuple(self, _len: usize) -> Result<Compound<'a>, Past> {
        Compound::new(self, 1)
    }
    fn serialize_tuple_struct(
        self,
        _name: &'static str,
        _len: usize,
    ) -> Result<Compound<'a>, Past> {
        Compound::new(self, 1)
    }
    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<Compound<'a>, Past> {
        self.variant_key(variant)?;
        Compound::new(self, 2)
    }
    fn serialize_map(self, _len: Option<usize>) -> Result<Compound<'a>, Past> {
        Compound::new(self, 1)
    }
    fn serialize_struct(self, name: &'static str, _len: usize) -> Result<Compound<'a>, Past> {
        if name == RAW_VALUE {
            return Ok(Compound {
                m: self,
                first: true,
                close: 0,
                raw: true,
            });
        }
        Compound::new(self, 1)
    }
    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<Compound<'a>, Past> {
        self.variant_key(variant)?;
        Compound::new(self, 2)
    }
}

/// Counts a map key: a string, or a number or bool serde_json writes quoted; a key is not
/// a value of its own (its member cost is counted instead).
struct Key<'a>(&'a mut Meter);

/// Counts the text of a `RawValue` as it is (it is JSON already), one value.
struct RawText<'a>(&'a mut Meter);

/// Refuses everything but the few `serialize_*` methods a [`Key`] or [`RawText`] defines
/// (anything else cannot be written there).
macro_rules! refuse {
    ($($method:ident($($arg:ty),*) -> $ret:ty;)*) => {$(
        fn $method(self, $(_: $arg),*) -> Result<$ret, Past> {
            Err(Past)
        }
    )*};
}

/// The `serialize_*` methods of a [`Key`] and a [`RawText`] that refuse.
macro_rules! refused_methods {
    () => {
        refuse! {
            serialize_bytes(&[u8]) -> ();
            serialize_none() -> ();
            serialize_unit() -> ();
            serialize_unit_struct(&'static str) -> ();
            serialize_seq(Option<usize>) -> Impossible<(), Past>;
            serialize_tuple(usize) -> Impossible<(), Past>;
            serialize_tuple_struct(&'static str, usize) -> Impossible<(), Past>;
            serialize_tuple_variant(&'static str, u32, &'static str, usize)
                -> Impossible<(), Past>;
            serialize_map(Option<usize>) -> Impossible<(), Past>;
            serialize_struct(&'static str, usize) -> Impossible<(), Past>;
            serialize_struct_variant(&'static str, u32, &'static str, usize)
                -> Impossible<(), Past>;
            serialize_f32(f32) -> ();
            serialize_f64(f64) -> ();
        }
        fn serialize_some<T: Serialize + ?Sized>(self, _: &T) -> Result<(), Past> {
            Err(Past)
        }
        fn serialize_newtype_variant<T: Serialize + ?Sized>(
            self,
            _: &'static str,
            _: u32,
            _: &'static str,
            _: &T,
        ) -> Result<(), Past> {
            Err(Past)
        }
        fn serialize_unit_variant(
            self,
            _: &'static str,
            _: u32,
            variant: &'static str,
        ) -> Result<(), Past> {
            self.serialize_str(variant)
        }
        fn serialize_newtype_struct<T: Serialize + ?Sized>(
            self,
            _: &'static str,
            value: &T,
        ) -> Result<(), Past> {
            value.serialize(self)
        }
        fn serialize_char(self, v: char) -> Result<(), Past> {
            self.serialize_str(v.encode_utf8(&mut [0; 4]))
        }
    };
}

/// Implements the number methods of a [`Key`]: a number written in quotes.
macro_rules! quoted_numbers {
    ($($method:ident($ty:ty) = $len:ident;)*) => {$(
        fn $method(self, v: $ty) -> Result<(), Past> {
            self.0.add($len(v.into()) + 2)
        }
    )*};
}

impl ser::Serializer for Key<'_> {
    type Ok = ();
    type Error = Past;
    type SerializeSeq = Impossible<(), Past>;
    type SerializeTuple = Impossible<(), Past>;
    type SerializeTupleStruct = Impossible<(), Past>;
    type SerializeTupleVariant = Impossible<(), Past>;
    type SerializeMap = Impossible<(), Past>;
    type SerializeStruct = Impossible<(), Past>;
    type SerializeStructVariant = Impossible<(), Past>;

    refused_methods!();
    quoted_numbers! {
        serialize_i8(i8) = signed;
        serialize_i16(i16) = signed;
        serialize_i32(i32) = signed;
        serialize_i64(i64) = signed;
        serialize_i128(i128) = signed;
        serialize_u8(u8) = digits;
        serialize_u16(u16) = digits;
        serialize_u32(u32) = digits;
        serialize_u64(u64) = digits;
        serialize_u128(u128) = digits;
    }

    fn serialize_bool(self, v: bool) -> Result<(), Past> {
        self.0.add(if v { 6 } else { 7 })
    }
    fn serialize_str(self, v: &str) -> Result<(), Past> {
        self.0.string(v)
    }
}

impl ser::Serializer for RawText<'_> {
    type Ok = ();
    type Error = Past;
    type SerializeSeq = Impossible<(), Past>;
    type SerializeTuple = Impossible<(), Past>;
    type SerializeTupleStruct = Impossible<(), Past>;
    type SerializeTupleVariant = Impossible<(), Past>;
    type SerializeMap = Impossible<(), Past>;
    type SerializeStruct = Impossible<(), Past>;
    type SerializeStructVariant = Impossible<(), Past>;

    refused_methods!();
    refuse! {
        serialize_bool(bool) -> ();
        serialize_i8(i8) -> ();
        serialize_i16(i16) -> ();
        serialize_i32(i32) -> ();
        serialize_i64(i64) -> ();
        serialize_i128(i128) -> ();
        serialize_u8(u8) -> ();
        serialize_u16(u16) -> ();
        serialize_u32(u32) -> ();
        serialize_u64(u64) -> ();
        serialize_u128(u128) -> ();
    }

    fn serialize_str(self, v: &str) -> Result<(), Past> {
        self.0.scalar(v.len())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{MEMBER_COST, VALUE_COST, json_len};

    #[test]
    fn json_len_counts_and_stops_past_the_bound() {
        let v = json!({"a": "xyz"});
        // 11 bytes of JSON, two values (the object, the string) and one member.
        let n = 11 + 2 * VALUE_COST + MEMBER_COST;
        assert_eq!(json_len(&v, 1000), Some(n));
        assert_eq!(json_len(&v, n), Some(n));
        assert_eq!(json_len(&v, n - 1), None);
        assert_eq!(json_len(&"x".repeat(1 << 20), 1000), None);
    }

    /// What a value keeps as a `serde_json::Value`: one cost per value, one per member.
    fn costs(v: &serde_json::Value) -> usize {
        VALUE_COST
            + match v {
                serde_json::Value::Array(a) => a.iter().map(costs).sum(),
                serde_json::Value::Object(o) => o.values().map(|x| MEMBER_COST + costs(x)).sum(),
                _ => 0,
            }
    }

    /// The JSON part of the count is serde_json's compact text, byte for byte, whatever the
    /// shape (escapes, numbers, enums, maps with number keys, bytes, unit).
    #[test]
    fn json_len_counts_the_compact_text() {
        #[derive(serde::Serialize)]
        enum E {
            Unit,
            New(u8),
            Tuple(i32, f64),
            Struct { x: Option<bool> },
        }
        let v = (
            json!({"s": "a\"b\\c\nd\u{1}é", "n": [-12, 3.5, 1e300, null, true, false], "o": {}}),
            [
                E::Unit,
                E::New(7),
                E::Tuple(-1, 0.25),
                E::Struct { x: None },
            ],
            std::collections::BTreeMap::from([(10u32, 'c'), (2, 'd')]),
            (b"ab".as_slice(), (), u64::MAX, i64::MIN),
        );
        let text = serde_json::to_string(&v).unwrap_or_default();
        let value = serde_json::to_value(&v).unwrap_or_default();
        assert_eq!(json_len(&v, usize::MAX), Some(text.len() + costs(&value)));
        // A raw value is one value, its text as it is.
        let raw = r#"{"r": [1, 2]}"#;
        let raw_value = serde_json::value::RawValue::from_string(raw.into()).ok();
        assert_eq!(
            json_len(&raw_value, usize::MAX),
            Some(raw.len() + VALUE_COST)
        );
    }

    #[test]
    fn a_long_string_is_refused_without_reading_it() {
        // Measured by its length alone: as fast for 16 MiB as for 1 KiB (the bound is far
        // below both), where a scan of its bytes would take a debug build seconds.
        let big = "x".repeat(16 << 20);
        let start = std::time::Instant::now();
        for _ in 0..100 {
            let v = std::collections::BTreeMap::from([("k", big.as_str())]);
            assert_eq!(json_len(&v, 64 * 1024), None);
        }
        assert!(start.elapsed() < std::time::Duration::from_secs(5));
    }

    #[test]
    fn json_len_counts_tiny_nodes_near_their_memory() {
        // 6,000 members of `"aNNNN":0`: about 60 KiB of JSON, several times that kept as a
        // `serde_json::Value`.
        let members: serde_json::Map<String, serde_json::Value> =
            (0..6000).map(|i| (format!("a{i:04}"), 0.into())).collect();
        let v = serde_json::Value::Object(members);
        let json = serde_json::to_string(&v).unwrap_or_default().len();
        let counted = json_len(&v, usize::MAX).unwrap_or_default();
        assert!(json < 64 * 1024, "{json}");
        assert!(counted > 6000 * (VALUE_COST + MEMBER_COST), "{counted}");
        assert_eq!(json_len(&v, 64 * 1024), None);
    }
}
