//! Output helpers shared by every subcommand: human text by default, one JSON
//! document with `--json`, errors as `{code, message}`.

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

/// A typed error that carries a stable code to the user (`{code, message}`).
#[derive(Debug)]
pub struct CodedError {
    pub code: &'static str,
    pub message: String,
}

impl std::fmt::Display for CodedError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for CodedError {}

/// An error carrying a stable code to the user, e.g. a crate error's
/// `code()` and its message.
pub fn coded(code: &'static str, message: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(CodedError { code, message: message.into() })
}

/// Reports an error on stderr (text and, for machines, a JSON line when
/// `JCP_JSON_ERRORS=1`) and returns exit code 2.
pub fn fail(err: &anyhow::Error) -> ExitCode {
    let code = err.downcast_ref::<CodedError>().map_or("error", |c| c.code);
    let message = format!("{err:#}");
    if std::env::var_os("JCP_JSON_ERRORS").is_some() {
        eprintln!("{}", serde_json::json!({"error": {"code": code, "message": message}}));
    } else {
        eprintln!("jcp: error [{code}]: {message}");
    }
    ExitCode::from(ERROR)
}
