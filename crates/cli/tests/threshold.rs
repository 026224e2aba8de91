//! C13/C18 from the command line (§2.2): a real DKG among three `jcp`
//! processes, two of them sign a grant as the group, `jcp grant assemble`
//! joins it, and `jcp decide` allows it; one share alone cannot.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // helpers outside #[test] fns (clippy.toml allows these in tests)

use std::path::Path;
use std::process::{Command, Output};

fn jcp(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_jcp")).current_dir(dir).args(args).output().unwrap()
}

fn ok(dir: &Path, args: &[&str]) -> serde_json::Value {
    let o = jcp(dir, args);
    assert!(o.status.success(), "{args:?}: {}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap_or(serde_json::Value::Null)
}

#[cfg(unix)]
fn mode(p: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).unwrap().permissions().mode() & 0o777
}

#[test]
fn c18_cli_dkg_among_three_then_two_sign_a_grant_that_decide_allows() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    for i in ["1", "2", "3"] {
        std::fs::create_dir(d.join(format!("p{i}"))).unwrap();
        ok(
            d,
            &[
                "threshold",
                "dkg-round1",
                "--id",
                i,
                "--min",
                "2",
                "--max",
                "3",
                "--secret-out",
                &format!("p{i}/r1.secret"),
                "--out",
                &format!("r1-{i}.jcpt"),
                "--json",
            ],
        );
    }
    #[cfg(unix)]
    assert_eq!(mode(&d.join("p1/r1.secret")), 0o600);
    for i in ["1", "2", "3"] {
        ok(
            d,
            &[
                "threshold",
                "dkg-round2",
                "--secret",
                &format!("p{i}/r1.secret"),
                "--round1",
                "r1-1.jcpt",
                "r1-2.jcpt",
                "r1-3.jcpt",
                "--secret-out",
                &format!("p{i}/r2.secret"),
                "--out-dir",
                "r2",
                "--json",
            ],
        );
    }
    let mut groups = Vec::new();
    for i in ["1", "2", "3"] {
        let others: Vec<String> =
            ["1", "2", "3"].iter().filter(|j| **j != i).map(|j| format!("r2/round2-{j}-to-{i}.jcpt")).collect();
        let secret = format!("p{i}/r2.secret");
        let mut args = vec![
            "threshold",
            "dkg-finish",
            "--secret",
            &secret,
            "--round1",
            "r1-1.jcpt",
            "r1-2.jcpt",
            "r1-3.jcpt",
            "--round2",
        ];
        args.extend(others.iter().map(String::as_str));
        let share = format!("p{i}/share.jcpt");
        let group = format!("group-{i}.jcpt");
        args.extend(["--share-out", &share, "--group-out", &group, "--json"]);
        let v = ok(d, &args);
        assert_eq!(v["group"]["threshold"], "2-of-3");
        groups.push(std::fs::read(d.join(&group)).unwrap());
        #[cfg(unix)]
        assert_eq!(mode(&d.join(&share)), 0o600);
    }
    assert!(groups.windows(2).all(|w| w[0] == w[1]), "all three derive one group");
    let view = ok(d, &["inspect", "group-1.jcpt", "--json"]);
    assert_eq!(view["kind"], "threshold-group");
    assert_eq!(view["threshold"], "2-of-3");
    let group = view["group"].as_str().unwrap().to_owned();

    // The group issues a grant: unsigned bytes, then participants 1 and 3 sign.
    ok(d, &["key", "new", "--out", "agent.key", "--seed", &"02".repeat(32)]);
    let o = jcp(d, &["key", "show", "agent.key"]);
    let agent = String::from_utf8(o.stdout).unwrap().trim().to_owned();
    ok(
        d,
        &[
            "grant",
            "issue",
            "--issuer",
            &group,
            "--subject",
            &agent,
            "--resource",
            "text:vault",
            "--actions",
            "transfer",
            "--budget-uj",
            "1000",
            "--unsigned-out",
            "grant.unsigned",
            "--json",
        ],
    );
    for i in ["1", "3"] {
        ok(
            d,
            &[
                "threshold",
                "sign-round1",
                "--share",
                &format!("p{i}/share.jcpt"),
                "--nonces-out",
                &format!("p{i}/nonces"),
                "--out",
                &format!("c{i}.jcpt"),
                "--json",
            ],
        );
    }
    for i in ["1", "3"] {
        ok(
            d,
            &[
                "threshold",
                "sign-round2",
                "--share",
                &format!("p{i}/share.jcpt"),
                "--nonces",
                &format!("p{i}/nonces"),
                "--commitments",
                "c1.jcpt",
                "c3.jcpt",
                "--message",
                "grant.unsigned",
                "--out",
                &format!("s{i}.jcpt"),
                "--json",
            ],
        );
        assert!(!d.join(format!("p{i}/nonces")).exists(), "used nonces are deleted");
    }
    let v = ok(
        d,
        &[
            "threshold",
            "aggregate",
            "--group",
            "group-2.jcpt",
            "--commitments",
            "c1.jcpt",
            "c3.jcpt",
            "--message",
            "grant.unsigned",
            "--share",
            "s1.jcpt",
            "s3.jcpt",
            "--out",
            "grant.sig",
            "--json",
        ],
    );
    assert_eq!(v["signature"].as_str().unwrap().len(), 128);
    ok(
        d,
        &[
            "grant",
            "assemble",
            "--unsigned",
            "grant.unsigned",
            "--signature",
            "grant.sig",
            "--out",
            "grant.jcp",
            "--json",
        ],
    );
    let v = ok(
        d,
        &[
            "decide",
            "--chain",
            "grant.jcp",
            "--cost-uj",
            "10",
            "--trust-root",
            &format!("text:vault={group}"),
            "--action",
            "transfer",
            "--json",
        ],
    );
    assert_eq!(v["decision"]["verdict"]["verdict"], "allow", "{v}");

    // One share alone: the aggregate is refused, and a signature that is
    // not the group's is refused at assembly.
    let o = jcp(
        d,
        &[
            "threshold",
            "aggregate",
            "--group",
            "group-1.jcpt",
            "--commitments",
            "c1.jcpt",
            "--message",
            "grant.unsigned",
            "--share",
            "s1.jcpt",
            "--out",
            "lone.sig",
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("too-few-signers"));
    let mut bad = std::fs::read(d.join("grant.sig")).unwrap();
    bad[0] ^= 1;
    std::fs::write(d.join("bad.sig"), bad).unwrap();
    let o =
        jcp(d, &["grant", "assemble", "--unsigned", "grant.unsigned", "--signature", "bad.sig", "--out", "bad.jcp"]);
    assert_eq!(o.status.code(), Some(1), "a bad signature is a refusal: exit 1");
    assert!(String::from_utf8_lossy(&o.stderr).contains("bad-signature"));
    // Used nonces cannot be offered again.
    let o = jcp(
        d,
        &[
            "threshold",
            "sign-round2",
            "--share",
            "p1/share.jcpt",
            "--nonces",
            "p1/nonces",
            "--commitments",
            "c1.jcpt",
            "c3.jcpt",
            "--message",
            "grant.unsigned",
            "--out",
            "again.jcpt",
        ],
    );
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn c13_cli_dealer_writes_a_public_group_and_owner_only_shares() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    let v = ok(d, &["threshold", "dealer", "--min", "2", "--max", "3", "--out-dir", "team", "--json"]);
    assert_eq!(v["group"]["threshold"], "2-of-3");
    assert_eq!(v["group"]["origin"], "dealer");
    #[cfg(unix)]
    {
        assert_eq!(mode(&d.join("team/share-1.jcpt")), 0o600);
        assert_ne!(mode(&d.join("team/group.jcpt")) & 0o044, 0);
    }
    let v = ok(d, &["inspect", "team/share-2.jcpt", "--json"]);
    assert_eq!(v["secret"], true);
    assert_eq!(v["participant"]["identifier"], 2);
    let o = jcp(d, &["threshold", "dealer", "--min", "1", "--max", "3", "--out-dir", "x"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("bad-parameters"));
}
