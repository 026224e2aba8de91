//! The steward's signing key: created or imported into an encrypted key
//! file (the `keystore` crate), unlocked for this session only — kept here,
//! in Rust, never sent to the web view — and locked again.

use std::path::Path;
use std::time::Instant;

use console_view::ipc::UiError;
use console_view::steward::KeyStatus;
use jcp::identity::Keypair;

use super::StewardState;
use crate::error::{self, CmdResult};

/// A key store failure as the window sees it: the key store's code and message.
pub(super) fn key_err(e: &keystore::KeyError) -> UiError {
    UiError::new(e.code(), e.to_string())
}

/// The key's status: the file, its did (read while locked), whether it is
/// unlocked, and why it cannot be used.
/// Asking is no use of the key: a key idle past its time is locked here
/// (the window asks every second, so it follows an idle lock at once).
pub fn key_status(st: &StewardState) -> KeyStatus {
    let path = st.key_path.display().to_string();
    let (unlocked, idle) =
        st.key.lock().map_or((false, keystore::DEFAULT_IDLE_LOCK), |mut k| (k.is_unlocked(Instant::now()), k.idle()));
    let idle_lock_s = u32::try_from(idle.as_secs()).unwrap_or(u32::MAX);
    if !st.key_path.exists() {
        return KeyStatus { path, exists: false, did: None, unlocked: false, error: None, idle_lock_s };
    }
    match keystore::did(&st.key_path) {
        Ok(d) => KeyStatus { path, exists: true, did: Some(d.to_string()), unlocked, error: None, idle_lock_s },
        Err(e) => KeyStatus { path, exists: true, did: None, unlocked, error: Some(key_err(&e)), idle_lock_s },
    }
}

fn unlocked_with(st: &StewardState, key: Keypair) -> CmdResult<KeyStatus> {
    st.key.lock().map_err(|_| error::poisoned("key"))?.put(key, Instant::now());
    Ok(key_status(st))
}

/// Creates a new key, encrypted under `passphrase`, and unlocks it.
pub fn key_create(st: &StewardState, passphrase: &str) -> CmdResult<KeyStatus> {
    let key = Keypair::generate();
    keystore::create(&st.key_path, &key, passphrase, st.work_factor).map_err(|e| key_err(&e))?;
    unlocked_with(st, key)
}

/// Imports a key file (a steward key file opened with `from_passphrase`,
/// or a plain `jcp key new` file) and stores it encrypted under `passphrase`.
pub fn key_import(st: &StewardState, from: &Path, from_passphrase: &str, passphrase: &str) -> CmdResult<KeyStatus> {
    let key = keystore::read_any(from, from_passphrase).map_err(|e| key_err(&e))?;
    keystore::create(&st.key_path, &key, passphrase, st.work_factor).map_err(|e| key_err(&e))?;
    unlocked_with(st, key)
}

/// Unlocks the key for this session.
pub fn key_unlock(st: &StewardState, passphrase: &str) -> CmdResult<KeyStatus> {
    let key = keystore::unlock(&st.key_path, passphrase).map_err(|e| key_err(&e))?;
    unlocked_with(st, key)
}

/// Forgets the unlocked key (its memory is zeroed when dropped).
pub fn key_lock(st: &StewardState) -> CmdResult<KeyStatus> {
    st.key.lock().map_err(|_| error::poisoned("key"))?.lock();
    Ok(key_status(st))
}
