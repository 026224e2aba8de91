//! Spec §3: canonical det-CBOR (RFC 8949 §4.2.1) and content ids.
//!
//! Hand-written rather than built on `ciborium` because ciborium 0.2 does not
//! write deterministic CBOR by itself (struct fields in declaration order,
//! `BTreeMap<String, _>` in Rust string order, indefinite lengths when serde
//! gives no length) and its decoder accepts every non-canonical form this
//! module must refuse. The encoder here sorts map keys itself and the decoder
//! refuses every input that is not the one canonical encoding of its value.
//!
//! Key order: RFC 8949 §4.2.1 sorts by the bytewise order of the keys'
//! encodings; the §3 text says "length-first then bytewise". The two agree for
//! keys of one major type (the header carries the length), and every JCP
//! object has text keys only; the strict profile refuses any other key type,
//! so the two readings can never disagree on bytes we accept or produce
//! (docs/decisions.md, "§3 key order").
//!
//! | module | §3 concern |
//! |---|---|
//! | `encode` | writing a value canonically; map and text-array builders |
//! | `decode` | the strict and deterministic decoders, [`DecodeError`] |
//! | `content_id` | [`ContentId`]: blake3 of canonical bytes |
//! | `fields` | [`Fields`]: reading a map into a JCP object, [`SchemaError`] |

mod content_id;
mod decode;
mod encode;
mod fields;
#[cfg(test)]
mod tests;

pub use content_id::ContentId;
pub use decode::{
    bytes_of, decode, decode_prefix, decode_strict, map_spans_strict, text_of, uint_of, DecodeError, MapSpan,
};
pub use encode::{map, text_array, write_map, Item};
pub use fields::{Fields, SchemaError};

/// Maximum nesting depth the decoder accepts.
pub const MAX_DEPTH: usize = 64;

/// A CBOR data item. Maps keep their entries in canonical order once encoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    /// Major type 0.
    Uint(u64),
    /// Major type 1: the value is `-1 - n`.
    Nint(u64),
    /// Major type 2.
    Bytes(Vec<u8>),
    /// Major type 3.
    Text(String),
    /// Major type 4.
    Array(Vec<Value>),
    /// Major type 5.
    Map(Vec<(Value, Value)>),
    /// Major type 6.
    Tag(u64, Box<Value>),
    /// Major type 7 simple values (20 false, 21 true, 22 null, 23 undefined, …).
    Simple(u8),
    /// Major type 7 floats: the raw bits and their width in bytes (2, 4, 8).
    Float {
        /// The IEEE 754 bits, right-aligned.
        bits: u64,
        /// The encoded width in bytes: 2 (half), 4 (single) or 8 (double).
        width: u8,
    },
}

/// Which items a decode admits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Profile {
    /// JCP signed cores and content-addressed objects (§3): no floats, bools,
    /// nulls, simple values, tags or negative integers; text map keys only.
    Strict,
    /// Generic RFC 8949 §4.2.1 deterministic CBOR: any definite-length item in
    /// its one canonical form.
    Deterministic,
}
