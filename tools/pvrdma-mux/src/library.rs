// SPDX-License-Identifier: GPL-2.0-only
//! The mux side of the fabric control protocol: one thread per verbs library
//! connection, and [`Library`], through which QEMU connection threads push
//! GID changes and wait for the ACK, and other libraries' reader threads
//! relay data packets.
//!
//! A library's reader thread never writes to another library's socket
//! itself: it queues the packet on the destination's [`DataQueue`], whose own
//! thread writes it. So two libraries sending to each other cannot stall the
//! mux (each reader keeps reading whatever the other's socket holds). A
//! library that stops reading altogether costs at most [`MAX_QUEUED_BYTES`]
//! of queue, and a write to it that cannot finish within
//! [`stall_timeout`] (so a GID push never waits behind it for ever) ends its
//! session: a frame cut short would leave the stream unreadable anyway.

use std::collections::HashMap;
use std::io::{self, Write};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use pvrdma_fabric::gid::GidFmt;
use pvrdma_fabric::packet::Packet;
use pvrdma_fabric::wire::{
    self, AckStatus, Caps, Frame, CAP_DATA, CAP_GID_TYPE, FLAG_IGNORABLE, PROTOCOL_VERSION,
};
use pvrdma_fabric::{Gid, GidType};

use crate::registry::{lock, ConnId};
use crate::server::Shared;
use crate::{log, sock};

/// How long a new library connection may take to say HELLO.
const HELLO_TIMEOUT: Duration = Duration::from_secs(5);
/// The capabilities this mux grants when offered.
const MUX_CAPS: Caps = CAP_DATA | CAP_GID_TYPE;
/// Most bytes of packets waiting for one library: past it, packets to it
/// are dropped (its QEMU is not reading; the senders' RC requests then time
/// out, as on a congested fabric).
pub const MAX_QUEUED_BYTES: usize = 128 << 20;

/// How long a write to a library may block before the library counts as
/// stalled and its session ends: five ACK timeouts (10 s by default).
pub fn stall_timeout(ack_timeout: Duration) -> Duration {
    ack_timeout.saturating_mul(5)
}

/// Packets waiting to be written to one library, and their writer thread.
struct DataQueue {
    tx: Mutex<Option<Sender<Vec<u8>>>>,
    queued_bytes: Arc<AtomicUsize>,
}

/// Counts of the data path, for the session's last log line.
#[derive(Default)]
struct DataCounts {
    received: AtomicU64,
    relayed: AtomicU64,
    dropped: AtomicU64,
}

/// A connected, greeted verbs library.
pub struct Library {
    /// Its process (SO_PEERCRED, equal to the PID in its HELLO).
    pub pid: u32,
    /// Its connection, for logs.
    pub id: ConnId,
    /// The capabilities agreed in WELCOME.
    pub caps: Caps,
    writer: Arc<Mutex<UnixStream>>,
    waiters: Mutex<HashMap<u32, Sender<AckStatus>>>,
    next_seq: AtomicU32,
    data: DataQueue,
    counts: DataCounts,
    shared: Arc<Shared>,
}

/// Why a push got no ACK.
#[derive(Debug)]
pub enum PushError {
    /// No ACK within the timeout.
    Timeout,
    /// The library went away.
    Disconnected,
    /// Writing to the library failed.
    Io(io::Error),
}

impl std::fmt::Display for PushError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PushError::Timeout => f.write_str("no ACK in time"),
            PushError::Disconnected => f.write_str("library disconnected"),
            PushError::Io(e) => write!(f, "write failed: {e}"),
        }
    }
}

impl Library {
    /// The GID_ADD of `gid`, of type `ty`, for this library (see [`gid_add`]).
    pub fn gid_add(&self, gid: Gid, ty: GidType) -> Frame {
        gid_add(self.caps, gid, ty)
    }

    /// Whether this library is told GID types (else its GIDs are RoCE v1).
    pub fn takes_gid_types(&self) -> bool {
        self.caps & CAP_GID_TYPE != 0
    }

    /// Sends `frame` and waits up to `timeout` for its ACK.
    pub fn push_wait(&self, frame: &Frame, timeout: Duration) -> Result<AckStatus, PushError> {
        let (tx, rx) = mpsc::channel();
        let seq = {
            let mut w = lock(&self.writer);
            self.send_locked(&mut w, frame, Some(tx))
                .map_err(PushError::Io)?
        };
        match rx.recv_timeout(timeout) {
            Ok(status) => Ok(status),
            Err(RecvTimeoutError::Timeout) => {
                lock(&self.waiters).remove(&seq);
                Err(PushError::Timeout)
            }
            Err(RecvTimeoutError::Disconnected) => Err(PushError::Disconnected),
        }
    }

    /// Sends `frame` without waiting; its ACK is only logged.
    pub fn push_nowait(&self, frame: &Frame) {
        let mut w = lock(&self.writer);
        let _ = self.send_locked(&mut w, frame, None);
    }

    /// Sends `frame` through the locked writer, registering `waiter` for its
    /// ACK. Returns the frame's `seq`.
    fn send_locked(
        &self,
        w: &mut UnixStream,
        frame: &Frame,
        waiter: Option<Sender<AckStatus>>,
    ) -> io::Result<u32> {
        let mut seq = self.next_seq.fetch_add(1, Ordering::Relaxed);
        if seq == 0 {
            // 0 is the handshake's; skip it when the counter wraps.
            seq = self.next_seq.fetch_add(1, Ordering::Relaxed);
        }
        if let Some(tx) = waiter {
            lock(&self.waiters).insert(seq, tx);
        }
        log!(
            self.shared.log,
            "{} -> {} seq={seq}",
            self.tag(),
            describe(frame)
        );
        let written = wire::write_frame(w, seq, frame);
        if let Err(e) = &written {
            lock(&self.waiters).remove(&seq);
            log!(self.shared.log, "{} write failed: {e}; closing", self.tag());
            // The frame may be cut short: the session cannot go on.
            let _ = w.shutdown(std::net::Shutdown::Both);
        }
        written.map(|()| seq)
    }

    /// Queues a data packet for this library (its writer thread sends it);
    /// false if it was dropped: the library takes no packets, its session
    /// is over, or too much is queued already.
    pub fn queue_packet(&self, packet: &Packet) -> bool {
        if self.caps & CAP_DATA == 0 {
            return false;
        }
        let frame = Frame::Data(packet.clone()).encode(0);
        let len = frame.len();
        if self.data.queued_bytes.fetch_add(len, Ordering::AcqRel) + len > MAX_QUEUED_BYTES {
            self.data.queued_bytes.fetch_sub(len, Ordering::AcqRel);
            return false;
        }
        let sent = lock(&self.data.tx)
            .as_ref()
            .is_some_and(|tx| tx.send(frame).is_ok());
        if !sent {
            self.data.queued_bytes.fetch_sub(len, Ordering::AcqRel);
        }
        sent
    }

    /// Ends the writer thread (after what is queued).
    fn close_data(&self) {
        lock(&self.data.tx).take();
    }

    /// Hands an ACK to its waiter.
    fn ack(&self, seq: u32, status: AckStatus) {
        match lock(&self.waiters).remove(&seq) {
            Some(tx) => {
                let _ = tx.send(status);
            }
            None => log!(
                self.shared.log,
                "{} ACK seq={seq} has no waiter (late or unsolicited)",
                self.tag()
            ),
        }
    }

    fn tag(&self) -> String {
        format!("fabric#{} pid={}", self.id, self.pid)
    }
}

/// The GID_ADD of `gid`, of type `ty`, for a library with capabilities
/// `caps`: with the type only if it agreed on [`CAP_GID_TYPE`] (an older
/// library refuses a GID_ADD that is not 16 bytes).
pub fn gid_add(caps: Caps, gid: Gid, ty: GidType) -> Frame {
    Frame::GidAdd(gid, (caps & CAP_GID_TYPE != 0).then_some(ty))
}

/// One line describing a frame, for the log.
pub fn describe(frame: &Frame) -> String {
    match frame {
        Frame::Hello {
            version,
            pid,
            caps,
            name,
        } => format!("HELLO v{version} pid={pid} caps=0x{caps:x} name={name:?}"),
        Frame::Welcome {
            version,
            caps,
            name,
        } => format!("WELCOME v{version} caps=0x{caps:x} name={name:?}"),
        Frame::Error(reason) => format!("ERROR {reason:?}"),
        Frame::GidAdd(g, ty) => {
            let ty = match ty {
                Some(GidType::RoceV1) => " RoCEv1",
                Some(GidType::RoceV2) => " RoCEv2",
                None => "",
            };
            format!("GID_ADD {}{ty}", GidFmt(g))
        }
        Frame::GidDel(g) => format!("GID_DEL {}", GidFmt(g)),
        Frame::Ack(AckStatus::Ok) => "ACK ok".into(),
        Frame::Ack(AckStatus::Refused(r)) => format!("ACK refused {r:?}"),
        Frame::Data(p) => format!(
            "DATA {:?} {} qp {:#x} -> {} qp {:#x} msg {} at {}+{} of {}",
            p.op,
            GidFmt(&p.sgid),
            p.src_qpn,
            GidFmt(&p.dgid),
            p.dst_qpn,
            p.msg_id,
            p.offset,
            p.data.len(),
            p.msg_len
        ),
        Frame::Unknown {
            kind,
            flags,
            payload,
        } => format!(
            "kind=0x{kind:x} flags=0x{flags:x} ({} bytes)",
            payload.len()
        ),
    }
}

/// Serves one connection on the fabric socket until it ends.
pub fn serve(mut stream: UnixStream, id: ConnId, shared: &Arc<Shared>) {
    let tag = format!("fabric#{id}");
    let peer = match sock::peer_pid(&stream) {
        Ok(pid) => pid,
        Err(e) => {
            log!(shared.log, "{tag}: no peer credentials ({e}); closing");
            return;
        }
    };
    let tag = format!("{tag} pid={peer}");
    log!(shared.log, "{tag}: connected");
    let hello = stream
        .set_read_timeout(Some(HELLO_TIMEOUT))
        .and_then(|()| wire::read_frame(&mut stream));
    let (version, pid, offered) = match hello {
        Ok(Some((
            _,
            f @ Frame::Hello {
                version, pid, caps, ..
            },
        ))) => {
            log!(shared.log, "{tag} <- {}", describe(&f));
            (version, pid, caps)
        }
        Ok(Some((_, other))) => {
            return refuse(
                &mut stream,
                shared,
                &tag,
                format!("expected HELLO, got {}", describe(&other)),
            );
        }
        Ok(None) => {
            log!(shared.log, "{tag}: closed before HELLO");
            return;
        }
        Err(e) => return refuse(&mut stream, shared, &tag, format!("bad HELLO: {e}")),
    };
    if version == 0 {
        return refuse(&mut stream, shared, &tag, "protocol version 0".into());
    }
    if pid != peer {
        return refuse(
            &mut stream,
            shared,
            &tag,
            format!("HELLO says pid {pid} but SO_PEERCRED says {peer}"),
        );
    }
    let writer = match stream.try_clone() {
        Ok(w) => w,
        Err(e) => {
            return refuse(
                &mut stream,
                shared,
                &tag,
                format!("cannot clone socket: {e}"),
            )
        }
    };
    if let Err(e) = writer.set_write_timeout(Some(stall_timeout(shared.ack_timeout))) {
        return refuse(
            &mut stream,
            shared,
            &tag,
            format!("cannot set a write timeout: {e}"),
        );
    }
    let writer = Arc::new(Mutex::new(writer));
    let caps = offered & MUX_CAPS;
    let (data_tx, data_rx) = mpsc::channel();
    let queued_bytes = Arc::new(AtomicUsize::new(0));
    if caps & CAP_DATA != 0 {
        let (w, q, sh, t) = (
            Arc::clone(&writer),
            Arc::clone(&queued_bytes),
            Arc::clone(shared),
            tag.clone(),
        );
        let spawned = thread::Builder::new()
            .name(format!("fabric-{id}-tx"))
            .spawn(move || write_packets(&w, &data_rx, &q, &sh, &t));
        if let Err(e) = spawned {
            let reason = format!("cannot start a thread: {e}");
            return refuse(&mut stream, shared, &tag, reason);
        }
    }
    let lib = Arc::new(Library {
        pid,
        id,
        caps,
        writer,
        waiters: Mutex::new(HashMap::new()),
        next_seq: AtomicU32::new(1),
        data: DataQueue {
            tx: Mutex::new(Some(data_tx)),
            queued_bytes,
        },
        counts: DataCounts::default(),
        shared: Arc::clone(shared),
    });
    // Hold the writer while registering, so no GID push can overtake WELCOME.
    {
        let mut w = lock(&lib.writer);
        let replay = match shared.registry.add_library(Arc::clone(&lib)) {
            Ok(gids) => gids,
            Err(_already) => {
                drop(w);
                return refuse(
                    &mut stream,
                    shared,
                    &tag,
                    format!("a library for pid {pid} is already connected"),
                );
            }
        };
        let welcome = Frame::Welcome {
            version: version.min(PROTOCOL_VERSION),
            caps,
            name: format!("pvrdma-mux/{}", env!("CARGO_PKG_VERSION")),
        };
        log!(shared.log, "{tag} -> {}", describe(&welcome));
        let mut ok = wire::write_frame(&mut *w, 0, &welcome).is_ok();
        for (gid, ty) in replay {
            ok = ok && lib.send_locked(&mut w, &lib.gid_add(gid, ty), None).is_ok();
        }
        if !ok {
            drop(w);
            shared.registry.remove_library(&lib);
            log!(shared.log, "{tag}: write failed during handshake; closing");
            return;
        }
    }
    let _ = stream.set_read_timeout(None);
    read_acks(&mut stream, &lib, shared, &tag);
    shared.registry.remove_library(&lib);
    lib.close_data();
    if lib.caps & CAP_DATA != 0 {
        let c = &lib.counts;
        log!(
            shared.log,
            "{tag}: data packets from it: {} received, {} relayed, {} dropped",
            c.received.load(Ordering::Relaxed),
            c.relayed.load(Ordering::Relaxed),
            c.dropped.load(Ordering::Relaxed)
        );
    }
    // Dropping the senders wakes every push_wait with Disconnected.
    lock(&lib.waiters).clear();
    let _ = stream.shutdown(std::net::Shutdown::Both);
    log!(shared.log, "{tag}: closed");
}

/// Reads ACKs (and anything else) until the session ends.
fn read_acks(stream: &mut UnixStream, lib: &Library, shared: &Shared, tag: &str) {
    loop {
        match wire::read_frame(stream) {
            Ok(None) => return,
            Err(e) => {
                if !shared.stopping.load(Ordering::SeqCst) {
                    log!(shared.log, "{tag}: read failed: {e}");
                }
                return;
            }
            Ok(Some((seq, frame))) => {
                // Data packets are counted, not logged one by one (a
                // benchmark sends millions); relay() logs what it drops.
                if !matches!(frame, Frame::Data(_)) {
                    log!(shared.log, "{tag} <- {} seq={seq}", describe(&frame));
                }
                match frame {
                    Frame::Ack(status) => lib.ack(seq, status),
                    Frame::Data(packet) if lib.caps & CAP_DATA != 0 => {
                        relay(lib, shared, tag, &packet)
                    }
                    Frame::Error(_) => return,
                    Frame::Unknown { flags, .. } if flags & FLAG_IGNORABLE != 0 => {}
                    other => {
                        let reason = format!("unexpected {}", describe(&other));
                        let mut w = lock(&lib.writer);
                        let _ = wire::write_frame(&mut *w, seq, &Frame::Error(reason.clone()));
                        log!(shared.log, "{tag}: {reason}; closing");
                        return;
                    }
                }
            }
        }
    }
}

/// Relays one packet from `lib` to the library owning its destination GID,
/// if `lib`'s process owns its source GID (a library cannot speak for
/// another's GIDs); otherwise drops it with a log line.
fn relay(lib: &Library, shared: &Shared, tag: &str, packet: &Packet) {
    let counts = &lib.counts;
    counts.received.fetch_add(1, Ordering::Relaxed);
    let outcome = shared
        .registry
        .packet_route(lib.pid, &packet.sgid, &packet.dgid)
        .and_then(|dest| {
            if dest.queue_packet(packet) {
                Ok(())
            } else {
                Err(format!(
                    "fabric#{} pid={} takes no packets or has {MAX_QUEUED_BYTES} bytes queued",
                    dest.id, dest.pid
                ))
            }
        });
    match outcome {
        Ok(()) => {
            counts.relayed.fetch_add(1, Ordering::Relaxed);
        }
        Err(why) => {
            // One line per dropped packet is bounded by what the sender
            // sends after its requests time out; keep the first ones.
            if counts.dropped.fetch_add(1, Ordering::Relaxed) < 100 {
                log!(
                    shared.log,
                    "{tag}: dropped {}: {why}",
                    describe(&Frame::Data(packet.clone()))
                );
            }
        }
    }
}

/// The writer thread of one library's data queue.
fn write_packets(
    writer: &Mutex<UnixStream>,
    queued: &Receiver<Vec<u8>>,
    queued_bytes: &AtomicUsize,
    shared: &Shared,
    tag: &str,
) {
    while let Ok(frame) = queued.recv() {
        queued_bytes.fetch_sub(frame.len(), Ordering::AcqRel);
        let mut w = lock(writer);
        if let Err(e) = w.write_all(&frame) {
            if !shared.stopping.load(Ordering::SeqCst) {
                log!(
                    shared.log,
                    "{tag}: writing a data packet failed ({e}): the library does not read; closing"
                );
            }
            // The frame may be cut short: the session cannot go on.
            let _ = w.shutdown(std::net::Shutdown::Both);
            return;
        }
    }
}

/// Sends ERROR with `reason` and logs it; the caller then closes.
fn refuse(stream: &mut UnixStream, shared: &Shared, tag: &str, reason: String) {
    log!(shared.log, "{tag} -> ERROR {reason:?}; closing");
    let _ = wire::write_frame(stream, 0, &Frame::Error(reason));
}

#[cfg(test)]
mod tests {
    use super::*;

    const G: Gid = [0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];

    #[test]
    fn gid_add_has_the_type_only_for_a_library_that_agreed() {
        for ty in [GidType::RoceV1, GidType::RoceV2] {
            assert_eq!(gid_add(CAP_GID_TYPE, G, ty), Frame::GidAdd(G, Some(ty)));
            let both = CAP_DATA | CAP_GID_TYPE;
            assert_eq!(gid_add(both, G, ty), Frame::GidAdd(G, Some(ty)));
            // An older library: the 16 bytes it reads.
            assert_eq!(gid_add(0, G, ty), Frame::GidAdd(G, None));
            assert_eq!(gid_add(CAP_DATA, G, ty).encode(1).len(), 12 + 16);
        }
        assert_eq!(MUX_CAPS & CAP_GID_TYPE, CAP_GID_TYPE, "the mux grants it");
    }

    #[test]
    fn describes_the_type_of_a_gid_add() {
        let g = "fe80:0000:0000:0000:0000:0000:0000:0001";
        let d = |ty| describe(&Frame::GidAdd(G, ty));
        assert_eq!(d(Some(GidType::RoceV2)), format!("GID_ADD {g} RoCEv2"));
        assert_eq!(d(Some(GidType::RoceV1)), format!("GID_ADD {g} RoCEv1"));
        assert_eq!(d(None), format!("GID_ADD {g}"));
    }
}
