//! Step 2 of a live run: the enforcement endpoint (§11), trusting the
//! steward for the run's resource, recording to the run's stream under its
//! own sealing key, serving on a local socket from a runtime of its own,
//! with `jcp backend demo` behind its gate: the endpoint runs each allowed
//! call there, meters it (the span ladder over the backend's process tree)
//! and charges that figure.

use std::path::Path;
use std::sync::Arc;

use jcp::decision::Gate;
use jcp::identity::Keypair;
use jcp_wire::backend::{ProcessBackend, ProcessOptions};
use jcp_wire::endpoint::{Address, Config, Endpoint};

use crate::{Error, Host, Issued};

/// The endpoint of a live run, serving on its own runtime.
pub(crate) struct Serving {
    pub(crate) rt: tokio::runtime::Runtime,
    pub(crate) endpoint: Endpoint,
    /// The endpoint behind the gate (`jcp backend demo`), closed on stop.
    pub(crate) backend: Arc<ProcessBackend>,
    pub(crate) bound: Address,
    /// The steward's admin socket beside the run (`admin.sock`, owner-only):
    /// where `jcp feed` may send unsigned revocations and amendments (§4.3).
    pub(crate) admin: Option<Address>,
}

impl Serving {
    /// Shuts the endpoint down (its record flushed and released), then
    /// stops the backend behind its gate.
    pub(crate) fn shut(&self) -> Result<(), Error> {
        let res = self
            .rt
            .block_on(self.endpoint.shutdown())
            .map_err(|source| Error::wire("the live run's endpoint did not close cleanly", source));
        // The endpoint is held (its view stays), so its backend is not
        // dropped with it: stopped here, after the last call it could run.
        self.backend.close();
        for a in std::iter::once(&self.bound).chain(&self.admin) {
            if let Some(p) = jcp_wire::endpoint::unix_path(a) {
                jcp_wire::endpoint::remove_socket(p);
            }
        }
        res
    }
}

/// Opens the run's endpoint, `jcp backend demo` (run from `jcp`) behind it.
pub(crate) fn open(jcp: &Path, issued: &Issued, host: Host) -> Result<Serving, Error> {
    let mut gate = Gate::new();
    gate.add_trust_root(issued.resource, issued.root.grant().issuer);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("live-endpoint")
        .enable_all()
        .build()
        .map_err(Error::Runtime)?;
    // A Unix socket where its path fits (108 bytes), else loopback TCP.
    let sock = issued.dir.join("endpoint.sock");
    let addr = if sock.as_os_str().len() < 100 { Address::Unix(sock) } else { Address::Tcp("127.0.0.1:0".into()) };
    let mut config = Config::new(issued.stream());
    config.known_through = Some(0);
    // The endpoint's own key seals its record; kept beside it (owner-only) so
    // the record can be reopened by the same point (replay checks the sealer).
    let endpoint_key = Keypair::generate();
    keystore::write_plain(&issued.dir.join("endpoint.key"), &endpoint_key)?;
    // Not declared self-contained (§5.1): the supervisor does not vouch for
    // the backend's process tree, so its figures say what they may be missing.
    let backend =
        ProcessBackend::spawn(jcp.to_path_buf(), vec!["backend".into(), "demo".into()], ProcessOptions::default())
            .map(Arc::new)
            .map_err(|source| Error::wire("the demo backend did not start", source))?;
    let behind: Arc<dyn jcp_wire::backend::Backend> = backend.clone();
    let program = host.program;
    let opened = rt.block_on(async {
        let (endpoint, _report) = Endpoint::open(config, endpoint_key, gate, Some(behind))?;
        let (listener, bound) = addr.bind().await?;
        let ep = endpoint.clone();
        tokio::spawn(async move {
            if let Err(e) = ep.serve(listener).await {
                eprintln!("{program}: the live endpoint stopped serving: {e}");
            }
        });
        // §4.3: the steward's feeds by hand go to an owner-only admin socket,
        // never the agent's; where its path does not fit, only in-process.
        let admin_sock = issued.dir.join("admin.sock");
        let admin = if admin_sock.as_os_str().len() < 100 {
            let (l, a) = Address::Unix(admin_sock).bind().await?;
            let ep = endpoint.clone();
            tokio::spawn(async move {
                if let Err(e) = ep.serve_admin(l).await {
                    eprintln!("{program}: the live endpoint's admin socket stopped: {e}");
                }
            });
            Some(a)
        } else {
            None
        };
        Ok::<_, jcp_wire::WireError>((endpoint, bound, admin))
    });
    match opened {
        Ok((endpoint, bound, admin)) => Ok(Serving { rt, endpoint, backend, bound, admin }),
        Err(source) => {
            backend.close();
            Err(Error::wire("the embedded endpoint did not start", source))
        }
    }
}
