// SPDX-License-Identifier: GPL-2.0-only
//! One QEMU connection on the mad socket: answers REG/UNREG/MAD requests,
//! routes MADs, and writes MAD deliveries to QEMU.
//!
//! A single thread owns all reads and writes of the connection, so nothing is
//! ever written between a request and its RESP; deliveries queue in the
//! connection's [`Outbox`] and go out one at a time when the connection is
//! idle and the previous one is known to be read (see `race.rs`).

use std::io::{self, Read, Write};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use pvrdma_fabric::gid::GidFmt;
use pvrdma_fabric::mad::MadHdr;
use pvrdma_fabric::mux_msg::{ErrCode, MsgType, MuxMsg, OpCode, MSG_SIZE};
use pvrdma_fabric::wire::{AckStatus, Frame};
use pvrdma_fabric::{Gid, GidType};

use crate::cm_route::{self, Decision};
use crate::race::{Probe, RaceGuard, Unsettled, Verdict};
use crate::registry::{ConnId, Outbox};
use crate::server::Shared;
use crate::sock::Poller;
use crate::{log, reply, sock};

/// How long the rest of a message may take once its first byte arrived, and
/// how long a write may block.
const IO_TIMEOUT: Duration = Duration::from_secs(2);

/// Poller tokens.
const TOKEN_REQUEST: u64 = 0;
const TOKEN_CONSUMED: u64 = 1;
const TOKEN_WAKE: u64 = 2;

/// After this long unread, a delivery is reported (QEMU may be stuck, e.g.
/// sleeping because the guest posted no QP1 receive).
const STUCK_REPORT: Duration = Duration::from_secs(5);

/// Serves one QEMU connection until it ends.
pub fn serve(stream: UnixStream, id: ConnId, shared: &Arc<Shared>) {
    let pid = match sock::peer_pid(&stream) {
        Ok(pid) => pid,
        Err(e) => {
            log!(shared.log, "mad#{id}: no peer credentials ({e}); closing");
            return;
        }
    };
    let tag = format!("mad#{id} pid={pid}");
    let (outbox, wake_rx) = match Outbox::new() {
        Ok(o) => o,
        Err(e) => {
            log!(shared.log, "{tag}: cannot create the outbox ({e}); closing");
            return;
        }
    };
    shared.registry.add_mad_conn(id, pid, Arc::clone(&outbox));
    log!(shared.log, "{tag}: connected");
    let mut conn = MadConn {
        stream,
        wake_rx,
        id,
        pid,
        tag,
        shared,
        outbox,
        guard: RaceGuard::new(),
        stuck_reported: false,
    };
    if let Err(e) = conn
        .stream
        .set_read_timeout(Some(IO_TIMEOUT))
        .and_then(|()| conn.stream.set_write_timeout(Some(IO_TIMEOUT)))
    {
        log!(
            shared.log,
            "{}: cannot set timeouts ({e}); closing",
            conn.tag
        );
    } else {
        conn.run();
    }
    let (gids, lib) = shared.registry.remove_mad_conn(id);
    for gid in gids {
        log!(shared.log, "{}: releasing {}", conn.tag, GidFmt(&gid));
        if let Some(lib) = &lib {
            lib.push_nowait(&Frame::GidDel(gid));
        }
    }
    let _ = conn.stream.shutdown(std::net::Shutdown::Both);
    log!(
        shared.log,
        "{}: closed ({} undelivered MADs dropped)",
        conn.tag,
        conn.outbox.len()
    );
}

struct MadConn<'a> {
    stream: UnixStream,
    wake_rx: UnixStream,
    id: ConnId,
    pid: u32,
    tag: String,
    shared: &'a Arc<Shared>,
    outbox: Arc<Outbox>,
    guard: RaceGuard,
    stuck_reported: bool,
}

/// Queue lengths of the connection's socket.
struct SocketProbe<'s>(&'s UnixStream);

impl Probe for SocketProbe<'_> {
    fn outq(&self) -> io::Result<usize> {
        sock::outq_len(self.0)
    }
    fn inq(&self) -> io::Result<usize> {
        sock::inq_len(self.0)
    }
}

/// Whether to keep serving.
enum Next {
    Continue,
    Close,
}

impl MadConn<'_> {
    fn run(&mut self) {
        let poller = match self.poller() {
            Ok(p) => p,
            Err(e) => {
                log!(
                    self.shared.log,
                    "{}: cannot set up epoll ({e}); closing",
                    self.tag
                );
                return;
            }
        };
        loop {
            if self.shared.stopping.load(Ordering::SeqCst) {
                return;
            }
            // Unsettled: QEMU reading our delivery wakes us (TOKEN_CONSUMED);
            // look again now and then anyway. Settled with work queued: don't
            // sleep. Otherwise wait for a request or a push.
            let timeout = if !self.guard.is_settled() {
                self.guard.poll_interval()
            } else if !self.outbox.is_empty() {
                Some(Duration::ZERO)
            } else {
                None
            };
            let tokens = match poller.0.wait(timeout) {
                Ok(t) => t,
                Err(e) => {
                    log!(self.shared.log, "{}: epoll failed ({e}); closing", self.tag);
                    return;
                }
            };
            if tokens.contains(&TOKEN_REQUEST) {
                if let Next::Close = self.serve_request() {
                    return;
                }
            }
            if tokens.contains(&TOKEN_WAKE) {
                let mut drain = [0u8; 64];
                while matches!((&self.wake_rx).read(&mut drain), Ok(n) if n > 0) {}
            }
            if let Next::Close = self.settle_and_deliver() {
                return;
            }
        }
    }

    /// The epoll set: requests, consumption of what we wrote, outbox pushes.
    /// Returns it with the duplicate fd it watches (keep both alive).
    fn poller(&self) -> io::Result<(Poller, OwnedFd)> {
        let poller = Poller::new()?;
        let dup = self.stream.as_fd().try_clone_to_owned()?;
        poller.add_readable(self.stream.as_raw_fd(), TOKEN_REQUEST)?;
        poller.add_consumed(dup.as_raw_fd(), TOKEN_CONSUMED)?;
        poller.add_readable(self.wake_rx.as_raw_fd(), TOKEN_WAKE)?;
        Ok((poller, dup))
    }

    /// While idle: settles the previous delivery, then writes the next one if
    /// no request is waiting.
    fn settle_and_deliver(&mut self) -> Next {
        let probe = SocketProbe(&self.stream);
        match self.guard.try_settle(&probe) {
            Ok(true) => self.stuck_reported = false,
            Ok(false) => {
                if !self.stuck_reported && self.guard.pending_for() > STUCK_REPORT {
                    self.stuck_reported = true;
                    log!(
                        self.shared.log,
                        "{}: QEMU has not read a delivery for {} s (no QP1 receive posted?); \
                         {} more queued",
                        self.tag,
                        STUCK_REPORT.as_secs(),
                        self.outbox.len()
                    );
                }
                return Next::Continue;
            }
            Err(e) => {
                log!(
                    self.shared.log,
                    "{}: socket query failed ({e}); closing",
                    self.tag
                );
                return Next::Close;
            }
        }
        match probe.inq() {
            Ok(0) => {}
            Ok(_) => return Next::Continue,
            Err(e) => {
                log!(
                    self.shared.log,
                    "{}: socket query failed ({e}); closing",
                    self.tag
                );
                return Next::Close;
            }
        }
        let Some(d) = self.outbox.pop() else {
            return Next::Continue;
        };
        if d.attempt == 0 {
            log!(self.shared.log, "{} -> {} (delivery)", self.tag, d.msg);
        } else {
            log!(
                self.shared.log,
                "{} -> {} (redelivery {})",
                self.tag,
                d.msg,
                d.attempt
            );
        }
        if let Err(e) = self.stream.write_all(&d.msg.encode()) {
            log!(self.shared.log, "{}: write failed ({e}); closing", self.tag);
            return Next::Close;
        }
        self.guard.wrote_delivery(d);
        Next::Continue
    }

    /// Reads one request, acts on it and answers it.
    fn serve_request(&mut self) -> Next {
        // Classify before reading: the sooner SIOCOUTQ is read after the
        // request arrived, the rarer the ambiguous case.
        let verdict = match self.guard.on_request(&SocketProbe(&self.stream)) {
            Ok(v) => v,
            Err(e) => {
                log!(
                    self.shared.log,
                    "{}: socket query failed ({e}); closing",
                    self.tag
                );
                return Next::Close;
            }
        };
        let req = match read_message(&mut self.stream) {
            Ok(Some(m)) => m,
            Ok(None) => {
                log!(self.shared.log, "{}: QEMU closed the connection", self.tag);
                return Next::Close;
            }
            Err(e) => {
                log!(self.shared.log, "{}: bad message ({e}); closing", self.tag);
                return Next::Close;
            }
        };
        log!(self.shared.log, "{} <- {}", self.tag, req);
        let verdict = match verdict {
            Verdict::Ambiguous(Unsettled::Delivery(d)) if answers_delivery(&req, &d.msg) => {
                log!(
                    self.shared.log,
                    "{}: this MAD answers our last delivery, so QEMU's main loop read it: no race",
                    self.tag
                );
                Verdict::Clear
            }
            v => v,
        };
        let (err, mad_len) = self.act(&req);
        let resp = reply::response(&req, err);
        match verdict {
            Verdict::Clear => {
                if !self.answer(&resp) {
                    return Next::Close;
                }
            }
            Verdict::TakenAsResponse(taken) => {
                log!(
                    self.shared.log,
                    "{}: race: QEMU's synchronous read takes our unread {} as the answer to \
                     this request; RESP {} not sent",
                    self.tag,
                    describe(&taken),
                    resp
                );
                self.redeliver(taken);
            }
            Verdict::Ambiguous(read) => {
                log!(
                    self.shared.log,
                    "{}: race?: our {} was read just before this request arrived, by QEMU's \
                     main loop or by this request's synchronous read; answering anyway",
                    self.tag,
                    describe(&read)
                );
                if !self.answer(&resp) {
                    return Next::Close;
                }
                self.guard.wrote_ambiguous_resp();
                self.redeliver(read);
            }
        }
        if let Some(len) = mad_len {
            self.route(&req, len);
        }
        Next::Continue
    }

    /// Queues a MAD delivery that QEMU's synchronous reader took (or may
    /// have taken) as a response, to go out again first.
    fn redeliver(&mut self, read: Unsettled) {
        let Unsettled::Delivery(d) = read else {
            return;
        };
        match (*d).again() {
            Some(next) => {
                log!(
                    self.shared.log,
                    "{}: race: the MAD delivery goes out again",
                    self.tag
                );
                self.outbox.push_front(next);
            }
            None => log!(
                self.shared.log,
                "{}: race: MAD delivery given up after {} redeliveries: {}",
                self.tag,
                d.attempt,
                d.msg
            ),
        }
    }

    fn answer(&mut self, resp: &MuxMsg) -> bool {
        log!(self.shared.log, "{} -> {}", self.tag, resp);
        match self.stream.write_all(&resp.encode()) {
            Ok(()) => true,
            Err(e) => {
                log!(self.shared.log, "{}: write failed ({e}); closing", self.tag);
                false
            }
        }
    }

    /// Carries out a request. Returns the RESP's error code and, for a valid
    /// MAD, its length (to route it once answered).
    fn act(&mut self, req: &MuxMsg) -> (ErrCode, Option<usize>) {
        if req.msg_type() != Some(MsgType::Req) {
            log!(
                self.shared.log,
                "{}: not a request; answering EINVAL",
                self.tag
            );
            return (ErrCode::Einval, None);
        }
        match req.op_code() {
            Some(OpCode::Reg) => match req.gid_type() {
                Some(ty) => (self.register(req.sgid, ty), None),
                None => {
                    log!(
                        self.shared.log,
                        "{}: REG {}: unknown GID type {}; answering EINVAL",
                        self.tag,
                        GidFmt(&req.sgid),
                        req.gid_type
                    );
                    (ErrCode::Einval, None)
                }
            },
            Some(OpCode::Unreg) => (self.unregister(req.sgid), None),
            Some(OpCode::Mad) => match req.mad_bytes() {
                Some(mad) => (ErrCode::Ok, Some(mad.len())),
                None => {
                    log!(
                        self.shared.log,
                        "{}: umad_len {} out of range; answering EINVAL",
                        self.tag,
                        req.umad_len
                    );
                    (ErrCode::Einval, None)
                }
            },
            None => {
                log!(
                    self.shared.log,
                    "{}: unknown op code; answering EINVAL",
                    self.tag
                );
                (ErrCode::Einval, None)
            }
        }
    }

    fn register(&mut self, gid: Gid, ty: GidType) -> ErrCode {
        let g = GidFmt(&gid);
        let lib = match self.shared.registry.claim_gid(self.id, self.pid, gid, ty) {
            Ok(lib) => lib,
            Err(e) => {
                let why = match e {
                    ErrCode::Einval => "the zero GID",
                    ErrCode::Eexist => "already registered by this QEMU",
                    ErrCode::Eacces => "owned by another QEMU connection",
                    _ => "no verbs library connected for this PID",
                };
                log!(self.shared.log, "{}: REG {g}: {why}", self.tag);
                return e;
            }
        };
        let outcome = lib.push_wait(&lib.gid_add(gid, ty), self.shared.ack_timeout);
        let keep = matches!(outcome, Ok(AckStatus::Ok));
        self.shared.registry.finish_claim(self.id, gid, keep);
        match outcome {
            Ok(AckStatus::Ok) => {
                let note = if ty != GidType::RoceV1 && !lib.takes_gid_types() {
                    " (as RoCE v1: the library takes no GID types)"
                } else {
                    ""
                };
                log!(self.shared.log, "{}: REG {g}: registered{note}", self.tag);
                ErrCode::Ok
            }
            Ok(AckStatus::Refused(reason)) => {
                log!(
                    self.shared.log,
                    "{}: REG {g}: library refused: {reason}",
                    self.tag
                );
                ErrCode::Eacces
            }
            Err(e) => {
                log!(
                    self.shared.log,
                    "{}: REG {g}: {e}; withdrawing it",
                    self.tag
                );
                lib.push_nowait(&Frame::GidDel(gid));
                ErrCode::Eacces
            }
        }
    }

    fn unregister(&mut self, gid: [u8; 16]) -> ErrCode {
        let g = GidFmt(&gid);
        match self.shared.registry.unregister_gid(self.id, self.pid, gid) {
            Err(e) => {
                let why = match e {
                    ErrCode::Eacces => "owned by another QEMU connection",
                    _ => "not registered",
                };
                log!(self.shared.log, "{}: UNREG {g}: {why}", self.tag);
                e
            }
            Ok(None) => {
                log!(
                    self.shared.log,
                    "{}: UNREG {g}: released (no library to tell)",
                    self.tag
                );
                ErrCode::Ok
            }
            Ok(Some(lib)) => match lib.push_wait(&Frame::GidDel(gid), self.shared.ack_timeout) {
                Ok(AckStatus::Ok) => {
                    log!(self.shared.log, "{}: UNREG {g}: released", self.tag);
                    ErrCode::Ok
                }
                Ok(AckStatus::Refused(reason)) => {
                    log!(
                        self.shared.log,
                        "{}: UNREG {g}: released; library refused: {reason}",
                        self.tag
                    );
                    ErrCode::Eacces
                }
                Err(e) => {
                    log!(self.shared.log, "{}: UNREG {g}: released; {e}", self.tag);
                    ErrCode::Eacces
                }
            },
        }
    }

    fn route(&mut self, req: &MuxMsg, mad_len: usize) {
        let routed = self.shared.registry.route(self.id, req, mad_len);
        let note = if routed.src_registered {
            ""
        } else {
            " (source GID not registered by this QEMU)"
        };
        match (routed.decision, routed.target) {
            (Decision::Deliver { dest, detail }, Some((dest_id, outbox, msg))) => {
                // Delivered, so it has a CM header.
                let attr_id = MadHdr::parse(&req.mad[..mad_len]).map_or(0, |h| h.attr_id);
                let copies = self.shared.copies_of_next_mad(attr_id);
                if copies > 1 {
                    let queued = (1..copies).filter(|_| outbox.push(msg)).count();
                    log!(
                        self.shared.log,
                        "{}: route: burst: {queued} of {} more copies queued for mad#{dest_id}",
                        self.tag,
                        copies - 1
                    );
                }
                if outbox.push(msg) {
                    log!(
                        self.shared.log,
                        "{}: route: {detail} -> mad#{dest_id} {}{note}",
                        self.tag,
                        GidFmt(&dest)
                    );
                } else {
                    log!(
                        self.shared.log,
                        "{}: route: {detail} -> mad#{dest_id}: queue full, dropped{note}",
                        self.tag
                    );
                }
            }
            (Decision::Deliver { dest, detail }, None) => log!(
                self.shared.log,
                "{}: route: {detail}: {} has no connection, dropped{note}",
                self.tag,
                GidFmt(&dest)
            ),
            (Decision::Drop(reason), _) => {
                log!(
                    self.shared.log,
                    "{}: route: dropped: {reason}{note}",
                    self.tag
                )
            }
        }
    }
}

/// True when request `req` is a CM MAD answering our delivery `delivered`.
fn answers_delivery(req: &MuxMsg, delivered: &MuxMsg) -> bool {
    if req.op_code() != Some(OpCode::Mad) || req.msg_type() != Some(MsgType::Req) {
        return false;
    }
    match (req.mad_bytes(), delivered.mad_bytes()) {
        (Some(r), Some(d)) => cm_route::answers(r, &req.sgid, d, &delivered.sgid),
        _ => false,
    }
}

/// Names what was pending, for the log.
fn describe(u: &Unsettled) -> &'static str {
    match u {
        Unsettled::Delivery(_) => "MAD delivery",
        Unsettled::Resp => "RESP (written in an ambiguous case)",
        Unsettled::TakenByRequest => "message",
    }
}

/// Reads one 360-byte message. `Ok(None)` on end of stream before the first
/// byte; a message cut short (end of stream or [`IO_TIMEOUT`]) is an error.
fn read_message(stream: &mut UnixStream) -> io::Result<Option<MuxMsg>> {
    let mut buf = [0u8; MSG_SIZE];
    let mut got = 0;
    while got < MSG_SIZE {
        match stream.read(&mut buf[got..]) {
            Ok(0) if got == 0 => return Ok(None),
            Ok(0) => {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    format!("short message: {got} of {MSG_SIZE} bytes"),
                ))
            }
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("short message: {got} of {MSG_SIZE} bytes, then silence"),
                ))
            }
            Err(e) => return Err(e),
        }
    }
    MuxMsg::decode(&buf)
        .map(Some)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}
