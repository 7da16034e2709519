// SPDX-License-Identifier: GPL-2.0-only
//! The mux's shared state: QEMU connections, verbs libraries (by PID), GID
//! ownership and the CM comm-ID records.
//!
//! Lock order: never take a [`Library`]'s writer lock while holding the
//! registry lock (pushes to a library happen after the registry call returns).

use std::collections::{HashMap, VecDeque};
use std::io::{self, Write};
use std::os::unix::net::UnixStream;
use std::sync::{Arc, Mutex, MutexGuard};

use pvrdma_fabric::gid::{interface_id, GidFmt, ZERO_GID};
use pvrdma_fabric::mux_msg::{ErrCode, MuxMsg};
use pvrdma_fabric::{Gid, GidType};

use crate::cm_route::{CmTable, Decision};
use crate::library::Library;
use crate::race::Delivery;
use crate::reply;

/// Identifies one accepted connection (either socket) in logs and tables.
pub type ConnId = u64;

/// Deliveries waiting to be written to one QEMU connection.
pub const OUTBOX_CAPACITY: usize = 256;

/// A QEMU connection's queue of MAD deliveries, with a wake-up socket its
/// thread polls.
pub struct Outbox {
    queue: Mutex<VecDeque<Delivery>>,
    wake: UnixStream,
}

impl Outbox {
    /// A new outbox and the socket end its owner polls to learn of pushes.
    pub fn new() -> io::Result<(Arc<Outbox>, UnixStream)> {
        let (wake, wake_rx) = UnixStream::pair()?;
        wake.set_nonblocking(true)?;
        wake_rx.set_nonblocking(true)?;
        let outbox = Outbox {
            queue: Mutex::new(VecDeque::new()),
            wake,
        };
        Ok((Arc::new(outbox), wake_rx))
    }

    /// Queues a delivery; false (dropped) if the queue is full.
    pub fn push(&self, msg: MuxMsg) -> bool {
        {
            let mut q = lock(&self.queue);
            if q.len() >= OUTBOX_CAPACITY {
                return false;
            }
            q.push_back(Delivery::new(msg));
        }
        // A full wake socket already has a wake-up pending: ignore WouldBlock.
        let _ = (&self.wake).write(&[1]);
        true
    }

    /// Puts a delivery back at the head (QEMU's synchronous reader may have
    /// taken it; it goes out again first).
    pub fn push_front(&self, d: Delivery) {
        lock(&self.queue).push_front(d);
    }

    /// Takes the next delivery.
    pub fn pop(&self) -> Option<Delivery> {
        lock(&self.queue).pop_front()
    }

    /// Number of queued deliveries.
    pub fn len(&self) -> usize {
        lock(&self.queue).len()
    }

    /// True when nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

struct MadConn {
    pid: u32,
    outbox: Arc<Outbox>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum GidState {
    /// REG in progress: waiting for the library's ACK.
    Claimed,
    /// Registered.
    Active,
}

#[derive(Clone, Copy)]
struct GidEntry {
    conn: ConnId,
    state: GidState,
    /// The type its REG gave (pushed again when the library reconnects).
    ty: GidType,
}

#[derive(Default)]
struct Inner {
    mad_conns: HashMap<ConnId, MadConn>,
    libraries: HashMap<u32, Arc<Library>>,
    gids: HashMap<Gid, GidEntry>,
    cm: CmTable,
}

/// A library for that PID is already connected.
#[derive(Debug)]
pub struct AlreadyConnected;

/// Where a MAD went.
pub struct Routed {
    /// The routing decision (with the text for the log).
    pub decision: Decision,
    /// The destination connection, its outbox and the delivery to queue.
    pub target: Option<(ConnId, Arc<Outbox>, MuxMsg)>,
    /// Whether the source GID is registered by the sending connection.
    pub src_registered: bool,
}

/// The shared state.
#[derive(Default)]
pub struct Registry {
    inner: Mutex<Inner>,
}

impl Registry {
    fn inner(&self) -> MutexGuard<'_, Inner> {
        lock(&self.inner)
    }

    /// Adds a QEMU connection.
    pub fn add_mad_conn(&self, id: ConnId, pid: u32, outbox: Arc<Outbox>) {
        self.inner().mad_conns.insert(id, MadConn { pid, outbox });
    }

    /// Removes a QEMU connection and every GID it owned. Returns those GIDs
    /// and the library they should be removed from.
    pub fn remove_mad_conn(&self, id: ConnId) -> (Vec<Gid>, Option<Arc<Library>>) {
        let mut inner = self.inner();
        let Some(conn) = inner.mad_conns.remove(&id) else {
            return (Vec::new(), None);
        };
        let gids: Vec<Gid> = inner
            .gids
            .iter()
            .filter(|(_, e)| e.conn == id)
            .map(|(g, _)| *g)
            .collect();
        for g in &gids {
            inner.gids.remove(g);
            inner.cm.forget_gid(g);
        }
        let lib = inner.libraries.get(&conn.pid).cloned();
        (gids, lib)
    }

    /// Adds a library unless one is already connected for its PID. Returns
    /// the GIDs that QEMU connections of that PID already own, with their
    /// types (to replay).
    pub fn add_library(&self, lib: Arc<Library>) -> Result<Vec<(Gid, GidType)>, AlreadyConnected> {
        let mut inner = self.inner();
        if inner.libraries.contains_key(&lib.pid) {
            return Err(AlreadyConnected);
        }
        let pid = lib.pid;
        inner.libraries.insert(pid, lib);
        let Inner {
            mad_conns, gids, ..
        } = &*inner;
        Ok(gids
            .iter()
            .filter(|(_, e)| {
                e.state == GidState::Active && mad_conns.get(&e.conn).is_some_and(|c| c.pid == pid)
            })
            .map(|(g, e)| (*g, e.ty))
            .collect())
    }

    /// Removes `lib` (if it is still the one registered for its PID).
    pub fn remove_library(&self, lib: &Arc<Library>) {
        let mut inner = self.inner();
        if inner
            .libraries
            .get(&lib.pid)
            .is_some_and(|l| Arc::ptr_eq(l, lib))
        {
            inner.libraries.remove(&lib.pid);
        }
    }

    /// Starts a REG: claims `gid`, of type `ty`, for connection `conn` (of
    /// process `pid`) and returns the library to push it to.
    pub fn claim_gid(
        &self,
        conn: ConnId,
        pid: u32,
        gid: Gid,
        ty: GidType,
    ) -> Result<Arc<Library>, ErrCode> {
        let mut inner = self.inner();
        if gid == ZERO_GID {
            return Err(ErrCode::Einval);
        }
        if let Some(e) = inner.gids.get(&gid) {
            return Err(if e.conn == conn {
                ErrCode::Eexist
            } else {
                ErrCode::Eacces
            });
        }
        let lib = inner
            .libraries
            .get(&pid)
            .cloned()
            .ok_or(ErrCode::Enotfound)?;
        inner.gids.insert(
            gid,
            GidEntry {
                conn,
                state: GidState::Claimed,
                ty,
            },
        );
        Ok(lib)
    }

    /// Ends a REG: activates the claim, or drops it.
    pub fn finish_claim(&self, conn: ConnId, gid: Gid, keep: bool) {
        let mut inner = self.inner();
        match inner.gids.get_mut(&gid) {
            Some(e) if e.conn == conn && keep => e.state = GidState::Active,
            Some(e) if e.conn == conn => {
                inner.gids.remove(&gid);
            }
            _ => {}
        }
    }

    /// An UNREG: releases `gid` if `conn` owns it. Returns the library to
    /// remove it from (`None` if the process has none).
    pub fn unregister_gid(
        &self,
        conn: ConnId,
        pid: u32,
        gid: Gid,
    ) -> Result<Option<Arc<Library>>, ErrCode> {
        let mut inner = self.inner();
        match inner.gids.get(&gid) {
            None => Err(ErrCode::Enotfound),
            Some(e) if e.conn != conn => Err(ErrCode::Eacces),
            Some(_) => {
                inner.gids.remove(&gid);
                inner.cm.forget_gid(&gid);
                Ok(inner.libraries.get(&pid).cloned())
            }
        }
    }

    /// Routes the MAD of `req` (validated length `mad_len`) sent by `conn`.
    pub fn route(&self, conn: ConnId, req: &MuxMsg, mad_len: usize) -> Routed {
        let mut inner = self.inner();
        let Inner {
            mad_conns,
            gids,
            cm,
            ..
        } = &mut *inner;
        let src = req.sgid;
        let src_registered = gids
            .get(&src)
            .is_some_and(|e| e.conn == conn && e.state == GidState::Active);
        let resolve = |g: &Gid| resolve_gid(gids, g);
        let decision = cm.route(src, &req.mad[..mad_len], &resolve);
        let target = match &decision {
            Decision::Deliver { dest, .. } => gids
                .get(dest)
                .and_then(|e| Some((e.conn, mad_conns.get(&e.conn)?)))
                .map(|(id, c)| {
                    (
                        id,
                        Arc::clone(&c.outbox),
                        reply::delivery(req, mad_len, src, *dest),
                    )
                }),
            Decision::Drop(_) => None,
        };
        Routed {
            decision,
            target,
            src_registered,
        }
    }

    /// Where a data packet from the library of process `pid` goes: the
    /// library owning `dgid`, if `sgid` is an active GID of `pid`'s QEMU and
    /// `dgid` one of another connection's. Otherwise why it is dropped.
    pub fn packet_route(&self, pid: u32, sgid: &Gid, dgid: &Gid) -> Result<Arc<Library>, String> {
        let inner = self.inner();
        let owner = |g: &Gid| {
            inner
                .gids
                .get(g)
                .filter(|e| e.state == GidState::Active)
                .and_then(|e| inner.mad_conns.get(&e.conn))
                .map(|c| c.pid)
        };
        if owner(sgid) != Some(pid) {
            return Err(format!("source GID {} is not this process's", GidFmt(sgid)));
        }
        let dest = owner(dgid).ok_or_else(|| format!("nobody owns {}", GidFmt(dgid)))?;
        inner
            .libraries
            .get(&dest)
            .cloned()
            .ok_or_else(|| format!("the owner of {} (pid {dest}) has no library", GidFmt(dgid)))
    }

    /// Number of registered (active) GIDs; for tests and logs.
    pub fn gid_count(&self) -> usize {
        self.inner()
            .gids
            .values()
            .filter(|e| e.state == GidState::Active)
            .count()
    }
}

/// The registered GID that `g` designates: itself if registered, else the
/// only registered GID with the same interface ID (the original mux matched
/// interface IDs only).
fn resolve_gid(gids: &HashMap<Gid, GidEntry>, g: &Gid) -> Option<Gid> {
    let active = |e: &GidEntry| e.state == GidState::Active;
    if gids.get(g).is_some_and(active) {
        return Some(*g);
    }
    let ifid = interface_id(g);
    let mut matches = gids
        .iter()
        .filter(|(k, e)| active(e) && interface_id(k) == ifid)
        .map(|(k, _)| *k);
    let first = matches.next()?;
    matches.next().is_none().then_some(first)
}

/// Locks a mutex, ignoring poisoning (a panicking thread must not wedge the
/// whole mux; the data it guards stays consistent per operation).
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
