//! Routing: where a destination GID lives.
//!
//! Every QP of this QEMU process lives in this engine, so a GID in this
//! device's table is delivered in-process. Any other GID belongs to some
//! other process of the fabric; delivery there goes through a
//! [`RemoteFabric`], which is the seam where a later change can join two
//! QEMU processes (through the mux). Until then [`Isolated`] answers
//! "unreachable": an RC requester then completes with
//! `IBV_WC_RETRY_EXC_ERR` once its retry timeout has passed, a UD datagram
//! is dropped.

use super::gid::GidTable;
use pvrdma_fabric::Gid;

/// Where a destination GID is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Route {
    /// Owned by this device: deliver in-process.
    Local,
    /// Not ours: hand to the remote fabric.
    Remote,
}

/// A message for a QP behind a GID of another process.
#[derive(Debug)]
pub struct RemoteMessage<'a> {
    /// Source GID.
    pub sgid: Gid,
    /// Source QP number.
    pub src_qpn: u32,
    /// Destination GID.
    pub dgid: Gid,
    /// Destination QP number.
    pub dst_qpn: u32,
    /// `IBV_QPT_RC` or `IBV_QPT_UD`.
    pub qp_type: u32,
    /// `IBV_WR_*` opcode.
    pub opcode: u32,
    /// Payload (empty for an RDMA read request).
    pub data: &'a [u8],
    /// Immediate data, if any (network order).
    pub imm_data: Option<u32>,
    /// UD Q_Key.
    pub qkey: u32,
}

/// What became of a remote message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RemoteOutcome {
    /// Accepted by the remote side.
    Delivered,
    /// Nobody answers for that GID/QP.
    Unreachable,
}

/// Delivery to the other processes of the fabric.
pub trait RemoteFabric: Send {
    /// Delivers `msg`; must not block on the remote QP's progress.
    fn deliver(&mut self, msg: &RemoteMessage<'_>) -> RemoteOutcome;
}

/// No other process is reachable (the current lab: one QEMU per fabric).
pub struct Isolated;

impl RemoteFabric for Isolated {
    fn deliver(&mut self, _msg: &RemoteMessage<'_>) -> RemoteOutcome {
        RemoteOutcome::Unreachable
    }
}

/// Decides between in-process and remote delivery.
pub struct Router {
    remote: Box<dyn RemoteFabric>,
}

impl Default for Router {
    fn default() -> Self {
        Router {
            remote: Box::new(Isolated),
        }
    }
}

impl Router {
    /// Where `dgid` lives.
    pub fn route(&self, gids: &GidTable, dgid: &Gid) -> Route {
        if gids.contains(dgid) {
            Route::Local
        } else {
            Route::Remote
        }
    }

    /// Hands a message to the remote fabric.
    pub fn send_remote(&mut self, msg: &RemoteMessage<'_>) -> RemoteOutcome {
        self.remote.deliver(msg)
    }

    /// Replaces the remote fabric.
    pub fn set_remote(&mut self, remote: Box<dyn RemoteFabric>) {
        self.remote = remote;
    }
}
