//! An operator's settlement of an unresolved decision (§4.11).
//!
//! A decision recorded with no outcome is unresolved: "whether the action
//! took effect is not knowable from the record — only the party that was
//! running it knows", and an implementation must surface it "naming the
//! party that held it, and let an operator or that party settle it". The
//! record cannot be changed after the fact, so an operator's settlement is
//! a separate signed statement — a **settlement note** — kept beside the
//! stream (`<stream>.settlements/<receipt id>.jcp`):
//!
//! ```text
//! { note: { jcp_settlement_note: "jcp-settlement-note/1", receipt, holder,
//!           status: "completed" | "failed", text, settled_by, at },
//!   sig: Ed25519 by settled_by over the canonical note }
//! ```
//!
//! It never changes a debit: the decision's energy stays debited either way,
//! and nothing is retried. The audit shows each verified note beside the
//! unresolved decision it names; the decision stays unresolved in the record.

use std::path::{Path, PathBuf};

use jcp::cbor::{self, ContentId, Fields, Value};
use jcp::identity::{Did, Keypair};

use crate::error::Error;
use crate::record::OutcomeStatus;

/// The note's profile tag.
pub const SETTLEMENT_NOTE_PROFILE: &str = "jcp-settlement-note/1";
/// The longest note text accepted.
pub const MAX_NOTE_TEXT: usize = 4096;

/// What the operator states.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct SettlementNote {
    /// The unresolved decision's receipt id.
    pub receipt: ContentId,
    /// The party that held the decision (as the record names it).
    pub holder: Did,
    /// How the operator settles it.
    pub status: OutcomeStatus,
    /// Why, in words.
    pub text: String,
    /// Who settles it (the signer).
    pub settled_by: Did,
    /// Unix seconds.
    pub at: u64,
}

impl SettlementNote {
    /// Canonical form.
    pub fn to_value(&self) -> Value {
        cbor::map([
            ("jcp_settlement_note", Some(Value::text(SETTLEMENT_NOTE_PROFILE))),
            ("receipt", Some(Value::text(self.receipt.to_hex()))),
            ("holder", Some(Value::text(self.holder.to_did_string()))),
            ("status", Some(Value::text(self.status.as_str()))),
            ("text", Some(Value::text(self.text.clone()))),
            ("settled_by", Some(Value::text(self.settled_by.to_did_string()))),
            ("at", Some(Value::Uint(self.at))),
        ])
    }

    fn from_value(v: &Value) -> Result<Self, Error> {
        let mut f = Fields::new("SettlementNote", v)?;
        let tag = f.text("jcp_settlement_note")?;
        if tag != SETTLEMENT_NOTE_PROFILE {
            return Err(Error::UnknownProfile(tag.to_owned()));
        }
        let receipt = f.cid("receipt")?;
        let holder = Did::parse(f.text("holder")?)?;
        let status = match f.text("status")? {
            "completed" => OutcomeStatus::Completed,
            "failed" => OutcomeStatus::Failed,
            other => {
                return Err(Error::Invalid {
                    field: "status",
                    problem: format!("{other:?} is neither completed nor failed"),
                })
            }
        };
        let text = f.text("text")?.to_owned();
        if text.len() > MAX_NOTE_TEXT {
            return Err(Error::Invalid {
                field: "text",
                problem: format!("{} bytes, more than {MAX_NOTE_TEXT}", text.len()),
            });
        }
        let settled_by = Did::parse(f.text("settled_by")?)?;
        let at = f.uint("at")?;
        f.finish()?;
        Ok(Self { receipt, holder, status, text, settled_by, at })
    }

    /// Signs the note with the operator's key (`settled_by` must be its did).
    pub fn sign(self, key: &Keypair) -> Result<SignedSettlementNote, Error> {
        if key.did() != self.settled_by {
            return Err(Error::Invalid {
                field: "settled_by",
                problem: format!("{} is not the signing key {}", self.settled_by, key.did()),
            });
        }
        if self.text.len() > MAX_NOTE_TEXT {
            return Err(Error::Invalid {
                field: "text",
                problem: format!("{} bytes, more than {MAX_NOTE_TEXT}", self.text.len()),
            });
        }
        let bytes = self.to_value().encode();
        let signature = key.sign(&bytes);
        Ok(SignedSettlementNote { note: self, bytes, signature })
    }
}

/// A settlement note with its signature. Decoding verifies the signature:
/// a note that does not verify is refused, never shown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignedSettlementNote {
    note: SettlementNote,
    bytes: Vec<u8>,
    signature: [u8; 64],
}

impl SignedSettlementNote {
    /// The note.
    pub fn note(&self) -> &SettlementNote {
        &self.note
    }

    /// Its content id.
    pub fn id(&self) -> ContentId {
        ContentId::of_bytes(&self.bytes)
    }

    /// Canonical bytes: `{note, sig}`.
    pub fn to_bytes(&self) -> Vec<u8> {
        cbor::map([("note", Some(self.note.to_value())), ("sig", Some(Value::Bytes(self.signature.to_vec())))]).encode()
    }

    /// Reads strict canonical bytes and verifies the signature under `settled_by`.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, Error> {
        let v = cbor::decode_strict(bytes)?;
        let mut f = Fields::new("SignedSettlementNote", &v)?;
        let nv = f.req("note")?;
        let signature = f.bytes_n::<64>("sig")?;
        f.finish()?;
        let note = SettlementNote::from_value(nv)?;
        let bytes = nv.encode();
        if !note.settled_by.verify(&bytes, &signature) {
            return Err(Error::BadSignature(note.settled_by.to_string()));
        }
        Ok(Self { note, bytes, signature })
    }
}

/// Where a stream's settlement notes are kept.
pub fn notes_dir(stream: &Path) -> PathBuf {
    let mut s = stream.as_os_str().to_owned();
    s.push(".settlements");
    PathBuf::from(s)
}

/// Writes a note beside its stream (a new file per receipt; an existing
/// settlement of the same receipt is never overwritten).
pub fn write_note(stream: &Path, note: &SignedSettlementNote) -> Result<PathBuf, std::io::Error> {
    let dir = notes_dir(stream);
    std::fs::create_dir_all(&dir)?;
    let path = dir.join(format!("{}.jcp", note.note().receipt));
    let mut f = std::fs::OpenOptions::new().write(true).create_new(true).open(&path)?;
    std::io::Write::write_all(&mut f, &note.to_bytes())?;
    f.sync_all()?;
    Ok(path)
}

/// Every note beside a stream: the verified ones, and each refused file with why.
pub fn read_notes(stream: &Path) -> (Vec<SignedSettlementNote>, Vec<(PathBuf, Error)>) {
    let (mut ok, mut refused) = (Vec::new(), Vec::new());
    let Ok(entries) = std::fs::read_dir(notes_dir(stream)) else { return (ok, refused) };
    let mut paths: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    paths.sort();
    for p in paths {
        match std::fs::read(&p) {
            Ok(b) => match SignedSettlementNote::from_bytes(&b) {
                Ok(n) => ok.push(n),
                Err(e) => refused.push((p, e)),
            },
            Err(e) => refused.push((p, Error::Invalid { field: "file", problem: e.to_string() })),
        }
    }
    (ok, refused)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn note(key: &Keypair) -> SettlementNote {
        SettlementNote {
            receipt: ContentId::of(&Value::text("r")),
            holder: Keypair::from_seed([3; 32]).unwrap().did(),
            status: OutcomeStatus::Failed,
            text: "the agent's host was lost mid-write; nothing was committed".into(),
            settled_by: key.did(),
            at: 1_767_258_000,
        }
    }

    #[test]
    fn s4_11_a_settlement_note_round_trips_and_verifies() {
        let k = Keypair::from_seed([1; 32]).unwrap();
        let n = note(&k).sign(&k).unwrap();
        let back = SignedSettlementNote::from_bytes(&n.to_bytes()).unwrap();
        assert_eq!(back, n);
        assert_eq!(back.note().status, OutcomeStatus::Failed);
    }

    #[test]
    fn s4_11_a_forged_or_altered_settlement_note_is_refused() {
        let k = Keypair::from_seed([1; 32]).unwrap();
        let other = Keypair::from_seed([2; 32]).unwrap();
        // Signed by a key that is not settled_by: refused before signing.
        assert_eq!(note(&k).sign(&other).unwrap_err().code(), "core-invalid");
        // A flipped byte in the text: the signature no longer verifies.
        let mut b = note(&k).sign(&k).unwrap().to_bytes();
        let i = b.windows(5).position(|w| w == b"agent").unwrap();
        b[i] = b'A';
        assert_eq!(SignedSettlementNote::from_bytes(&b).unwrap_err().code(), "bad-signature");
        // Trailing bytes, truncation, an unknown field: refused with their codes.
        let good = note(&k).sign(&k).unwrap().to_bytes();
        assert_eq!(
            SignedSettlementNote::from_bytes(&[good.as_slice(), &[0]].concat()).unwrap_err().code(),
            "core-non-canonical"
        );
        assert_eq!(SignedSettlementNote::from_bytes(&good[..good.len() - 1]).unwrap_err().code(), "core-non-canonical");
    }

    #[test]
    fn s4_11_notes_are_written_once_beside_the_stream() {
        let t = tempfile::tempdir().unwrap();
        let stream = t.path().join("s.jcps");
        let k = Keypair::from_seed([1; 32]).unwrap();
        let n = note(&k).sign(&k).unwrap();
        let p = write_note(&stream, &n).unwrap();
        assert!(p.starts_with(notes_dir(&stream)));
        assert!(write_note(&stream, &n).is_err(), "never overwritten");
        std::fs::write(notes_dir(&stream).join("junk.jcp"), b"junk").unwrap();
        let (ok, refused) = read_notes(&stream);
        assert_eq!(ok, vec![n]);
        assert_eq!(refused.len(), 1);
    }
}
