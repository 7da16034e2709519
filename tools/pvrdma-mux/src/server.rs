// SPDX-License-Identifier: GPL-2.0-only
//! The two listening sockets, their accept loops, and shutdown.

use std::collections::HashMap;
use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::fs::MetadataExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::Duration;

use crate::log::{Log, LogTarget};
use crate::registry::{lock, ConnId, Registry};
use crate::{library, log, mad_conn, sock};

/// Default time a REG/UNREG waits for the library's ACK. QEMU's vCPU waits
/// (holding the big lock) for as long, so keep it short.
pub const DEFAULT_ACK_TIMEOUT: Duration = Duration::from_secs(2);

/// How the mux is set up.
#[derive(Clone, Debug)]
pub struct Config {
    /// Socket QEMU's mad chardev connects to.
    pub mad_socket: PathBuf,
    /// Socket the verbs libraries connect to.
    pub fabric_socket: PathBuf,
    /// How long to wait for a library's ACK.
    pub ack_timeout: Duration,
    /// Where the log goes.
    pub log: LogTarget,
    /// How many times the first MAD the mux routes is delivered (1: once). A test
    /// aid: a burst of one MAD, as a flood of retries or a busy fabric would send,
    /// at the receiving device's QP1 (`--mad-burst`).
    pub mad_burst: usize,
    /// The CM attribute the burst is of (`--mad-burst-of`): the first MAD routed
    /// with it is the one delivered `mad_burst` times; `None`: the first MAD
    /// routed, whatever it is.
    pub mad_burst_of: Option<u16>,
}

impl Config {
    /// A configuration with the default ACK timeout, logging to stderr.
    pub fn new(mad_socket: impl Into<PathBuf>, fabric_socket: impl Into<PathBuf>) -> Config {
        Config {
            mad_socket: mad_socket.into(),
            fabric_socket: fabric_socket.into(),
            ack_timeout: DEFAULT_ACK_TIMEOUT,
            log: LogTarget::Stderr,
            mad_burst: 1,
            mad_burst_of: None,
        }
    }
}

/// What every connection thread shares.
pub struct Shared {
    /// GIDs, connections, libraries, comm IDs.
    pub registry: Registry,
    /// The log.
    pub log: Log,
    /// REG/UNREG ACK timeout.
    pub ack_timeout: Duration,
    /// Set when the mux stops.
    pub stopping: AtomicBool,
    /// Copies the next routed MAD is delivered in; 1 once the burst was sent.
    mad_burst: AtomicUsize,
    /// The CM attribute the burst waits for (`None`: any).
    mad_burst_of: Option<u16>,
    /// Every open connection, to shut down on stop.
    conns: Mutex<HashMap<ConnId, UnixStream>>,
    next_id: AtomicU64,
}

impl Shared {
    /// How many times to deliver the MAD being routed, of CM attribute
    /// `attr_id`: the configured burst for the first one (of the configured
    /// attribute, if one is), once for every other.
    pub fn copies_of_next_mad(&self, attr_id: u16) -> usize {
        if self.mad_burst_of.is_some_and(|of| of != attr_id) {
            return 1;
        }
        self.mad_burst.swap(1, Ordering::Relaxed)
    }

    /// Forgets a connection that ended.
    pub fn conn_closed(&self, id: ConnId) {
        lock(&self.conns).remove(&id);
    }
}

/// Which socket a connection came from.
#[derive(Clone, Copy, Debug)]
enum Kind {
    Mad,
    Fabric,
}

struct Listening {
    path: PathBuf,
    fd: RawFd,
    /// Device and inode of the socket file we bound, so we only ever remove
    /// our own file.
    file_id: (u64, u64),
    acceptor: Option<JoinHandle<()>>,
}

/// A running mux. Dropping it stops it.
pub struct Mux {
    shared: Arc<Shared>,
    listening: Vec<Listening>,
}

impl Mux {
    /// Removes stale socket files, binds both sockets and starts accepting.
    pub fn start(config: Config) -> io::Result<Mux> {
        let log = Log::open(&config.log)?;
        let shared = Arc::new(Shared {
            registry: Registry::default(),
            log,
            ack_timeout: config.ack_timeout,
            stopping: AtomicBool::new(false),
            mad_burst: AtomicUsize::new(config.mad_burst.max(1)),
            mad_burst_of: config.mad_burst_of,
            conns: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(1),
        });
        let mut mux = Mux {
            shared,
            listening: Vec::new(),
        };
        mux.listen(&config.mad_socket, Kind::Mad)?;
        mux.listen(&config.fabric_socket, Kind::Fabric)?;
        log!(
            mux.shared.log,
            "listening: mad socket {}, fabric socket {}, ack timeout {} ms",
            config.mad_socket.display(),
            config.fabric_socket.display(),
            config.ack_timeout.as_millis()
        );
        Ok(mux)
    }

    /// The state shared with the connection threads (tests inspect it).
    pub fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    fn listen(&mut self, path: &Path, kind: Kind) -> io::Result<()> {
        sock::prepare_socket_path(path)?;
        let listener = UnixListener::bind(path)?;
        let meta = std::fs::symlink_metadata(path)?;
        let fd = listener.as_raw_fd();
        let shared = Arc::clone(&self.shared);
        let acceptor = thread::Builder::new()
            .name(format!("accept-{kind:?}").to_lowercase())
            .spawn(move || accept_loop(listener, kind, shared))?;
        self.listening.push(Listening {
            path: path.to_path_buf(),
            fd,
            file_id: (meta.dev(), meta.ino()),
            acceptor: Some(acceptor),
        });
        Ok(())
    }

    /// Stops accepting, shuts every connection down and removes the socket
    /// files. Idempotent.
    pub fn stop(&mut self) {
        if self.shared.stopping.swap(true, Ordering::SeqCst) {
            return;
        }
        log!(self.shared.log, "stopping");
        for l in &mut self.listening {
            sock::shutdown_fd(l.fd);
            if let Some(t) = l.acceptor.take() {
                let _ = t.join();
            }
            remove_if_ours(&l.path, l.file_id);
        }
        for (_, s) in lock(&self.shared.conns).drain() {
            let _ = s.shutdown(std::net::Shutdown::Both);
        }
    }
}

impl Drop for Mux {
    fn drop(&mut self) {
        self.stop();
    }
}

fn remove_if_ours(path: &Path, file_id: (u64, u64)) {
    if let Ok(meta) = std::fs::symlink_metadata(path) {
        if (meta.dev(), meta.ino()) == file_id {
            let _ = std::fs::remove_file(path);
        }
    }
}

fn accept_loop(listener: UnixListener, kind: Kind, shared: Arc<Shared>) {
    loop {
        let accepted = listener.accept();
        if shared.stopping.load(Ordering::SeqCst) {
            return;
        }
        let stream = match accepted {
            Ok((s, _)) => s,
            Err(e) => {
                log!(shared.log, "accept on the {kind:?} socket failed: {e}");
                // E.g. out of fds: don't spin.
                thread::sleep(Duration::from_millis(50));
                continue;
            }
        };
        let id = shared.next_id.fetch_add(1, Ordering::Relaxed);
        match stream.try_clone() {
            Ok(s) => {
                lock(&shared.conns).insert(id, s);
            }
            Err(e) => {
                log!(
                    shared.log,
                    "conn#{id}: cannot clone the socket: {e}; closing"
                );
                continue;
            }
        }
        let worker_shared = Arc::clone(&shared);
        let spawned = thread::Builder::new()
            .name(format!("{kind:?}-{id}").to_lowercase())
            .spawn(move || {
                match kind {
                    Kind::Mad => mad_conn::serve(stream, id, &worker_shared),
                    Kind::Fabric => library::serve(stream, id, &worker_shared),
                }
                worker_shared.conn_closed(id);
            });
        if let Err(e) = spawned {
            log!(shared.log, "conn#{id}: cannot start a thread: {e}; closing");
            if let Some(s) = lock(&shared.conns).remove(&id) {
                let _ = s.shutdown(std::net::Shutdown::Both);
            }
        }
    }
}
