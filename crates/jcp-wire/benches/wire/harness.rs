//! The clients' side of a run, and the floor's comparison with the
//! endpoint (`JCP_WIRE_BENCH_FLOOR=1`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use jcp::decision::{Cost, Gate};
use jcp_receipt::runtime::DurableGate;
use jcp_receipt::writer::Durability;
use jcp_wire::endpoint::Address;
use jcp_wire::message::{Outbound, WireRequest};

use super::{
    describe, due, gate_request, paces, process_cpu, requests, run_server, runtime, scratch, steward, us, Conn, Gen,
    Run, Server,
};

/// Runs the clients (one list of framed requests each) against `addr`
/// until every request is answered: the run's wall time, every latency
/// and the process's CPU time over the run.
pub(super) async fn drive(
    addr: &Address,
    framed: Vec<Vec<Vec<u8>>>,
    server: Server,
    how: Gen,
    pace: Option<f64>,
) -> (Duration, Vec<Duration>, Option<Duration>) {
    let clients = framed.len();
    let n: usize = framed.iter().map(Vec::len).sum();
    let start = Arc::new(tokio::sync::Barrier::new(clients + 1));
    let mut tasks = Vec::with_capacity(clients);
    for (i, mine) in framed.into_iter().enumerate() {
        let addr = addr.clone();
        let start = start.clone();
        tasks.push(tokio::spawn(async move {
            let mut c = Conn::connect(&addr, how).await;
            let mut lat = Vec::with_capacity(mine.len());
            start.wait().await;
            let t0 = Instant::now();
            for (k, f) in mine.iter().enumerate() {
                let t = match pace {
                    None => Instant::now(),
                    Some(rate) => {
                        let due = due(t0, rate, clients, i, k);
                        if Instant::now() < due {
                            tokio::time::sleep_until(due.into()).await;
                            Instant::now()
                        } else {
                            due
                        }
                    }
                };
                let m = c.call(f, server).await;
                lat.push(t.elapsed());
                match m {
                    None => {}
                    Some(Outbound::Response(r)) if r.decision.is_allow() => {}
                    Some(other) => panic!("not an allow: {other:?}"),
                }
            }
            lat
        }));
    }
    start.wait().await;
    let t = Instant::now();
    let cpu0 = process_cpu();
    let mut lat = Vec::with_capacity(n);
    for task in tasks {
        lat.extend(task.await.unwrap());
    }
    let wall = t.elapsed();
    let cpu = process_cpu().zip(cpu0).map(|(b, a)| b.saturating_sub(a));
    (wall, lat, cpu)
}

/// The size of the receipt the endpoint seals for `req` (what the floor
/// signs and records in its place).
pub(super) fn receipt_len(req: &WireRequest) -> usize {
    let dir = scratch();
    let (mut dg, _) =
        DurableGate::open_with(&dir.path().join("one.jcps"), steward(), Gate::new(), Durability::GroupCommit).unwrap();
    let cost: Cost = req.decision_cost();
    let rec = dg.decide(&gate_request(req, &cost)).unwrap();
    rec.sealed.len()
}

/// `JCP_WIRE_BENCH_FLOOR=1` (with `JCP_WIRE_BENCH_ONESHOT=1`): the endpoint
/// (callers' signatures in batches, and each alone: `EndpointStrict`)
/// against the floor on the same requests, 64 clients (the load
/// generator), closed loop and open loop at each of `paces()`, in
/// `JCP_WIRE_BENCH_REPEAT` interleaved rounds; every round is printed and
/// kept (a shared VM: no best or worst is picked).
pub(super) fn floor_vs_endpoint(n: usize) {
    let rt = runtime();
    let repeat: usize = std::env::var("JCP_WIRE_BENCH_REPEAT").ok().and_then(|s| s.parse().ok()).unwrap_or(2).max(1);
    let reqs = requests(64, n);
    let mut loads: Vec<Option<f64>> = vec![None];
    loads.extend(paces().into_iter().map(Some));
    let mut rows: Vec<(Server, Option<f64>, Vec<Run>)> = Vec::new();
    for &pace in &loads {
        for server in [Server::Endpoint, Server::EndpointStrict, Server::Floor] {
            rows.push((server, pace, Vec::new()));
        }
    }
    for round in 0..repeat {
        for (server, pace, runs) in &mut rows {
            let r = run_server(&rt, &reqs, *server, Gen::Buffered, *pace);
            println!("round {round}: {}", describe(&r));
            runs.push(r);
        }
    }
    println!();
    println!("{n} requests per run, 64 clients (load generator), {repeat} interleaved rounds, every round shown");
    println!();
    println!("| server | load | decisions/s per round | p50 per round | p99 per round | CPU per decision per round |");
    println!("|---|---|---|---|---|---|");
    for (server, pace, runs) in &rows {
        let each = |f: &dyn Fn(&Run) -> String| runs.iter().map(f).collect::<Vec<_>>().join(", ");
        println!(
            "| {server:?} | {} | {} | {} | {} | {} |",
            pace.map_or_else(|| "closed loop".to_string(), |p| format!("open loop, {p:.0}/s")),
            each(&|r| format!("{:.0}", r.rate())),
            each(&|r| us(r.p50)),
            each(&|r| us(r.p99)),
            each(&|r| r.cpu_per_decision().map_or_else(|| "?".into(), |(c, _)| format!("{c:.0} µs"))),
        );
    }
}
