// SPDX-License-Identifier: GPL-2.0-only
//! The lab's fabric: how the software verbs device inside each QEMU process
//! (`pvrdma-verbs`, loaded with `LD_PRELOAD`) and the rdmacm-mux daemon
//! (`pvrdma-mux`) agree on which GIDs exist and who owns them.
//!
//! QEMU tells the mux when the guest adds or removes a GID (rdmacm-mux `REG` /
//! `UNREG`), then looks the GID up in the host verbs device's GID table. On a
//! real host the management layer adds the address to a host interface in
//! between; here the mux forwards the change over the fabric socket to the
//! verbs library of the same QEMU process (matched by PID) and answers QEMU
//! only once the library has acknowledged it.
//!
//! The API below is the contract between the two crates. The crate also holds
//! what the mux and its tests share: the rdmacm-mux message ([`mux_msg`]), the
//! MAD header ([`mad`]) and the fabric control protocol's frames ([`wire`]).

mod client;
pub mod gid;
pub mod mad;
pub mod mux_msg;
pub mod packet;
pub mod wire;

pub use client::{FabricClient, PacketSender, PacketSink};

/// Environment variable naming the mux's fabric control socket.
pub const FABRIC_SOCKET_ENV: &str = "PVRDMA_FABRIC";

/// A 128-bit RDMA global identifier, in network byte order.
pub type Gid = [u8; 16];

/// The type of a GID: how packets from and to it are encapsulated. The guest
/// binds each GID with one (pvrdma's CREATE_BIND `gid_type`); QEMU passes it
/// on in REG ([`mux_msg::MuxMsg::gid_type`]) and the mux in GID_ADD
/// ([`wire::Frame::GidAdd`]). The discriminants are the values on both wires.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum GidType {
    /// RoCE v1: an IB GRH over Ethernet (what a message without a type means).
    #[default]
    RoceV1 = 0,
    /// RoCE v2: UDP over IPv4 (IPv4-mapped GIDs) or IPv6.
    RoceV2 = 1,
}

impl GidType {
    /// The type for a raw value on either wire, if it is one.
    pub fn from_raw(raw: u32) -> Option<GidType> {
        match raw {
            0 => Some(GidType::RoceV1),
            1 => Some(GidType::RoceV2),
            _ => None,
        }
    }
}

/// Receives GID table changes pushed by the mux.
pub trait GidSink: Send + Sync {
    /// Adds `gid` to the device's GID table. Returns `Err` with a reason if the table is full.
    fn gid_added(&self, gid: Gid) -> Result<(), String>;
    /// Adds `gid` of type `ty` (what the client calls for every GID_ADD; RoCE v1
    /// when the mux sent no type). The default ignores the type and calls
    /// [`GidSink::gid_added`], for a table without types.
    fn gid_added_typed(&self, gid: Gid, ty: GidType) -> Result<(), String> {
        let _ = ty;
        self.gid_added(gid)
    }
    /// Removes `gid` from the device's GID table (no-op if absent).
    fn gid_removed(&self, gid: Gid);
}
