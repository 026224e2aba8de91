//! §2.2 participant files: secret ones are written owner-only, public ones
//! are not; a file of one kind is never read as another; a group
//! descriptor that does not hang together is refused.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // helpers outside #[test] fns (clippy.toml allows these in tests)

mod common;

use common::*;
use jcp_threshold::file;
use jcp_threshold::sign::{self, Commitments, Nonces};
use jcp_threshold::{dealer, GroupDescriptor, KeyShare};

#[cfg(unix)]
fn mode(p: &std::path::Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).unwrap().permissions().mode() & 0o777
}

#[test]
#[cfg(unix)]
fn c13_secret_files_are_owner_only_and_public_ones_are_not() {
    let dir = tempfile::tempdir().unwrap();
    let (group, shares) = dealer::deal(2, 3, &mut rng(60)).unwrap();
    let (nonces, commitments) = sign::round1(&shares[0], &mut rng(61));
    let (ks, gp, np, cp) = (dir.path().join("k"), dir.path().join("g"), dir.path().join("n"), dir.path().join("c"));
    // A secret written over an existing world-readable file is narrowed.
    std::fs::write(&ks, b"old").unwrap();
    file::write(&ks, &shares[0]).unwrap();
    file::write(&gp, &group).unwrap();
    file::write(&np, &nonces).unwrap();
    file::write(&cp, &commitments).unwrap();
    assert_eq!(mode(&ks), 0o600);
    assert_eq!(mode(&np), 0o600);
    assert_ne!(mode(&gp) & 0o044, 0, "the group descriptor is public");
    assert_eq!(file::read::<KeyShare>(&ks).unwrap(), shares[0]);
    assert_eq!(file::read::<GroupDescriptor>(&gp).unwrap(), group);
    assert_eq!(file::read::<Nonces>(&np).unwrap(), nonces);
    assert_eq!(file::read::<Commitments>(&cp).unwrap(), commitments);
    // A file of another kind is refused by name.
    let e = file::read::<KeyShare>(&cp).unwrap_err();
    assert_eq!(e.code(), "wrong-file-type");
    assert!(e.to_string().starts_with("wrong-file-type: expected a jcp-threshold/key-share file"), "{e}");
    assert_eq!(file::file_type(&std::fs::read(&gp).unwrap()).as_deref(), Some("jcp-threshold/group"));
    assert_eq!(file::read::<KeyShare>(&dir.path().join("missing")).unwrap_err().code(), "io");
}

#[test]
fn c13_a_share_of_another_group_is_refused_at_signing() {
    let (g1, s1) = dealer::deal(2, 3, &mut rng(62)).unwrap();
    let (_, s2) = dealer::deal(2, 3, &mut rng(63)).unwrap();
    assert_eq!(g1.check_share(&s2[0]).unwrap_err().code(), "participant-mismatch");
    let mut r = rng(64);
    let (n1, c1) = sign::round1(&s1[0], &mut r);
    let (_, c2) = sign::round1(&s2[1], &mut r);
    let e = sign::round2(&s1[0], n1, &[c1, c2], b"m").unwrap_err();
    assert_eq!(e.code(), "participant-mismatch");
    // Nonces of one participant used with another's share.
    let (n3, c3) = sign::round1(&s1[2], &mut r);
    let (_, c1b) = sign::round1(&s1[0], &mut r);
    assert_eq!(sign::round2(&s1[0], n3, &[c1b, c3], b"m").unwrap_err().code(), "participant-mismatch");
}

#[test]
fn c13_group_view_says_k_of_n_for_the_console() {
    let (group, _) = dealer::deal(3, 5, &mut rng(65)).unwrap();
    let v = serde_json::to_value(group.describe()).unwrap();
    assert_eq!(v["threshold"], "3-of-5");
    assert_eq!(v["origin"], "dealer");
    assert_eq!(v["participants"].as_array().unwrap().len(), 5);
    assert_eq!(v["group"], group.group().to_did_string());
    assert_eq!(dealer::deal(1, 3, &mut rng(66)).unwrap_err().code(), "bad-parameters");
    assert_eq!(dealer::deal(4, 3, &mut rng(66)).unwrap_err().code(), "bad-parameters");
}
