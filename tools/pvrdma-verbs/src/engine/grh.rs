// SPDX-License-Identifier: GPL-2.0-only
//! The 40 bytes a UD receive buffer starts with: the network header of the
//! datagram, as hardware writes it for the type of the GID it came to.
//!
//! - RoCE v1: an IB GRH (IPv6 layout, next header 0x1b, IBA transport).
//! - RoCE v2 between IPv4-mapped GIDs (`::ffff:a.b.c.d`): the first 20
//!   bytes zero, then the IPv4 header (protocol UDP, checksum filled in).
//! - RoCE v2 otherwise: an IPv6 header whose next header is UDP (17).
//!
//! Readers tell them apart by these fields: libibverbs'
//! `ibv_init_ah_from_wc()` (`get_grh_header_version()`: IPv6 version 6,
//! else IPv4 version 4 at byte 20) and the kernel's
//! `ib_get_net_type_by_grh()` (version, then next header UDP or not), and
//! from the result the GID type to answer with: a RoCE v1 GRH on a port
//! whose GIDs are RoCE v2 names a GID it does not have.

use super::datapath::GRH_LEN;
use super::gid::GidType;
use super::wqe::UdDest;
use pvrdma_fabric::Gid;

/// Bytes after the network header on the wire, besides the payload: BTH
/// (12), DETH (8), ImmDt (4, with immediate data), ICRC (4).
fn transport_len(payload_len: usize, imm: bool) -> usize {
    12 + 8 + if imm { 4 } else { 0 } + payload_len + 4
}

/// Whether `gid` is IPv4-mapped (`::ffff:a.b.c.d`).
pub fn is_ipv4_mapped(gid: &Gid) -> bool {
    gid[..10] == [0; 10] && gid[10..12] == [0xff, 0xff]
}

/// The Internet checksum of `bytes` (an even number of them).
fn ip_checksum(bytes: &[u8]) -> u16 {
    let mut sum: u32 = bytes
        .chunks_exact(2)
        .map(|w| u32::from(u16::from_be_bytes([w[0], w[1]])))
        .sum();
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// The header of a datagram from `sgid` to `ud.dgid` carrying
/// `payload_len` bytes (and immediate data if `imm`), for a destination
/// GID of type `ty`.
pub fn build(ty: GidType, ud: &UdDest, sgid: &Gid, payload_len: usize, imm: bool) -> [u8; GRH_LEN] {
    let mut g = [0u8; GRH_LEN];
    let transport = transport_len(payload_len, imm);
    if ty == GidType::RoceV2 && is_ipv4_mapped(sgid) && is_ipv4_mapped(&ud.dgid) {
        let ip = &mut g[20..];
        ip[0] = 0x45; // version 4, 5 words
        ip[1] = ud.traffic_class;
        let total = (20 + 8 + transport).min(0xffff) as u16;
        ip[2..4].copy_from_slice(&total.to_be_bytes());
        ip[6] = 0x40; // don't fragment
        ip[8] = ud.hop_limit; // TTL
        ip[9] = 17; // UDP
        ip[12..16].copy_from_slice(&sgid[12..]);
        ip[16..20].copy_from_slice(&ud.dgid[12..]);
        let csum = ip_checksum(ip);
        ip[10..12].copy_from_slice(&csum.to_be_bytes());
        return g;
    }
    let vtf = (6u32 << 28) | (u32::from(ud.traffic_class) << 20) | (ud.flow_label & 0xf_ffff);
    g[0..4].copy_from_slice(&vtf.to_be_bytes());
    // PayLen as on the wire: what follows this header (RoCE v2: UDP's 8 too).
    let (paylen, next) = match ty {
        GidType::RoceV1 => (transport, 0x1b),   // IBA transport
        GidType::RoceV2 => (8 + transport, 17), // UDP
    };
    g[4..6].copy_from_slice(&(paylen.min(0xffff) as u16).to_be_bytes());
    g[6] = next;
    g[7] = ud.hop_limit;
    g[8..24].copy_from_slice(sgid);
    g[24..40].copy_from_slice(&ud.dgid);
    g
}

#[cfg(test)]
mod tests {
    use super::*;
    use pvrdma_fabric::gid::ipv4_mapped_gid;

    fn dest(dgid: Gid) -> UdDest {
        UdDest {
            dgid,
            sgid_index: 1,
            hop_limit: 64,
            traffic_class: 0x28,
            flow_label: 0x12345,
            sl: 0,
            remote_qpn: 0x11,
            remote_qkey: 0x1111_1111,
        }
    }

    /// libibverbs' `get_grh_header_version()`: 4, 6, or None (refused).
    fn libibverbs_version(g: &[u8; GRH_LEN]) -> Option<u8> {
        let ip4 = &g[20..];
        if g[0] >> 4 != 6 {
            return (ip4[0] >> 4 == 4).then_some(4);
        }
        if ip4[0] & 0xf != 5 {
            return Some(6);
        }
        let mut checked = [0u8; 20];
        checked.copy_from_slice(ip4);
        checked[10..12].copy_from_slice(&[0, 0]);
        let csum = ip_checksum(&checked);
        Some(if ip4[10..12] == csum.to_be_bytes() {
            4
        } else {
            6
        })
    }

    const LINK_LOCAL: Gid = [
        0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x02, 0x50, 0x56, 0xff, 0xfe, 0, 0, 1,
    ];
    const LINK_LOCAL_2: Gid = [
        0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x02, 0x50, 0x56, 0xff, 0xfe, 0, 0, 2,
    ];

    #[test]
    fn roce_v1_is_an_ib_grh() {
        let s = ipv4_mapped_gid([192, 0, 2, 1]);
        let d = ipv4_mapped_gid([192, 0, 2, 2]);
        let g = build(GidType::RoceV1, &dest(d), &s, 100, true);
        assert_eq!(g[0..4], [0x62, 0x81, 0x23, 0x45]); // 6, tclass 0x28, flow
        assert_eq!(u16::from_be_bytes([g[4], g[5]]), 12 + 8 + 4 + 100 + 4);
        assert_eq!((g[6], g[7]), (0x1b, 64));
        assert_eq!((&g[8..24], &g[24..40]), (&s[..], &d[..]));
        assert_eq!(libibverbs_version(&g), Some(6));
    }

    #[test]
    fn roce_v2_between_ipv4_addresses_is_an_ipv4_header() {
        let s = ipv4_mapped_gid([192, 0, 2, 1]);
        let d = ipv4_mapped_gid([192, 0, 2, 2]);
        let g = build(GidType::RoceV2, &dest(d), &s, 100, false);
        assert_eq!(g[..20], [0; 20]);
        let ip = &g[20..];
        assert_eq!((ip[0], ip[1], ip[8], ip[9]), (0x45, 0x28, 64, 17));
        assert_eq!(
            u16::from_be_bytes([ip[2], ip[3]]),
            20 + 8 + 12 + 8 + 100 + 4
        );
        assert_eq!(
            (&ip[12..16], &ip[16..20]),
            (&[192, 0, 2, 1][..], &[192, 0, 2, 2][..])
        );
        // A header with its checksum sums to 0xffff (complements to 0).
        assert_eq!(ip_checksum(ip), 0);
        assert_eq!(libibverbs_version(&g), Some(4));
    }

    #[test]
    fn roce_v2_otherwise_is_ipv6_over_udp() {
        let g = build(GidType::RoceV2, &dest(LINK_LOCAL_2), &LINK_LOCAL, 10, false);
        assert_eq!(g[0] >> 4, 6);
        assert_eq!(u16::from_be_bytes([g[4], g[5]]), 8 + 12 + 8 + 10 + 4);
        assert_eq!((g[6], g[7]), (17, 64));
        assert_eq!(
            (&g[8..24], &g[24..40]),
            (&LINK_LOCAL[..], &LINK_LOCAL_2[..])
        );
        assert_eq!(libibverbs_version(&g), Some(6));
        // One IPv4-mapped GID of two is not an IPv4 packet.
        let g = build(
            GidType::RoceV2,
            &dest(ipv4_mapped_gid([192, 0, 2, 2])),
            &LINK_LOCAL,
            10,
            false,
        );
        assert_eq!((g[0] >> 4, g[6]), (6, 17));
    }

    #[test]
    fn ipv4_mapped() {
        assert!(is_ipv4_mapped(&ipv4_mapped_gid([10, 0, 0, 1])));
        assert!(!is_ipv4_mapped(&LINK_LOCAL));
        assert!(!is_ipv4_mapped(&[0; 16]));
    }
}
