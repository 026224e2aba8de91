//! The floor: a server with the endpoint's threads and wire that does only
//! what §11 and §4.11 make every decision cost, and nothing the endpoint's
//! own code adds. It answers the benchmark's real requests, so it bounds
//! from below what any change to the endpoint's code could reach on this
//! machine with this design.
//!
//! Per request, like the endpoint:
//! * a tokio connection task reads the length-prefixed frame through a
//!   buffered reader, cuts the signed bytes from the body (as the endpoint
//!   does), hashes them for the request id (blake3) and checks the
//!   caller's Ed25519 signature (`Did::verify`, `verify_strict`);
//! * one core thread takes the requests in batches, signs a receipt of the
//!   endpoint's receipt size with the steward's key, and appends two
//!   records per request (the request, then the receipt), the batch's
//!   records in one `write`, as the endpoint's group commit does;
//! * one sync thread makes each batch durable (`fdatasync`, one for all
//!   batches queued meanwhile, at least the endpoint's default
//!   `commit_interval` apart) before the batch's answers leave;
//! * the connection task writes the answer (the signed receipt, framed).
//!
//! Not done, unlike the endpoint: decoding the request into its fields,
//! parsing its dids, the gate's decision, the receipt's CBOR/COSE
//! structure, the remembered-request table, the metrics. The caller's key
//! is known to the floor rather than read from the request.

use std::fs::File;
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use jcp::cbor::{ContentId, Value};
use jcp::identity::{Did, Keypair};
use jcp_wire::codec;
use tokio::io::AsyncWriteExt;
use tokio::sync::{mpsc, oneshot};

/// The endpoint's batch limit (`Config::batch_max`, default 512).
const BATCH_MAX: usize = 512;

struct Job {
    body: Vec<u8>,
    id: ContentId,
    signed_ok: bool,
    tx: oneshot::Sender<Vec<u8>>,
}

type Batch = Vec<(oneshot::Sender<Vec<u8>>, Vec<u8>)>;

/// A running floor server: its job queue and its sync count.
pub struct Floor {
    tx: mpsc::Sender<Job>,
    syncs: Arc<AtomicU64>,
}

impl Floor {
    /// Opens `path` for appending and starts the core and sync threads.
    /// `receipt_len` is the size of the endpoint's sealed receipt.
    pub fn start(path: &Path, steward: Keypair, receipt_len: usize) -> Self {
        let file = std::fs::OpenOptions::new().create(true).append(true).open(path).unwrap();
        let sync_file = file.try_clone().unwrap();
        let syncs = Arc::new(AtomicU64::new(0));
        let (tx, rx) = mpsc::channel::<Job>(BATCH_MAX * 4);
        let (stx, srx) = std::sync::mpsc::channel::<Batch>();
        let counted = syncs.clone();
        std::thread::Builder::new()
            .name("floor-sync".into())
            .spawn(move || sync_loop(&sync_file, &srx, &counted))
            .unwrap();
        std::thread::Builder::new()
            .name("floor-core".into())
            .spawn(move || core_loop(rx, file, &steward, receipt_len, &stx))
            .unwrap();
        Self { tx, syncs }
    }

    /// Syncs so far.
    pub fn syncs(&self) -> u64 {
        self.syncs.load(Ordering::Relaxed)
    }

    /// Accepts connections until the task is aborted; `caller` signed
    /// every request.
    pub async fn serve(self: Arc<Self>, listener: tokio::net::TcpListener, caller: Did) {
        loop {
            let Ok((s, _)) = listener.accept().await else { return };
            s.set_nodelay(true).unwrap();
            let tx = self.tx.clone();
            tokio::spawn(conn(tx, s, caller));
        }
    }
}

async fn conn(tx: mpsc::Sender<Job>, s: tokio::net::TcpStream, caller: Did) {
    let mut s = tokio::io::BufReader::new(s);
    while let Ok(Some(body)) = codec::read_frame(&mut s, codec::DEFAULT_CAP).await {
        let (id, signed_ok) = authenticate(&body, &caller);
        let (otx, orx) = oneshot::channel();
        if tx.send(Job { body, id, signed_ok, tx: otx }).await.is_err() {
            return;
        }
        let Ok(framed) = orx.await else { return };
        if s.get_mut().write_all(&framed).await.is_err() {
            return;
        }
    }
}

/// The endpoint's cut: the signature is the canonical map's last entry
/// (`"signature"`, 64 bytes), so the signed bytes are the map with one
/// entry fewer and its last 76 bytes gone.
fn authenticate(body: &[u8], caller: &Did) -> (ContentId, bool) {
    const TAIL: usize = 1 + 9 + 2 + 64;
    assert!(body.len() > TAIL && (0xa1..=0xb7).contains(&body[0]), "not a request map");
    let at = body.len() - TAIL;
    assert_eq!(&body[at..at + 12], b"\x69signature\x58\x40");
    let sig: [u8; 64] = body[at + 12..].try_into().unwrap();
    let mut signed = Vec::with_capacity(at);
    signed.push(body[0] - 1);
    signed.extend_from_slice(&body[1..at]);
    (ContentId::of_bytes(&signed), caller.verify(&signed, &sig))
}

fn core_loop(
    mut rx: mpsc::Receiver<Job>,
    mut file: File,
    steward: &Keypair,
    receipt_len: usize,
    syncer: &std::sync::mpsc::Sender<Batch>,
) {
    let mut jobs = Vec::with_capacity(BATCH_MAX);
    while let Some(first) = rx.blocking_recv() {
        jobs.push(first);
        while jobs.len() < BATCH_MAX {
            match rx.try_recv() {
                Ok(j) => jobs.push(j),
                Err(_) => break,
            }
        }
        let mut batch = Vec::with_capacity(jobs.len());
        let mut gathered = Vec::new();
        for job in jobs.drain(..) {
            assert!(job.signed_ok, "a request failed its caller signature");
            // The receipt: the request's id, padded to the endpoint's
            // receipt size, signed by the steward.
            let mut receipt = Vec::with_capacity(receipt_len);
            while receipt.len() + 32 <= receipt_len - 64 {
                receipt.extend_from_slice(&job.id.0);
            }
            receipt.resize(receipt_len - 64, 0);
            let sig = steward.sign(&receipt);
            receipt.extend_from_slice(&sig);
            gathered.extend_from_slice(&job.body);
            gathered.extend_from_slice(&receipt);
            batch.push((job.tx, codec::frame_value(&Value::Bytes(receipt))));
        }
        file.write_all(&gathered).unwrap();
        if syncer.send(batch).is_err() {
            return;
        }
    }
}

/// The endpoint's group commit, its `commit_interval` (500 µs) included.
fn sync_loop(file: &File, rx: &std::sync::mpsc::Receiver<Batch>, syncs: &AtomicU64) {
    let interval = jcp_wire::endpoint::Config::new("unused").commit_interval;
    let mut last_start: Option<Instant> = None;
    while let Ok(first) = rx.recv() {
        let mut batches = vec![first];
        if let Some(due) = last_start.map(|t| t + interval) {
            while let Some(left) = due.checked_duration_since(Instant::now()) {
                match rx.recv_timeout(left) {
                    Ok(b) => batches.push(b),
                    Err(_) => break,
                }
            }
        }
        batches.extend(rx.try_iter());
        last_start = Some(Instant::now());
        file.sync_data().unwrap();
        syncs.fetch_add(1, Ordering::Relaxed);
        for (tx, framed) in batches.into_iter().flatten() {
            let _ = tx.send(framed);
        }
    }
}
