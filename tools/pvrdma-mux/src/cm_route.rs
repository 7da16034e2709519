// SPDX-License-Identifier: GPL-2.0-only
//! Finding the destination of a CM MAD (management class 0x07).
//!
//! QEMU sends only the source GID of a guest's QP1 send; the destination must
//! be read out of the MAD, as the original rdmacm-mux did (`get_fd` in
//! `contrib/rdmacm-mux/main.c`):
//! - REQ names the destination in its primary remote port GID (CM data byte 72;
//!   the original read only its interface ID at byte 80). The rdma_cm header in
//!   the private data (destination IP) is a second candidate.
//! - SIDR_REQ has no GID field; rdma_cm puts its `cma_hdr` at the start of the
//!   private data (CM data byte 16), whose destination address (bytes 36..52)
//!   is the destination GID for IPv6, or maps to `::ffff:a.b.c.d` for IPv4.
//!   The original read the 8 bytes at CM data byte 44 as an interface ID.
//! - Every other CM message carries the receiver's communication ID (REP, MRA,
//!   REJ, RTU, DREQ, DREP, LAP, APR: the remote comm ID at byte 4; SIDR_REP:
//!   the request ID at byte 0). We record, for every MAD we route, the sender's
//!   own local comm ID together with its peer's GID, and look the receiver up
//!   by (comm ID, sender GID).
//!
//! IDs are allocated per guest, so two guests may use the same value; keying
//! on (ID, peer GID) keeps them apart, with a fallback on the ID alone when it
//! is unambiguous.

use std::collections::{BTreeMap, HashMap};

use pvrdma_fabric::gid::{ipv4_mapped_gid, GidFmt};
use pvrdma_fabric::mad::{cm_attr, MadHdr, MAD_HDR_SIZE, MGMT_CLASS_CM};
use pvrdma_fabric::Gid;

/// Offset of the primary remote port GID in REQ's CM data.
pub const REQ_PRIMARY_REMOTE_GID: usize = 72;
/// Offset of the private data in REQ's CM data.
pub const REQ_PRIVATE_DATA: usize = 140;
/// Offset of the private data in SIDR_REQ's CM data.
pub const SIDR_REQ_PRIVATE_DATA: usize = 16;
/// Offset of `ip_version` in rdma_cm's `cma_hdr` (version in bits 7:4).
pub const CMA_HDR_IP_VERSION: usize = 1;
/// Offset of the destination address in rdma_cm's `cma_hdr`.
pub const CMA_HDR_DST_ADDR: usize = 20;

/// How many comm-ID records are kept before the least recently used go.
pub const DEFAULT_CAPACITY: usize = 65_536;

/// Where a MAD goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Deliver to the owner of `dest`.
    Deliver {
        /// The registered destination GID.
        dest: Gid,
        /// What was matched, for the log.
        detail: String,
    },
    /// Nowhere; the reason goes to the log.
    Drop(String),
}

/// The comm-ID records.
pub struct CmTable {
    /// (comm ID of the owner, GID of the owner's peer) -> record.
    entries: HashMap<(u32, Gid), Entry>,
    /// Use stamp -> key, oldest first.
    lru: BTreeMap<u64, (u32, Gid)>,
    clock: u64,
    capacity: usize,
}

#[derive(Clone, Copy)]
struct Entry {
    /// The GID of the endpoint that allocated the comm ID.
    owner: Gid,
    stamp: u64,
}

impl Default for CmTable {
    fn default() -> Self {
        CmTable::with_capacity(DEFAULT_CAPACITY)
    }
}

impl CmTable {
    /// An empty table holding at most `capacity` records.
    pub fn with_capacity(capacity: usize) -> CmTable {
        CmTable {
            entries: HashMap::new(),
            lru: BTreeMap::new(),
            clock: 0,
            capacity: capacity.max(1),
        }
    }

    /// Number of records.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when there are no records.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Decides where a MAD sent by `src` goes, recording the comm IDs it
    /// allocates. `resolve` maps a GID to the registered GID it designates
    /// (exact match, or a unique interface-ID match), `None` if unregistered.
    pub fn route(
        &mut self,
        src: Gid,
        mad: &[u8],
        resolve: &dyn Fn(&Gid) -> Option<Gid>,
    ) -> Decision {
        let Some(hdr) = MadHdr::parse(mad) else {
            return Decision::Drop(format!("MAD of {} bytes has no header", mad.len()));
        };
        if hdr.mgmt_class != MGMT_CLASS_CM {
            return Decision::Drop(format!(
                "management class 0x{:02x} carries no destination; only CM (0x07) is routed",
                hdr.mgmt_class
            ));
        }
        let data = &mad[MAD_HDR_SIZE..];
        let name = cm_attr::name(hdr.attr_id);
        match hdr.attr_id {
            cm_attr::REQ => {
                let Some(local) = be32_at(data, 0) else {
                    return short(name, mad.len());
                };
                let mut candidates = Vec::new();
                if let Some(g) = gid_at(data, REQ_PRIMARY_REMOTE_GID) {
                    candidates.push(("primary remote GID", g));
                }
                if let Some(g) = cma_dst_gid(data, REQ_PRIVATE_DATA) {
                    candidates.push(("rdma_cm destination address", g));
                }
                if candidates.is_empty() {
                    return short(name, mad.len());
                }
                self.route_by_gid(src, name, local, &candidates, resolve)
            }
            cm_attr::SIDR_REQ => {
                let Some(request_id) = be32_at(data, 0) else {
                    return short(name, mad.len());
                };
                let Some(g) = cma_dst_gid(data, SIDR_REQ_PRIVATE_DATA) else {
                    return short(name, mad.len());
                };
                self.route_by_gid(
                    src,
                    name,
                    request_id,
                    &[("rdma_cm destination address", g)],
                    resolve,
                )
            }
            cm_attr::REP
            | cm_attr::MRA
            | cm_attr::REJ
            | cm_attr::RTU
            | cm_attr::DREQ
            | cm_attr::DREP
            | cm_attr::LAP
            | cm_attr::APR => {
                let (Some(local), Some(remote)) = (be32_at(data, 0), be32_at(data, 4)) else {
                    return short(name, mad.len());
                };
                self.route_by_id(src, name, local, remote, resolve)
            }
            cm_attr::SIDR_REP => {
                let Some(request_id) = be32_at(data, 0) else {
                    return short(name, mad.len());
                };
                self.route_by_id(src, name, 0, request_id, resolve)
            }
            other => Decision::Drop(format!("CM attribute 0x{other:04x} ({name}) is not routed")),
        }
    }

    /// Forgets every record that involves `gid` (it was unregistered).
    pub fn forget_gid(&mut self, gid: &Gid) {
        let doomed: Vec<(u32, Gid)> = self
            .entries
            .iter()
            .filter(|(k, e)| k.1 == *gid || e.owner == *gid)
            .map(|(k, _)| *k)
            .collect();
        for key in doomed {
            if let Some(e) = self.entries.remove(&key) {
                self.lru.remove(&e.stamp);
            }
        }
    }

    /// Routes a message that names its destination by GID (REQ, SIDR_REQ) and
    /// records `local` as allocated by `src`, peer = destination.
    fn route_by_gid(
        &mut self,
        src: Gid,
        name: &str,
        local: u32,
        candidates: &[(&str, Gid)],
        resolve: &dyn Fn(&Gid) -> Option<Gid>,
    ) -> Decision {
        for (what, g) in candidates {
            if let Some(dest) = resolve(g) {
                if local != 0 {
                    self.record(local, dest, src);
                }
                return Decision::Deliver {
                    dest,
                    detail: format!("{name} id=0x{local:08x} by {what} {}", GidFmt(g)),
                };
            }
        }
        let tried: Vec<String> = candidates
            .iter()
            .map(|(what, g)| format!("{what} {}", GidFmt(g)))
            .collect();
        Decision::Drop(format!(
            "{name}: no registered GID matches {}",
            tried.join(" or ")
        ))
    }

    /// Routes a message that names its receiver by the receiver's comm ID
    /// `remote`, and records `local` (if any) as allocated by `src`.
    fn route_by_id(
        &mut self,
        src: Gid,
        name: &str,
        local: u32,
        remote: u32,
        resolve: &dyn Fn(&Gid) -> Option<Gid>,
    ) -> Decision {
        if remote == 0 {
            return Decision::Drop(format!("{name} local=0x{local:08x} has remote comm ID 0"));
        }
        let Some((owner, how)) = self.lookup(remote, src) else {
            return Decision::Drop(format!(
                "{name} local=0x{local:08x} remote=0x{remote:08x}: unknown comm ID"
            ));
        };
        let Some(dest) = resolve(&owner) else {
            return Decision::Drop(format!(
                "{name} remote=0x{remote:08x}: owner {} is no longer registered",
                GidFmt(&owner)
            ));
        };
        if local != 0 {
            self.record(local, dest, src);
        }
        Decision::Deliver {
            dest,
            detail: format!("{name} local=0x{local:08x} remote=0x{remote:08x} by {how}"),
        }
    }

    /// The owner of comm ID `id` whose peer is `peer`; else the only owner of
    /// `id`, if exactly one.
    fn lookup(&mut self, id: u32, peer: Gid) -> Option<(Gid, &'static str)> {
        if let Some(owner) = self.touch(&(id, peer)) {
            return Some((owner, "comm ID"));
        }
        let mut matches = self.entries.iter().filter(|(k, _)| k.0 == id);
        let (key, _) = matches.next()?;
        if matches.next().is_some() {
            return None;
        }
        let key = *key;
        self.touch(&key).map(|owner| (owner, "comm ID alone"))
    }

    /// Marks a record as used and returns its owner.
    fn touch(&mut self, key: &(u32, Gid)) -> Option<Gid> {
        self.clock += 1;
        let stamp = self.clock;
        let e = self.entries.get_mut(key)?;
        self.lru.remove(&e.stamp);
        e.stamp = stamp;
        self.lru.insert(stamp, *key);
        Some(e.owner)
    }

    /// Records that `owner` allocated comm ID `id` for talking to `peer`.
    fn record(&mut self, id: u32, peer: Gid, owner: Gid) {
        self.clock += 1;
        let stamp = self.clock;
        let key = (id, peer);
        if let Some(old) = self.entries.insert(key, Entry { owner, stamp }) {
            self.lru.remove(&old.stamp);
        }
        self.lru.insert(stamp, key);
        while self.entries.len() > self.capacity {
            let Some((_, oldest)) = self.lru.pop_first() else {
                break;
            };
            self.entries.remove(&oldest);
        }
    }
}

/// True when `reply` (a MAD QEMU just sent) is the CM's answer to `delivered`
/// (a MAD we delivered to the same GID): proof that the guest received the
/// delivery, i.e. that QEMU's main loop read it and not a synchronous read.
///
/// Only messages the CM sends solely in answer to the delivered one count,
/// matched by comm IDs: REQ -> REP/MRA, REP -> RTU/MRA, DREQ -> DREP,
/// LAP -> APR/MRA, SIDR_REQ -> SIDR_REP. (REJ does not: the CM also sends it
/// on its own timeouts.)
pub fn answers(reply: &[u8], reply_src: &Gid, delivered: &[u8], delivered_to: &Gid) -> bool {
    if reply_src != delivered_to {
        return false;
    }
    let (Some(r), Some(d)) = (MadHdr::parse(reply), MadHdr::parse(delivered)) else {
        return false;
    };
    if r.mgmt_class != MGMT_CLASS_CM || d.mgmt_class != MGMT_CLASS_CM {
        return false;
    }
    let id = |mad: &[u8], at| be32_at(&mad[MAD_HDR_SIZE..], at);
    let (r_local, r_remote) = (id(reply, 0), id(reply, 4));
    let (d_local, d_remote) = (id(delivered, 0), id(delivered, 4));
    use cm_attr::*;
    match (d.attr_id, r.attr_id) {
        (REQ, REP | MRA) | (LAP, APR | MRA) => d_local.is_some() && r_remote == d_local,
        (REP, RTU | MRA) | (DREQ, DREP) => {
            d_local.is_some() && r_remote == d_local && r_local == d_remote
        }
        (SIDR_REQ, SIDR_REP) => d_local.is_some() && r_local == d_local,
        _ => false,
    }
}

fn short(name: &str, len: usize) -> Decision {
    Decision::Drop(format!("{name} MAD of {len} bytes is too short to route"))
}

fn be32_at(data: &[u8], at: usize) -> Option<u32> {
    let b = data.get(at..at + 4)?;
    Some(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
}

fn gid_at(data: &[u8], at: usize) -> Option<Gid> {
    data.get(at..at + 16)?.try_into().ok()
}

/// The destination GID in rdma_cm's `cma_hdr` at `pd` (private data offset):
/// IPv6 addresses are GIDs, IPv4 maps to `::ffff:a.b.c.d`; any other version
/// is taken as a GID too (a unique interface-ID match may still find it).
fn cma_dst_gid(data: &[u8], pd: usize) -> Option<Gid> {
    let ip_version = data.get(pd + CMA_HDR_IP_VERSION)? >> 4;
    let addr = gid_at(data, pd + CMA_HDR_DST_ADDR)?;
    if ip_version == 4 {
        Some(ipv4_mapped_gid([addr[12], addr[13], addr[14], addr[15]]))
    } else {
        Some(addr)
    }
}

#[cfg(test)]
#[path = "cm_route_tests.rs"]
mod tests;
