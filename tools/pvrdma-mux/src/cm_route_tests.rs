// SPDX-License-Identifier: GPL-2.0-only
//! Unit tests of CM routing decisions (no sockets).

use std::collections::HashSet;

use pvrdma_fabric::gid::ipv4_mapped_gid;
use pvrdma_fabric::mad::{cm_attr, cm_mad, MadHdr, MAD_HDR_SIZE};
use pvrdma_fabric::Gid;

use super::*;

const G1: Gid = [
    0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x02, 0, 0, 0xff, 0xfe, 0, 0, 1,
];
const G2: Gid = [
    0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x02, 0, 0, 0xff, 0xfe, 0, 0, 2,
];
const G3: Gid = [
    0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x02, 0, 0, 0xff, 0xfe, 0, 0, 3,
];

struct Fabric {
    table: CmTable,
    registered: HashSet<Gid>,
}

impl Fabric {
    fn new(gids: &[Gid]) -> Fabric {
        Fabric {
            table: CmTable::default(),
            registered: gids.iter().copied().collect(),
        }
    }

    fn route(&mut self, src: Gid, mad: &[u8]) -> Decision {
        let registered = self.registered.clone();
        let resolve = move |g: &Gid| {
            if registered.contains(g) {
                return Some(*g);
            }
            let ifid = pvrdma_fabric::gid::interface_id(g);
            let m: Vec<Gid> = registered
                .iter()
                .filter(|r| pvrdma_fabric::gid::interface_id(r) == ifid)
                .copied()
                .collect();
            (m.len() == 1).then(|| m[0])
        };
        self.table.route(src, mad, &resolve)
    }

    fn dest(&mut self, src: Gid, mad: &[u8]) -> Gid {
        match self.route(src, mad) {
            Decision::Deliver { dest, .. } => dest,
            Decision::Drop(why) => panic!("dropped: {why}"),
        }
    }

    fn dropped(&mut self, src: Gid, mad: &[u8]) -> String {
        match self.route(src, mad) {
            Decision::Drop(why) => why,
            d => panic!("expected a drop, got {d:?}"),
        }
    }
}

fn req(local: u32, dgid: &Gid) -> [u8; 256] {
    cm_mad(
        cm_attr::REQ,
        1,
        &[(0, &local.to_be_bytes()), (REQ_PRIMARY_REMOTE_GID, dgid)],
    )
}

fn reply(attr: u16, local: u32, remote: u32) -> [u8; 256] {
    cm_mad(
        attr,
        2,
        &[(0, &local.to_be_bytes()), (4, &remote.to_be_bytes())],
    )
}

/// SIDR_REQ as rdma_cm sends it: cma_hdr at the private data, IPv4 or IPv6.
fn sidr_req(request_id: u32, ip_version: u8, dst: &[u8; 16]) -> [u8; 256] {
    let pd = SIDR_REQ_PRIVATE_DATA;
    cm_mad(
        cm_attr::SIDR_REQ,
        3,
        &[
            (0, &request_id.to_be_bytes()),
            (pd + CMA_HDR_IP_VERSION, &[ip_version << 4]),
            (pd + CMA_HDR_DST_ADDR, dst),
        ],
    )
}

#[test]
fn offsets_match_the_original_mux() {
    // main.c reads the REQ's destination interface ID at CM data byte 80 and
    // the SIDR_REQ's at byte 44: the last 8 bytes of the GIDs we read.
    assert_eq!(REQ_PRIMARY_REMOTE_GID + 8, 80);
    assert_eq!(SIDR_REQ_PRIVATE_DATA + CMA_HDR_DST_ADDR + 8, 44);
}

#[test]
fn rc_connect_and_disconnect() {
    let mut f = Fabric::new(&[G1, G2]);
    assert_eq!(f.dest(G1, &req(0x100, &G2)), G2);
    assert_eq!(f.dest(G2, &reply(cm_attr::REP, 0x200, 0x100)), G1);
    assert_eq!(f.dest(G1, &reply(cm_attr::RTU, 0x100, 0x200)), G2);
    // Either side may disconnect.
    assert_eq!(f.dest(G2, &reply(cm_attr::DREQ, 0x200, 0x100)), G1);
    assert_eq!(f.dest(G1, &reply(cm_attr::DREP, 0x100, 0x200)), G2);
    assert_eq!(f.dest(G1, &reply(cm_attr::DREQ, 0x100, 0x200)), G2);
    assert_eq!(f.dest(G2, &reply(cm_attr::DREP, 0x200, 0x100)), G1);
}

#[test]
fn reject_mra_lap_apr_follow_comm_ids() {
    let mut f = Fabric::new(&[G1, G2]);
    f.dest(G1, &req(0x11, &G2));
    assert_eq!(f.dest(G2, &reply(cm_attr::MRA, 0x22, 0x11)), G1);
    assert_eq!(f.dest(G2, &reply(cm_attr::REJ, 0, 0x11)), G1);
    f.dest(G2, &reply(cm_attr::REP, 0x22, 0x11));
    assert_eq!(f.dest(G1, &reply(cm_attr::REJ, 0x11, 0x22)), G2);
    assert_eq!(f.dest(G1, &reply(cm_attr::LAP, 0x11, 0x22)), G2);
    assert_eq!(f.dest(G2, &reply(cm_attr::APR, 0x22, 0x11)), G1);
}

#[test]
fn loopback_on_one_gid() {
    let mut f = Fabric::new(&[G1]);
    assert_eq!(f.dest(G1, &req(0x1, &G1)), G1);
    assert_eq!(f.dest(G1, &reply(cm_attr::REP, 0x2, 0x1)), G1);
    assert_eq!(f.dest(G1, &reply(cm_attr::RTU, 0x1, 0x2)), G1);
}

#[test]
fn same_comm_id_in_two_guests_stays_apart() {
    // G1 and G3 both allocate comm ID 7: G1 to talk to G2, G3 to talk to G1.
    let mut f = Fabric::new(&[G1, G2, G3]);
    f.dest(G1, &req(7, &G2));
    f.dest(G3, &req(7, &G1));
    assert_eq!(f.dest(G2, &reply(cm_attr::REP, 0x50, 7)), G1);
    assert_eq!(f.dest(G1, &reply(cm_attr::REP, 0x51, 7)), G3);
    // From a sender that talked to neither, the ID alone is ambiguous.
    let why = f.dropped(G3, &reply(cm_attr::DREQ, 1, 7));
    assert!(why.contains("unknown comm ID"), "{why}");
}

#[test]
fn comm_id_alone_when_unambiguous() {
    let mut f = Fabric::new(&[G1, G2, G3]);
    f.dest(G1, &req(9, &G2));
    // G3 answers for G2 (e.g. an alternate GID of the same guest).
    assert_eq!(f.dest(G3, &reply(cm_attr::REJ, 0, 9)), G1);
}

#[test]
fn sidr_ipv4_and_ipv6() {
    let v4 = ipv4_mapped_gid([192, 0, 2, 2]);
    let mut f = Fabric::new(&[G1, v4]);
    let mut dst = [0u8; 16];
    dst[12..].copy_from_slice(&[192, 0, 2, 2]);
    assert_eq!(f.dest(G1, &sidr_req(0x77, 4, &dst)), v4);
    assert_eq!(
        f.dest(
            v4,
            &cm_mad(cm_attr::SIDR_REP, 4, &[(0, &0x77u32.to_be_bytes())])
        ),
        G1
    );
    let mut f = Fabric::new(&[G1, G2]);
    assert_eq!(f.dest(G1, &sidr_req(0x78, 6, &G2)), G2);
    assert_eq!(
        f.dest(
            G2,
            &cm_mad(cm_attr::SIDR_REP, 5, &[(0, &0x78u32.to_be_bytes())])
        ),
        G1
    );
}

#[test]
fn req_by_interface_id_and_by_cma_header() {
    // The guest registered the GID with a different prefix than the REQ names.
    let mut other_prefix = G2;
    other_prefix[0] = 0x20;
    let mut f = Fabric::new(&[G1, other_prefix]);
    assert_eq!(f.dest(G1, &req(0x5, &G2)), other_prefix);
    // Primary GID unknown, but the rdma_cm header names a registered IPv4 GID.
    let v4 = ipv4_mapped_gid([192, 0, 2, 9]);
    let mut f = Fabric::new(&[G1, v4]);
    let pd = REQ_PRIVATE_DATA;
    let mut dst = [0u8; 16];
    dst[12..].copy_from_slice(&[192, 0, 2, 9]);
    let mad = cm_mad(
        cm_attr::REQ,
        1,
        &[
            (0, &6u32.to_be_bytes()),
            (REQ_PRIMARY_REMOTE_GID, &G3),
            (pd + CMA_HDR_IP_VERSION, &[0x40]),
            (pd + CMA_HDR_DST_ADDR, &dst),
        ],
    );
    assert_eq!(f.dest(G1, &mad), v4);
}

#[test]
fn drops_what_cannot_be_routed() {
    let mut f = Fabric::new(&[G1, G2]);
    assert!(f.dropped(G1, &req(1, &G3)).contains("no registered GID"));
    assert!(f
        .dropped(G1, &reply(cm_attr::REP, 1, 0x999))
        .contains("unknown comm ID"));
    assert!(f
        .dropped(G1, &reply(cm_attr::RTU, 1, 0))
        .contains("remote comm ID 0"));
    assert!(f.dropped(G1, &[1, 7, 2]).contains("no header"));
    assert!(f
        .dropped(G1, &req(1, &G2)[..MAD_HDR_SIZE + 3])
        .contains("too short"));
    assert!(f
        .dropped(G1, &reply(cm_attr::REP, 1, 2)[..MAD_HDR_SIZE + 6])
        .contains("too short"));
    let mut sa = cm_mad(0x12, 1, &[]);
    let mut hdr = MadHdr::parse(&sa).unwrap();
    hdr.mgmt_class = 0x03;
    hdr.write(&mut sa);
    assert!(f.dropped(G1, &sa).contains("class 0x03"));
    assert!(f
        .dropped(G1, &cm_mad(cm_attr::CLASS_PORT_INFO, 1, &[]))
        .contains("not routed"));
}

#[test]
fn forgetting_a_gid_drops_its_records() {
    let mut f = Fabric::new(&[G1, G2]);
    f.dest(G1, &req(0x10, &G2));
    assert_eq!(f.table.len(), 1);
    f.table.forget_gid(&G1);
    assert!(f.table.is_empty());
    f.dest(G1, &req(0x10, &G2));
    f.table.forget_gid(&G2);
    assert!(f.table.is_empty());
}

#[test]
fn oldest_records_go_first() {
    let mut f = Fabric::new(&[G1, G2]);
    f.table = CmTable::with_capacity(2);
    f.dest(G1, &req(1, &G2));
    f.dest(G1, &req(2, &G2));
    f.dest(G2, &reply(cm_attr::MRA, 0, 1)); // touches ID 1
    f.dest(G1, &req(3, &G2)); // evicts ID 2
    assert_eq!(f.table.len(), 2);
    assert_eq!(f.dest(G2, &reply(cm_attr::REP, 0, 1)), G1);
    assert!(f
        .dropped(G2, &reply(cm_attr::REP, 0, 2))
        .contains("unknown"));
    assert_eq!(f.dest(G2, &reply(cm_attr::REP, 0, 3)), G1);
}

#[test]
fn owner_gone_is_dropped() {
    let mut f = Fabric::new(&[G1, G2]);
    f.dest(G1, &req(4, &G2));
    f.registered.remove(&G1);
    assert!(f
        .dropped(G2, &reply(cm_attr::REP, 5, 4))
        .contains("no longer registered"));
}

#[test]
fn answers_recognises_cm_replies() {
    let to = G2;
    let yes = |d: &[u8], r: &[u8]| answers(r, &to, d, &to);
    assert!(yes(&req(0x10, &G2), &reply(cm_attr::REP, 0x20, 0x10)));
    assert!(yes(&req(0x10, &G2), &reply(cm_attr::MRA, 0x20, 0x10)));
    assert!(
        !yes(&req(0x10, &G2), &reply(cm_attr::REP, 0x20, 0x11)),
        "other comm ID"
    );
    assert!(
        !yes(&req(0x10, &G2), &reply(cm_attr::REJ, 0x20, 0x10)),
        "REJ can be spontaneous"
    );
    assert!(yes(
        &reply(cm_attr::REP, 0x20, 0x10),
        &reply(cm_attr::RTU, 0x10, 0x20)
    ));
    assert!(!yes(
        &reply(cm_attr::REP, 0x20, 0x10),
        &reply(cm_attr::RTU, 0x11, 0x20)
    ));
    assert!(yes(
        &reply(cm_attr::DREQ, 0x20, 0x10),
        &reply(cm_attr::DREP, 0x10, 0x20)
    ));
    assert!(!yes(
        &reply(cm_attr::DREP, 0x20, 0x10),
        &reply(cm_attr::DREQ, 0x10, 0x20)
    ));
    let sreq = sidr_req(0x77, 6, &G2);
    let srep = cm_mad(cm_attr::SIDR_REP, 1, &[(0, &0x77u32.to_be_bytes())]);
    assert!(yes(&sreq, &srep));
    // From another GID, or not CM, or truncated: no.
    assert!(!answers(
        &reply(cm_attr::REP, 0x20, 0x10),
        &G1,
        &req(0x10, &G2),
        &G2
    ));
    let mut not_cm = reply(cm_attr::REP, 0x20, 0x10);
    not_cm[1] = 0x03;
    assert!(!yes(&req(0x10, &G2), &not_cm));
    assert!(!yes(
        &req(0x10, &G2),
        &reply(cm_attr::REP, 0x20, 0x10)[..MAD_HDR_SIZE + 5]
    ));
}
