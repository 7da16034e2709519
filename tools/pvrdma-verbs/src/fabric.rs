// SPDX-License-Identifier: GPL-2.0-only
//! The connection to the mux's fabric socket, which pushes the guest's GIDs
//! into this device's GID table and carries the data path to the QPs of
//! other QEMU processes ([`crate::engine::remote`]).

use crate::engine;
use crate::engine::route::RemoteFabric;
use pvrdma_fabric::packet::Packet;
use pvrdma_fabric::{
    FabricClient, Gid, GidSink, GidType, PacketSender, PacketSink, FABRIC_SOCKET_ENV,
};
use std::path::Path;
use std::sync::{Arc, Mutex};

/// Applies the mux's GID changes to the device's GID table, with the type
/// the guest bound each GID with (RoCE v1 from a mux that sends none).
pub struct DeviceGids;

impl GidSink for DeviceGids {
    fn gid_added(&self, gid: Gid) -> Result<(), String> {
        self.gid_added_typed(gid, GidType::RoceV1)
    }

    fn gid_added_typed(&self, gid: Gid, ty: GidType) -> Result<(), String> {
        let r = engine::lock().gids.add_typed(gid, ty);
        crate::log::vlog!("gid_added", "{} {ty:?} -> {r:?}", crate::fmt_gid(&gid));
        r.map(|_| ())
    }

    fn gid_removed(&self, gid: Gid) {
        engine::lock().gids.remove(&gid);
        crate::log::vlog!("gid_removed", "{}", crate::fmt_gid(&gid));
    }
}

/// Hands the packets the mux relays to the engine.
pub struct DevicePackets;

impl PacketSink for DevicePackets {
    fn packet_received(&self, packet: Packet) {
        engine::lock().packet_received(packet);
    }
}

/// The mux's data path, as the engine's remote fabric.
pub struct MuxFabric(pub PacketSender);

impl RemoteFabric for MuxFabric {
    fn send(&mut self, packets: Vec<Packet>) -> bool {
        self.0.send_all(packets)
    }
}

/// Connects to the fabric socket named by `PVRDMA_FABRIC`, once per
/// process; without the variable the GID table holds only index 0.
/// Called from `ibv_open_device` with the engine unlocked (the client may
/// push GIDs while connecting).
pub fn connect_if_configured() -> Result<(), i32> {
    static CONNECTED: Mutex<bool> = Mutex::new(false);
    let Some(path) = std::env::var_os(FABRIC_SOCKET_ENV) else {
        return Ok(());
    };
    let mut connected = CONNECTED.lock().unwrap_or_else(|e| e.into_inner());
    if *connected {
        return Ok(());
    }
    let connected_client = FabricClient::connect_with_packets(
        Path::new(&path),
        Arc::new(DeviceGids),
        Arc::new(DevicePackets),
    );
    match connected_client {
        Ok(client) => {
            if let Some(sender) = client.packet_sender() {
                engine::lock()
                    .router
                    .set_remote(Box::new(MuxFabric(sender)));
            }
            // The connection lives as long as the process (QEMU keeps its
            // device open until exit); it is never torn down.
            std::mem::forget(client);
            *connected = true;
            Ok(())
        }
        Err(e) => {
            eprintln!(
                "pvrdma-verbs: cannot connect to fabric socket {}: {e}",
                Path::new(&path).display()
            );
            Err(e.raw_os_error().unwrap_or(libc::ECONNREFUSED))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gid_types_from_the_mux_reach_the_table() {
        // Documentation prefix GIDs no other test of this binary adds.
        let (v2, v1) = (
            [0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x7e, 1],
            [0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x7e, 2],
        );
        let sink = DeviceGids;
        sink.gid_added_typed(v2, GidType::RoceV2).unwrap();
        sink.gid_added(v1).unwrap();
        assert_eq!(engine::lock().gids.gid_type(&v2), Some(GidType::RoceV2));
        assert_eq!(engine::lock().gids.gid_type(&v1), Some(GidType::RoceV1));
        // Bound again as RoCE v1 (the same entry, the new type).
        sink.gid_added_typed(v2, GidType::RoceV1).unwrap();
        assert_eq!(engine::lock().gids.gid_type(&v2), Some(GidType::RoceV1));
        sink.gid_removed(v2);
        sink.gid_removed(v1);
        assert_eq!(engine::lock().gids.gid_type(&v2), None);
    }
}
