// SPDX-License-Identifier: GPL-2.0

//! The verbs types the device shares with Linux's RDMA core (Linux's `pvrdma_verbs.h`): QP
//! states, types and attribute masks, MTUs, access flags, and the attribute structs embedded in
//! commands and responses. Byte for byte the C layout (x86-64), checked at build time.
//!
//! C's unions are modelled without padding: `union pvrdma_gid` is 16 bytes aligned to 8 like the
//! C union ([`Gid`]).

use core::mem::{offset_of, size_of};
use kernel::pod;

/// QP types (`CmdCreateQp::qp_type`; 1:1 with `ib_qp_type`).
pub(crate) mod qp_type {
    /// General services QP (QP1).
    pub(crate) const GSI: u8 = 1;
    /// Reliable connected.
    pub(crate) const RC: u8 = 2;
    /// Unreliable datagram.
    pub(crate) const UD: u8 = 4;
}
/// Port states (`PortAttrs::state`; 1:1 with `ib_port_state`).
pub(crate) mod port_state {
    /// Down.
    pub(crate) const DOWN: u32 = 1;
    /// Active, deferred (the last state).
    pub(crate) const ACTIVE_DEFER: u32 = 5;
}
/// MTUs (`QpAttr::path_mtu`, `PortAttrs::max_mtu`/`active_mtu`; 1:1 with `ib_mtu`).
pub(crate) mod mtu {
    /// 256 bytes.
    pub(crate) const MTU_256: u32 = 1;
    /// 4096 bytes.
    pub(crate) const MTU_4096: u32 = 5;
}
/// Memory access flags (`access_flags` of MRs, QPs and fast-register WRs; 1:1 with
/// `ib_access_flags` up to [`ON_DEMAND`](access::ON_DEMAND)).
pub(crate) mod access {
    /// On-demand paging.
    pub(crate) const ON_DEMAND: u32 = 1 << 6;
    /// Every bit the device knows (C's `PVRDMA_MASK(PVRDMA_ACCESS_FLAGS_MAX)`).
    pub(crate) const ALL: u32 = (ON_DEMAND << 1) - 1;
}
/// Send flags (`SqWqeHdr::send_flags`; 1:1 with `ib_send_flags` up to
/// [`IP_CSUM`](send_flags::IP_CSUM)).
pub(crate) mod send_flags {
    /// IP checksum offload.
    pub(crate) const IP_CSUM: u32 = 1 << 4;
    /// Every bit the device knows (C's `PVRDMA_MASK(PVRDMA_SEND_FLAGS_MAX)`).
    pub(crate) const ALL: u32 = (IP_CSUM << 1) - 1;
}

pod! {
    /// `union pvrdma_gid`: 16 raw bytes, also readable as two big-endian `u64`s (subnet prefix
    /// at 0, interface ID at 8), which is why the C union (and so this struct) is aligned to 8.
    #[repr(C, align(8))]
    pub(crate) struct Gid {
        /// The GID in network byte order.
        pub(crate) raw: [u8; 16],
    }

    /// `struct pvrdma_global_route`: the GRH part of an address.
    #[repr(C)]
    pub(crate) struct GlobalRoute {
        pub(crate) dgid: Gid,
        pub(crate) flow_label: u32,
        pub(crate) sgid_index: u8,
        pub(crate) hop_limit: u8,
        pub(crate) traffic_class: u8,
        pub(crate) reserved: u8,
    }

    /// `struct pvrdma_ah_attr`: an address (a QP's primary or alternate path).
    #[repr(C)]
    pub(crate) struct AhAttr {
        pub(crate) grh: GlobalRoute,
        pub(crate) dlid: u16,
        pub(crate) vlan_id: u16,
        pub(crate) sl: u8,
        pub(crate) src_path_bits: u8,
        /// An `ib_rate` (1:1).
        pub(crate) static_rate: u8,
        /// [`ah_flags`] bits.
        pub(crate) ah_flags: u8,
        pub(crate) port_num: u8,
        pub(crate) dmac: [u8; 6],
        pub(crate) reserved: u8,
    }

    /// `struct pvrdma_qp_cap`: a QP's queue sizes.
    #[repr(C)]
    pub(crate) struct QpCap {
        pub(crate) max_send_wr: u32,
        pub(crate) max_recv_wr: u32,
        pub(crate) max_send_sge: u32,
        pub(crate) max_recv_sge: u32,
        pub(crate) max_inline_data: u32,
        pub(crate) reserved: u32,
    }

    /// `struct pvrdma_srq_attr`: an SRQ's size and limit.
    #[repr(C)]
    pub(crate) struct SrqAttr {
        pub(crate) max_wr: u32,
        pub(crate) max_sge: u32,
        pub(crate) srq_limit: u32,
        pub(crate) reserved: u32,
    }

    /// `struct pvrdma_qp_attr`: the attributes `MODIFY_QP` sets and `QUERY_QP` returns (C's
    /// `enum` fields are 4 bytes).
    #[repr(C)]
    pub(crate) struct QpAttr {
        /// A [`qp_state`].
        pub(crate) qp_state: u32,
        /// A [`qp_state`].
        pub(crate) cur_qp_state: u32,
        /// An [`mtu`].
        pub(crate) path_mtu: u32,
        /// A [`mig_state`].
        pub(crate) path_mig_state: u32,
        pub(crate) qkey: u32,
        pub(crate) rq_psn: u32,
        pub(crate) sq_psn: u32,
        pub(crate) dest_qp_num: u32,
        /// [`access`] bits.
        pub(crate) qp_access_flags: u32,
        pub(crate) pkey_index: u16,
        pub(crate) alt_pkey_index: u16,
        pub(crate) en_sqd_async_notify: u8,
        pub(crate) sq_draining: u8,
        pub(crate) max_rd_atomic: u8,
        pub(crate) max_dest_rd_atomic: u8,
        pub(crate) min_rnr_timer: u8,
        pub(crate) port_num: u8,
        pub(crate) timeout: u8,
        pub(crate) retry_cnt: u8,
        pub(crate) rnr_retry: u8,
        pub(crate) alt_port_num: u8,
        pub(crate) alt_timeout: u8,
        pub(crate) reserved: [u8; 5],
        pub(crate) cap: QpCap,
        pub(crate) ah_attr: AhAttr,
        pub(crate) alt_ah_attr: AhAttr,
    }
}

const _: () = {
    use core::mem::align_of;

    assert!(size_of::<Gid>() == 16 && align_of::<Gid>() == 8);
    assert!(size_of::<GlobalRoute>() == 24);
    assert!(size_of::<AhAttr>() == 40);
    assert!(size_of::<QpCap>() == 24);
    assert!(size_of::<SrqAttr>() == 16);
    assert!(size_of::<QpAttr>() == 160);
    assert!(offset_of!(QpAttr, reserved) == 51);
    assert!(offset_of!(QpAttr, cap) == 56);
    assert!(offset_of!(QpAttr, ah_attr) == 80);
    assert!(offset_of!(QpAttr, alt_ah_attr) == 120);
};
