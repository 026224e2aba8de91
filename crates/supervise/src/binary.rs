//! Where the `jcp` command is: the demo agent and the backend behind the gate.

use std::path::PathBuf;

use crate::Error;

/// The `jcp` command: `$JCP_BIN`, else beside the running executable (or
/// one folder up, for test binaries), else on PATH.
pub fn jcp_binary() -> Result<PathBuf, Error> {
    if let Some(p) = std::env::var_os("JCP_BIN") {
        return Ok(PathBuf::from(p));
    }
    let exe = std::env::current_exe().ok();
    let mut candidates: Vec<PathBuf> = Vec::new();
    if let Some(dir) = exe.as_ref().and_then(|e| e.parent()) {
        candidates.push(dir.join("jcp"));
        if let Some(up) = dir.parent() {
            candidates.push(up.join("jcp"));
        }
    }
    if let Some(path) = std::env::var_os("PATH") {
        candidates.extend(std::env::split_paths(&path).map(|d| d.join("jcp")));
    }
    candidates.into_iter().find(|c| c.is_file()).ok_or_else(|| Error::NoAgent {
        beside: exe.map_or_else(|| "this program".to_owned(), |e| e.display().to_string()),
    })
}
