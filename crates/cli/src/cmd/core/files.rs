//! The files the protocol core's commands read and write: key files (a
//! `jcp key new` seed file, mode 0600, or an encrypted steward key file),
//! objects as canonical det-CBOR (§3), and files replaced atomically.

use std::path::{Path, PathBuf};

use anyhow::Context;
use jcp::grant::SignedGrant;
use jcp::identity::{KeyFile, Keypair};

use crate::out::coded;
pub(crate) use crate::out::core_err;

/// A passphrase from a file (owner-only, refused `key-permissions`
/// otherwise): its first line, without the line end, wiped when dropped.
pub(super) fn read_passphrase(path: &Path) -> anyhow::Result<zeroize::Zeroizing<String>> {
    keystore::read_passphrase_file(path).map_err(|e| coded(e.code(), e.to_string()))
}

/// Reads a key file of `jcp key new` (`{did, seed}` JSON), checking that the
/// did is the seed's, or an encrypted steward key file (`keystore`) opened
/// with the passphrase in the file `JCP_PASSPHRASE_FILE` names. Every
/// subcommand that signs reads keys through this.
/// An enforcement point's steward key (issue 34, "Keys at rest"): encrypted
/// at rest, or a plaintext key only where the operator says so
/// (`plaintext_ok`, `jcp serve --plaintext-key`): the key that seals the
/// record is not left in the clear by default.
pub(crate) fn read_steward_key(path: &Path, plaintext_ok: bool) -> anyhow::Result<Keypair> {
    let bytes = std::fs::read(path).with_context(|| format!("reading key file {}", path.display()))?;
    if !plaintext_ok && !keystore::is_key_file(&bytes) {
        return Err(coded(
            "key-plaintext",
            format!(
                "{}: the steward key of an enforcement point is kept encrypted at rest (`jcp key new --passphrase-file F`, then JCP_PASSPHRASE_FILE=F); to serve with this plaintext key, say so: --plaintext-key",
                path.display()
            ),
        ));
    }
    read_key(path)
}

pub(crate) fn read_key(path: &Path) -> anyhow::Result<Keypair> {
    // A plain key's bytes are its seed in hex: wiped when dropped.
    let bytes =
        zeroize::Zeroizing::new(std::fs::read(path).with_context(|| format!("reading key file {}", path.display()))?);
    if keystore::is_key_file(&bytes) {
        let pf = std::env::var_os("JCP_PASSPHRASE_FILE").ok_or_else(|| {
            coded(
                "key-locked",
                format!(
                    "{} is encrypted at rest: set JCP_PASSPHRASE_FILE to a file holding its passphrase",
                    path.display()
                ),
            )
        })?;
        let pass = read_passphrase(Path::new(&pf))?;
        return keystore::unlock(path, &pass).map_err(|e| coded(e.code(), e.to_string()));
    }
    // A plain key is a seed in the clear: owner-only, or it is not read.
    keystore::read_plain(path).map_err(|e| match e {
        keystore::KeyError::Corrupt { .. } => {
            KeyFile::decode(&bytes).err().map_or_else(|| coded(e.code(), e.to_string()), |c| core_err(path, &c))
        }
        other => coded(other.code(), other.to_string()),
    })
}

pub(crate) fn write_key(path: &Path, kp: &Keypair) -> anyhow::Result<()> {
    write_private(path, KeyFile::encode(kp).as_bytes())
}

#[cfg(unix)]
fn write_private(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("creating {} (it must not exist yet)", path.display()))?;
    f.write_all(bytes)?;
    f.sync_all()?;
    Ok(())
}

#[cfg(not(unix))]
fn write_private(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    std::fs::write(path, bytes).with_context(|| format!("writing {}", path.display()))
}

pub(crate) fn read_bytes(path: &Path) -> anyhow::Result<Vec<u8>> {
    std::fs::read(path).with_context(|| format!("reading {}", path.display()))
}

pub(crate) fn read_grant(path: &Path) -> anyhow::Result<SignedGrant> {
    SignedGrant::from_bytes(&read_bytes(path)?).map_err(|e| core_err(path, &e))
}

pub(crate) fn write_object(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    std::fs::write(path, bytes).with_context(|| format!("writing {}", path.display()))
}

/// Replaces a file by writing a sibling temporary file and renaming it over
/// the original, so an interrupted write never leaves half an object.
pub(crate) fn replace_file(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    std::fs::write(&tmp, bytes).with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("replacing {}", path.display()))
}

/// Creates a file that must not exist yet.
pub(crate) fn create_file(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .with_context(|| format!("creating {} (it must not exist yet)", path.display()))?;
    f.write_all(bytes).with_context(|| format!("writing {}", path.display()))
}
