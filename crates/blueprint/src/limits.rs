//! Decoder ceilings (spec §2, §3): the eight limits of the ceiling family.
//! They are tighten-only: a caller may lower a limit, never raise it above the
//! shipped default (`bounds.new`). Never conflated with the bounds algebra.

use crate::error::{fail, Code, Error, Result};
use crate::json::Value;

/// One of the eight decoder limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Limit {
    /// Bytes of the whole input.
    Bytes,
    /// Nesting depth of arrays and objects.
    Depth,
    /// Items in one array.
    Items,
    /// Bytes of one member name.
    Key,
    /// Members in one object.
    Members,
    /// Values in the whole document.
    Nodes,
    /// Bytes of one number lexeme.
    NumberLexeme,
    /// Bytes of one string.
    String,
}

impl Limit {
    /// All eight, in canonical (sorted) order.
    pub const ALL: [Limit; 8] = [
        Limit::Bytes,
        Limit::Depth,
        Limit::Items,
        Limit::Key,
        Limit::Members,
        Limit::Nodes,
        Limit::NumberLexeme,
        Limit::String,
    ];

    /// Wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Limit::Bytes => "bytes",
            Limit::Depth => "depth",
            Limit::Items => "items",
            Limit::Key => "key",
            Limit::Members => "members",
            Limit::Nodes => "nodes",
            Limit::NumberLexeme => "number_lexeme",
            Limit::String => "string",
        }
    }

    /// Parses a wire name.
    pub fn parse(s: &str) -> Option<Limit> {
        Limit::ALL.into_iter().find(|l| l.as_str() == s)
    }

    /// The shipped default, which is also the maximum a caller may ask for.
    pub fn default_value(self) -> u64 {
        match self {
            Limit::Bytes => 5_000_000,
            Limit::Depth | Limit::NumberLexeme => 64,
            Limit::Items => 10_000,
            Limit::Key | Limit::Members => 1_000,
            Limit::Nodes => 200_000,
            Limit::String => 100_000,
        }
    }
}

/// The decoder ceilings in force for one decode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Limits {
    /// Most bytes of input ([`Limit::Bytes`]).
    pub bytes: u64,
    /// Deepest nesting ([`Limit::Depth`]).
    pub depth: u64,
    /// Most items in one array ([`Limit::Items`]).
    pub items: u64,
    /// Longest member name, in bytes ([`Limit::Key`]).
    pub key: u64,
    /// Most members in one object ([`Limit::Members`]).
    pub members: u64,
    /// Most values in the document ([`Limit::Nodes`]).
    pub nodes: u64,
    /// Longest number lexeme, in bytes ([`Limit::NumberLexeme`]).
    pub number_lexeme: u64,
    /// Longest string, in bytes ([`Limit::String`]).
    pub string: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            bytes: Limit::Bytes.default_value(),
            depth: Limit::Depth.default_value(),
            items: Limit::Items.default_value(),
            key: Limit::Key.default_value(),
            members: Limit::Members.default_value(),
            nodes: Limit::Nodes.default_value(),
            number_lexeme: Limit::NumberLexeme.default_value(),
            string: Limit::String.default_value(),
        }
    }
}

impl Limits {
    /// The value of one limit.
    pub fn get(&self, l: Limit) -> u64 {
        match l {
            Limit::Bytes => self.bytes,
            Limit::Depth => self.depth,
            Limit::Items => self.items,
            Limit::Key => self.key,
            Limit::Members => self.members,
            Limit::Nodes => self.nodes,
            Limit::NumberLexeme => self.number_lexeme,
            Limit::String => self.string,
        }
    }

    fn set(&mut self, l: Limit, v: u64) {
        match l {
            Limit::Bytes => self.bytes = v,
            Limit::Depth => self.depth = v,
            Limit::Items => self.items = v,
            Limit::Key => self.key = v,
            Limit::Members => self.members = v,
            Limit::Nodes => self.nodes = v,
            Limit::NumberLexeme => self.number_lexeme = v,
            Limit::String => self.string = v,
        }
    }

    /// `bounds.new`: the defaults tightened by `overrides` (an object of
    /// limit name → positive integer). Pinned order: shape (`invalid_type`),
    /// then per member in document order: name (`unknown_bound`), type
    /// (`invalid_type`), floor (`invalid_constraint`), ceiling (`ceiling:<limit>`).
    pub fn new(overrides: &Value) -> Result<Limits> {
        let Value::Object(map) = overrides else {
            return fail(
                Code::InvalidType,
                "bounds",
                format!("expected an object of limits, got {}", overrides.kind()),
            );
        };
        let mut out = Limits::default();
        for (name, v) in map.iter() {
            let Some(limit) = Limit::parse(name) else {
                return fail(Code::UnknownBound, format!("bounds.{name}"), "not one of the eight decoder limits");
            };
            let Some(n) = v.as_i64() else {
                return fail(
                    Code::InvalidType,
                    format!("bounds.{name}"),
                    format!("expected an integer, got {}", v.kind()),
                );
            };
            if n < 1 {
                return fail(Code::InvalidConstraint, format!("bounds.{name}"), format!("{n} is below the floor of 1"));
            }
            let n = n.unsigned_abs();
            if n > limit.default_value() {
                return Err(Error::ceiling(
                    limit,
                    format!("bounds.{name}"),
                    format!("{n} exceeds the shipped maximum {} (ceilings only tighten)", limit.default_value()),
                ));
            }
            out.set(limit, n);
        }
        Ok(out)
    }

    /// The limits as a JSON object (`bounds.new` result).
    pub fn to_value(&self) -> Value {
        Value::Object(crate::json::Map::from_pairs(
            Limit::ALL.iter().map(|l| (l.as_str().to_string(), Value::from_u64(self.get(*l)))).collect(),
        ))
    }
}
