//! `jcp frame new`: frames (§6), built from flags for a grant.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::bail;
use clap::{Args, Subcommand};
use jcp::cbor::{ContentId, Value};
use jcp::frame::{Frame, FrameKind, Trust};
use jcp::grant::SignedGrant;
use serde_json::json;

use super::files::{read_grant, write_object};
use super::text::{parse_cid, parse_resource};
use crate::out::{coded, emit, CLEAN};

/// `jcp frame new`: writes a frame (§6) for a grant, as canonical CBOR.
#[derive(Debug, Args)]
pub struct FrameArgs {
    #[command(subcommand)]
    cmd: FrameCmd,
}

#[derive(Debug, Subcommand)]
enum FrameCmd {
    /// Builds a frame exercising a grant and writes it to a file.
    New {
        /// The grant the frame exercises (its id and resource fill the frame).
        #[arg(long)]
        grant: PathBuf,
        #[command(flatten)]
        f: FrameFlags,
        #[arg(long)]
        out: PathBuf,
        #[arg(long)]
        json: bool,
    },
}

/// The flags a frame is built from.
#[derive(Debug, Args)]
pub(crate) struct FrameFlags {
    /// The action.
    #[arg(long, default_value = "read")]
    action: String,
    /// The payload's content id. Default: the id of the empty payload.
    #[arg(long)]
    payload_hash: Option<String>,
    /// The model's content id.
    #[arg(long)]
    model: Option<String>,
    /// control | data.
    #[arg(long, default_value = "control")]
    trust: String,
    /// tool-call | tool-result | agent-task | agent-reply.
    #[arg(long, default_value = "tool-call")]
    kind: String,
    /// The resource (hex or text:NAME); default: the grant's resource.
    #[arg(long)]
    resource: Option<String>,
}

pub(crate) fn build_frame(leaf: &SignedGrant, a: &FrameFlags) -> anyhow::Result<Frame> {
    Ok(Frame {
        kind: FrameKind::parse(&a.kind)
            .ok_or_else(|| coded("invalid-frame", format!("unknown frame kind {:?}", a.kind)))?,
        trust: match a.trust.as_str() {
            "control" => Trust::Control,
            "data" => Trust::Data,
            other => bail!(coded("invalid-frame", format!("trust {other:?} is not control|data"))),
        },
        grant_id: leaf.id(),
        action: a.action.clone(),
        resource: a.resource.as_deref().map(parse_resource).transpose()?.unwrap_or(leaf.grant().capability.resource),
        payload_hash: a
            .payload_hash
            .as_deref()
            .map(|p| parse_cid(p, "payload-hash"))
            .transpose()?
            .unwrap_or_else(|| ContentId::of_bytes(&Value::Bytes(vec![]).encode())),
        model: a.model.as_deref().map(|m| parse_cid(m, "model")).transpose()?,
    })
}

pub fn run_frame(args: FrameArgs) -> anyhow::Result<ExitCode> {
    match args.cmd {
        FrameCmd::New { grant, f, out, json } => {
            let g = read_grant(&grant)?;
            let frame = build_frame(&g, &f)?;
            write_object(&out, &frame.to_value().encode())?;
            emit(json, &json!({"type": "frame", "id": frame.id(), "frame": frame, "file": out}), || {
                format!("frame {} for grant {}\nwritten to {}", frame.id(), g.id(), out.display())
            })?;
        }
    }
    Ok(ExitCode::from(CLEAN))
}
