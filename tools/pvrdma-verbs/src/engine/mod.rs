// SPDX-License-Identifier: GPL-2.0-only
//! The software RDMA engine: every verbs object of this process and the data
//! path between them, behind one mutex.
//!
//! Locking: one engine mutex, taken by each exported verb for the duration
//! of the call and never held while blocking (`ibv_get_cq_event` polls the
//! channel fd unlocked; `ibv_destroy_cq` waits on a condition variable that
//! releases the mutex). Data is copied between registered buffers under the
//! mutex; nothing else is done under it. The retry timer thread
//! ([`retry`]) takes the mutex only to run [`Engine::progress`], never while
//! it sleeps.
//!
//! Objects are keyed by the address of the C struct handed to the caller, so
//! a pointer coming back through the C ABI is checked by table lookup before
//! anything reads through it.

pub mod ah;
pub mod channel;
pub mod context;
pub mod cq;
pub mod datapath;
pub mod fast_reg;
pub mod gid;
pub mod grh;
pub mod limits;
pub mod memory;
pub mod pd_mr;
pub mod qp;
pub mod qp_modify;
pub mod remote;
pub mod retry;
pub mod route;
pub mod srq;
pub mod wqe;

use std::collections::{HashMap, HashSet};
use std::sync::{Condvar, LazyLock, Mutex, MutexGuard};

/// An object's key: the address of its C struct.
pub type Key = usize;

/// All verbs state of the process.
pub struct Engine {
    /// Port 1's GID table (device-wide).
    pub gids: gid::GidTable,
    /// Open device contexts.
    pub contexts: HashMap<Key, context::Context>,
    /// Protection domains.
    pub pds: HashMap<Key, pd_mr::Pd>,
    /// Memory regions.
    pub mrs: pd_mr::MrTable,
    /// Completion channels.
    pub channels: HashMap<Key, channel::Channel>,
    /// Completion queues.
    pub cqs: HashMap<Key, cq::Cq>,
    /// Queue pairs.
    pub qps: HashMap<Key, qp::Qp>,
    /// Queue pairs by QP number (device-wide).
    pub qp_by_num: HashMap<u32, Key>,
    /// Shared receive queues.
    pub srqs: HashMap<Key, srq::Srq>,
    /// Address handles.
    pub ahs: HashMap<Key, ah::Ah>,
    /// Arrays returned by `ibv_get_device_list` and not yet freed.
    pub device_lists: HashSet<usize>,
    /// Where packets to GIDs this device does not own go.
    pub router: route::Router,
    /// UD packets dropped for a wrong Q_Key (port counter).
    pub qkey_violations: u32,
    /// Packets from other processes dropped: for no QP, not from its peer,
    /// out of order, or answering nothing in flight ([`remote`]).
    pub remote_dropped: u64,
    /// QPs that must enter the error state once the current operation ends
    /// (their completion was dropped by an overflowed CQ).
    pending_errors: Vec<Key>,
    next_handle: u32,
}

impl Engine {
    fn new() -> Self {
        Engine {
            gids: gid::GidTable::default(),
            contexts: HashMap::new(),
            pds: HashMap::new(),
            mrs: pd_mr::MrTable::default(),
            channels: HashMap::new(),
            cqs: HashMap::new(),
            qps: HashMap::new(),
            qp_by_num: HashMap::new(),
            srqs: HashMap::new(),
            ahs: HashMap::new(),
            device_lists: HashSet::new(),
            router: route::Router::default(),
            qkey_violations: 0,
            remote_dropped: 0,
            pending_errors: Vec::new(),
            next_handle: 1,
        }
    }

    /// A fresh object handle (the `handle` field of the C structs).
    pub fn new_handle(&mut self) -> u32 {
        let h = self.next_handle;
        self.next_handle = self.next_handle.wrapping_add(1).max(1);
        h
    }
}

static ENGINE: LazyLock<Mutex<Engine>> = LazyLock::new(|| Mutex::new(Engine::new()));
static EVENTS_ACKED: Condvar = Condvar::new();

/// Locks the engine (a poisoned lock is still usable: every engine
/// operation leaves the tables consistent before it can fail).
pub fn lock() -> MutexGuard<'static, Engine> {
    ENGINE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Waits, with the engine unlocked, until some CQ events are acknowledged.
pub fn wait_for_acks(guard: MutexGuard<'static, Engine>) -> MutexGuard<'static, Engine> {
    EVENTS_ACKED.wait(guard).unwrap_or_else(|e| e.into_inner())
}

/// Wakes the threads in [`wait_for_acks`].
pub fn acks_changed() {
    EVENTS_ACKED.notify_all();
}
