//! `jcp channel`: receipt-settled budget channels (spec §4.5, C17) — sign a
//! statement, verify a statement or an overdraft proof, audit a sequence of
//! statements into the merged ledger and, when over budget, its proof.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Subcommand};
use jcp::channel::{Artifact, SignedStatement, Statement};
use serde_json::json;

use super::core::{core_err, parse_did, read_bytes, read_grant, read_key, write_object};
use crate::out::{emit, CLEAN, FINDINGS};

#[derive(Debug, Args)]
pub struct ChannelArgs {
    #[command(subcommand)]
    cmd: ChannelCmd,
}

#[derive(Debug, Subcommand)]
enum ChannelCmd {
    /// Signs one statement of a point's cumulative spend on a grant (§4.5).
    Statement {
        /// The point's key file (the statement's `point` is its did).
        #[arg(long)]
        key: PathBuf,
        /// The channel's grant.
        #[arg(long)]
        grant: PathBuf,
        /// Cumulative µJ allowed at this point since the channel opened.
        #[arg(long)]
        spent_uj: u64,
        /// The statement's sequence number (strictly increasing per point).
        #[arg(long)]
        seq: u64,
        /// Where to write the signed statement.
        #[arg(long)]
        out: PathBuf,
        #[arg(long)]
        json: bool,
    },
    /// Verifies a signed statement or an overdraft proof (exit 1 when refused).
    Verify {
        /// The statement or proof file.
        file: PathBuf,
        #[arg(long)]
        json: bool,
    },
    /// Admits statements in order into a channel on a grant; prints each one's fate, the merged
    /// ledger and, when over budget, the overdraft proof (exit 1 on an overdraft or a refused statement).
    Audit {
        /// The channel's grant.
        #[arg(long)]
        grant: PathBuf,
        /// A member point's did (repeatable); without any, the points the statements name.
        #[arg(long = "member")]
        members: Vec<String>,
        /// Where to write the overdraft proof, when there is one.
        #[arg(long)]
        proof_out: Option<PathBuf>,
        /// The signed statements, in the order they arrived.
        #[arg(required = true)]
        statements: Vec<PathBuf>,
        #[arg(long)]
        json: bool,
    },
}

fn read_statement(path: &Path) -> anyhow::Result<SignedStatement> {
    SignedStatement::from_bytes(&read_bytes(path)?).map_err(|e| core_err(path, &e))
}

pub fn run(a: ChannelArgs) -> anyhow::Result<ExitCode> {
    match a.cmd {
        ChannelCmd::Statement { key, grant, spent_uj, seq, out, json } => {
            let point = read_key(&key)?;
            let g = read_grant(&grant)?;
            let s = Statement { grant_id: g.id(), point: point.did(), spent_uj, seq }
                .sign(&point)
                .map_err(|e| core_err(&key, &e))?;
            write_object(&out, &s.to_bytes())?;
            emit(json, &json!({"id": s.id(), "statement": s.statement(), "out": out}), || {
                format!(
                    "statement {}: {} spent {} µJ on grant {} at seq {seq}; written to {}\n",
                    s.id(),
                    point.did(),
                    spent_uj,
                    g.id(),
                    out.display()
                )
            })?;
            Ok(ExitCode::from(CLEAN))
        }
        ChannelCmd::Verify { file, json } => {
            let art = Artifact::from_bytes(&read_bytes(&file)?).map_err(|e| core_err(&file, &e))?;
            let (value, ok, text) = match &art {
                Artifact::Statement(s) => {
                    let r = s.verify();
                    let st = s.statement();
                    let text = match &r {
                        Ok(()) => format!(
                            "statement {}: verified: {} spent {} µJ on grant {} at seq {}\n",
                            s.id(),
                            st.point,
                            st.spent_uj,
                            st.grant_id,
                            st.seq
                        ),
                        Err(e) => format!("statement {}: refused: {e}\n", s.id()),
                    };
                    let code = r.as_ref().map_or_else(jcp::Error::code, |()| "ok");
                    (json!({"kind": "statement", "id": s.id(), "statement": st, "code": code}), r.is_ok(), text)
                }
                Artifact::Proof(p) => {
                    let r = p.verify();
                    let text = match &r {
                        Ok(o) => format!(
                            "overdraft proof: verified: grant {} budget {} µJ, {} point(s) signed {} µJ: {} µJ over\n",
                            o.grant_id,
                            o.budget_uj,
                            o.points.len(),
                            o.total_uj,
                            o.overdraft_uj
                        ),
                        Err(e) => format!("overdraft proof: refused: {e}\n"),
                    };
                    let value = match &r {
                        Ok(o) => json!({"kind": "overdraft-proof", "code": "ok", "overdraft": o}),
                        Err(e) => json!({"kind": "overdraft-proof", "code": e.code(), "message": e.to_string()}),
                    };
                    (value, r.is_ok(), text)
                }
            };
            emit(json, &value, || text)?;
            Ok(ExitCode::from(if ok { CLEAN } else { FINDINGS }))
        }
        ChannelCmd::Audit { grant, members, proof_out, statements, json } => {
            let g = read_grant(&grant)?;
            let members = if members.is_empty() {
                None
            } else {
                Some(members.iter().map(|m| parse_did(m)).collect::<anyhow::Result<Vec<_>>>()?)
            };
            let read = statements.iter().map(|p| read_statement(p)).collect::<anyhow::Result<Vec<_>>>()?;
            let report = jcp::channel::audit(g, members, &read).map_err(|e| core_err(&grant, &e))?;
            if let (Some(p), Some(path)) = (&report.proof, &proof_out) {
                write_object(path, &p.to_bytes())?;
            }
            let proof_hex = report.proof.as_ref().map(|p| hex::encode(p.to_bytes()));
            emit(json, &json!({"report": report, "proof": proof_hex, "proof_out": proof_out}), || {
                human(&report, &statements, proof_out.as_deref())
            })?;
            Ok(ExitCode::from(if report.is_clean() { CLEAN } else { FINDINGS }))
        }
    }
}

fn human(r: &jcp::channel::AuditReport, files: &[PathBuf], proof_out: Option<&Path>) -> String {
    let mut s = String::new();
    for (step, f) in r.steps.iter().zip(files) {
        let c = &step.claim;
        if step.code == "admitted" {
            let _ = writeln!(
                s,
                "#{} {}: admitted: {} spent {} µJ at seq {}",
                step.index,
                f.display(),
                c.point,
                c.spent_uj,
                c.seq
            );
        } else {
            let _ = writeln!(s, "#{} {}: refused: {}", step.index, f.display(), step.message);
        }
    }
    let l = &r.ledger;
    let _ = writeln!(
        s,
        "ledger: grant {} budget {} µJ{}",
        l.grant_id,
        l.budget_uj,
        if r.members_given { "" } else { " (members: the points the statements name)" }
    );
    for p in &l.points {
        let _ = writeln!(
            s,
            "  {}: {} µJ settled{}",
            p.point,
            p.settled_uj,
            p.seq.map_or(" (no statement)".to_owned(), |q| format!(" at seq {q}"))
        );
    }
    let _ = writeln!(s, "  total {} µJ of {} µJ", l.total_uj, l.budget_uj);
    match &r.overdraft {
        Some(o) => {
            let _ = write!(
                s,
                "OVERDRAFT: {} µJ past the budget, provable from {} signed statement(s)",
                o.overdraft_uj,
                o.points.len()
            );
            s += &proof_out.map_or_else(
                || " (write the proof with --proof-out)\n".to_owned(),
                |p| format!("; proof written to {}\n", p.display()),
            );
        }
        None => s += "within budget\n",
    }
    if r.refused > 0 {
        let _ = writeln!(s, "{} statement(s) refused", r.refused);
    }
    s
}
