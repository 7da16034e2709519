// SPDX-License-Identifier: GPL-2.0

//! The commands that create, modify, query and destroy the verbs objects (MRs, CQs, SRQs, QPs),
//! and their responses (Linux's `pvrdma_dev_api.h`, like the rest of the control interface in
//! `dev_api.rs`). Every header is filled in by `CmdChannel::run`; every struct's size (and the
//! offsets where C leaves implicit padding) is checked at build time against the C layout.

use super::{
    dev_api::{CmdHdr, RespHdr, CMD_REQ_SIZE, CMD_RESP_SIZE},
    verbs::{QpAttr, SrqAttr},
};
use core::mem::{offset_of, size_of};
use kernel::pod;

/// Command codes of the verbs objects, each with its response code (as [`crate::abi::opcode`]).
pub(crate) mod opcode_verbs {
    /// Response codes are the command code with the top bit set.
    const RESP: u32 = 1 << 31;

    /// [`CmdCreateMr`](super::CmdCreateMr), answered by [`RespCreateMr`](super::RespCreateMr).
    pub(crate) const CREATE_MR: (u32, u32) = (4, RESP | 4);
    /// [`CmdDestroyMr`](super::CmdDestroyMr), answered by `abi::RespNoop`.
    pub(crate) const DESTROY_MR: (u32, u32) = (5, RESP | 5);
    /// [`CmdCreateCq`](super::CmdCreateCq), answered by [`RespCreateCq`](super::RespCreateCq).
    pub(crate) const CREATE_CQ: (u32, u32) = (6, RESP | 6);
    /// [`CmdDestroyCq`](super::CmdDestroyCq), answered by `abi::RespNoop`.
    pub(crate) const DESTROY_CQ: (u32, u32) = (8, RESP | 8);
    /// [`CmdCreateQp`](super::CmdCreateQp), answered by [`RespCreateQp`](super::RespCreateQp)
    /// or, from device version 20, [`RespCreateQpV2`](super::RespCreateQpV2).
    pub(crate) const CREATE_QP: (u32, u32) = (9, RESP | 9);
    /// [`CmdModifyQp`](super::CmdModifyQp), answered by `abi::RespNoop`.
    pub(crate) const MODIFY_QP: (u32, u32) = (10, RESP | 10);
    /// [`CmdQueryQp`](super::CmdQueryQp), answered by [`RespQueryQp`](super::RespQueryQp).
    pub(crate) const QUERY_QP: (u32, u32) = (11, RESP | 11);
    /// [`CmdDestroyQp`](super::CmdDestroyQp), answered by [`RespDestroyQp`](super::RespDestroyQp).
    pub(crate) const DESTROY_QP: (u32, u32) = (12, RESP | 12);
    /// [`CmdCreateSrq`](super::CmdCreateSrq), answered by [`RespCreateSrq`](super::RespCreateSrq).
    pub(crate) const CREATE_SRQ: (u32, u32) = (17, RESP | 17);
    /// [`CmdModifySrq`](super::CmdModifySrq), answered by `abi::RespNoop`.
    pub(crate) const MODIFY_SRQ: (u32, u32) = (18, RESP | 18);
    /// [`CmdQuerySrq`](super::CmdQuerySrq), answered by [`RespQuerySrq`](super::RespQuerySrq).
    pub(crate) const QUERY_SRQ: (u32, u32) = (19, RESP | 19);
    /// [`CmdDestroySrq`](super::CmdDestroySrq), answered by `abi::RespNoop`.
    pub(crate) const DESTROY_SRQ: (u32, u32) = (20, RESP | 20);
}

pod! {
    /// `CREATE_MR`: registers memory described by a page directory (or a DMA/FRMR region).
    #[repr(C)]
    pub(crate) struct CmdCreateMr {
        pub(crate) hdr: CmdHdr,
        /// The region's first virtual address.
        pub(crate) start: u64,
        pub(crate) length: u64,
        /// Bus address of the page directory (0 for a DMA or FRMR region).
        pub(crate) pdir_dma: u64,
        pub(crate) pd_handle: u32,
        /// [`access`] bits.
        pub(crate) access_flags: u32,
        /// `MR_FLAG_*` bits.
        pub(crate) flags: u32,
        /// Pages in the directory (for an FRMR: its most pages).
        pub(crate) nchunks: u32,
    }

    /// `CREATE_MR_RESP`.
    #[repr(C)]
    pub(crate) struct RespCreateMr {
        pub(crate) hdr: RespHdr,
        pub(crate) mr_handle: u32,
        pub(crate) lkey: u32,
        pub(crate) rkey: u32,
        pub(crate) reserved: [u8; 4],
    }

    /// `DESTROY_MR`.
    #[repr(C)]
    pub(crate) struct CmdDestroyMr {
        pub(crate) hdr: CmdHdr,
        pub(crate) mr_handle: u32,
        pub(crate) reserved: [u8; 4],
    }

    /// `CREATE_CQ`: the directory's first page holds the ring state, the others the CQEs.
    #[repr(C)]
    pub(crate) struct CmdCreateCq {
        pub(crate) hdr: CmdHdr,
        pub(crate) pdir_dma: u64,
        /// The owning user context (0: the kernel's).
        pub(crate) ctx_handle: u32,
        /// Entries asked for.
        pub(crate) cqe: u32,
        /// Pages in the directory, ring state included.
        pub(crate) nchunks: u32,
        pub(crate) reserved: [u8; 4],
    }

    /// `CREATE_CQ_RESP`.
    #[repr(C)]
    pub(crate) struct RespCreateCq {
        pub(crate) hdr: RespHdr,
        pub(crate) cq_handle: u32,
        /// Entries granted.
        pub(crate) cqe: u32,
    }

    /// `DESTROY_CQ`.
    #[repr(C)]
    pub(crate) struct CmdDestroyCq {
        pub(crate) hdr: CmdHdr,
        pub(crate) cq_handle: u32,
        pub(crate) reserved: [u8; 4],
    }

    /// `CREATE_SRQ`: the directory's first page holds the ring state, the others the WQEs.
    #[repr(C)]
    pub(crate) struct CmdCreateSrq {
        pub(crate) hdr: CmdHdr,
        pub(crate) pdir_dma: u64,
        pub(crate) pd_handle: u32,
        /// Pages in the directory, ring state included.
        pub(crate) nchunks: u32,
        pub(crate) attrs: SrqAttr,
        /// An `ib_srq_type` (only basic SRQs are supported).
        pub(crate) srq_type: u8,
        pub(crate) reserved: [u8; 7],
    }

    /// `CREATE_SRQ_RESP`.
    #[repr(C)]
    pub(crate) struct RespCreateSrq {
        pub(crate) hdr: RespHdr,
        /// The SRQ's handle.
        pub(crate) srqn: u32,
        pub(crate) reserved: [u8; 4],
    }

    /// `MODIFY_SRQ`.
    #[repr(C)]
    pub(crate) struct CmdModifySrq {
        pub(crate) hdr: CmdHdr,
        pub(crate) srq_handle: u32,
        /// `ib_srq_attr_mask` bits.
        pub(crate) attr_mask: u32,
        pub(crate) attrs: SrqAttr,
    }

    /// `QUERY_SRQ`.
    #[repr(C)]
    pub(crate) struct CmdQuerySrq {
        pub(crate) hdr: CmdHdr,
        pub(crate) srq_handle: u32,
        pub(crate) reserved: [u8; 4],
    }

    /// `QUERY_SRQ_RESP`.
    #[repr(C)]
    pub(crate) struct RespQuerySrq {
        pub(crate) hdr: RespHdr,
        pub(crate) attrs: SrqAttr,
    }

    /// `DESTROY_SRQ`.
    #[repr(C)]
    pub(crate) struct CmdDestroySrq {
        pub(crate) hdr: CmdHdr,
        pub(crate) srq_handle: u32,
        pub(crate) reserved: [u8; 4],
    }

    /// `CREATE_QP`: the directory holds [`QP_NUM_HEADER_PAGES`] of ring state, the send ring's
    /// pages, then the receive ring's (none with an SRQ).
    #[repr(C)]
    pub(crate) struct CmdCreateQp {
        pub(crate) hdr: CmdHdr,
        pub(crate) pdir_dma: u64,
        pub(crate) pd_handle: u32,
        pub(crate) send_cq_handle: u32,
        pub(crate) recv_cq_handle: u32,
        /// Meaningful when `is_srq` is set.
        pub(crate) srq_handle: u32,
        pub(crate) max_send_wr: u32,
        pub(crate) max_recv_wr: u32,
        pub(crate) max_send_sge: u32,
        pub(crate) max_recv_sge: u32,
        pub(crate) max_inline_data: u32,
        pub(crate) lkey: u32,
        /// [`access`] bits.
        pub(crate) access_flags: u32,
        /// Pages in the directory, ring state included.
        pub(crate) total_chunks: u16,
        /// Pages of the send ring (the ring state page not included).
        pub(crate) send_chunks: u16,
        pub(crate) max_atomic_arg: u16,
        /// 1: every send WR generates a completion.
        pub(crate) sq_sig_all: u8,
        /// A [`qp_type`].
        pub(crate) qp_type: u8,
        /// 1: receives come from the SRQ `srq_handle`.
        pub(crate) is_srq: u8,
        pub(crate) reserved: [u8; 3],
    }

    /// `CREATE_QP_RESP` of devices before [`VERSION_QPHANDLE`]: the QP number is the handle.
    #[repr(C)]
    pub(crate) struct RespCreateQp {
        pub(crate) hdr: RespHdr,
        pub(crate) qpn: u32,
        pub(crate) max_send_wr: u32,
        pub(crate) max_recv_wr: u32,
        pub(crate) max_send_sge: u32,
        pub(crate) max_recv_sge: u32,
        pub(crate) max_inline_data: u32,
    }

    /// `CREATE_QP_RESP` from device version [`VERSION_QPHANDLE`] on (same response code as
    /// [`RespCreateQp`]; `reserved` is C's implicit tail padding).
    #[repr(C)]
    pub(crate) struct RespCreateQpV2 {
        pub(crate) hdr: RespHdr,
        pub(crate) qpn: u32,
        /// The handle in commands, doorbells, CQEs and events.
        pub(crate) qp_handle: u32,
        pub(crate) max_send_wr: u32,
        pub(crate) max_recv_wr: u32,
        pub(crate) max_send_sge: u32,
        pub(crate) max_recv_sge: u32,
        pub(crate) max_inline_data: u32,
        pub(crate) reserved: [u8; 4],
    }

    /// `MODIFY_QP` (exactly the request slot's 184 bytes).
    #[repr(C)]
    pub(crate) struct CmdModifyQp {
        pub(crate) hdr: CmdHdr,
        pub(crate) qp_handle: u32,
        /// [`qp_attr_mask`] bits.
        pub(crate) attr_mask: u32,
        pub(crate) attrs: QpAttr,
    }

    /// `QUERY_QP`.
    #[repr(C)]
    pub(crate) struct CmdQueryQp {
        pub(crate) hdr: CmdHdr,
        pub(crate) qp_handle: u32,
        /// [`qp_attr_mask`] bits.
        pub(crate) attr_mask: u32,
    }

    /// `QUERY_QP_RESP` (exactly the response slot's 176 bytes).
    #[repr(C)]
    pub(crate) struct RespQueryQp {
        pub(crate) hdr: RespHdr,
        pub(crate) attrs: QpAttr,
    }

    /// `DESTROY_QP`.
    #[repr(C)]
    pub(crate) struct CmdDestroyQp {
        pub(crate) hdr: CmdHdr,
        pub(crate) qp_handle: u32,
        pub(crate) reserved: [u8; 4],
    }

    /// `DESTROY_QP_RESP`.
    #[repr(C)]
    pub(crate) struct RespDestroyQp {
        pub(crate) hdr: RespHdr,
        pub(crate) events_reported: u32,
        pub(crate) reserved: [u8; 4],
    }
}

const _: () = {
    assert!(size_of::<CmdCreateMr>() == 56);
    assert!(size_of::<RespCreateMr>() == 32);
    assert!(size_of::<CmdDestroyMr>() == 24);
    assert!(size_of::<CmdCreateCq>() == 40);
    assert!(size_of::<RespCreateCq>() == 24);
    assert!(size_of::<CmdDestroyCq>() == 24);
    assert!(size_of::<CmdCreateSrq>() == 56);
    assert!(size_of::<RespCreateSrq>() == 24);
    assert!(size_of::<CmdModifySrq>() == 40);
    assert!(size_of::<CmdQuerySrq>() == 24);
    assert!(size_of::<RespQuerySrq>() == 32);
    assert!(size_of::<CmdDestroySrq>() == 24);
    assert!(size_of::<CmdCreateQp>() == 80);
    assert!(size_of::<RespCreateQp>() == 40);
    assert!(size_of::<RespCreateQpV2>() == 48);
    assert!(offset_of!(RespCreateQpV2, qp_handle) == 20);
    assert!(size_of::<CmdModifyQp>() == 184);
    assert!(offset_of!(CmdModifyQp, attrs) == 24);
    assert!(size_of::<CmdQueryQp>() == 24);
    assert!(size_of::<RespQueryQp>() == 176);
    assert!(size_of::<CmdDestroyQp>() == 24);
    assert!(size_of::<RespDestroyQp>() == 24);
    assert!(size_of::<CmdCreateMr>() <= CMD_REQ_SIZE);
    assert!(size_of::<CmdDestroyMr>() <= CMD_REQ_SIZE);
    assert!(size_of::<CmdCreateCq>() <= CMD_REQ_SIZE);
    assert!(size_of::<CmdDestroyCq>() <= CMD_REQ_SIZE);
    assert!(size_of::<CmdCreateSrq>() <= CMD_REQ_SIZE);
    assert!(size_of::<CmdModifySrq>() <= CMD_REQ_SIZE);
    assert!(size_of::<CmdQuerySrq>() <= CMD_REQ_SIZE);
    assert!(size_of::<CmdDestroySrq>() <= CMD_REQ_SIZE);
    assert!(size_of::<CmdCreateQp>() <= CMD_REQ_SIZE);
    assert!(size_of::<CmdModifyQp>() <= CMD_REQ_SIZE);
    assert!(size_of::<CmdQueryQp>() <= CMD_REQ_SIZE);
    assert!(size_of::<CmdDestroyQp>() <= CMD_REQ_SIZE);
    assert!(size_of::<RespCreateMr>() <= CMD_RESP_SIZE);
    assert!(size_of::<RespCreateCq>() <= CMD_RESP_SIZE);
    assert!(size_of::<RespCreateSrq>() <= CMD_RESP_SIZE);
    assert!(size_of::<RespQuerySrq>() <= CMD_RESP_SIZE);
    assert!(size_of::<RespCreateQp>() <= CMD_RESP_SIZE);
    assert!(size_of::<RespCreateQpV2>() <= CMD_RESP_SIZE);
    assert!(size_of::<RespQueryQp>() <= CMD_RESP_SIZE);
    assert!(size_of::<RespDestroyQp>() <= CMD_RESP_SIZE);
};
