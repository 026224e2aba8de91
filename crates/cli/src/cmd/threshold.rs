//! `jcp threshold`: threshold actors (§2.2) — a trusted dealer, the three
//! DKG rounds, the two signing rounds and the aggregate, one file per
//! participant and step (secret files owner-only). Every step is a
//! `jcp_threshold` call; this module only reads and writes files.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Subcommand};
use jcp_threshold::dkg::{self, Round1Package, Round1Secret, Round2Package, Round2Secret};
use jcp_threshold::file::{self, ParticipantFile};
use jcp_threshold::rand_core::OsRng;
use jcp_threshold::sign::{self, Commitments, Nonces, SignatureShare};
use jcp_threshold::{dealer, GroupDescriptor, KeyShare, ThresholdError};
use serde_json::json;

use crate::cmd::core::read_bytes;
use crate::out::{coded, emit, CLEAN};

/// `jcp threshold …`.
#[derive(Debug, Args)]
pub struct ThresholdArgs {
    #[command(subcommand)]
    cmd: ThresholdCmd,
}

#[derive(Debug, Subcommand)]
enum ThresholdCmd {
    /// A trusted dealer mints a k-of-n group: group.jcpt (public) and share-I.jcpt (secret, 0600) in --out-dir.
    Dealer {
        #[arg(long)]
        min: u16,
        #[arg(long)]
        max: u16,
        #[arg(long)]
        out_dir: PathBuf,
        #[arg(long)]
        json: bool,
    },
    /// DKG round 1 for participant --id: a secret package (kept) and a package to broadcast.
    DkgRound1 {
        #[arg(long)]
        id: u16,
        #[arg(long)]
        min: u16,
        #[arg(long)]
        max: u16,
        #[arg(long)]
        secret_out: PathBuf,
        #[arg(long)]
        out: PathBuf,
        #[arg(long)]
        json: bool,
    },
    /// DKG round 2: checks the others' round-1 packages; writes round2-FROM-to-TO.jcpt (secret, one per recipient) in --out-dir.
    DkgRound2 {
        #[arg(long)]
        secret: PathBuf,
        #[arg(long = "round1", required = true, num_args = 1..)]
        round1: Vec<PathBuf>,
        #[arg(long)]
        secret_out: PathBuf,
        #[arg(long)]
        out_dir: PathBuf,
        #[arg(long)]
        json: bool,
    },
    /// DKG finish: this participant's key share (secret) and the group descriptor (public).
    DkgFinish {
        #[arg(long)]
        secret: PathBuf,
        #[arg(long = "round1", required = true, num_args = 1..)]
        round1: Vec<PathBuf>,
        /// The round-2 packages addressed to this participant.
        #[arg(long = "round2", required = true, num_args = 1..)]
        round2: Vec<PathBuf>,
        #[arg(long)]
        share_out: PathBuf,
        #[arg(long)]
        group_out: PathBuf,
        #[arg(long)]
        json: bool,
    },
    /// Signing round 1: nonces (secret, used once) and commitments (sent).
    SignRound1 {
        #[arg(long)]
        share: PathBuf,
        #[arg(long)]
        nonces_out: PathBuf,
        #[arg(long)]
        out: PathBuf,
        #[arg(long)]
        json: bool,
    },
    /// Signing round 2: this signer's share over --message; the nonces file is deleted once used.
    SignRound2 {
        #[arg(long)]
        share: PathBuf,
        #[arg(long)]
        nonces: PathBuf,
        #[arg(long = "commitments", required = true, num_args = 1..)]
        commitments: Vec<PathBuf>,
        /// The bytes to sign (e.g. `jcp grant issue --unsigned-out`).
        #[arg(long)]
        message: PathBuf,
        #[arg(long)]
        out: PathBuf,
        #[arg(long)]
        json: bool,
    },
    /// Aggregates k signature shares into the group's 64-byte Ed25519 signature (written raw), refused unless it verifies.
    Aggregate {
        #[arg(long)]
        group: PathBuf,
        #[arg(long = "commitments", required = true, num_args = 1..)]
        commitments: Vec<PathBuf>,
        #[arg(long)]
        message: PathBuf,
        #[arg(long = "share", required = true, num_args = 1..)]
        shares: Vec<PathBuf>,
        #[arg(long)]
        out: PathBuf,
        #[arg(long)]
        json: bool,
    },
}

fn terr(path: &Path, e: &ThresholdError) -> anyhow::Error {
    coded(e.code(), format!("{}: {e}", path.display()))
}

fn step(e: &ThresholdError) -> anyhow::Error {
    coded(e.code(), e.to_string())
}

fn load<T: ParticipantFile>(p: &Path) -> anyhow::Result<T> {
    file::read(p).map_err(|e| terr(p, &e))
}

fn load_all<T: ParticipantFile>(ps: &[PathBuf]) -> anyhow::Result<Vec<T>> {
    ps.iter().map(|p| load(p)).collect()
}

fn save<T: ParticipantFile>(p: &Path, item: &T) -> anyhow::Result<()> {
    file::write(p, item).map_err(|e| terr(p, &e))
}

fn written(json: bool, what: &str, value: &serde_json::Value) -> anyhow::Result<()> {
    emit(json, value, || format!("{what}\n{}", serde_json::to_string_pretty(value).unwrap_or_default()))
}

pub fn run(args: ThresholdArgs) -> anyhow::Result<ExitCode> {
    match args.cmd {
        ThresholdCmd::Dealer { min, max, out_dir, json } => {
            let (group, shares) = dealer::deal(min, max, &mut OsRng).map_err(|e| step(&e))?;
            std::fs::create_dir_all(&out_dir).map_err(|e| coded("io", format!("{}: {e}", out_dir.display())))?;
            let gp = out_dir.join("group.jcpt");
            save(&gp, &group)?;
            let mut files = Vec::new();
            for s in &shares {
                let p = out_dir.join(format!("share-{}.jcpt", s.identifier()));
                save(&p, s)?;
                files.push(p);
            }
            written(json, "dealt", &json!({"group": group.describe(), "group_file": gp, "share_files": files}))?;
        }
        ThresholdCmd::DkgRound1 { id, min, max, secret_out, out, json } => {
            let (s, p) = dkg::round1(id, min, max, &mut OsRng).map_err(|e| step(&e))?;
            save(&secret_out, &s)?;
            save(&out, &p)?;
            written(json, "dkg round 1", &json!({"identifier": id, "secret_file": secret_out, "package_file": out}))?;
        }
        ThresholdCmd::DkgRound2 { secret, round1, secret_out, out_dir, json } => {
            let s: Round1Secret = load(&secret)?;
            let me = s.identifier();
            let r1: Vec<Round1Package> = load_all(&round1)?;
            let (s2, out) = dkg::round2(s, &r1).map_err(|e| step(&e))?;
            save(&secret_out, &s2)?;
            std::fs::create_dir_all(&out_dir).map_err(|e| coded("io", format!("{}: {e}", out_dir.display())))?;
            let mut files = Vec::new();
            for p in &out {
                let f = out_dir.join(format!("round2-{}-to-{}.jcpt", p.from(), p.to()));
                save(&f, p)?;
                files.push(json!({"to": p.to(), "file": f}));
            }
            written(json, "dkg round 2", &json!({"identifier": me, "secret_file": secret_out, "packages": files}))?;
        }
        ThresholdCmd::DkgFinish { secret, round1, round2, share_out, group_out, json } => {
            let s: Round2Secret = load(&secret)?;
            let r1: Vec<Round1Package> = load_all(&round1)?;
            let r2: Vec<Round2Package> = load_all(&round2)?;
            let (share, group) = dkg::finish(&s, &r1, &r2).map_err(|e| step(&e))?;
            save(&share_out, &share)?;
            save(&group_out, &group)?;
            written(
                json,
                "dkg finished",
                &json!({"identifier": share.identifier(), "group": group.describe(), "share_file": share_out, "group_file": group_out}),
            )?;
        }
        ThresholdCmd::SignRound1 { share, nonces_out, out, json } => {
            let k: KeyShare = load(&share)?;
            let (n, c) = sign::round1(&k, &mut OsRng);
            save(&nonces_out, &n)?;
            save(&out, &c)?;
            written(
                json,
                "sign round 1",
                &json!({"identifier": k.identifier(), "group": k.group(), "nonces_file": nonces_out, "commitments_file": out}),
            )?;
        }
        ThresholdCmd::SignRound2 { share, nonces, commitments, message, out, json } => {
            let k: KeyShare = load(&share)?;
            let n: Nonces = load(&nonces)?;
            let cs: Vec<Commitments> = load_all(&commitments)?;
            let msg = read_bytes(&message)?;
            // The nonces are used up whatever happens next: a pair that
            // reached round 2 is never offered again.
            std::fs::remove_file(&nonces)
                .map_err(|e| coded("io", format!("{}: removing used nonces: {e}", nonces.display())))?;
            let s = sign::round2(&k, n, &cs, &msg).map_err(|e| step(&e))?;
            save(&out, &s)?;
            written(
                json,
                "sign round 2",
                &json!({"identifier": k.identifier(), "group": k.group(), "share_file": out}),
            )?;
        }
        ThresholdCmd::Aggregate { group, commitments, message, shares, out, json } => {
            let g: GroupDescriptor = load(&group)?;
            let cs: Vec<Commitments> = load_all(&commitments)?;
            let ss: Vec<SignatureShare> = load_all(&shares)?;
            let msg = read_bytes(&message)?;
            let sig = sign::aggregate(&g, &cs, &msg, &ss).map_err(|e| step(&e))?;
            std::fs::write(&out, sig).map_err(|e| coded("io", format!("{}: {e}", out.display())))?;
            written(
                json,
                "aggregated",
                &json!({"group": g.group(), "signature": hex::encode(sig), "signers": ss.iter().map(SignatureShare::identifier).collect::<Vec<_>>(), "file": out}),
            )?;
        }
    }
    Ok(ExitCode::from(CLEAN))
}

/// `jcp inspect` of a threshold file: the group descriptor's view (k-of-n,
/// the group did, the participants); of any other participant file, its
/// kind and participant, never its secret.
pub(crate) fn inspect(path: &Path, bytes: &[u8], kind: &str, json: bool) -> anyhow::Result<ExitCode> {
    if kind == GroupDescriptor::TYPE {
        let g = GroupDescriptor::from_bytes(bytes).map_err(|e| terr(path, &e))?;
        let view = g.describe();
        emit(json, &view, || {
            let ids: Vec<String> = view.participants.iter().map(|p| p.identifier.to_string()).collect();
            format!(
                "threshold group {} ({})\n  issuer      {}\n  origin      {}\n  participants {}\n",
                view.threshold,
                view.kind,
                view.group,
                view.origin.as_str(),
                ids.join(", ")
            )
        })?;
        return Ok(ExitCode::from(CLEAN));
    }
    let (who, secret) = match kind {
        KeyShare::TYPE => {
            (KeyShare::from_bytes(bytes).map(|k| json!({"identifier": k.identifier(), "group": k.group()})), true)
        }
        Nonces::TYPE => (Nonces::from_bytes(bytes).map(|n| json!({"identifier": n.identifier()})), true),
        Commitments::TYPE => {
            (Commitments::from_bytes(bytes).map(|c| json!({"identifier": c.identifier(), "group": c.group()})), false)
        }
        SignatureShare::TYPE => (
            SignatureShare::from_bytes(bytes).map(|s| json!({"identifier": s.identifier(), "group": s.group()})),
            false,
        ),
        Round1Secret::TYPE => (Round1Secret::from_bytes(bytes).map(|s| json!({"identifier": s.identifier()})), true),
        Round1Package::TYPE => (Round1Package::from_bytes(bytes).map(|p| json!({"from": p.from()})), false),
        Round2Secret::TYPE => (Round2Secret::from_bytes(bytes).map(|s| json!({"identifier": s.identifier()})), true),
        Round2Package::TYPE => {
            (Round2Package::from_bytes(bytes).map(|p| json!({"from": p.from(), "to": p.to()})), true)
        }
        other => {
            return Err(coded("unknown-object", format!("{}: unknown threshold file type {other:?}", path.display())))
        }
    };
    let who = who.map_err(|e| terr(path, &e))?;
    let v = json!({"type": kind, "secret": secret, "participant": who});
    emit(json, &v, || format!("{kind}{}\n  {who}\n", if secret { " (secret: keep it owner-only)" } else { "" }))?;
    Ok(ExitCode::from(CLEAN))
}
