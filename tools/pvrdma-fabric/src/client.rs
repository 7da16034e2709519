//! The library side of the fabric control protocol: [`FabricClient`].

use std::io;
use std::net::Shutdown;
use std::os::unix::net::UnixStream;
use std::panic::{self, AssertUnwindSafe};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::Duration;

use crate::wire::{self, AckStatus, Frame, FLAG_IGNORABLE, PROTOCOL_VERSION};
use crate::{GidSink, FABRIC_SOCKET_ENV};

/// How long `connect` waits for the mux's WELCOME.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);

/// A live connection to the mux; dropping it disconnects.
pub struct FabricClient {
    stream: UnixStream,
    reader: Option<JoinHandle<()>>,
    connected: Arc<AtomicBool>,
    version: u32,
    server_name: String,
}

impl FabricClient {
    /// Connects to the fabric socket at `path`, announces this process, and
    /// serves GID changes to `sink` on a background thread.
    ///
    /// Fails if the socket cannot be reached, or the mux refuses the session
    /// (`ConnectionRefused`, with the mux's reason) or does not answer within
    /// five seconds.
    pub fn connect(path: &Path, sink: Arc<dyn GidSink>) -> io::Result<FabricClient> {
        let mut stream = UnixStream::connect(path)?;
        stream.set_read_timeout(Some(HANDSHAKE_TIMEOUT))?;
        let hello = Frame::Hello {
            version: PROTOCOL_VERSION,
            pid: std::process::id(),
            caps: 0,
            name: client_name(),
        };
        wire::write_frame(&mut stream, 0, &hello)?;
        let (version, server_name) = match wire::read_frame(&mut stream)? {
            Some((_, Frame::Welcome { version, name, .. })) => (version, name),
            Some((_, Frame::Error(reason))) => {
                return Err(io::Error::new(
                    io::ErrorKind::ConnectionRefused,
                    format!("pvrdma-mux refused the session: {reason}"),
                ))
            }
            Some((_, other)) => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("expected WELCOME from pvrdma-mux, got {other:?}"),
                ))
            }
            None => return Err(io::ErrorKind::UnexpectedEof.into()),
        };
        if version == 0 || version > PROTOCOL_VERSION {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("pvrdma-mux chose unsupported protocol version {version}"),
            ));
        }
        stream.set_read_timeout(None)?;
        let connected = Arc::new(AtomicBool::new(true));
        let reader = {
            let stream = stream.try_clone()?;
            let connected = Arc::clone(&connected);
            thread::Builder::new()
                .name("pvrdma-fabric".into())
                .spawn(move || {
                    serve(stream, sink.as_ref());
                    connected.store(false, Ordering::Release);
                })?
        };
        Ok(FabricClient {
            stream,
            reader: Some(reader),
            connected,
            version,
            server_name,
        })
    }

    /// Connects to the socket named by [`FABRIC_SOCKET_ENV`]; `None` when the
    /// variable is unset or empty.
    pub fn connect_from_env(sink: Arc<dyn GidSink>) -> Option<io::Result<FabricClient>> {
        let path = std::env::var_os(FABRIC_SOCKET_ENV).filter(|p| !p.is_empty())?;
        Some(FabricClient::connect(Path::new(&path), sink))
    }

    /// False once the mux has closed the session (or it failed).
    pub fn is_connected(&self) -> bool {
        self.connected.load(Ordering::Acquire)
    }

    /// The protocol version agreed with the mux.
    pub fn version(&self) -> u32 {
        self.version
    }

    /// The name the mux gave in its WELCOME.
    pub fn server_name(&self) -> &str {
        &self.server_name
    }
}

impl Drop for FabricClient {
    fn drop(&mut self) {
        // Shutting the socket down makes the reader's blocking read return.
        let _ = self.stream.shutdown(Shutdown::Both);
        if let Some(reader) = self.reader.take() {
            if reader.thread().id() != thread::current().id() {
                let _ = reader.join();
            }
        }
    }
}

/// The background thread: answers every GID_ADD / GID_DEL with an ACK until
/// the session ends.
fn serve(mut stream: UnixStream, sink: &dyn GidSink) {
    loop {
        let (seq, frame) = match wire::read_frame(&mut stream) {
            Ok(Some(f)) => f,
            Ok(None) => return,
            Err(e) => {
                // A shutdown by our own Drop shows up as EOF, not as an error.
                eprintln!("pvrdma-fabric: session with pvrdma-mux failed: {e}");
                return;
            }
        };
        let status = match frame {
            Frame::GidAdd(gid) => {
                match panic::catch_unwind(AssertUnwindSafe(|| sink.gid_added(gid))) {
                    Ok(Ok(())) => AckStatus::Ok,
                    Ok(Err(reason)) => AckStatus::Refused(reason),
                    Err(_) => AckStatus::Refused("gid_added panicked".into()),
                }
            }
            Frame::GidDel(gid) => {
                match panic::catch_unwind(AssertUnwindSafe(|| sink.gid_removed(gid))) {
                    Ok(()) => AckStatus::Ok,
                    Err(_) => AckStatus::Refused("gid_removed panicked".into()),
                }
            }
            Frame::Error(reason) => {
                eprintln!("pvrdma-fabric: pvrdma-mux closed the session: {reason}");
                return;
            }
            Frame::Unknown { flags, .. } if flags & FLAG_IGNORABLE != 0 => continue,
            other => {
                let reason = format!("unexpected frame kind 0x{:x}", other.kind());
                eprintln!("pvrdma-fabric: {reason}; closing the session");
                let _ = wire::write_frame(&mut stream, seq, &Frame::Error(reason));
                return;
            }
        };
        if wire::write_frame(&mut stream, seq, &Frame::Ack(status)).is_err() {
            return;
        }
    }
}

/// "pvrdma-fabric/<version> <program>", for the mux's log.
fn client_name() -> String {
    let program = std::env::args_os()
        .next()
        .map(|p| {
            Path::new(&p)
                .file_name()
                .unwrap_or(p.as_os_str())
                .to_string_lossy()
                .into_owned()
        })
        .unwrap_or_default();
    format!("pvrdma-fabric/{} {program}", env!("CARGO_PKG_VERSION"))
}
