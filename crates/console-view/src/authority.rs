//! Who stands behind a run's grants, where the steward meets it (JCP §2.1,
//! §2.2, §4.6): the issuer's key log when the steward rotated its key, the
//! threshold group (k-of-n) when the issuer is one, and the standing grant
//! and mint ledger a run's grant was minted from.
//!
//! The material lies **beside the run file**, as its `.revocations` do: key
//! logs (`jcp-keylog/1`), group descriptors (`jcp-threshold/group`), mint
//! policies, mint ledgers and grants. [`Material::beside`] reads the folder;
//! a file that claims to be one of these but is refused is listed as a
//! problem with its code, never dropped in silence, and a file that claims
//! nothing (a stream, a blueprint) is not material. [`read_run`] is how the
//! console reads a run: with the key logs found beside it in the run's key
//! ring, so a rotated steward's run verifies where its log is presented and
//! is refused on its signatures where it is not (fail closed, §2.1).

use std::path::{Path, PathBuf};

use jcp::cbor;
use jcp::grant::SignedGrant;
use jcp::identity::Did;
use jcp::rotation::{KeyLog, KeyRing};
use jcp::standing::{MintLedger, SignedMintPolicy, StandingView};
use jcp::steering::Run;
use jcp_threshold::{GroupDescriptor, ParticipantFile};
use serde::{Deserialize, Serialize};

#[cfg(test)]
use ts_rs::TS;

use crate::format_uj;

#[cfg(feature = "demo")]
pub mod demo;

/// Files larger than this are not read as material (a key log, group,
/// policy, ledger or grant is a few kilobytes).
pub const MAX_MATERIAL_BYTES: u64 = 1 << 20;

/// A refusal as the view shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct Refused {
    /// The core's reason code.
    pub code: String,
    /// In words (starts with the code).
    pub message: String,
}

impl Refused {
    fn of(code: &str, message: impl std::fmt::Display) -> Self {
        Self { code: code.to_owned(), message: message.to_string() }
    }
}

/// A file beside the run that claims to be authority material and is refused.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct MaterialProblem {
    /// The file.
    pub path: String,
    /// What it claims to be (`key log`, `threshold group`, `mint policy`, `mint ledger`, `grant`).
    pub claims: String,
    /// Why it is refused.
    pub refused: Refused,
}

/// What lies beside a run: the material read, the problems, and the key
/// ring of every key log that verified.
#[derive(Debug, Clone, Default)]
pub struct Material {
    /// Key logs (verified or not: the view shows a refused one with its code).
    pub key_logs: Vec<(PathBuf, KeyLog)>,
    /// Threshold group descriptors (each checked when decoded).
    pub groups: Vec<(PathBuf, GroupDescriptor)>,
    /// Mint policies.
    pub policies: Vec<(PathBuf, SignedMintPolicy)>,
    /// Mint ledgers.
    pub ledgers: Vec<(PathBuf, MintLedger)>,
    /// Grants (a standing grant lies beside the runs minted from it).
    pub grants: Vec<(PathBuf, SignedGrant)>,
    /// Files that claim to be material and are refused.
    pub problems: Vec<MaterialProblem>,
    /// The verified key logs, by identity.
    pub ring: KeyRing,
}

/// What a file's canonical form claims to be, if anything.
fn claim(v: &cbor::Value) -> Option<&'static str> {
    if KeyLog::is_key_log(v) {
        Some("key log")
    } else if MintLedger::is_ledger(v) {
        Some("mint ledger")
    } else if v.get("policy").is_some() {
        Some("mint policy")
    } else if v.get("grant").is_some() {
        Some("grant")
    } else {
        None
    }
}

impl Material {
    /// Reads the folder the run file lies in (not recursively), in name
    /// order so one folder always gives one view.
    pub fn beside(run: &Path) -> Self {
        let dir = run.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
        let mut m = Self::default();
        let Ok(entries) = std::fs::read_dir(dir) else { return m };
        let mut paths: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
        paths.sort();
        for p in paths {
            if p.extension().is_some_and(|x| x == jcp::steering::RUN_EXTENSION) {
                continue;
            }
            let Ok(meta) = std::fs::metadata(&p) else { continue };
            if !meta.is_file() || meta.len() > MAX_MATERIAL_BYTES {
                continue;
            }
            match std::fs::read(&p) {
                Ok(bytes) => m.take(p, &bytes),
                Err(e) => m.problems.push(MaterialProblem {
                    path: p.display().to_string(),
                    claims: "unknown (unreadable)".to_owned(),
                    refused: Refused::of("io-error", format!("io-error: {e}")),
                }),
            }
        }
        m
    }

    fn problem(&mut self, path: &Path, claims: &str, refused: Refused) {
        self.problems.push(MaterialProblem { path: path.display().to_string(), claims: claims.to_owned(), refused });
    }

    fn take(&mut self, path: PathBuf, bytes: &[u8]) {
        if let Some(kind) = jcp_threshold::file::file_type(bytes) {
            if kind == GroupDescriptor::TYPE {
                match GroupDescriptor::from_bytes(bytes) {
                    Ok(g) => self.groups.push((path, g)),
                    Err(e) => self.problem(&path, "threshold group", Refused::of(e.code(), &e)),
                }
            }
            // Shares, nonces and ceremony rounds are a participant's, not a run's.
            return;
        }
        let Ok(v) = cbor::decode_strict(bytes) else { return };
        let Some(claims) = claim(&v) else { return };
        let bad = |e: &jcp::Error| Refused::of(e.code(), e);
        match claims {
            "key log" => match KeyLog::from_value(&v) {
                Ok(log) => {
                    if let Err(e) = self.ring.add(&log) {
                        self.problem(&path, claims, bad(&e));
                    }
                    self.key_logs.push((path, log));
                }
                Err(e) => self.problem(&path, claims, bad(&e)),
            },
            "mint ledger" => match MintLedger::from_value(&v) {
                Ok(l) => self.ledgers.push((path, l)),
                Err(e) => self.problem(&path, claims, bad(&e)),
            },
            "mint policy" => match SignedMintPolicy::from_value(&v) {
                Ok(p) => self.policies.push((path, p)),
                Err(e) => self.problem(&path, claims, bad(&e)),
            },
            _ => match SignedGrant::from_value(&v) {
                Ok(g) => self.grants.push((path, g)),
                Err(e) => self.problem(&path, claims, bad(&e)),
            },
        }
    }
}

/// Reads a run file with the key logs beside it in its key ring (how the
/// console reads every run).
pub fn read_run(path: &Path) -> Result<(Run, Material), jcp::Error> {
    let material = Material::beside(path);
    let run = Run::read(path)?.with_key_ring(material.ring.clone());
    Ok((run, material))
}

// ------------------------------------------------------------------ views

/// How the issuer's signatures are checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
#[serde(rename_all = "snake_case")]
pub enum IssuerKind {
    /// A plain `did:key`: its own key signs (no key log or group beside the run).
    Key,
    /// A rotated identity: its verified key log names the key that signs now.
    Rotated,
    /// Key logs of the identity lie beside the run but none verifies, or
    /// they fork: no key is taken to control it (its records are refused).
    Unresolved,
}

/// One event of a key log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct KeyEventLine {
    /// The event's sequence number (0 = inception).
    #[cfg_attr(test, ts(type = "number"))]
    pub seq: u64,
    /// `inception` or `rotation`.
    pub role: String,
    /// The event's content id.
    pub id: String,
    /// The key that controls the identity from this event on.
    pub current: String,
    /// The commitment to the next key.
    pub next_hash: String,
    /// Whether the event's signature verifies under its own `current` key.
    pub signature_valid: bool,
}

/// The issuer's key log.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct KeyLogPanel {
    /// The key log file.
    pub path: String,
    /// The identity (inception DID, stable across rotations).
    pub identity: String,
    /// The key that controls it now; absent when the log is refused.
    pub current: Option<String>,
    /// Rotations so far; absent when the log is refused.
    #[cfg_attr(test, ts(type = "number | null"))]
    pub rotations: Option<u64>,
    /// Keys that controlled it before, oldest first (signatures by them are refused).
    pub superseded: Vec<String>,
    /// Every event, inception first.
    pub events: Vec<KeyEventLine>,
    /// Why the log (or the identity, when logs fork) is refused.
    pub refused: Option<Refused>,
}

/// A threshold issuer (§2.2).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct ThresholdPanel {
    /// The group descriptor file.
    pub path: String,
    /// The group's `did:key`.
    pub group: String,
    /// `k-of-n`.
    pub threshold: String,
    /// k: signers needed.
    pub min_signers: u16,
    /// n: shareholders.
    pub max_signers: u16,
    /// `dealer` or `dkg`.
    pub origin: String,
    /// The participants, by number.
    pub participants: Vec<u16>,
}

/// The standing grant a run's grant was minted from, and its ledger (§4.6).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct StandingPanel {
    /// The standing grant's id.
    pub grant_id: String,
    /// The standing grant's file.
    pub grant_path: String,
    /// The mint policy's file.
    pub policy_path: String,
    /// The mint ledger's file.
    pub ledger_path: String,
    /// The event class (content id) that may fire it.
    pub event_class: String,
    /// The standing grant's budget, in words.
    pub grant_budget: String,
    /// The most one firing may mint, in words.
    pub per_firing: String,
    /// The most firings ever.
    #[cfg_attr(test, ts(type = "number"))]
    pub max_firings: u64,
    /// Firings so far (the ledger's count).
    #[cfg_attr(test, ts(type = "number"))]
    pub firings: u64,
    /// Firings the policy still allows.
    #[cfg_attr(test, ts(type = "number"))]
    pub firings_left: u64,
    /// Budget minted to children so far, in words (minted, not measured spend).
    pub minted: String,
    /// Budget still mintable, in words.
    pub mintable: String,
    /// Whether this run's grant chain-verifies to the standing grant (§4.2).
    pub chain_ok: bool,
    /// The chain's verdict in words.
    pub chain_text: String,
    /// Why the policy or ledger is refused for this grant (absent when sound).
    pub refused: Option<Refused>,
}

/// Who stands behind the run's grants.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(TS))]
pub struct AuthorityView {
    /// The run's issuer (the steward) as its grants name it.
    pub issuer: String,
    /// How its signatures are checked.
    pub issuer_kind: IssuerKind,
    /// In words.
    pub issuer_text: String,
    /// Its key log, when one lies beside the run.
    pub key_log: Option<KeyLogPanel>,
    /// Its threshold group, when the issuer is one.
    pub threshold: Option<ThresholdPanel>,
    /// The standing grant and ledger the run's grant was minted from.
    pub standing: Option<StandingPanel>,
    /// Files beside the run that claim to be material and are refused.
    pub problems: Vec<MaterialProblem>,
}

fn key_log_panel(path: &Path, log: &KeyLog, ring: &KeyRing) -> KeyLogPanel {
    let view = log.view();
    let identity = log.events().first().map(|e| e.event().identity);
    // The ring's state: the longest verified log of the identity, or none
    // when its logs fork.
    let held = identity.and_then(|i| ring.get(&i));
    let refused = match (&view.refusal, identity, held) {
        (Some(r), _, _) => Some(Refused::of(r.code, &r.message)),
        (None, Some(i), None) => ring.state(&i).and_then(Result::err).map(|e| Refused::of(e.code(), &e)),
        _ => None,
    };
    let state = view.state.as_ref().filter(|_| refused.is_none());
    KeyLogPanel {
        path: path.display().to_string(),
        identity: identity.map(|i| i.to_string()).unwrap_or_default(),
        current: state.map(|s| s.current().to_string()),
        rotations: state.map(jcp::rotation::KeyState::seq),
        superseded: state.map(|s| s.superseded().iter().map(ToString::to_string).collect()).unwrap_or_default(),
        events: view
            .events
            .iter()
            .map(|r| KeyEventLine {
                seq: r.event.seq,
                role: if r.event.seq == 0 { "inception" } else { "rotation" }.to_owned(),
                id: r.id.to_string(),
                current: r.event.current.to_string(),
                next_hash: r.event.next_hash.to_string(),
                signature_valid: r.signature_valid,
            })
            .collect(),
        refused,
    }
}

/// The issuer's key log to show: the one the ring holds (the longest that
/// verifies), else the first that names the identity.
fn issuer_log(m: &Material, issuer: &Did) -> Option<KeyLogPanel> {
    let names = |l: &KeyLog| l.events().first().is_some_and(|e| e.event().identity == *issuer);
    let head = m.ring.get(issuer).map(|s| *s.head());
    let pick = m
        .key_logs
        .iter()
        .filter(|(_, l)| names(l))
        .find(|(_, l)| head.is_some_and(|h| l.events().last().is_some_and(|e| e.id() == h)))
        .or_else(|| m.key_logs.iter().find(|(_, l)| names(l)))?;
    Some(key_log_panel(&pick.0, &pick.1, &m.ring))
}

fn threshold_panel(m: &Material, issuer: &Did) -> Option<ThresholdPanel> {
    let (path, g) = m.groups.iter().find(|(_, g)| g.group() == *issuer)?;
    let d = g.describe();
    Some(ThresholdPanel {
        path: path.display().to_string(),
        group: d.group,
        threshold: d.threshold,
        min_signers: d.min_signers,
        max_signers: d.max_signers,
        origin: d.origin.as_str().to_owned(),
        participants: d.participants.iter().map(|p| p.identifier).collect(),
    })
}

fn standing_panel(m: &mut Material, child: &SignedGrant) -> Option<StandingPanel> {
    let parent = child.grant().parent?;
    let (lpath, ledger) = m.ledgers.iter().find(|(_, l)| *l.grant_id() == parent)?.clone();
    let found_grant = m.grants.iter().find(|(_, g)| g.id() == parent).cloned();
    let found_policy = m.policies.iter().find(|(_, p)| p.id() == *ledger.policy_id()).cloned();
    let (Some((gpath, grant)), Some((ppath, policy))) = (found_grant, found_policy) else {
        m.problem(
            &lpath,
            "mint ledger",
            Refused::of(
                "standing-material-missing",
                format!(
                    "standing-material-missing: the ledger of standing grant {parent} lies beside the run, but not {}",
                    "the standing grant and the mint policy it names"
                ),
            ),
        );
        return None;
    };
    let v = StandingView::new(&grant, &policy, &ledger);
    let chain = jcp::chain::verify_chain(&[grant.clone(), child.clone()]);
    Some(StandingPanel {
        grant_id: parent.to_string(),
        grant_path: gpath.display().to_string(),
        policy_path: ppath.display().to_string(),
        ledger_path: lpath.display().to_string(),
        event_class: v.policy.event_class.to_string(),
        grant_budget: format_uj(v.grant_budget_uj),
        per_firing: format_uj(v.policy.per_firing_uj),
        max_firings: v.policy.max_firings,
        firings: ledger.firings(),
        firings_left: v.firings_left,
        minted: format_uj(ledger.spent_uj()),
        mintable: format_uj(v.budget_left_uj),
        chain_ok: chain.is_ok(),
        chain_text: match &chain {
            Ok(()) => "this run's grant chain-verifies to the standing grant (§4.2)".to_owned(),
            Err(f) => format!("the chain from the standing grant to this run's grant is refused: {f}"),
        },
        refused: v.refusal.as_ref().map(|r| Refused::of(r.code, &r.message)),
    })
}

/// The authority view of a run read with [`read_run`].
pub fn view(run: &Run, mut material: Material) -> AuthorityView {
    let Some(grant) = run.grant() else {
        return AuthorityView {
            issuer: String::new(),
            issuer_kind: IssuerKind::Unresolved,
            issuer_text: "the run holds no grant".to_owned(),
            key_log: None,
            threshold: None,
            standing: None,
            problems: material.problems,
        };
    };
    let issuer = grant.grant().issuer;
    let key_log = issuer_log(&material, &issuer);
    let threshold = threshold_panel(&material, &issuer);
    let standing = standing_panel(&mut material, grant);
    let kind = match (&key_log, material.ring.get(&issuer)) {
        (None, _) => IssuerKind::Key,
        (Some(_), Some(_)) => IssuerKind::Rotated,
        (Some(_), None) => IssuerKind::Unresolved,
    };
    let mut text = match (kind, &key_log) {
        (IssuerKind::Rotated, Some(k)) => format!(
            "rotated identity: {} rotation(s); its key log names {} as the key that signs for it now",
            k.rotations.unwrap_or(0),
            k.current.as_deref().unwrap_or("?")
        ),
        (IssuerKind::Unresolved, Some(k)) => format!(
            "no key is taken to control this identity: {}",
            k.refused.as_ref().map_or("its key log is refused", |r| r.message.as_str())
        ),
        _ => "plain did:key: its own key signs".to_owned(),
    };
    if let Some(t) = &threshold {
        let head = format!(
            "threshold actor, {} ({}): any {} of its {} shareholders sign together, and the aggregate verifies under the group's did:key",
            t.threshold, t.origin, t.min_signers, t.max_signers
        );
        text = if kind == IssuerKind::Key { head } else { format!("{head}; {text}") };
    }
    AuthorityView {
        issuer: issuer.to_string(),
        issuer_kind: kind,
        issuer_text: text,
        key_log,
        threshold,
        standing,
        problems: material.problems,
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// The IPC types of this view (checked with the others in `ipc`).
    pub(crate) fn generated() -> Vec<(String, String)> {
        macro_rules! all {
            ($($t:ty),*) => { vec![$( (<$t as TS>::name(), <$t as TS>::export_to_string().unwrap()) ),*] };
        }
        all!(
            Refused,
            MaterialProblem,
            IssuerKind,
            KeyEventLine,
            KeyLogPanel,
            ThresholdPanel,
            StandingPanel,
            AuthorityView
        )
    }

    fn demo() -> (tempfile::TempDir, Vec<PathBuf>) {
        let d = tempfile::tempdir().unwrap();
        let runs = demo::write_demo(d.path()).unwrap();
        (d, runs)
    }

    fn run_named<'a>(runs: &'a [PathBuf], name: &str) -> &'a Path {
        runs.iter().find(|p| p.to_string_lossy().contains(name)).unwrap()
    }

    fn authority(path: &Path) -> (jcp::steering::RunReport, AuthorityView) {
        let (run, m) = read_run(path).unwrap();
        (run.verify().unwrap(), view(&run, m))
    }

    #[test]
    fn c12_the_run_view_shows_a_rotated_stewards_key_log_and_verifies_with_it() {
        let (_d, runs) = demo();
        let (rep, a) = authority(run_named(&runs, "rotated-steward"));
        assert!(rep.clean, "{:?}", rep.findings);
        assert_eq!(a.issuer_kind, IssuerKind::Rotated);
        let log = a.key_log.unwrap();
        assert_eq!(log.identity, a.issuer, "the log is the issuer's");
        assert_eq!((log.rotations, log.events.len(), log.superseded.len()), (Some(2), 3, 2));
        assert_eq!(log.events[0].role, "inception");
        assert!(log.events.iter().all(|e| e.signature_valid));
        assert!(log.refused.is_none() && a.problems.is_empty());
        assert!(a.issuer_text.contains("2 rotation(s)"), "{}", a.issuer_text);
    }

    #[test]
    fn c12_without_its_key_log_a_rotated_stewards_run_is_refused_in_the_view() {
        let (d, runs) = demo();
        std::fs::remove_file(d.path().join("rotated").join("steward.jcpkeys")).unwrap();
        let (rep, a) = authority(run_named(&runs, "rotated-steward"));
        assert!(!rep.clean);
        assert_eq!(rep.findings[0].code, "bad-signature");
        assert_eq!(a.issuer_kind, IssuerKind::Key, "no log beside it: checked as a plain did:key, and refused");
    }

    #[test]
    fn c12_a_tampered_key_log_beside_the_run_is_a_problem_not_a_silence() {
        let (d, runs) = demo();
        let p = d.path().join("rotated").join("steward.jcpkeys");
        let mut b = std::fs::read(&p).unwrap();
        let sig = *KeyLog::from_bytes(&b).unwrap().events().last().unwrap().signature();
        let at = b.windows(64).position(|w| w == sig).unwrap();
        b[at + 10] ^= 1; // inside the last rotation's signature
        std::fs::write(&p, b).unwrap();
        let (rep, a) = authority(run_named(&runs, "rotated-steward"));
        assert!(!rep.clean);
        assert_eq!(a.issuer_kind, IssuerKind::Unresolved);
        assert_eq!(a.key_log.unwrap().refused.unwrap().code, "bad-signature");
        assert_eq!(a.problems.len(), 1);
        assert_eq!(a.problems[0].claims, "key log");
    }

    #[test]
    fn s2_2_a_threshold_issuer_is_marked_k_of_n() {
        let (_d, runs) = demo();
        let (rep, a) = authority(run_named(&runs, "threshold-board"));
        assert!(rep.clean, "the aggregate verifies as an ordinary Ed25519 signature: {:?}", rep.findings);
        let t = a.threshold.unwrap();
        assert_eq!((t.threshold.as_str(), t.min_signers, t.max_signers), ("2-of-3", 2, 3));
        assert_eq!(t.group, a.issuer);
        assert_eq!(t.participants, vec![1, 2, 3]);
        assert!(a.issuer_text.starts_with("threshold actor, 2-of-3 (dealer)"), "{}", a.issuer_text);
    }

    #[test]
    fn c20_a_minted_runs_view_shows_the_standing_grant_and_its_ledger() {
        let (_d, runs) = demo();
        let (rep, a) = authority(run_named(&runs, "minted-by-standing-grant"));
        assert!(rep.clean);
        let s = a.standing.unwrap();
        assert_eq!((s.firings, s.max_firings, s.firings_left), (3, 5, 2));
        assert_eq!(s.minted, format_uj(6_000_000_000_000));
        assert_eq!(s.mintable, format_uj(4_000_000_000_000));
        assert!(s.chain_ok, "{}", s.chain_text);
        assert!(s.refused.is_none());
        assert!(a.threshold.is_none() && a.key_log.is_none());
    }

    #[test]
    fn c20_a_ledger_without_its_policy_is_reported_missing() {
        let (d, runs) = demo();
        std::fs::remove_file(d.path().join("standing").join("mint-policy.jcp")).unwrap();
        let (_, a) = authority(run_named(&runs, "minted-by-standing-grant"));
        assert!(a.standing.is_none());
        assert_eq!(a.problems[0].refused.code, "standing-material-missing");
    }

    #[test]
    fn s4_7_files_that_claim_nothing_are_not_material() {
        let (d, runs) = demo();
        std::fs::write(d.path().join("standing").join("notes.txt"), "hello").unwrap();
        let (_, a) = authority(run_named(&runs, "minted-by-standing-grant"));
        assert!(a.problems.is_empty(), "{:?}", a.problems);
    }

    #[test]
    fn demo_authority_files_are_deterministic() {
        let (a, b) = (demo(), demo());
        for (x, y) in a.1.iter().zip(&b.1) {
            assert_eq!(std::fs::read(x).unwrap(), std::fs::read(y).unwrap(), "{}", x.display());
        }
    }
}
