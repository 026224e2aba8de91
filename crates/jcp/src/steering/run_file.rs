//! §4.7 run files (`*.jcprun`): an RFC 8742 CBOR sequence of canonical items
//! — a `{format: "jcp-run/1"}` header, then one record per item — read
//! strictly, every refusal naming the record and its byte offset.

use super::{steer, Record, Run, SteeringError, RUN_FORMAT};
use crate::cbor::{self, Fields, Value};
use crate::error::Error;
use crate::rotation::KeyRing;

impl Run {
    /// The run file: the header item, then one item per record.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = header_value().encode();
        for r in &self.records {
            r.to_value().encode_into(&mut out);
        }
        out
    }

    /// Reads a run file strictly: a `jcp-run/1` header, then canonical
    /// records, the first of which is a grant. Any refusal names the record
    /// index (after the header) and the byte offset where its item starts.
    pub fn from_bytes(bytes: &[u8]) -> Result<Self, Error> {
        let (hv, mut off) =
            cbor::decode_prefix(bytes, cbor::Profile::Strict).map_err(|e| run_file(None, 0, Error::Decode(e)))?;
        read_header(&hv).map_err(|e| run_file(None, 0, e))?;
        let mut records = Vec::new();
        while off < bytes.len() {
            let index = records.len();
            let rest = bytes.get(off..).unwrap_or_default();
            let (v, used) = cbor::decode_prefix(rest, cbor::Profile::Strict)
                .map_err(|e| run_file(Some(index), off, Error::Decode(e)))?;
            let r = Record::from_value(&v).map_err(|e| run_file(Some(index), off, e))?;
            if index == 0 && !matches!(r, Record::Grant(_)) {
                return Err(run_file(
                    Some(0),
                    off,
                    steer(SteeringError::RunHeader(format!("a run's first record is its grant, not a {}", r.kind()))),
                ));
            }
            records.push(r);
            off += used;
        }
        if records.is_empty() {
            return Err(steer(SteeringError::RunHeader("the run file holds no grant".into())));
        }
        Ok(Self { records, keys: KeyRing::new() })
    }

    /// Writes the run file.
    pub fn write(&self, path: &std::path::Path) -> Result<(), Error> {
        super::files::replace(path, &self.to_bytes(), "new")
            .map_err(|e| steer(SteeringError::Io(format!("writing {}: {e}", path.display()))))
    }

    /// Replaces the run file whole: written to a sibling temporary with a
    /// random name created exclusively (`writer` in it, for people), synced
    /// and renamed over it, so a reader never sees half a record and a
    /// symlink planted in the folder never turns the write elsewhere
    /// ([`super::files::replace`]).
    pub fn replace(&self, path: &std::path::Path, writer: &str) -> Result<(), Error> {
        super::files::replace(path, &self.to_bytes(), writer)
            .map_err(|e| steer(SteeringError::Io(format!("replacing {}: {e}", path.display()))))
    }

    /// Reads and decodes a run file ([`Run::from_bytes`]).
    pub fn read(path: &std::path::Path) -> Result<Self, Error> {
        let bytes =
            std::fs::read(path).map_err(|e| steer(SteeringError::Io(format!("reading {}: {e}", path.display()))))?;
        Self::from_bytes(&bytes)
    }
}

fn run_file(index: Option<usize>, offset: usize, e: Error) -> Error {
    steer(SteeringError::RunFile { index, offset, source: Box::new(e) })
}

fn header_value() -> Value {
    cbor::map([("format", Some(Value::text(RUN_FORMAT)))])
}

fn read_header(v: &Value) -> Result<(), Error> {
    let mut f = Fields::new("RunHeader", v)?;
    let format = f.text("format")?;
    if format != RUN_FORMAT {
        return Err(steer(SteeringError::RunHeader(format!("format {format:?} is not {RUN_FORMAT:?}"))));
    }
    f.finish()?;
    Ok(())
}
