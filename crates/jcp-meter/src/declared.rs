//! Files a person declares and hands to the layers above the meter
//! (§5.4 baselines and causes, §5.6 power envelopes), and the strict JSON
//! reading every file format of this crate's shares with [`crate::session`].
//!
//! Each file is one JSON object whose `format` field names its format and
//! version. A reader refuses another tag ([`Error::FileUnsupported`]),
//! unknown and duplicate fields, values of the wrong type and anything after
//! the object, and says which file and which field
//! ([`Error::FileMalformed`], with a path like `causes[2].evidence`).
//!
//! ```json
//! {"format":"jcp-meter-baseline/1",
//!  "scope":{"host":{"hostname":"h","machine":null,"cpu":"c","logical_cpus":8,"os":"linux"},
//!           "occupancy":"idle","window_ns":1000000000},
//!  "low_uj":5000000,"high_uj":9000000}
//! {"format":"jcp-meter-causes/1",
//!  "causes":[{"seq":3,"kind":"thermal-limit","evidence":"<content id of the reading, 64 hex>"}]}
//! {"format":"jcp-meter-envelope/1","part":"package-0 (i7-1185G7)","rungs":["rapl"],
//!  "burst_mw":60000,"idle_mw":500,"source":"datasheet PL2; idle measured powered-on"}
//! ```

use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::path::Path;

use jcp::cbor::ContentId;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::backend::RungId;
use crate::conservation::PowerEnvelope;
use crate::dynamism::{Baseline, Cause, CauseKind, Scope};
use crate::Error;

/// The file formats of this crate above the meter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FileFormat {
    /// A recorded session of windows ([`crate::session::Session`]).
    Session,
    /// A declared baseline (§5.4).
    Baseline,
    /// Evidenced causes (§5.4).
    Causes,
    /// A part's power envelope (§5.6).
    Envelope,
}

impl FileFormat {
    /// The `format` tag the file carries.
    pub fn tag(self) -> &'static str {
        match self {
            Self::Session => crate::session::SESSION_FORMAT,
            Self::Baseline => BASELINE_FORMAT,
            Self::Causes => CAUSES_FORMAT,
            Self::Envelope => ENVELOPE_FORMAT,
        }
    }

    /// The code of [`Error::FileMalformed`] for this format.
    pub fn malformed_code(self) -> &'static str {
        match self {
            Self::Session => "session-malformed",
            Self::Baseline => "baseline-malformed",
            Self::Causes => "causes-malformed",
            Self::Envelope => "envelope-malformed",
        }
    }
}

impl fmt::Display for FileFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.tag())
    }
}

/// The baseline file's tag.
pub const BASELINE_FORMAT: &str = "jcp-meter-baseline/1";
/// The causes file's tag.
pub const CAUSES_FORMAT: &str = "jcp-meter-causes/1";
/// The envelope file's tag.
pub const ENVELOPE_FORMAT: &str = "jcp-meter-envelope/1";

pub(crate) fn malformed(format: FileFormat, file: &str, field: impl Into<String>, detail: impl Into<String>) -> Error {
    Error::FileMalformed { file: file.to_owned(), format, field: field.into(), detail: detail.into() }
}

/// Reads `bytes` as one strict JSON object of `format`: the tag first (so a
/// file of another format says so), then every field, by path.
pub(crate) fn decode<T: DeserializeOwned>(format: FileFormat, file: &str, bytes: &[u8]) -> Result<T, Error> {
    let text = std::str::from_utf8(bytes)
        .map_err(|e| malformed(format, file, format!("byte {}", e.valid_up_to()), "not UTF-8"))?;
    let v: serde_json::Value = serde_json::from_str(text)
        .map_err(|e| malformed(format, file, format!("line {} column {}", e.line(), e.column()), e.to_string()))?;
    match v.get("format") {
        Some(serde_json::Value::String(s)) if s == format.tag() => {}
        Some(serde_json::Value::String(s)) => {
            return Err(Error::FileUnsupported { file: file.to_owned(), expected: format.tag(), found: s.clone() })
        }
        Some(_) => return Err(malformed(format, file, "format", "not a string")),
        None if v.is_object() => return Err(malformed(format, file, "format", "missing")),
        None => return Err(malformed(format, file, ".", "not a JSON object")),
    }
    let mut de = serde_json::Deserializer::from_str(text);
    serde_path_to_error::deserialize(&mut de)
        .map_err(|e| malformed(format, file, e.path().to_string(), e.inner().to_string()))
}

pub(crate) fn read_file(path: &Path) -> Result<Vec<u8>, Error> {
    std::fs::read(path).map_err(|e| Error::Io { path: path.display().to_string(), detail: e.to_string() })
}

pub(crate) fn write_file(path: &Path, value: &impl Serialize) -> Result<(), Error> {
    let io = |e: String| Error::Io { path: path.display().to_string(), detail: e };
    let text = serde_json::to_string(value).map_err(|e| io(e.to_string()))? + "\n";
    std::fs::write(path, text).map_err(|e| io(e.to_string()))
}

// ---------------------------------------------------------------- baseline (§5.4)

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct BaselineWire {
    format: String,
    scope: Option<Scope>,
    low_uj: u64,
    high_uj: u64,
}

/// Reads a declared baseline (`jcp-meter-baseline/1`). `scope: null` (or
/// absent) is an undeclared baseline: it reads, and applies nowhere (§5.4).
pub fn baseline_from_bytes(file: &str, bytes: &[u8]) -> Result<Baseline, Error> {
    let f = FileFormat::Baseline;
    let w: BaselineWire = decode(f, file, bytes)?;
    if w.low_uj > w.high_uj {
        return Err(malformed(f, file, "low_uj", format!("{} is above high_uj {}", w.low_uj, w.high_uj)));
    }
    if let Some(s) = &w.scope {
        if s.window_ns == 0 {
            return Err(malformed(f, file, "scope.window_ns", "0 ns is no window"));
        }
        if s.occupancy.trim().is_empty() {
            return Err(malformed(f, file, "scope.occupancy", "empty: name the occupancy the band was measured at"));
        }
    }
    Ok(Baseline { scope: w.scope, low_uj: w.low_uj, high_uj: w.high_uj })
}

/// Reads a baseline file.
pub fn load_baseline(path: &Path) -> Result<Baseline, Error> {
    baseline_from_bytes(&path.display().to_string(), &read_file(path)?)
}

/// Declares a baseline from a recorded session (§5.4): the band is the
/// lowest and highest `Whole` metered window of the session, scoped to its
/// host, declared occupancy and window length — the operator's statement
/// "this session is what normal looks like here". Refused
/// (`baseline-not-declarable`) for a session with no declared occupancy (the
/// baseline would apply nowhere) or without a `Whole` metered window.
pub fn baseline_of_session(session: &crate::session::Session) -> Result<Baseline, Error> {
    let occupancy = session.occupancy.clone().ok_or(Error::BaselineNotDeclarable {
        why: "the session was recorded without a declared occupancy: a baseline from it would apply nowhere",
    })?;
    let whole =
        session.windows.iter().filter(|w| w.coverage == Some(jcp::energy::Coverage::Whole)).filter_map(|w| w.energy_uj);
    let (low, high) = whole
        .fold(None, |b: Option<(u64, u64)>, uj| Some(b.map_or((uj, uj), |(l, h)| (l.min(uj), h.max(uj)))))
        .ok_or(Error::BaselineNotDeclarable {
            why: "the session has no Whole metered window: a partial or missing figure is no band",
        })?;
    Ok(Baseline {
        scope: Some(Scope { host: session.host.clone(), occupancy, window_ns: session.interval_ns }),
        low_uj: low,
        high_uj: high,
    })
}

/// The file text of `baseline`.
pub fn baseline_to_json(baseline: &Baseline) -> String {
    serde_json::json!({
        "format": BASELINE_FORMAT,
        "scope": baseline.scope,
        "low_uj": baseline.low_uj,
        "high_uj": baseline.high_uj,
    })
    .to_string()
}

// ---------------------------------------------------------------- causes (§5.4)

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
struct CauseWire {
    seq: u64,
    kind: CauseKind,
    #[serde(default)]
    evidence: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
struct CausesWire {
    #[allow(
        dead_code,
        reason = "read so that `deny_unknown_fields` admits it; its value is checked before the struct is decoded"
    )]
    format: String,
    causes: Vec<CauseWire>,
}

/// Evidenced causes, by window seq (§5.4: a cause explains a deviation
/// only with the content id of the reading that supports it).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Causes {
    /// Window seq → its cause.
    pub by_seq: HashMap<u64, Cause>,
}

impl Causes {
    /// Reads `jcp-meter-causes/1`. A cause without evidence is refused
    /// ([`Error::CauseWithoutEvidence`]), not read as unexplained.
    pub fn from_bytes(file: &str, bytes: &[u8]) -> Result<Self, Error> {
        let f = FileFormat::Causes;
        let w: CausesWire = decode(f, file, bytes)?;
        let mut by_seq = HashMap::new();
        for (i, c) in w.causes.into_iter().enumerate() {
            let evidence = match c.evidence {
                None => None,
                Some(hex) => Some(ContentId::parse(&hex).ok_or_else(|| {
                    malformed(
                        f,
                        file,
                        format!("causes[{i}].evidence"),
                        format!("`{hex}` is not a content id (64 lowercase hex digits)"),
                    )
                })?),
            };
            let cause = Cause::new(c.kind, evidence)?;
            if by_seq.insert(c.seq, cause).is_some() {
                return Err(malformed(
                    f,
                    file,
                    format!("causes[{i}].seq"),
                    format!("window {} already has a cause", c.seq),
                ));
            }
        }
        Ok(Self { by_seq })
    }

    /// Reads a causes file.
    pub fn load(path: &Path) -> Result<Self, Error> {
        Self::from_bytes(&path.display().to_string(), &read_file(path)?)
    }

    /// The file text, causes in seq order.
    pub fn to_json(&self) -> String {
        let mut seqs: Vec<_> = self.by_seq.keys().copied().collect();
        seqs.sort_unstable();
        let causes: Vec<_> = seqs
            .iter()
            .map(|s| {
                let c = &self.by_seq[s];
                serde_json::json!({"seq": s, "kind": c.kind, "evidence": c.evidence.to_hex()})
            })
            .collect();
        serde_json::json!({"format": CAUSES_FORMAT, "causes": causes}).to_string()
    }
}

// ---------------------------------------------------------------- envelope (§5.6)

/// A part's declared power envelope and the rungs whose figures read that part.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EnvelopeFile {
    /// [`ENVELOPE_FORMAT`].
    pub format: String,
    /// The part, for people.
    pub part: String,
    /// The rungs whose figures read this part; windows metered by any
    /// other rung are not held to it.
    pub rungs: Vec<RungId>,
    /// The burst rating, mW: the ceiling (deliberately permissive).
    pub burst_mw: u64,
    /// The absolute idle draw of the powered part, mW: the floor.
    pub idle_mw: u64,
    /// Where the figures come from, for people.
    #[serde(default)]
    pub source: Option<String>,
}

impl EnvelopeFile {
    /// Reads `jcp-meter-envelope/1`.
    pub fn from_bytes(file: &str, bytes: &[u8]) -> Result<Self, Error> {
        let f = FileFormat::Envelope;
        let e: Self = decode(f, file, bytes)?;
        if e.part.trim().is_empty() {
            return Err(malformed(f, file, "part", "empty: name the part"));
        }
        if e.rungs.is_empty() {
            return Err(malformed(f, file, "rungs", "no rung: name the rungs whose figures read this part"));
        }
        let mut seen = BTreeSet::new();
        for (i, r) in e.rungs.iter().enumerate() {
            if !seen.insert(*r) {
                return Err(malformed(f, file, format!("rungs[{i}]"), format!("{r} named twice")));
            }
        }
        if e.burst_mw == 0 {
            return Err(malformed(f, file, "burst_mw", "0 mW: a part that draws nothing refutes every figure"));
        }
        if e.idle_mw > e.burst_mw {
            return Err(malformed(f, file, "idle_mw", format!("{} mW is above burst_mw {} mW", e.idle_mw, e.burst_mw)));
        }
        Ok(e)
    }

    /// Reads an envelope file.
    pub fn load(path: &Path) -> Result<Self, Error> {
        Self::from_bytes(&path.display().to_string(), &read_file(path)?)
    }

    /// The envelope the bound is taken against.
    pub fn envelope(&self) -> PowerEnvelope {
        PowerEnvelope { burst_mw: self.burst_mw, idle_mw: self.idle_mw }
    }
}
