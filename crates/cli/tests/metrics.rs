//! A real Prometheus scrapes `jcp meter serve` and `jcp serve --metrics`
//! (§5, §5.1, §5.2, §4.3, §11): the test writes a scrape configuration,
//! starts Debian's `prometheus` on it, waits (bounded) for its scrapes and
//! finds the series with their labels through its HTTP API.
//!
//! `prometheus` must be on PATH (`scripts/setup.sh` installs the Debian
//! package). Missing, the test fails — under CI (`CI=true`) and locally
//! alike: a skip would turn a missing scraper into a green run.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // helpers outside #[test] fns (clippy.toml allows these in tests)

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use testkit::{run_in, run_ok};

const JCP: &str = env!("CARGO_BIN_EXE_jcp");

/// Every child this test starts; all are killed and reaped when it ends,
/// whether it passed or panicked.
#[derive(Default)]
struct Children(Vec<(String, Child)>);

impl Children {
    /// Starts `cmd` with stdout piped; returns its first stdout line (parsed
    /// as JSON) and keeps draining the rest so the child never blocks.
    fn start_json(&mut self, name: &str, cmd: &mut Command) -> Value {
        let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
        let mut out = BufReader::new(child.stdout.take().unwrap());
        self.0.push((name.to_owned(), child));
        let mut line = String::new();
        out.read_line(&mut line).unwrap();
        std::thread::spawn(move || for _ in out.lines() {});
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{name} did not start ({e}): {line:?}"))
    }
}

impl Drop for Children {
    fn drop(&mut self) {
        for (_, c) in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// `prometheus` on PATH, or a failure that says how to get it.
fn prometheus() -> PathBuf {
    let found = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).map(|d| d.join("prometheus")).find(|p| p.is_file()))
        .unwrap_or_default();
    found.unwrap_or_else(|| {
        panic!(
            "`prometheus` is not on PATH: install the Debian package (`apt-get install -y prometheus`; scripts/setup.sh does) — this test fails rather than skips (CI={:?})",
            std::env::var("CI").unwrap_or_default()
        )
    })
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

fn host_port(url: &str) -> String {
    url.strip_prefix("http://").and_then(|r| r.strip_suffix("/metrics")).unwrap_or_else(|| panic!("{url}")).to_owned()
}

fn urlencode(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// An instant query against Prometheus's HTTP API: its result vector (empty
/// while Prometheus is not up or has not scraped yet).
fn query(prom: &str, q: &str) -> Vec<Value> {
    let Ok(mut s) = std::net::TcpStream::connect(prom) else { return Vec::new() };
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let req = format!("GET /api/v1/query?query={} HTTP/1.0\r\nHost: {prom}\r\n\r\n", urlencode(q));
    if s.write_all(req.as_bytes()).is_err() {
        return Vec::new();
    }
    let mut text = String::new();
    if s.read_to_string(&mut text).is_err() {
        return Vec::new();
    }
    let Some((_, body)) = text.split_once("\r\n\r\n") else { return Vec::new() };
    let v: Value = serde_json::from_str(body).unwrap_or(Value::Null);
    v["data"]["result"].as_array().cloned().unwrap_or_default()
}

/// Polls `q` until `done` holds for its result, for at most 90 s.
fn wait_for(prom: &str, q: &str, done: impl Fn(&[Value]) -> bool) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let r = query(prom, q);
        if done(&r) {
            return r;
        }
        assert!(Instant::now() < deadline, "Prometheus never answered {q} as expected; last: {r:?}");
        std::thread::sleep(Duration::from_millis(250));
    }
}

fn value(r: &Value) -> f64 {
    r["value"][1].as_str().unwrap().parse().unwrap()
}

fn label<'a>(r: &'a Value, k: &str) -> &'a str {
    r["metric"][k].as_str().unwrap_or_else(|| panic!("no label {k}: {r}"))
}

/// A recorded NVML counter at a 14.8 W board draw (65 W limit) for 2.4 s,
/// then at 30× it, sampled every 10 ms for 5 s.
fn gpu_trace(dir: &Path) -> String {
    let uj = |mw: u64, t: u64| mw * t / 1_000_000;
    let sane = 2_400_000_000u64;
    let samples: Vec<Value> = (0..500u64)
        .map(|i| {
            let t = i * 10_000_000;
            let v = if t <= sane { uj(14_800, t) } else { uj(14_800, sane) + uj(444_000, t - sane) };
            json!({"t_ns": t, "uj": [v], "draw_mw": [14_800], "util_permille": 300})
        })
        .collect();
    let counter = json!({"name": "gpu0", "max_range_uj": null, "power_limit_mw": 65_000, "draw_exposed": true});
    let trace =
        json!({"format": "jcp-meter-trace/1", "rung": "nvml", "host": null, "counters": [counter], "samples": samples});
    std::fs::write(dir.join("gpu.trace.json"), trace.to_string()).unwrap();
    "gpu.trace.json".into()
}

#[test]
fn s5_s11_a_real_prometheus_scrapes_the_meter_and_the_enforcement_point_with_their_labels() {
    let prometheus = prometheus();
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    let mut children = Children::default();
    // The meter on this machine (whatever rung it chooses here), and a replayed GPU trace.
    let jcp_cmd = || {
        let mut c = Command::new(JCP);
        c.current_dir(d);
        c
    };
    let host = children.start_json(
        "meter",
        jcp_cmd().args(["meter", "serve", "--listen", "127.0.0.1:0", "--interval-ms", "250", "--json"]),
    );
    let host = host_port(host["metrics"].as_str().unwrap());
    let trace = gpu_trace(d);
    let gpu = children.start_json(
        "meter --replay",
        jcp_cmd().args(["meter", "serve", "--listen", "127.0.0.1:0", "--replay", &trace, "--json"]),
    );
    let gpu = host_port(gpu["metrics"].as_str().unwrap());
    // The enforcement point: an allow, a deny, a revocation at marker 5.
    run_ok(JCP, d, &["key", "new", "--out", "steward.key", "--seed", &"09".repeat(32)]);
    run_ok(JCP, d, &["key", "new", "--out", "issuer.key", "--seed", &"01".repeat(32)]);
    run_ok(JCP, d, &["key", "new", "--out", "agent.key", "--seed", &"02".repeat(32)]);
    let agent = run_ok(JCP, d, &["key", "show", "agent.key"]).trim().to_owned();
    run_ok(
        JCP,
        d,
        &[
            "grant",
            "issue",
            "--key",
            "issuer.key",
            "--subject",
            &agent,
            "--resource",
            "text:search",
            "--actions",
            "read",
            "--budget-uj",
            "1000",
            "--nonce",
            &"00".repeat(16),
            "--out",
            "root.jcp",
        ],
    );
    let grant_id = serde_json::from_str::<Value>(&run_ok(JCP, d, &["inspect", "root.jcp", "--json"])).unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    // The issuer is the resource's trust root: its grants get series of their own.
    let issuer = run_ok(JCP, d, &["key", "show", "issuer.key"]).trim().to_owned();
    let serve = children.start_json(
        "jcp serve",
        jcp_cmd().args([
            "serve",
            "--listen",
            "tcp:127.0.0.1:0",
            "--stream",
            "s.jcps",
            "--steward-key",
            "steward.key",
            "--plaintext-key",
            "--trust-root",
            &format!("text:search={issuer}"),
            "--metrics",
            "127.0.0.1:0",
            // §4.3: the operator's feeds go to its owner-only admin socket.
            "--admin",
            "unix:admin.sock",
            "--json",
        ]),
    );
    let ep = serve["listen"][0].as_str().unwrap().to_owned();
    let endpoint = host_port(serve["metrics"].as_str().unwrap());
    let call = |uj: &str| {
        run_in(
            JCP,
            d,
            &["call", "--connect", &ep, "--key", "agent.key", "--chain", "root.jcp", "--cost-uj", uj, "--json"],
        )
        .status
        .code()
    };
    assert_eq!(call("700"), Some(0));
    assert_eq!(call("400"), Some(1), "budget-exceeded");
    run_ok(JCP, d, &["grant", "revoke", "--grant", "root.jcp", "--key", "issuer.key", "--out", "rev.jcp"]);
    run_ok(
        JCP,
        d,
        &[
            "feed",
            "revoke",
            "--connect",
            "unix:admin.sock",
            "--revocation",
            "rev.jcp",
            "--grant",
            "root.jcp",
            "--marker",
            "5",
            "--json",
        ],
    );
    // Prometheus, scraping all three every second.
    let config = format!(
        "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n  - job_name: jcp-meter\n    static_configs:\n      - targets: ['{host}', '{gpu}']\n  - job_name: jcp-serve\n    static_configs:\n      - targets: ['{endpoint}']\n"
    );
    std::fs::write(d.join("prometheus.yml"), config).unwrap();
    let prom = format!("127.0.0.1:{}", free_port());
    let log = std::fs::File::create(d.join("prometheus.log")).unwrap();
    let child = Command::new(&prometheus)
        .current_dir(d)
        .arg(format!("--config.file={}", d.join("prometheus.yml").display()))
        .arg(format!("--storage.tsdb.path={}", d.join("tsdb").display()))
        .arg(format!("--web.listen-address={prom}"))
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .unwrap();
    children.0.push(("prometheus".into(), child));
    let up = wait_for(&prom, "up", |r| r.len() == 3 && r.iter().all(|x| value(x) == 1.0));
    assert_eq!(up.len(), 3, "{up:?}\n{}", std::fs::read_to_string(d.join("prometheus.log")).unwrap_or_default());

    // §5.1: this machine's meter — energy labelled with the rung its probe
    // chose there, or a rung below it where a window degraded (never above).
    const LADDER: [&str; 6] = ["rapl", "nvml", "process-energy", "ioreport", "calibrated", "estimate"];
    let chosen = wait_for(&prom, &format!("jcp_meter_rung{{instance='{host}',status='chosen'}}"), |r| r.len() == 1);
    let at = |rung: &str| LADDER.iter().position(|r| *r == rung).unwrap_or_else(|| panic!("unknown rung {rung}"));
    let chosen_at = at(label(&chosen[0], "rung"));
    let energy =
        wait_for(&prom, &format!("jcp_meter_energy_microjoules_total{{instance='{host}'}}"), |r| !r.is_empty());
    for s in &energy {
        assert!(at(label(s, "rung")) >= chosen_at, "a figure graded above the chosen rung: {s} {chosen:?}");
        for k in ["provenance", "coverage", "domain"] {
            assert!(!label(s, k).is_empty(), "{s}");
        }
        assert!(value(s) > 0.0, "{s}");
    }
    let rungs = query(&prom, &format!("jcp_meter_rung{{instance='{host}'}}"));
    assert_eq!(rungs.len(), 6, "one status per rung: {rungs:?}");
    assert!(rungs.iter().all(|r| !label(r, "status").is_empty() && !label(r, "code").is_empty()), "{rungs:?}");

    // §5.2: the replayed GPU — HwShunt Partial while plausible, then the estimate, Whole: two series, never one sum.
    let gpu_energy =
        wait_for(&prom, &format!("jcp_meter_energy_microjoules_total{{instance='{gpu}'}}"), |r| r.len() == 2);
    let by_coverage = |c: &str| {
        gpu_energy.iter().find(|s| label(s, "coverage") == c).unwrap_or_else(|| panic!("{c}: {gpu_energy:?}"))
    };
    let partial = by_coverage("Partial");
    assert_eq!(
        (label(partial, "provenance"), label(partial, "rung"), label(partial, "domain")),
        ("HwShunt", "nvml", "gpu")
    );
    assert_eq!(value(partial), 29_600_000.0, "two 1 s windows at 14.8 W, and nothing else");
    let whole = by_coverage("Whole");
    assert_eq!(
        (label(whole, "provenance"), label(whole, "rung"), label(whole, "domain")),
        ("Estimator", "estimate", "host")
    );
    // §5: the refusal with the bound it broke, and the probe's liveness.
    let refused = query(&prom, &format!("jcp_meter_plausibility_refusals_total{{instance='{gpu}'}}"));
    assert!(
        refused.iter().any(|r| label(r, "verdict") == "implausible" && label(r, "bound") == "power-limit"),
        "{refused:?}"
    );
    let live = query(&prom, &format!("jcp_meter_counter_liveness{{instance='{gpu}'}}"));
    assert_eq!(
        (label(&live[0], "rung"), label(&live[0], "counter"), label(&live[0], "status")),
        ("nvml", "gpu0", "live"),
        "{live:?}"
    );

    // §11, §4.3: the enforcement point.
    let decisions = wait_for(&prom, "jcp_wire_decisions_total", |r| r.len() == 2);
    let find = |verdict: &str, reason: &str| {
        decisions.iter().find(|s| label(s, "verdict") == verdict && label(s, "reason") == reason).map(value)
    };
    assert_eq!(find("allow", "none"), Some(1.0), "{decisions:?}");
    assert_eq!(find("deny", "budget-exceeded"), Some(1.0), "{decisions:?}");
    let one = |q: &str| {
        let r = query(&prom, q);
        assert_eq!(r.len(), 1, "{q}: {r:?}");
        value(&r[0])
    };
    assert_eq!(one("jcp_wire_revocation_known_through"), 5.0);
    assert_eq!(one("jcp_wire_remembered_requests"), 2.0);
    assert_eq!(one("jcp_wire_unresolved_allows"), 1.0, "the allow's outcome was never reported");
    assert_eq!(one(&format!("jcp_wire_grant_spent_microjoules{{grant='{grant_id}'}}")), 700.0);
    assert!(one("jcp_wire_record_commit_seconds_count") >= 2.0, "two decisions and a revocation made durable");
    // Where each of the two calls' time went, one observation per request.
    for h in ["request", "request_core_wait", "request_durable_wait"] {
        assert_eq!(one(&format!("jcp_wire_{h}_seconds_count")), 2.0, "{h}");
    }
    drop(children);
}

#[test]
fn s5_s11_a_metrics_address_that_cannot_be_served_is_refused_with_its_code_exit_2() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    for args in [["meter", "serve", "--listen", "9464"], ["meter", "serve", "--listen", "localhost:http"]] {
        let o = run_in(JCP, d, &args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert!(
            String::from_utf8_lossy(&o.stderr).contains("bad-metrics-address"),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    // A port another process holds.
    let held = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = held.local_addr().unwrap().to_string();
    let o = run_in(JCP, d, &["meter", "serve", "--listen", &addr]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("metrics-bind-failed"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // `jcp serve --metrics` refuses before it opens the record.
    run_ok(JCP, d, &["key", "new", "--out", "steward.key", "--seed", &"09".repeat(32)]);
    let o = run_in(
        JCP,
        d,
        &[
            "serve",
            "--listen",
            "tcp:127.0.0.1:0",
            "--stream",
            "s.jcps",
            "--steward-key",
            "steward.key",
            "--plaintext-key",
            "--metrics",
            &addr,
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("metrics-bind-failed"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(!d.join("s.jcps").exists(), "the record was not opened");
}
