// SPDX-License-Identifier: GPL-2.0-only
//! The library side of the fabric control protocol: [`FabricClient`].
//!
//! Two threads serve a session: the reader takes frames from the mux (GID
//! changes, data packets) and hands them to the sinks; the writer is the
//! only one that writes to the socket, taking encoded frames from a channel.
//! So no thread ever blocks in a write while frames wait to be read: two
//! libraries sending to each other through the mux cannot stall each other.

use std::io::{self, Write};
use std::net::Shutdown;
use std::os::unix::net::UnixStream;
use std::panic::{self, AssertUnwindSafe};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::Duration;

use crate::packet::Packet;
use crate::wire::{
    self, AckStatus, Caps, Frame, CAP_DATA, CAP_GID_TYPE, FLAG_IGNORABLE, PROTOCOL_VERSION,
};
use crate::{GidSink, FABRIC_SOCKET_ENV};

/// Receives the data packets the mux relays to this library.
pub trait PacketSink: Send + Sync {
    /// A packet for a GID of this device (already decoded and checked by
    /// [`Packet::decode`]; everything else is the sink's to check).
    fn packet_received(&self, packet: Packet);
}

/// Sends data packets to the mux; cheap to clone, never blocks.
#[derive(Clone)]
pub struct PacketSender {
    frames: Sender<Vec<u8>>,
    connected: Arc<AtomicBool>,
}

impl PacketSender {
    /// Queues `packet` for the mux; false if the session has ended.
    pub fn send(&self, packet: Packet) -> bool {
        self.connected.load(Ordering::Acquire)
            && self.frames.send(Frame::Data(packet).encode(0)).is_ok()
    }

    /// Queues every packet of a message, in order; false if the session has ended.
    pub fn send_all(&self, packets: Vec<Packet>) -> bool {
        packets.into_iter().all(|p| self.send(p))
    }
}

/// How long `connect` waits for the mux's WELCOME.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);

/// A live connection to the mux; dropping it disconnects.
pub struct FabricClient {
    stream: UnixStream,
    reader: Option<JoinHandle<()>>,
    writer: Option<JoinHandle<()>>,
    frames: Option<Sender<Vec<u8>>>,
    connected: Arc<AtomicBool>,
    version: u32,
    caps: Caps,
    server_name: String,
}

impl FabricClient {
    /// Connects to the fabric socket at `path`, announces this process, and
    /// serves GID changes to `sink` on a background thread. It always offers
    /// [`CAP_GID_TYPE`]: every sink takes a type
    /// ([`GidSink::gid_added_typed`]).
    ///
    /// Fails if the socket cannot be reached, or the mux refuses the session
    /// (`ConnectionRefused`, with the mux's reason) or does not answer within
    /// five seconds.
    pub fn connect(path: &Path, sink: Arc<dyn GidSink>) -> io::Result<FabricClient> {
        FabricClient::connect_with(path, sink, None)
    }

    /// Like [`FabricClient::connect`], and offers the data path: packets the
    /// mux relays go to `packets`, and [`FabricClient::packet_sender`] sends
    /// them (if the mux grants [`CAP_DATA`]).
    pub fn connect_with_packets(
        path: &Path,
        sink: Arc<dyn GidSink>,
        packets: Arc<dyn PacketSink>,
    ) -> io::Result<FabricClient> {
        FabricClient::connect_with(path, sink, Some(packets))
    }

    fn connect_with(
        path: &Path,
        sink: Arc<dyn GidSink>,
        packets: Option<Arc<dyn PacketSink>>,
    ) -> io::Result<FabricClient> {
        let mut stream = UnixStream::connect(path)?;
        stream.set_read_timeout(Some(HANDSHAKE_TIMEOUT))?;
        let offered = CAP_GID_TYPE | if packets.is_some() { CAP_DATA } else { 0 };
        let hello = Frame::Hello {
            version: PROTOCOL_VERSION,
            pid: std::process::id(),
            caps: offered,
            name: client_name(),
        };
        wire::write_frame(&mut stream, 0, &hello)?;
        let (version, caps, server_name) = match wire::read_frame(&mut stream)? {
            Some((
                _,
                Frame::Welcome {
                    version,
                    caps,
                    name,
                },
            )) => (version, caps & offered, name),
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
        let (frames, queued) = mpsc::channel();
        let writer = {
            let stream = stream.try_clone()?;
            thread::Builder::new()
                .name("pvrdma-fabric-tx".into())
                .spawn(move || write_frames(stream, queued))?
        };
        let reader = {
            let stream = stream.try_clone()?;
            let connected = Arc::clone(&connected);
            let frames = frames.clone();
            let packets = packets.filter(|_| caps & CAP_DATA != 0);
            thread::Builder::new()
                .name("pvrdma-fabric".into())
                .spawn(move || {
                    serve(stream, sink.as_ref(), packets.as_deref(), &frames);
                    connected.store(false, Ordering::Release);
                })?
        };
        Ok(FabricClient {
            stream,
            reader: Some(reader),
            writer: Some(writer),
            frames: Some(frames),
            connected,
            version,
            caps,
            server_name,
        })
    }

    /// The sender of data packets, if the mux granted [`CAP_DATA`].
    pub fn packet_sender(&self) -> Option<PacketSender> {
        let frames = self.frames.as_ref()?;
        (self.caps & CAP_DATA != 0).then(|| PacketSender {
            frames: frames.clone(),
            connected: Arc::clone(&self.connected),
        })
    }

    /// The capabilities agreed with the mux.
    pub fn caps(&self) -> Caps {
        self.caps
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
        // Shutting the socket down makes the reader's blocking read return;
        // an empty frame tells the writer to stop (PacketSenders may still
        // hold its channel open).
        let _ = self.stream.shutdown(Shutdown::Both);
        if let Some(frames) = self.frames.take() {
            let _ = frames.send(Vec::new());
        }
        for t in [self.reader.take(), self.writer.take()]
            .into_iter()
            .flatten()
        {
            if t.thread().id() != thread::current().id() {
                let _ = t.join();
            }
        }
    }
}

/// The writer thread: writes each queued frame whole, until the channel
/// closes, a write fails or it is handed an empty frame (the stop sign).
fn write_frames(mut stream: UnixStream, queued: Receiver<Vec<u8>>) {
    while let Ok(frame) = queued.recv() {
        if frame.is_empty() || stream.write_all(&frame).is_err() {
            return;
        }
    }
}

/// The reader thread: answers every GID_ADD / GID_DEL with an ACK and hands
/// data packets to `packets` until the session ends.
fn serve(
    mut stream: UnixStream,
    sink: &dyn GidSink,
    packets: Option<&dyn PacketSink>,
    frames: &Sender<Vec<u8>>,
) {
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
            Frame::GidAdd(gid, ty) => {
                let ty = ty.unwrap_or_default();
                match panic::catch_unwind(AssertUnwindSafe(|| sink.gid_added_typed(gid, ty))) {
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
            Frame::Data(packet) if packets.is_some() => {
                if let Some(p) = packets {
                    let delivered =
                        panic::catch_unwind(AssertUnwindSafe(|| p.packet_received(packet)));
                    if delivered.is_err() {
                        eprintln!("pvrdma-fabric: packet_received panicked");
                    }
                }
                continue;
            }
            Frame::Error(reason) => {
                eprintln!("pvrdma-fabric: pvrdma-mux closed the session: {reason}");
                return;
            }
            Frame::Unknown { flags, .. } if flags & FLAG_IGNORABLE != 0 => continue,
            other => {
                let reason = format!("unexpected frame kind 0x{:x}", other.kind());
                eprintln!("pvrdma-fabric: {reason}; closing the session");
                let _ = frames.send(Frame::Error(reason).encode(seq));
                return;
            }
        };
        if frames.send(Frame::Ack(status).encode(seq)).is_err() {
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
