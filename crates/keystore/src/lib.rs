//! # keystore — the steward's Ed25519 key at rest
//!
//! A steward signs amendments, revocations and continuation grants (spec
//! §4.3, §4.7); its key must not sit on disk in the clear. A key file here
//! is:
//!
//! ```text
//! jcp-steward-key/1\n
//! did:key:z6Mk…\n            (public: shown while the key is locked)
//! <age file>                 (binary; scrypt passphrase recipient,
//!                             ChaCha20-Poly1305 payload: the 32-byte seed)
//! ```
//!
//! The whole encryption format is `age`'s (a well-kept, audited format:
//! scrypt key derivation, an authenticated header, an AEAD payload), not a
//! hand-assembled one. The did line is checked against the decrypted seed,
//! so a file whose public line was edited is refused, not trusted.
//!
//! Files are created owner-only (0600), never overwritten, and a file that
//! others can read is refused before it is decrypted, with the fix named.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod held;

pub use held::{Held, DEFAULT_IDLE_LOCK, MAX_IDLE_LOCK, MIN_IDLE_LOCK};

use std::io::Write;
use std::path::{Path, PathBuf};
use zeroize::Zeroizing;

use age::secrecy::SecretString;
use jcp::identity::{Did, Keypair};

/// The first line of a key file.
pub const MAGIC: &str = "jcp-steward-key/1";
/// The scrypt work factor (log₂ N) a new key file is written with: about a
/// second on this project's machines in an optimised build.
pub const DEFAULT_WORK_FACTOR: u8 = 18;
/// The largest work factor a key file may demand when it is opened or be
/// written with: 2²⁰ blocks of 1 KiB, 1 GiB of scrypt memory (a file cannot
/// make the console spin for minutes or take 4 GiB).
pub const MAX_WORK_FACTOR: u8 = 20;
/// The least work factor a new key file is written with: 2¹⁵ (32 MiB), so
/// a stolen file is not opened by guessing at scrypt's cheapest setting.
pub const MIN_WORK_FACTOR: u8 = 15;
/// The fewest characters a new key file's passphrase has.
pub const MIN_PASSPHRASE_CHARS: usize = 8;

/// Why a key file was refused. Every message names the file and the fix.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum KeyError {
    /// The passphrase does not open the file.
    #[error("key-wrong-passphrase: {path}: the passphrase does not open this key (nothing was changed; try again)")]
    WrongPassphrase {
        /// The key file.
        path: PathBuf,
    },
    /// The file is not a whole key file (cut short, edited or corrupted).
    #[error("key-corrupt: {path}: {detail} (the file was not changed; restore it from a backup, or create or import the key again)")]
    Corrupt {
        /// The key file.
        path: PathBuf,
        /// What is wrong with it (cut short, a did line that does not parse, an
        /// encrypted key that does not open, …).
        detail: String,
    },
    /// Others may read the file.
    #[error(
        "key-permissions: {path}: mode {mode:o} lets others read it; run `chmod 600 {path}` (the key was not opened)"
    )]
    ReadableByOthers {
        /// The key file.
        path: PathBuf,
        /// Its Unix permission bits.
        mode: u32,
    },
    /// Creating would overwrite a file.
    #[error("key-exists: {path}: a file is already there; it is never overwritten (choose another path, or move it away first)")]
    Exists {
        /// The path already taken.
        path: PathBuf,
    },
    /// An empty passphrase.
    #[error("key-passphrase-empty: a key file needs a passphrase")]
    EmptyPassphrase,
    /// A passphrase shorter than [`MIN_PASSPHRASE_CHARS`].
    #[error("key-passphrase-short: a key file's passphrase has at least {MIN_PASSPHRASE_CHARS} characters (this one has {0})")]
    ShortPassphrase(usize),
    /// A work factor out of range.
    #[error("key-work-factor: {0} is outside {MIN_WORK_FACTOR}..={MAX_WORK_FACTOR}")]
    WorkFactor(u8),
    /// The path is not a plain file of the reading user: a symbolic link,
    /// another user's file, not a regular file, or replaced while opened.
    #[error("key-unsafe-file: {path}: {detail} (the key was not opened)")]
    UnsafeFile {
        /// The key file.
        path: PathBuf,
        /// What is wrong with it and the fix.
        detail: String,
    },
    /// Reading or writing failed.
    #[error("io: {path}: {source}")]
    Io {
        /// The file read or written.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
}

impl KeyError {
    /// A stable code for the console and the CLI (`{code, message}`).
    pub fn code(&self) -> &'static str {
        match self {
            Self::WrongPassphrase { .. } => "key-wrong-passphrase",
            Self::Corrupt { .. } => "key-corrupt",
            Self::ReadableByOthers { .. } => "key-permissions",
            Self::Exists { .. } => "key-exists",
            Self::EmptyPassphrase => "key-passphrase-empty",
            Self::ShortPassphrase(_) => "key-passphrase-short",
            Self::WorkFactor(_) => "key-work-factor",
            Self::UnsafeFile { .. } => "key-unsafe-file",
            Self::Io { .. } => "io",
        }
    }
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> KeyError + '_ {
    move |source| KeyError::Io { path: path.to_path_buf(), source }
}

fn corrupt(path: &Path, detail: impl Into<String>) -> KeyError {
    KeyError::Corrupt { path: path.to_path_buf(), detail: detail.into() }
}

/// Reads a plain key file, the unencrypted JSON `{"did": …, "seed": 64
/// hex digits}` that `jcp key new` writes without a passphrase (an agent's
/// working key, or a steward key to import): owner-only, and its did must
/// be its seed's.
pub fn read_plain(path: &Path) -> Result<Keypair, KeyError> {
    let bytes = read_private(path)?;
    plain_from_bytes(path, &bytes)
}

fn plain_from_bytes(path: &Path, bytes: &[u8]) -> Result<Keypair, KeyError> {
    jcp::identity::KeyFile::decode(bytes).map_err(|e| corrupt(path, e.to_string()))
}

/// Writes `key` as a new plain key file (owner-only, never overwriting):
/// for keys that are not the steward's, such as a demo agent's.
pub fn write_plain(path: &Path, key: &Keypair) -> Result<(), KeyError> {
    let text = jcp::identity::KeyFile::encode(key);
    let mut f = open_new_private(path)?;
    f.write_all(text.as_bytes()).map_err(io(path))?;
    f.sync_all().map_err(io(path))
}

/// Reads a key to import: a steward key file (opened with `passphrase`)
/// or a plain key file (`passphrase` unused).
pub fn read_any(path: &Path, passphrase: &str) -> Result<Keypair, KeyError> {
    let bytes = read_private(path)?;
    if is_key_file(&bytes) {
        unlock(path, passphrase)
    } else {
        plain_from_bytes(path, &bytes)
    }
}

/// Reads a passphrase file: owner-only like a key (a passphrase others can
/// read protects nothing), its first line without the line end. The
/// passphrase and the bytes read are wiped from memory when dropped.
pub fn read_passphrase_file(path: &Path) -> Result<Zeroizing<String>, KeyError> {
    let bytes = read_private(path)?;
    let text = std::str::from_utf8(&bytes).map_err(|_| corrupt(path, "a passphrase file is text"))?;
    Ok(Zeroizing::new(text.lines().next().unwrap_or_default().to_owned()))
}

/// Whether `bytes` look like a key file of this format (its first line).
pub fn is_key_file(bytes: &[u8]) -> bool {
    bytes.starts_with(MAGIC.as_bytes()) && bytes.get(MAGIC.len()) == Some(&b'\n')
}

/// Writes `key` to a new file at `path`, encrypted under `passphrase`
/// with scrypt work factor `work_factor` (log₂ N). Owner-only; refuses to
/// overwrite. Returns the key's did.
pub fn create(path: &Path, key: &Keypair, passphrase: &str, work_factor: u8) -> Result<Did, KeyError> {
    if passphrase.is_empty() {
        return Err(KeyError::EmptyPassphrase);
    }
    let chars = passphrase.chars().count();
    if chars < MIN_PASSPHRASE_CHARS {
        return Err(KeyError::ShortPassphrase(chars));
    }
    if !(MIN_WORK_FACTOR..=MAX_WORK_FACTOR).contains(&work_factor) {
        return Err(KeyError::WorkFactor(work_factor));
    }
    let mut recipient = age::scrypt::Recipient::new(SecretString::from(passphrase.to_owned()));
    recipient.set_work_factor(work_factor);
    let seed = key.seed();
    let sealed = age::encrypt(&recipient, seed.as_slice()).map_err(|e| KeyError::Io {
        path: path.to_path_buf(),
        source: std::io::Error::other(format!("encrypting the key: {e}")),
    })?;
    let did = key.did();
    let mut out = Vec::with_capacity(sealed.len() + 80);
    out.extend_from_slice(MAGIC.as_bytes());
    out.push(b'\n');
    out.extend_from_slice(did.to_did_string().as_bytes());
    out.push(b'\n');
    out.extend_from_slice(&sealed);
    let mut f = open_new_private(path)?;
    f.write_all(&out).map_err(io(path))?;
    f.sync_all().map_err(io(path))?;
    Ok(did)
}

#[cfg(unix)]
fn open_new_private(path: &Path) -> Result<std::fs::File, KeyError> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(path).map_err(|e| {
        if e.kind() == std::io::ErrorKind::AlreadyExists {
            KeyError::Exists { path: path.to_path_buf() }
        } else {
            KeyError::Io { path: path.to_path_buf(), source: e }
        }
    })
}

#[cfg(not(unix))]
fn open_new_private(path: &Path) -> Result<std::fs::File, KeyError> {
    std::fs::OpenOptions::new().write(true).create_new(true).open(path).map_err(|e| {
        if e.kind() == std::io::ErrorKind::AlreadyExists {
            KeyError::Exists { path: path.to_path_buf() }
        } else {
            KeyError::Io { path: path.to_path_buf(), source: e }
        }
    })
}

/// Refuses a file others may read (unix: any group or other bit).
#[cfg(unix)]
/// Reads a private file (a key, a passphrase) by what it is, not by what
/// its path names later: the path must not be a symbolic link; the file
/// opened must be the one looked at (same device and inode: not swapped in
/// between), a regular file, the reading user's, and owner-only. The
/// checks are made on the open file, then it is read.
fn read_private(path: &Path) -> Result<Zeroizing<Vec<u8>>, KeyError> {
    use std::io::Read;
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let unsafe_file = |detail: String| KeyError::UnsafeFile { path: path.to_path_buf(), detail };
    let link = std::fs::symlink_metadata(path).map_err(io(path))?;
    if link.file_type().is_symlink() {
        return Err(unsafe_file("it is a symbolic link; name the key file itself".into()));
    }
    let f = std::fs::File::open(path).map_err(io(path))?;
    let meta = f.metadata().map_err(io(path))?;
    if (meta.dev(), meta.ino()) != (link.dev(), link.ino()) {
        return Err(unsafe_file("it was replaced while it was being opened; try again".into()));
    }
    if !meta.is_file() {
        return Err(unsafe_file("it is not a regular file".into()));
    }
    let me = rustix::process::geteuid().as_raw();
    if meta.uid() != me {
        return Err(unsafe_file(format!(
            "it belongs to user {}, not to the user reading it ({me}); use a key file of your own",
            meta.uid()
        )));
    }
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(KeyError::ReadableByOthers { path: path.to_path_buf(), mode });
    }
    // Sized up front so that reading never moves the bytes (a move would
    // leave a copy behind that is not wiped).
    let mut bytes = Zeroizing::new(Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0).min(1 << 20) + 1));
    // A key file is small: one that is not is not read whole.
    f.take(1 << 20).read_to_end(&mut bytes).map_err(io(path))?;
    Ok(bytes)
}

#[cfg(not(unix))]
fn read_private(path: &Path) -> Result<Zeroizing<Vec<u8>>, KeyError> {
    std::fs::read(path).map(Zeroizing::new).map_err(io(path))
}

/// The did a key file states, read without the passphrase (what the
/// console shows while the key is locked). It is checked against the
/// seed only by [`unlock`].
pub fn did(path: &Path) -> Result<Did, KeyError> {
    let bytes = read_private(path)?;
    split(path, &bytes).map(|(d, _)| d)
}

fn split<'a>(path: &Path, bytes: &'a [u8]) -> Result<(Did, &'a [u8]), KeyError> {
    if !is_key_file(bytes) {
        return Err(corrupt(path, format!("not a steward key file (its first line is not {MAGIC:?})")));
    }
    let rest = &bytes[MAGIC.len() + 1..];
    let nl = rest.iter().position(|b| *b == b'\n').ok_or_else(|| corrupt(path, "cut short inside its did line"))?;
    let line = std::str::from_utf8(&rest[..nl]).map_err(|_| corrupt(path, "its did line is not text"))?;
    let did = Did::parse(line).map_err(|e| corrupt(path, format!("its did line does not parse: {e}")))?;
    Ok((did, &rest[nl + 1..]))
}

/// Opens a key file with `passphrase`: the file must be owner-only, whole,
/// and its seed must be the did it states.
pub fn unlock(path: &Path, passphrase: &str) -> Result<Keypair, KeyError> {
    let bytes = read_private(path)?;
    let (did, sealed) = split(path, &bytes)?;
    if sealed.is_empty() {
        return Err(corrupt(path, "cut short: no encrypted key after the did line"));
    }
    let mut identity = age::scrypt::Identity::new(SecretString::from(passphrase.to_owned()));
    identity.set_max_work_factor(MAX_WORK_FACTOR);
    let seed = age::decrypt(&identity, sealed).map(Zeroizing::new).map_err(|e| match e {
        age::DecryptError::DecryptionFailed | age::DecryptError::NoMatchingKeys => {
            KeyError::WrongPassphrase { path: path.to_path_buf() }
        }
        age::DecryptError::ExcessiveWork { required, .. } => corrupt(
            path,
            format!("it demands scrypt work factor {required}, above the {MAX_WORK_FACTOR} this console accepts"),
        ),
        other => corrupt(path, format!("the encrypted key does not open: {other}")),
    })?;
    let seed: Zeroizing<[u8; 32]> = Zeroizing::new(
        seed.as_slice()
            .try_into()
            .map_err(|_| corrupt(path, format!("the encrypted key holds {} bytes, not a 32-byte seed", seed.len())))?,
    );
    let key = Keypair::from_seed(*seed).map_err(|e| corrupt(path, format!("the seed is not a key: {e}")))?;
    if key.did() != did {
        return Err(corrupt(path, format!("its did line names {did}, but the key inside is {}", key.did())));
    }
    Ok(key)
}
