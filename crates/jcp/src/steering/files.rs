//! Replacing the files a steered run is steered through (the run file, the
//! revocations beside it) so that nobody who can write in their folder can
//! turn the steward's write elsewhere (issue 34, "Files the agent can
//! reach"): the agent is the holder that checkpoints, so it writes in the
//! run's folder. Each write goes to a temporary with a random name created
//! exclusively (`O_CREAT|O_EXCL`: a symlink planted at the name is not
//! followed, the create fails), is synced, renamed over the target (a
//! symlink at the target is replaced, not followed) and the folder synced.
//! A folder anyone may write in without the sticky bit is refused.

use std::io::Write;
use std::path::Path;

/// Replaces `path` with `bytes` as described in the module; `writer`
/// names the temporary's writer (`.NAME.WRITER-RANDOM.tmp`, for people).
pub fn replace(path: &Path, bytes: &[u8], writer: &str) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    refuse_open_folder(dir)?;
    let name = path.file_name().map_or_else(|| "file".into(), |n| n.to_string_lossy().into_owned());
    let tmp = dir.join(format!(".{name}.{writer}-{}.tmp", hex::encode(crate::identity::fresh_nonce())));
    let written = (|| {
        let mut f = std::fs::OpenOptions::new().write(true).create_new(true).open(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    // The rename made durable: the folder's entry synced (best effort where
    // a folder cannot be opened for it).
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// A folder every user may write in, without the sticky bit that keeps
/// them from replacing each other's files, is refused.
fn refuse_open_folder(dir: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dir)?.permissions().mode();
        if mode & 0o002 != 0 && mode & 0o1000 == 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::PermissionDenied,
                format!(
                    "{} is writable by every user (mode {:o}, no sticky bit): anyone could replace the run's files there",
                    dir.display(),
                    mode & 0o7777
                ),
            ));
        }
    }
    #[cfg(not(unix))]
    let _ = dir;
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;

    /// §4.7 (the steward's writes reach only the run's files): a symlink
    /// planted where a temporary of the old, predictable name would go
    /// is never followed, and one planted at the target is replaced.
    #[cfg(unix)]
    #[test]
    fn s4_7_a_planted_symlink_never_turns_the_stewards_write_elsewhere() {
        let t = tempfile::tempdir().unwrap();
        let victim = t.path().join("victim.txt");
        std::fs::write(&victim, b"mine").unwrap();
        let run = t.path().join("r.jcprun");
        // The old predictable temporary, and the target itself, as symlinks to the victim.
        std::os::unix::fs::symlink(&victim, t.path().join("r.jcprun.console-tmp")).unwrap();
        std::os::unix::fs::symlink(&victim, &run).unwrap();
        let issuer = crate::identity::Keypair::generate();
        let root = crate::grant::Grant {
            issuer: issuer.did(),
            subject: crate::identity::Keypair::generate().did(),
            capability: crate::grant::Capability {
                resource: crate::cbor::ContentId::of_bytes(b"r"),
                actions: vec!["read".into()],
            },
            budget_uj: 10,
            budget_funds: None,
            caveats: Vec::new(),
            expiry: 0,
            parent: None,
            delegate_depth: None,
            nonce: [1; 16],
        }
        .sign(&issuer)
        .unwrap();
        let r = crate::steering::Run::new(root);
        r.replace(&run, "console").unwrap();
        assert_eq!(std::fs::read(&victim).unwrap(), b"mine");
        assert_eq!(std::fs::read(&run).unwrap(), r.to_bytes());
        assert!(!std::fs::symlink_metadata(&run).unwrap().file_type().is_symlink());
        // No temporary is left behind.
        let left: Vec<_> = std::fs::read_dir(t.path())
            .unwrap()
            .filter_map(Result::ok)
            .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
            .collect();
        assert!(left.is_empty(), "{left:?}");
    }

    #[cfg(unix)]
    #[test]
    fn s4_7_a_folder_every_user_may_write_without_the_sticky_bit_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let t = tempfile::tempdir().unwrap();
        let open = t.path().join("open");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
        let e = replace(&open.join("r.jcprun"), b"x", "console").unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::PermissionDenied);
        assert!(e.to_string().contains("writable by every user"), "{e}");
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o1777)).unwrap();
        replace(&open.join("r.jcprun"), b"x", "console").unwrap();
    }
}
