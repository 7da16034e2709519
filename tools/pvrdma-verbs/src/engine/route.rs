// SPDX-License-Identifier: GPL-2.0-only
//! Routing: where a destination GID lives.
//!
//! Every QP of this QEMU process lives in this engine, so a GID in this
//! device's table is delivered in-process. Any other GID belongs to some
//! other process of the fabric; packets for it go through a
//! [`RemoteFabric`]: the mux's data path once the fabric client has it
//! (`crate::fabric`), else [`Isolated`], which cannot send: an RC requester
//! then completes with `IBV_WC_RETRY_EXC_ERR` once its retry timeout has
//! passed, a UD datagram is dropped. What happens to packets on either side
//! is [`super::remote`]'s.

use super::gid::GidTable;
use pvrdma_fabric::packet::Packet;
use pvrdma_fabric::Gid;

/// Where a destination GID is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Route {
    /// Owned by this device: deliver in-process.
    Local,
    /// Not ours: hand to the remote fabric.
    Remote,
}

/// Delivery to the other processes of the fabric.
pub trait RemoteFabric: Send {
    /// Sends the packets of one message, in order; false if they cannot
    /// leave this process (no fabric). Must not block on the remote side.
    fn send(&mut self, packets: Vec<Packet>) -> bool;
}

/// No other process is reachable (no mux, or a mux without the data path).
pub struct Isolated;

impl RemoteFabric for Isolated {
    fn send(&mut self, _packets: Vec<Packet>) -> bool {
        false
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

    /// Hands the packets of one message to the remote fabric; false if
    /// they cannot leave this process.
    pub fn send_remote(&mut self, packets: Vec<Packet>) -> bool {
        self.remote.send(packets)
    }

    /// Replaces the remote fabric.
    pub fn set_remote(&mut self, remote: Box<dyn RemoteFabric>) {
        self.remote = remote;
    }
}
