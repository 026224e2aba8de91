//! Closed-world reading of a receipt core's map entries (§8: the core is
//! exactly the profile's fields). The value path ([`super::ReceiptCore::from_value`])
//! hands its entries here as [`FVal`]s.

use jcp::cbor::{ContentId, SchemaError};

use crate::cose::DidCache;
use crate::error::Error;
use crate::fields::{slot_of, Field, FIELDS};

/// The schema object named in a core's errors.
pub(super) const OBJ: &str = "jcp_receipt";

/// A core field value as the profile reads it (anything else is `Other`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FVal<'a> {
    /// A text string's bytes. UTF-8 is checked where the text is read as
    /// text ([`Entries::text`]); ids and keys are checked by their own
    /// parsers, which accept only ASCII, so no string is validated twice.
    Text(&'a [u8]),
    Uint(u64),
    Texts(TextItems<'a>),
    Other,
}

/// An array of text strings as a core value: the zero-copy reader's items
/// left in their encoding (each checked to be a text string and a content
/// id when read, so walking them again cannot fail), or the value path's list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TextItems<'a> {
    /// `n` CBOR text strings back to back.
    Cbor {
        enc: &'a [u8],
        n: usize,
    },
    List(&'a [&'a [u8]]),
}

impl<'a> TextItems<'a> {
    pub(super) fn len(self) -> usize {
        match self {
            Self::Cbor { n, .. } => n,
            Self::List(l) => l.len(),
        }
    }

    pub(super) fn iter(self) -> impl Iterator<Item = &'a [u8]> {
        let (enc, list) = match self {
            Self::Cbor { enc, .. } => (enc, &[][..]),
            Self::List(l) => (&[][..], l),
        };
        crate::raw::text_items(enc).chain(list.iter().copied())
    }
}

/// Closed-world reading of core entries (mirrors `jcp::cbor::Fields`). One
/// pass sorts the entries into per-field slots, so each read is an index,
/// not a search; a key the profile does not know, or one given twice, is
/// refused by [`Entries::finish`].
pub(super) struct Entries<'e, 'a> {
    items: &'e [(&'a [u8], FVal<'a>)],
    /// Entry index of each known field present.
    slots: [Option<usize>; FIELDS],
    /// Bit i set = slot i taken.
    taken: u32,
    /// The first entry that is unknown or repeats a field.
    stray: Option<usize>,
}

impl<'e, 'a> Entries<'e, 'a> {
    pub(super) fn new(entries: &'e [(&'a [u8], FVal<'a>)]) -> Self {
        let mut slots = [None; FIELDS];
        let mut stray = None;
        for (i, (k, _)) in entries.iter().enumerate() {
            match slot_of(k) {
                Some(s) if slots[s].is_none() => slots[s] = Some(i),
                _ => {
                    stray.get_or_insert(i);
                }
            }
        }
        Self { items: entries, slots, taken: 0, stray }
    }

    fn opt(&mut self, field: Field) -> Option<&'e FVal<'a>> {
        let i = self.slots[field.slot()]?;
        self.taken |= 1 << field.slot();
        Some(&self.items[i].1)
    }

    fn wrong(field: Field, what: &str) -> Error {
        SchemaError::Invalid { object: OBJ, field: field.name(), problem: format!("expected {what}") }.into()
    }

    pub(super) fn text(&mut self, field: Field) -> Result<&'a str, Error> {
        self.opt_text(field)?.ok_or_else(|| SchemaError::Missing { object: OBJ, field: field.name() }.into())
    }

    pub(super) fn opt_raw(&mut self, field: Field) -> Result<Option<&'a [u8]>, Error> {
        match self.opt(field) {
            None => Ok(None),
            Some(FVal::Text(t)) => Ok(Some(t)),
            Some(_) => Err(Self::wrong(field, "text")),
        }
    }

    pub(super) fn raw(&mut self, field: Field) -> Result<&'a [u8], Error> {
        self.opt_raw(field)?.ok_or_else(|| SchemaError::Missing { object: OBJ, field: field.name() }.into())
    }

    pub(super) fn opt_text(&mut self, field: Field) -> Result<Option<&'a str>, Error> {
        match self.opt_raw(field)? {
            None => Ok(None),
            Some(t) => utf8(field, t).map(Some),
        }
    }

    /// A `did:key`'s text and public-key bytes (the cache compares bytes;
    /// only a miss parses, and the parser accepts only ASCII).
    pub(super) fn did(&mut self, field: Field, dids: &mut DidCache) -> Result<(&'a [u8], [u8; 32]), Error> {
        let raw = self.raw(field)?;
        Ok((raw, dids.key_bytes(raw)?))
    }

    pub(super) fn uint(&mut self, field: Field) -> Result<u64, Error> {
        self.opt_uint(field)?.ok_or_else(|| SchemaError::Missing { object: OBJ, field: field.name() }.into())
    }

    pub(super) fn opt_uint(&mut self, field: Field) -> Result<Option<u64>, Error> {
        match self.opt(field) {
            None => Ok(None),
            Some(FVal::Uint(n)) => Ok(Some(*n)),
            Some(_) => Err(Self::wrong(field, "an unsigned integer")),
        }
    }

    pub(super) fn opt_texts(&mut self, field: Field) -> Result<Option<TextItems<'a>>, Error> {
        match self.opt(field) {
            None => Ok(None),
            Some(FVal::Texts(t)) => Ok(Some(*t)),
            Some(_) => Err(Self::wrong(field, "an array of text")),
        }
    }

    pub(super) fn cid(&mut self, field: Field) -> Result<ContentId, Error> {
        let s = self.raw(field)?;
        ContentId::parse_bytes(s).ok_or_else(|| Self::not_cid(field))
    }

    /// [`Entries::cid`] through the cache's recent content ids (grant ids
    /// and resources repeat from one receipt to the next).
    pub(super) fn cid_cached(&mut self, field: Field, dids: &mut DidCache) -> Result<ContentId, Error> {
        let s = self.raw(field)?;
        dids.content_id(s).ok_or_else(|| Self::not_cid(field))
    }

    fn not_cid(field: Field) -> Error {
        Self::wrong(field, "a content id (64 lowercase hex digits)")
    }

    pub(super) fn finish(self) -> Result<(), Error> {
        let untaken = (0..FIELDS).filter(|&s| self.taken & (1 << s) == 0).filter_map(|s| self.slots[s]).min();
        match self.stray.into_iter().chain(untaken).min() {
            Some(i) => {
                Err(SchemaError::Unknown { object: OBJ, field: String::from_utf8_lossy(self.items[i].0).into_owned() }
                    .into())
            }
            None => Ok(()),
        }
    }
}

/// A field's text as UTF-8, or the error reading it as text gives.
pub(super) fn utf8(field: Field, t: &[u8]) -> Result<&str, Error> {
    std::str::from_utf8(t).map_err(|_| Entries::wrong(field, "UTF-8 text"))
}

pub(super) fn invalid(field: &'static str, problem: impl Into<String>) -> Error {
    Error::Invalid { field, problem: problem.into() }
}
