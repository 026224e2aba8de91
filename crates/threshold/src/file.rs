//! The participant files of a ceremony: each a canonical det-CBOR map (§3)
//! with a closed key set, a `type` naming what it is, the participant
//! identifiers in the clear, and the FROST object in its own (RFC 9591
//! ciphersuite-tagged) encoding under `frost`. Secret files are written
//! owner-only (0600).

use std::path::Path;

use frost_ed25519::Identifier;
use jcp::cbor::{self, Fields, Value};

use crate::error::ThresholdError;

/// A file of a threshold ceremony.
pub trait ParticipantFile: Sized {
    /// The `type` field.
    const TYPE: &'static str;
    /// Whether it holds secret material (written 0600, never shared).
    const SECRET: bool;
    /// The canonical CBOR form.
    fn to_value(&self) -> Value;
    /// Reads the canonical form (closed world).
    fn from_value(v: &Value) -> Result<Self, ThresholdError>;
    /// Canonical bytes.
    fn to_bytes(&self) -> Vec<u8> {
        self.to_value().encode()
    }
    /// Decodes strict canonical bytes.
    fn from_bytes(bytes: &[u8]) -> Result<Self, ThresholdError> {
        Self::from_value(&cbor::decode_strict(bytes)?)
    }
}

/// Writes a participant file: a secret one owner-only (0600) from creation.
pub fn write<T: ParticipantFile>(path: &Path, item: &T) -> Result<(), ThresholdError> {
    let io = |e: std::io::Error| ThresholdError::Io { path: path.display().to_string(), problem: e.to_string() };
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create(true).truncate(true);
    #[cfg(unix)]
    if T::SECRET {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    let mut f = opts.open(path).map_err(io)?;
    #[cfg(unix)]
    if T::SECRET {
        // An existing file keeps its mode on open: narrow it before writing.
        use std::os::unix::fs::PermissionsExt;
        f.set_permissions(std::fs::Permissions::from_mode(0o600)).map_err(io)?;
    }
    std::io::Write::write_all(&mut f, &item.to_bytes()).map_err(io)?;
    f.sync_all().map_err(io)
}

/// Reads a participant file of kind `T`.
pub fn read<T: ParticipantFile>(path: &Path) -> Result<T, ThresholdError> {
    let bytes = std::fs::read(path)
        .map_err(|e| ThresholdError::Io { path: path.display().to_string(), problem: e.to_string() })?;
    T::from_bytes(&bytes)
}

/// The `type` of a participant file, if the bytes are one (for `inspect`).
pub fn file_type(bytes: &[u8]) -> Option<String> {
    let v = cbor::decode_strict(bytes).ok()?;
    match v.get("type")? {
        Value::Text(t) if t.starts_with("jcp-threshold/") => Some(t.clone()),
        _ => None,
    }
}

/// Opens an envelope: the strict field reader after checking `type`.
pub(crate) fn open<'a>(object: &'static str, kind: &'static str, v: &'a Value) -> Result<Fields<'a>, ThresholdError> {
    let mut f = Fields::new(object, v)?;
    let t = f.text("type")?;
    if t != kind {
        return Err(ThresholdError::WrongType { expected: kind, found: t.to_owned() });
    }
    Ok(f)
}

/// The envelope's map: `type` first, then `fields`.
pub(crate) fn envelope(kind: &'static str, fields: impl IntoIterator<Item = (&'static str, Option<Value>)>) -> Value {
    cbor::map(std::iter::once(("type", Some(Value::text(kind)))).chain(fields))
}

/// A participant identifier field (1..=65535).
pub(crate) fn read_id(f: &mut Fields<'_>, field: &'static str) -> Result<u16, ThresholdError> {
    let n = f.uint(field)?;
    match u16::try_from(n) {
        Ok(id) if id != 0 => Ok(id),
        _ => Err(f.error(field, format!("participant identifier {n} is outside 1..=65535")).into()),
    }
}

/// A FROST payload under `frost`, decoded by `de` and required to re-encode
/// to exactly the bytes given by `ser`.
pub(crate) fn read_frost<T>(
    f: &mut Fields<'_>,
    object: &'static str,
    de: impl Fn(&[u8]) -> Result<T, frost_ed25519::Error>,
    ser: impl Fn(&T) -> Result<Vec<u8>, frost_ed25519::Error>,
) -> Result<T, ThresholdError> {
    let Value::Bytes(b) = f.req("frost")? else {
        return Err(f.error("frost", "expected the FROST payload as bytes").into());
    };
    let item = de(b).map_err(|e| ThresholdError::FrostEncoding { object, problem: e.to_string() })?;
    match ser(&item) {
        Ok(again) if again == *b => Ok(item),
        _ => Err(ThresholdError::NonCanonicalFrost { object }),
    }
}

/// FROST's own encoding of an object, as `frost` bytes.
pub(crate) fn frost_value(bytes: Result<Vec<u8>, frost_ed25519::Error>) -> Option<Value> {
    // Serialising a well-formed FROST object cannot fail (postcard into a
    // Vec); were it ever to, the field is left out and the file is refused
    // on reading rather than written wrong.
    bytes.ok().map(Value::Bytes)
}

/// A FROST identifier from a participant number.
pub fn frost_id(id: u16) -> Result<Identifier, ThresholdError> {
    Identifier::try_from(id).map_err(|e| ThresholdError::BadIdentifier(format!("{id}: {e}")))
}

/// The participant number of a FROST identifier made from one (1..=65535);
/// identifiers derived otherwise (from strings) are refused.
pub fn id_number(id: &Identifier) -> Result<u16, ThresholdError> {
    let b = id.serialize();
    if b.len() != 32 || b[2..].iter().any(|x| *x != 0) {
        return Err(ThresholdError::BadIdentifier(format!(
            "{} is not a participant number 1..=65535",
            hex::encode(&b)
        )));
    }
    match u16::from_le_bytes([b[0], b[1]]) {
        0 => Err(ThresholdError::BadIdentifier("0 is not a participant".into())),
        n => Ok(n),
    }
}
