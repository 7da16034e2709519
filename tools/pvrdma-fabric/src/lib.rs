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

/// Receives GID table changes pushed by the mux.
pub trait GidSink: Send + Sync {
    /// Adds `gid` to the device's GID table. Returns `Err` with a reason if the table is full.
    fn gid_added(&self, gid: Gid) -> Result<(), String>;
    /// Removes `gid` from the device's GID table (no-op if absent).
    fn gid_removed(&self, gid: Gid);
}
