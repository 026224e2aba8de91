//! The steward's key at rest (issue 17: "stored encrypted at rest … a file
//! with owner-only permissions"; wrong passphrase, a corrupted or truncated
//! key file, a file readable by others: each a clear message naming the
//! file and the fix, nothing overwritten).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // helpers outside #[test] fns (clippy.toml allows these in tests)

use jcp::identity::Keypair;
use keystore::{create, did, unlock, KeyError};

/// Tests use the smallest scrypt work factor a key may be written with; the format and checks are the same.
const WF: u8 = keystore::MIN_WORK_FACTOR;

fn key() -> Keypair {
    Keypair::from_seed([42; 32]).unwrap()
}

#[test]
fn s2_a_key_file_round_trips_under_its_passphrase_and_is_owner_only() {
    let t = tempfile::tempdir().unwrap();
    let p = t.path().join("steward.jcpkey");
    let d = create(&p, &key(), "correct horse", WF).unwrap();
    assert_eq!(d, key().did());
    assert_eq!(did(&p).unwrap(), key().did(), "the did is readable while locked");
    assert_eq!(unlock(&p, "correct horse").unwrap().did(), key().did());
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&p).unwrap().permissions().mode() & 0o777, 0o600);
    }
    // The seed is not in the file in the clear.
    let bytes = std::fs::read(&p).unwrap();
    assert!(!bytes.windows(32).any(|w| w == key().seed().as_slice()));
}

#[test]
fn s2_a_wrong_passphrase_is_named_and_changes_nothing() {
    let t = tempfile::tempdir().unwrap();
    let p = t.path().join("k");
    create(&p, &key(), "right horse", WF).unwrap();
    let before = std::fs::read(&p).unwrap();
    let e = unlock(&p, "wrong").unwrap_err();
    assert_eq!(e.code(), "key-wrong-passphrase", "{e}");
    assert!(e.to_string().contains(&p.display().to_string()));
    assert_eq!(std::fs::read(&p).unwrap(), before);
}

#[test]
fn s2_a_truncated_or_corrupted_key_file_is_refused_as_corrupt() {
    let t = tempfile::tempdir().unwrap();
    let p = t.path().join("k");
    create(&p, &key(), "correct horse", WF).unwrap();
    let whole = std::fs::read(&p).unwrap();
    let write = |b: &[u8]| {
        let q = t.path().join(format!("k{}", b.len()));
        let _ = std::fs::remove_file(&q);
        std::fs::write(&q, b).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&q, std::fs::Permissions::from_mode(0o600)).unwrap();
        }
        q
    };
    // Cut short anywhere: inside the header, the did line, the age header, the payload.
    for cut in [5, 30, 70, whole.len() / 2, whole.len() - 1] {
        let q = write(&whole[..cut]);
        let e = unlock(&q, "correct horse").unwrap_err();
        assert!(matches!(e, KeyError::Corrupt { .. }), "cut at {cut}: {e}");
        assert!(e.to_string().contains("restore it from a backup"), "{e}");
    }
    // A flipped byte in the encrypted payload (the last byte: the AEAD tag).
    let mut flipped = whole.clone();
    let n = flipped.len();
    flipped[n - 1] ^= 1;
    let e = unlock(&write(&flipped[..]), "correct horse").unwrap_err();
    assert!(matches!(e, KeyError::Corrupt { .. }), "{e}");
    // A did line naming another key: refused, not trusted.
    let other = Keypair::from_seed([7; 32]).unwrap().did().to_did_string();
    let text = String::from_utf8_lossy(&whole[..=keystore::MAGIC.len() + 1 + other.len()]).into_owned();
    let mut swapped = text.replace(&key().did().to_did_string(), &other).into_bytes();
    swapped.extend_from_slice(&whole[keystore::MAGIC.len() + 1 + other.len() + 1..]);
    let e = unlock(&write(&swapped[..]), "correct horse").unwrap_err();
    assert!(matches!(e, KeyError::Corrupt { .. }) && e.to_string().contains("the key inside is"), "{e}");
    // Not a key file at all.
    let e = unlock(&write(b"{\"did\": \"x\"}"), "correct horse").unwrap_err();
    assert_eq!(e.code(), "key-corrupt");
}

#[cfg(unix)]
#[test]
fn s2_a_key_file_readable_by_others_is_refused_with_the_fix() {
    use std::os::unix::fs::PermissionsExt;
    let t = tempfile::tempdir().unwrap();
    let p = t.path().join("k");
    create(&p, &key(), "correct horse", WF).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
    let e = unlock(&p, "correct horse").unwrap_err();
    assert_eq!(e.code(), "key-permissions");
    assert!(e.to_string().contains("chmod 600"), "{e}");
    assert!(did(&p).is_err());
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
    assert!(unlock(&p, "correct horse").is_ok());
}

#[test]
fn s2_a_key_file_is_never_overwritten_and_needs_a_passphrase() {
    let t = tempfile::tempdir().unwrap();
    let p = t.path().join("k");
    create(&p, &key(), "correct horse", WF).unwrap();
    let before = std::fs::read(&p).unwrap();
    let e = create(&p, &Keypair::from_seed([1; 32]).unwrap(), "correct horse", WF).unwrap_err();
    assert_eq!(e.code(), "key-exists");
    assert_eq!(std::fs::read(&p).unwrap(), before);
    assert_eq!(create(&t.path().join("k2"), &key(), "", WF).unwrap_err().code(), "key-passphrase-empty");
    assert!(!t.path().join("k2").exists());
}

#[test]
fn s2_a_plain_key_file_round_trips_and_imports_either_format() {
    let dir = tempfile::tempdir().unwrap();
    let plain = dir.path().join("agent.key");
    keystore::write_plain(&plain, &key()).unwrap();
    assert_eq!(keystore::read_plain(&plain).unwrap().did(), key().did());
    // Never overwritten.
    assert_eq!(keystore::write_plain(&plain, &Keypair::generate()).unwrap_err().code(), "key-exists");
    assert_eq!(keystore::read_any(&plain, "").unwrap().did(), key().did());
    let sealed = dir.path().join("steward.key");
    keystore::create(&sealed, &key(), "correct horse", WF).unwrap();
    assert_eq!(keystore::read_any(&sealed, "correct horse").unwrap().did(), key().did());
    assert_eq!(keystore::read_any(&sealed, "nope").unwrap_err().code(), "key-wrong-passphrase");
}

#[test]
fn s2_a_plain_key_file_whose_did_is_not_its_seed_is_corrupt() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("k.json");
    let other = Keypair::generate();
    let text = format!("{{\"did\": \"{}\", \"seed\": \"{}\"}}", other.did().to_did_string(), hex::encode(key().seed()));
    std::fs::write(&p, text).unwrap();
    std::fs::set_permissions(&p, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    let e = keystore::read_plain(&p).unwrap_err();
    assert_eq!(e.code(), "key-corrupt");
    assert!(e.to_string().contains("k.json"), "{e}");
    std::fs::write(&p, b"{\"did\": 1}").unwrap();
    assert_eq!(keystore::read_any(&p, "").unwrap_err().code(), "key-corrupt");
}

/// Issue 34, "Keys at rest": a new key file is written with a work factor
/// of at least `MIN_WORK_FACTOR` and at most `MAX_WORK_FACTOR` (a file that
/// demands more — 4 GiB of scrypt memory at 22 — is not opened), and with a
/// passphrase of at least `MIN_PASSPHRASE_CHARS` characters.
#[test]
fn s2_a_key_file_is_written_with_bounded_work_and_a_passphrase_of_some_length() {
    let t = tempfile::tempdir().unwrap();
    for wf in [1, keystore::MIN_WORK_FACTOR - 1, keystore::MAX_WORK_FACTOR + 1, 22] {
        let e = create(&t.path().join(format!("k{wf}")), &key(), "correct horse", wf).unwrap_err();
        assert_eq!(e.code(), "key-work-factor", "{wf}: {e}");
    }
    let e = create(&t.path().join("short"), &key(), "x", WF).unwrap_err();
    assert_eq!(e.code(), "key-passphrase-short", "{e}");
    let e = create(&t.path().join("short"), &key(), "seven77", WF).unwrap_err();
    assert_eq!(e.code(), "key-passphrase-short", "{e}");
    // Eight characters, counted as characters (not bytes).
    create(&t.path().join("ok"), &key(), "énergie!", WF).unwrap();
    assert!(unlock(&t.path().join("ok"), "énergie!").is_ok());
}

/// Issue 34, "Keys at rest": the checks are made on the file opened, not on
/// what its path names: a symbolic link to a key file (owner-only or not) is
/// refused `key-unsafe-file`, as is a path that is not a regular file; the
/// key file itself opens.
#[test]
fn s2_a_key_reached_through_a_symbolic_link_or_not_a_file_is_refused() {
    let t = tempfile::tempdir().unwrap();
    let real = t.path().join("real.key");
    create(&real, &key(), "correct horse", WF).unwrap();
    let link = t.path().join("link.key");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let e = unlock(&link, "correct horse").unwrap_err();
    assert_eq!(e.code(), "key-unsafe-file", "{e}");
    assert!(e.to_string().contains("symbolic link"), "{e}");
    assert_eq!(did(&link).unwrap_err().code(), "key-unsafe-file");
    assert_eq!(keystore::read_passphrase_file(&link).unwrap_err().code(), "key-unsafe-file");
    let dir = t.path().join("a-dir");
    std::fs::create_dir(&dir).unwrap();
    std::fs::set_permissions(&dir, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
    assert_eq!(unlock(&dir, "correct horse").unwrap_err().code(), "key-unsafe-file");
    assert!(unlock(&real, "correct horse").is_ok());
}

/// Issue 34 (keys at rest): passphrases and seeds are wiped from memory
/// when dropped. Each secret this crate and the protocol core hand out is
/// of a type that wipes itself (`zeroize::ZeroizeOnDrop`): a passphrase
/// read from its file, a seed, a plain key file's text, an unlocked key.
fn wiped_on_drop<T: zeroize::ZeroizeOnDrop>(_: &T) {}

#[test]
fn i34_passphrases_and_seeds_are_wiped_when_dropped() {
    let t = tempfile::tempdir().unwrap();
    let pf = t.path().join("pass");
    {
        use std::io::Write;
        #[cfg(unix)]
        use std::os::unix::fs::OpenOptionsExt;
        let mut o = std::fs::OpenOptions::new();
        o.write(true).create_new(true);
        #[cfg(unix)]
        o.mode(0o600);
        o.open(&pf).unwrap().write_all(b"correct horse battery\nsecond line\n").unwrap();
    }
    let pass = keystore::read_passphrase_file(&pf).unwrap();
    wiped_on_drop(&pass);
    assert_eq!(pass.as_str(), "correct horse battery");
    let k = key();
    wiped_on_drop(&k);
    let mut seed = k.seed();
    wiped_on_drop(&seed);
    let text = jcp::identity::KeyFile::encode(&k);
    wiped_on_drop(&text);
    assert!(text.contains(&hex::encode(*seed)), "the plain file's text holds the seed");
    assert_eq!(jcp::identity::KeyFile::decode(text.as_bytes()).unwrap().did(), k.did(), "its format is unchanged");
    let p = t.path().join("steward.jcpkey");
    create(&p, &k, &pass, WF).unwrap();
    let opened = unlock(&p, &pass).unwrap();
    wiped_on_drop(&opened);
    // The wiping itself: what a drop does to each of them.
    zeroize::Zeroize::zeroize(&mut *seed);
    assert_eq!(*seed, [0u8; 32]);
}
