//! Output helpers shared by every subcommand: human text by default, one JSON
//! document with `--json`, errors as `{code, message}`.

use std::borrow::Cow;
use std::io::Write;
use std::process::ExitCode;

use serde::Serialize;

/// Exit code for a clean result.
pub const CLEAN: u8 = 0;
/// Exit code for findings, refusals or failed checks.
pub const FINDINGS: u8 = 1;
/// Exit code for unreadable input or an operational error.
pub const ERROR: u8 = 2;

/// Prints `value` as one line of JSON when `json`, else the human text.
pub fn emit<T: Serialize>(json: bool, value: &T, human: impl FnOnce() -> String) -> anyhow::Result<()> {
    let mut stdout = std::io::stdout().lock();
    if json {
        serde_json::to_writer(&mut stdout, value)?;
        writeln!(stdout)?;
    } else {
        let text = human();
        write!(stdout, "{text}")?;
        if !text.ends_with('\n') {
            writeln!(stdout)?;
        }
    }
    Ok(())
}

/// A typed error that carries a stable code to the user (`{code, message}`)
/// and the exit status it ends the command with: [`FINDINGS`] for a
/// refusal (the input was read and the protocol said no), [`ERROR`] for
/// input that could not be read or an operational failure. Built only by
/// [`coded`], [`crate_err`], [`refused`] and [`core_err`], so the status is
/// decided here. The code is owned where the crate's code is (a blueprint
/// `ceiling:<limit>`), borrowed where it is static.
#[derive(Debug)]
pub struct CodedError {
    pub code: Cow<'static, str>,
    pub message: String,
    exit: u8,
}

impl std::fmt::Display for CodedError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for CodedError {}

/// An error carrying a stable code to the user, e.g. a crate error's
/// `code()` and its message; the command exits [`ERROR`] (2).
pub fn coded(code: impl Into<Cow<'static, str>>, message: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(CodedError { code: code.into(), message: message.into(), exit: ERROR })
}

/// A crate's error enum, whose `code()` is its stable machine code.
pub trait CrateError: std::fmt::Display {
    /// The error's code (`not-a-stream`, `ceiling:depth`, ...).
    fn wire_code(&self) -> Cow<'static, str>;
}

macro_rules! crate_errors {
    ($($t:ty),*) => {$(
        impl CrateError for $t {
            fn wire_code(&self) -> Cow<'static, str> {
                self.code().into()
            }
        }
    )*};
}

crate_errors!(jcp_audit::AuditError, jcp_meter::Error, jcp_receipt::Error, blueprint::Error);

/// [`coded`] with a crate error's own code and message; exits [`ERROR`] (2).
pub fn crate_err(e: &impl CrateError) -> anyhow::Error {
    coded(e.wire_code(), e.to_string())
}

/// A refusal: the input was read and the protocol refused it (an
/// amplifying attenuation, an overflowing shard, a revocation by someone
/// other than the issuer, a steering refusal). Exits [`FINDINGS`] (1), as
/// the README says.
pub fn refused(code: impl Into<Cow<'static, str>>, message: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(CodedError { code: code.into(), message: message.into(), exit: FINDINGS })
}

/// A core error: a refusal ([`jcp::Error::is_refusal`]) exits 1, anything
/// unreadable exits 2.
pub fn jcp_err(e: &jcp::Error, message: String) -> anyhow::Error {
    if e.is_refusal() {
        refused(e.code(), message)
    } else {
        coded(e.code(), message)
    }
}

/// [`jcp_err`] about the file at `path`.
pub fn core_err(path: &std::path::Path, e: &jcp::Error) -> anyhow::Error {
    jcp_err(e, format!("{}: {e}", path.display()))
}

/// Reports an error on stderr (text and, for machines, a JSON line when
/// `JCP_JSON_ERRORS=1`) and returns its exit code: 1 for a refusal, 2 for
/// everything else (an error that is not a [`CodedError`] included).
pub fn fail(err: &anyhow::Error) -> ExitCode {
    let coded = err.downcast_ref::<CodedError>();
    let code = coded.map_or("error", |c| c.code.as_ref());
    let exit = coded.map_or(ERROR, |c| c.exit);
    let message = format!("{err:#}");
    if std::env::var_os("JCP_JSON_ERRORS").is_some() {
        eprintln!("{}", serde_json::json!({"error": {"code": code, "message": message}}));
    } else {
        eprintln!("jcp: error [{code}]: {message}");
    }
    ExitCode::from(exit)
}
