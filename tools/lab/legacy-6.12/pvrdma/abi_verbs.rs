// SPDX-License-Identifier: GPL-2.0

//! The pvrdma device ABI of the verbs objects: MRs, CQs, QPs, SRQs, their work queue entries and
//! completions, and the user ABI that rdma-core's `vmw_pvrdma` provider speaks.
//!
//! Byte for byte Linux's `pvrdma_dev_api.h`, `pvrdma_verbs.h` and `uapi/rdma/vmw_pvrdma-abi.h`
//! (the rest of the device ABI is in [`crate::abi`]). Every struct's size, and the offsets where
//! C leaves implicit padding or overlays a union, are checked at build time against the C
//! layout (x86-64).
//!
//! C's unions are modelled without padding: `union pvrdma_gid` is 16 bytes aligned to 8 like the
//! C union ([`Gid`]); the send WQE's `wr` union is 48 raw bytes ([`SqWr`]) built from one of
//! its variants ([`SqWrRdma`], [`SqWrAtomic`], ...), each a struct padded to the union's size;
//! the two-member `u32` unions (`ex` of the send WQE) are plain `u32`s.

use crate::abi::{CmdHdr, RespHdr, CMD_REQ_SIZE, CMD_RESP_SIZE};
use core::mem::{offset_of, size_of};
use kernel::pod;

// ---------------------------------------------------------------------------------------------
// Versions, limits and object flags.
// ---------------------------------------------------------------------------------------------

/// Device version from which `CREATE_QP` is answered by [`RespCreateQpV2`] (a QP handle apart
/// from the QP number) instead of [`RespCreateQp`]; QEMU 7.2's device is version 17.
pub(crate) const VERSION_QPHANDLE: u32 = 20;

/// Pages at the start of every QP's page directory that hold its rings' state (send ring's,
/// then receive ring's); the rings' pages follow, send ring first.
pub(crate) const QP_NUM_HEADER_PAGES: u32 = 1;

/// The user ABI version (`PVRDMA_UVERBS_ABI_VERSION`).
pub(crate) const UVERBS_ABI_VERSION: u32 = 3;

/// `CmdCreateMr::flags`: a DMA region (all of memory, no page list).
pub(crate) const MR_FLAG_DMA: u32 = 1 << 0;
/// `CmdCreateMr::flags`: a fast-register memory region (pages given later by a `FAST_REG_MR` WR).
pub(crate) const MR_FLAG_FRMR: u32 = 1 << 1;

/// CQ object flag: armed for solicited completions only.
pub(crate) const CQ_FLAG_ARMED_SOL: u32 = 1 << 0;
/// CQ object flag: armed.
pub(crate) const CQ_FLAG_ARMED: u32 = 1 << 1;

/// `caps.atomic_ops`: masked compare and swap.
pub(crate) const ATOMIC_OP_MASK_COMP_SWAP: u8 = 1 << 2;
/// `caps.atomic_ops`: masked fetch and add.
pub(crate) const ATOMIC_OP_MASK_FETCH_ADD: u8 = 1 << 3;

/// `caps.bmme_flags`: local invalidate.
pub(crate) const BMME_FLAG_LOCAL_INV: u8 = 1 << 0;
/// `caps.bmme_flags`: remote invalidate.
pub(crate) const BMME_FLAG_REMOTE_INV: u8 = 1 << 1;
/// `caps.bmme_flags`: fast-register work requests.
pub(crate) const BMME_FLAG_FAST_REG_WR: u8 = 1 << 2;

// ---------------------------------------------------------------------------------------------
// UAR doorbells: 32-bit writes into a context's UAR page.
// ---------------------------------------------------------------------------------------------

/// The bits of a doorbell value that carry the object's handle.
pub(crate) const UAR_HANDLE_MASK: u32 = 0x00ff_ffff;
/// Offset of the QP doorbell in a UAR page.
pub(crate) const UAR_QP_OFFSET: usize = 0;
/// QP doorbell bit: new send WQEs.
pub(crate) const UAR_QP_SEND: u32 = 1 << 30;
/// QP doorbell bit: new receive WQEs.
pub(crate) const UAR_QP_RECV: u32 = 1 << 31;
/// Offset of the CQ doorbell in a UAR page.
pub(crate) const UAR_CQ_OFFSET: usize = 4;
/// CQ doorbell bit: arm for solicited completions.
pub(crate) const UAR_CQ_ARM_SOL: u32 = 1 << 29;
/// CQ doorbell bit: arm for any completion.
pub(crate) const UAR_CQ_ARM: u32 = 1 << 30;
/// CQ doorbell bit: poll (make the device move completions into the CQ ring).
pub(crate) const UAR_CQ_POLL: u32 = 1 << 31;
/// Offset of the SRQ doorbell in a UAR page.
pub(crate) const UAR_SRQ_OFFSET: usize = 8;
/// SRQ doorbell bit: new receive WQEs.
pub(crate) const UAR_SRQ_RECV: u32 = 1 << 30;

// ---------------------------------------------------------------------------------------------
// Command codes and async events.
// ---------------------------------------------------------------------------------------------

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
    /// [`CmdResizeCq`](super::CmdResizeCq), answered by [`RespResizeCq`](super::RespResizeCq).
    pub(crate) const RESIZE_CQ: (u32, u32) = (7, RESP | 7);
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

/// Async event types that concern a QP, CQ or SRQ (`Eqe::info` is its handle; 1:1 with the RDMA
/// core's `ib_event_type`).
pub(crate) mod event_verbs {
    /// CQ error (overrun).
    pub(crate) const CQ_ERR: u32 = 0;
    /// QP fatal error.
    pub(crate) const QP_FATAL: u32 = 1;
    /// QP invalid request error.
    pub(crate) const QP_REQ_ERR: u32 = 2;
    /// QP access error.
    pub(crate) const QP_ACCESS_ERR: u32 = 3;
    /// QP communication established.
    pub(crate) const COMM_EST: u32 = 4;
    /// QP send queue drained.
    pub(crate) const SQ_DRAINED: u32 = 5;
    /// QP path migrated.
    pub(crate) const PATH_MIG: u32 = 6;
    /// QP path migration failed.
    pub(crate) const PATH_MIG_ERR: u32 = 7;
    /// SRQ error.
    pub(crate) const SRQ_ERR: u32 = 14;
    /// SRQ limit reached.
    pub(crate) const SRQ_LIMIT_REACHED: u32 = 15;
    /// QP (attached to an SRQ) reached its last WQE.
    pub(crate) const QP_LAST_WQE_REACHED: u32 = 16;
}

// ---------------------------------------------------------------------------------------------
// Enumerations (`pvrdma_verbs.h`, `vmw_pvrdma-abi.h`), typed as the fields that carry them.
// ---------------------------------------------------------------------------------------------

/// QP states (`QpAttr::qp_state`; 1:1 with `ib_qp_state`).
pub(crate) mod qp_state {
    /// Reset.
    pub(crate) const RESET: u32 = 0;
    /// Initialised.
    pub(crate) const INIT: u32 = 1;
    /// Ready to receive.
    pub(crate) const RTR: u32 = 2;
    /// Ready to send.
    pub(crate) const RTS: u32 = 3;
    /// Send queue drain.
    pub(crate) const SQD: u32 = 4;
    /// Send queue error.
    pub(crate) const SQE: u32 = 5;
    /// Error.
    pub(crate) const ERR: u32 = 6;
}

/// QP types (`CmdCreateQp::qp_type`; 1:1 with `ib_qp_type`).
pub(crate) mod qp_type {
    /// Subnet management QP (QP0).
    pub(crate) const SMI: u8 = 0;
    /// General services QP (QP1).
    pub(crate) const GSI: u8 = 1;
    /// Reliable connected.
    pub(crate) const RC: u8 = 2;
    /// Unreliable connected.
    pub(crate) const UC: u8 = 3;
    /// Unreliable datagram.
    pub(crate) const UD: u8 = 4;
    /// Raw IPv6.
    pub(crate) const RAW_IPV6: u8 = 5;
    /// Raw ethertype.
    pub(crate) const RAW_ETHERTYPE: u8 = 6;
    /// Raw packet.
    pub(crate) const RAW_PACKET: u8 = 8;
    /// XRC initiator.
    pub(crate) const XRC_INI: u8 = 9;
    /// XRC target.
    pub(crate) const XRC_TGT: u8 = 10;
}

/// MTUs (`QpAttr::path_mtu`, `PortAttrs::max_mtu`/`active_mtu`; 1:1 with `ib_mtu`).
pub(crate) mod mtu {
    /// 256 bytes.
    pub(crate) const MTU_256: u32 = 1;
    /// 512 bytes.
    pub(crate) const MTU_512: u32 = 2;
    /// 1024 bytes.
    pub(crate) const MTU_1024: u32 = 3;
    /// 2048 bytes.
    pub(crate) const MTU_2048: u32 = 4;
    /// 4096 bytes.
    pub(crate) const MTU_4096: u32 = 5;
}

/// Path migration states (`QpAttr::path_mig_state`; 1:1 with `ib_mig_state`).
pub(crate) mod mig_state {
    /// Migrated.
    pub(crate) const MIGRATED: u32 = 0;
    /// Rearm.
    pub(crate) const REARM: u32 = 1;
    /// Armed.
    pub(crate) const ARMED: u32 = 2;
}

/// QP attribute mask bits (`CmdModifyQp::attr_mask`, `CmdQueryQp::attr_mask`; 1:1 with
/// `ib_qp_attr_mask` up to [`DEST_QPN`](qp_attr_mask::DEST_QPN)).
pub(crate) mod qp_attr_mask {
    /// `qp_state`.
    pub(crate) const STATE: u32 = 1 << 0;
    /// `cur_qp_state`.
    pub(crate) const CUR_STATE: u32 = 1 << 1;
    /// `en_sqd_async_notify`.
    pub(crate) const EN_SQD_ASYNC_NOTIFY: u32 = 1 << 2;
    /// `qp_access_flags`.
    pub(crate) const ACCESS_FLAGS: u32 = 1 << 3;
    /// `pkey_index`.
    pub(crate) const PKEY_INDEX: u32 = 1 << 4;
    /// `port_num`.
    pub(crate) const PORT: u32 = 1 << 5;
    /// `qkey`.
    pub(crate) const QKEY: u32 = 1 << 6;
    /// `ah_attr`.
    pub(crate) const AV: u32 = 1 << 7;
    /// `path_mtu`.
    pub(crate) const PATH_MTU: u32 = 1 << 8;
    /// `timeout`.
    pub(crate) const TIMEOUT: u32 = 1 << 9;
    /// `retry_cnt`.
    pub(crate) const RETRY_CNT: u32 = 1 << 10;
    /// `rnr_retry`.
    pub(crate) const RNR_RETRY: u32 = 1 << 11;
    /// `rq_psn`.
    pub(crate) const RQ_PSN: u32 = 1 << 12;
    /// `max_rd_atomic`.
    pub(crate) const MAX_QP_RD_ATOMIC: u32 = 1 << 13;
    /// `alt_ah_attr`, `alt_pkey_index`, `alt_port_num`, `alt_timeout`.
    pub(crate) const ALT_PATH: u32 = 1 << 14;
    /// `min_rnr_timer`.
    pub(crate) const MIN_RNR_TIMER: u32 = 1 << 15;
    /// `sq_psn`.
    pub(crate) const SQ_PSN: u32 = 1 << 16;
    /// `max_dest_rd_atomic`.
    pub(crate) const MAX_DEST_RD_ATOMIC: u32 = 1 << 17;
    /// `path_mig_state`.
    pub(crate) const PATH_MIG_STATE: u32 = 1 << 18;
    /// `cap`.
    pub(crate) const CAP: u32 = 1 << 19;
    /// `dest_qp_num`.
    pub(crate) const DEST_QPN: u32 = 1 << 20;
    /// Every bit the device knows (C's `PVRDMA_MASK(PVRDMA_QP_ATTR_MASK_MAX)`).
    pub(crate) const ALL: u32 = (DEST_QPN << 1) - 1;
}

/// Memory access flags (`access_flags` of MRs, QPs and fast-register WRs; 1:1 with
/// `ib_access_flags` up to [`ON_DEMAND`](access::ON_DEMAND)).
pub(crate) mod access {
    /// Local write.
    pub(crate) const LOCAL_WRITE: u32 = 1 << 0;
    /// Remote write.
    pub(crate) const REMOTE_WRITE: u32 = 1 << 1;
    /// Remote read.
    pub(crate) const REMOTE_READ: u32 = 1 << 2;
    /// Remote atomic.
    pub(crate) const REMOTE_ATOMIC: u32 = 1 << 3;
    /// Memory window bind.
    pub(crate) const MW_BIND: u32 = 1 << 4;
    /// Zero-based addressing.
    pub(crate) const ZERO_BASED: u32 = 1 << 5;
    /// On-demand paging.
    pub(crate) const ON_DEMAND: u32 = 1 << 6;
    /// Every bit the device knows (C's `PVRDMA_MASK(PVRDMA_ACCESS_FLAGS_MAX)`).
    pub(crate) const ALL: u32 = (ON_DEMAND << 1) - 1;
}

/// Send flags (`SqWqeHdr::send_flags`; 1:1 with `ib_send_flags` up to
/// [`IP_CSUM`](send_flags::IP_CSUM)).
pub(crate) mod send_flags {
    /// Fence: wait for earlier reads and atomics.
    pub(crate) const FENCE: u32 = 1 << 0;
    /// Generate a completion.
    pub(crate) const SIGNALED: u32 = 1 << 1;
    /// Solicited event.
    pub(crate) const SOLICITED: u32 = 1 << 2;
    /// Inline data.
    pub(crate) const INLINE: u32 = 1 << 3;
    /// IP checksum offload.
    pub(crate) const IP_CSUM: u32 = 1 << 4;
    /// Every bit the device knows (C's `PVRDMA_MASK(PVRDMA_SEND_FLAGS_MAX)`).
    pub(crate) const ALL: u32 = (IP_CSUM << 1) - 1;
}

/// Send work request opcodes (`SqWqeHdr::opcode`; NOT 1:1 with `ib_wr_opcode`: C maps them in
/// `ib_wr_opcode_to_pvrdma`).
pub(crate) mod wr_opcode {
    /// RDMA write.
    pub(crate) const RDMA_WRITE: u32 = 0;
    /// RDMA write with immediate.
    pub(crate) const RDMA_WRITE_WITH_IMM: u32 = 1;
    /// Send.
    pub(crate) const SEND: u32 = 2;
    /// Send with immediate.
    pub(crate) const SEND_WITH_IMM: u32 = 3;
    /// RDMA read.
    pub(crate) const RDMA_READ: u32 = 4;
    /// Atomic compare and swap.
    pub(crate) const ATOMIC_CMP_AND_SWP: u32 = 5;
    /// Atomic fetch and add.
    pub(crate) const ATOMIC_FETCH_AND_ADD: u32 = 6;
    /// Large send offload.
    pub(crate) const LSO: u32 = 7;
    /// Send with invalidate.
    pub(crate) const SEND_WITH_INV: u32 = 8;
    /// RDMA read with invalidate.
    pub(crate) const RDMA_READ_WITH_INV: u32 = 9;
    /// Local invalidate.
    pub(crate) const LOCAL_INV: u32 = 10;
    /// Fast-register an MR (`IB_WR_REG_MR`).
    pub(crate) const FAST_REG_MR: u32 = 11;
    /// Masked atomic compare and swap.
    pub(crate) const MASKED_ATOMIC_CMP_AND_SWP: u32 = 12;
    /// Masked atomic fetch and add.
    pub(crate) const MASKED_ATOMIC_FETCH_AND_ADD: u32 = 13;
    /// Bind a memory window.
    pub(crate) const BIND_MW: u32 = 14;
    /// Register a signature MR (`IB_WR_REG_MR_INTEGRITY`).
    pub(crate) const REG_SIG_MR: u32 = 15;
    /// What C's mapping returns for an opcode the device does not know.
    pub(crate) const ERROR: u32 = 16;
}

/// Completion status (`Cqe::status`; 1:1 with `ib_wc_status`).
pub(crate) mod wc_status {
    /// Success.
    pub(crate) const SUCCESS: u32 = 0;
    /// Local length error.
    pub(crate) const LOC_LEN_ERR: u32 = 1;
    /// Local QP operation error.
    pub(crate) const LOC_QP_OP_ERR: u32 = 2;
    /// Local EE context operation error.
    pub(crate) const LOC_EEC_OP_ERR: u32 = 3;
    /// Local protection error.
    pub(crate) const LOC_PROT_ERR: u32 = 4;
    /// Flushed (the QP is in the error state).
    pub(crate) const WR_FLUSH_ERR: u32 = 5;
    /// Memory window bind error.
    pub(crate) const MW_BIND_ERR: u32 = 6;
    /// Bad response.
    pub(crate) const BAD_RESP_ERR: u32 = 7;
    /// Local access error.
    pub(crate) const LOC_ACCESS_ERR: u32 = 8;
    /// Remote invalid request.
    pub(crate) const REM_INV_REQ_ERR: u32 = 9;
    /// Remote access error.
    pub(crate) const REM_ACCESS_ERR: u32 = 10;
    /// Remote operation error.
    pub(crate) const REM_OP_ERR: u32 = 11;
    /// Transport retries exceeded.
    pub(crate) const RETRY_EXC_ERR: u32 = 12;
    /// RNR retries exceeded.
    pub(crate) const RNR_RETRY_EXC_ERR: u32 = 13;
    /// Local RDD violation.
    pub(crate) const LOC_RDD_VIOL_ERR: u32 = 14;
    /// Remote invalid RD request.
    pub(crate) const REM_INV_RD_REQ_ERR: u32 = 15;
    /// Remote abort.
    pub(crate) const REM_ABORT_ERR: u32 = 16;
    /// Invalid EE context number.
    pub(crate) const INV_EECN_ERR: u32 = 17;
    /// Invalid EE context state.
    pub(crate) const INV_EEC_STATE_ERR: u32 = 18;
    /// Fatal error.
    pub(crate) const FATAL_ERR: u32 = 19;
    /// Response timeout.
    pub(crate) const RESP_TIMEOUT_ERR: u32 = 20;
    /// General error.
    pub(crate) const GENERAL_ERR: u32 = 21;
}

/// Completion opcodes (`Cqe::opcode`; NOT 1:1 with `ib_wc_opcode`: C maps them in
/// `pvrdma_wc_opcode_to_ib`).
pub(crate) mod wc_opcode {
    /// Send.
    pub(crate) const SEND: u32 = 0;
    /// RDMA write.
    pub(crate) const RDMA_WRITE: u32 = 1;
    /// RDMA read.
    pub(crate) const RDMA_READ: u32 = 2;
    /// Compare and swap.
    pub(crate) const COMP_SWAP: u32 = 3;
    /// Fetch and add.
    pub(crate) const FETCH_ADD: u32 = 4;
    /// Memory window bind.
    pub(crate) const BIND_MW: u32 = 5;
    /// Large send offload.
    pub(crate) const LSO: u32 = 6;
    /// Local invalidate.
    pub(crate) const LOCAL_INV: u32 = 7;
    /// Fast-register MR.
    pub(crate) const FAST_REG_MR: u32 = 8;
    /// Masked compare and swap.
    pub(crate) const MASKED_COMP_SWAP: u32 = 9;
    /// Masked fetch and add.
    pub(crate) const MASKED_FETCH_ADD: u32 = 10;
    /// Receive.
    pub(crate) const RECV: u32 = 1 << 7;
    /// Receive of an RDMA write with immediate.
    pub(crate) const RECV_RDMA_WITH_IMM: u32 = (1 << 7) + 1;
}

/// Completion flags (`Cqe::wc_flags`; 1:1 with `ib_wc_flags`).
pub(crate) mod wc_flags {
    /// A GRH is in the first 40 bytes of the receive buffer.
    pub(crate) const GRH: u32 = 1 << 0;
    /// `imm_data` is valid.
    pub(crate) const WITH_IMM: u32 = 1 << 1;
    /// The send invalidated an rkey.
    pub(crate) const WITH_INVALIDATE: u32 = 1 << 2;
    /// The IP checksum was verified.
    pub(crate) const IP_CSUM_OK: u32 = 1 << 3;
    /// `smac` is valid.
    pub(crate) const WITH_SMAC: u32 = 1 << 4;
    /// The packet had a VLAN tag.
    pub(crate) const WITH_VLAN: u32 = 1 << 5;
    /// `network_hdr_type` is valid.
    pub(crate) const WITH_NETWORK_HDR_TYPE: u32 = 1 << 6;
}

/// Network header types (`Cqe::network_hdr_type`; NOT 1:1 with `rdma_network_type`: C maps
/// them in `pvrdma_network_type_to_ib`).
pub(crate) mod network_type {
    /// InfiniBand / RoCE v1 (same value).
    pub(crate) const IB: u8 = 0;
    /// RoCE v1 (same value as [`IB`]).
    pub(crate) const ROCE_V1: u8 = IB;
    /// RoCE v2 over IPv4.
    pub(crate) const IPV4: u8 = 1;
    /// RoCE v2 over IPv6.
    pub(crate) const IPV6: u8 = 2;
}

/// Address handle flags (`AhAttr::ah_flags`).
pub(crate) mod ah_flags {
    /// The GRH fields are valid.
    pub(crate) const GRH: u8 = 1;
}

// ---------------------------------------------------------------------------------------------
// Structs embedded in commands and responses (`pvrdma_verbs.h`).
// ---------------------------------------------------------------------------------------------

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

    /// `struct pvrdma_grh`: a global route header.
    #[repr(C)]
    pub(crate) struct Grh {
        /// Big-endian.
        pub(crate) version_tclass_flow: u32,
        /// Big-endian.
        pub(crate) paylen: u16,
        pub(crate) next_hdr: u8,
        pub(crate) hop_limit: u8,
        pub(crate) sgid: Gid,
        pub(crate) dgid: Gid,
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

// ---------------------------------------------------------------------------------------------
// Commands and responses (`pvrdma_dev_api.h`); every header is filled in by `CmdChannel::run`.
// ---------------------------------------------------------------------------------------------

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

    /// `RESIZE_CQ`.
    #[repr(C)]
    pub(crate) struct CmdResizeCq {
        pub(crate) hdr: CmdHdr,
        pub(crate) cq_handle: u32,
        pub(crate) cqe: u32,
    }

    /// `RESIZE_CQ_RESP`.
    #[repr(C)]
    pub(crate) struct RespResizeCq {
        pub(crate) hdr: RespHdr,
        pub(crate) cqe: u32,
        pub(crate) reserved: [u8; 4],
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

// ---------------------------------------------------------------------------------------------
// User ABI: the `udata` of the create verbs (`vmw_pvrdma-abi.h`).
// ---------------------------------------------------------------------------------------------

pod! {
    /// User ABI `pvrdma_create_cq`: the user's CQ ring buffer.
    #[repr(C)]
    pub(crate) struct UserCreateCq {
        pub(crate) buf_addr: u64,
        pub(crate) buf_size: u32,
        pub(crate) reserved: u32,
    }

    /// User ABI `pvrdma_create_cq_resp`.
    #[repr(C)]
    pub(crate) struct UserCreateCqResp {
        /// The CQ's handle.
        pub(crate) cqn: u32,
        pub(crate) reserved: u32,
    }

    /// User ABI `pvrdma_resize_cq`.
    #[repr(C)]
    pub(crate) struct UserResizeCq {
        pub(crate) buf_addr: u64,
        pub(crate) buf_size: u32,
        pub(crate) reserved: u32,
    }

    /// User ABI `pvrdma_create_srq`: the user's SRQ ring buffer.
    #[repr(C)]
    pub(crate) struct UserCreateSrq {
        pub(crate) buf_addr: u64,
        pub(crate) buf_size: u32,
        pub(crate) reserved: u32,
    }

    /// User ABI `pvrdma_create_srq_resp`.
    #[repr(C)]
    pub(crate) struct UserCreateSrqResp {
        /// The SRQ's handle.
        pub(crate) srqn: u32,
        pub(crate) reserved: u32,
    }

    /// User ABI `pvrdma_create_qp`: the user's receive and send ring buffers.
    #[repr(C)]
    pub(crate) struct UserCreateQp {
        pub(crate) rbuf_addr: u64,
        pub(crate) sbuf_addr: u64,
        pub(crate) rbuf_size: u32,
        pub(crate) sbuf_size: u32,
        pub(crate) qp_addr: u64,
    }

    /// User ABI `pvrdma_create_qp_resp`: C copies `min(outlen, 8)` bytes, and refuses
    /// (`EOPNOTSUPP`) a provider with a shorter `outlen` on devices from [`VERSION_QPHANDLE`] on.
    #[repr(C)]
    pub(crate) struct UserCreateQpResp {
        pub(crate) qpn: u32,
        /// The handle for the QP doorbell (`qpn` on devices before [`VERSION_QPHANDLE`]).
        pub(crate) qp_handle: u32,
    }
}

// ---------------------------------------------------------------------------------------------
// Work queue entries and completions, as laid out in the rings (`vmw_pvrdma-abi.h`).
// ---------------------------------------------------------------------------------------------

/// Writing a plain value's bytes in memory order, to build a union from one of its members.
trait Encode {
    /// Writes `self` into `out`, which is `size_of::<Self>()` bytes long.
    fn encode(&self, out: &mut [u8]);
}

/// Implements [`Encode`] for integer types: their bytes in native order, as in memory.
macro_rules! encode_int {
    ($($int:ty),*) => {$(
        impl Encode for $int {
            fn encode(&self, out: &mut [u8]) {
                out.copy_from_slice(&self.to_ne_bytes());
            }
        }
    )*};
}

encode_int!(u8, u16, u32, u64);

impl<const N: usize> Encode for [u8; N] {
    fn encode(&self, out: &mut [u8]) {
        out.copy_from_slice(self);
    }
}

/// [`pod!`] structs that also implement [`Encode`], field by field at each field's offset (the
/// field list is `pod!`'s, so none can be left out).
macro_rules! pod_encoded {
    ($(
        $(#[$attr:meta])*
        $vis:vis struct $name:ident {
            $($(#[$fattr:meta])* $fvis:vis $field:ident : $ty:ty),* $(,)?
        }
    )*) => {
        pod! {$(
            $(#[$attr])*
            $vis struct $name {
                $($(#[$fattr])* $fvis $field : $ty),*
            }
        )*}

        $(impl Encode for $name {
            fn encode(&self, out: &mut [u8]) {
                $(self.$field.encode(&mut out[offset_of!($name, $field)..][..size_of::<$ty>()]);)*
            }
        })*
    };
}

pod_encoded! {
    /// `struct pvrdma_ex_cmp_swap`: the operands of a masked compare and swap.
    #[repr(C)]
    pub(crate) struct ExCmpSwap {
        pub(crate) swap_val: u64,
        pub(crate) compare_val: u64,
        pub(crate) swap_mask: u64,
        pub(crate) compare_mask: u64,
    }

    /// `struct pvrdma_ex_fetch_add`: the operands of a masked fetch and add.
    #[repr(C)]
    pub(crate) struct ExFetchAdd {
        pub(crate) add_val: u64,
        pub(crate) field_boundary: u64,
    }

    /// `struct pvrdma_av`: the address vector of a UD send.
    #[repr(C)]
    pub(crate) struct Av {
        /// Port number in bits 24..32, PD handle in bits 0..24.
        pub(crate) port_pd: u32,
        /// Traffic class in bits 20..28, flow label in bits 0..20 (as C's `create_ah` fills it).
        pub(crate) sl_tclass_flowlabel: u32,
        pub(crate) dgid: [u8; 16],
        /// C's `create_ah` also sets bit 7.
        pub(crate) src_path_bits: u8,
        pub(crate) gid_index: u8,
        pub(crate) stat_rate: u8,
        pub(crate) hop_limit: u8,
        pub(crate) dmac: [u8; 6],
        pub(crate) reserved: [u8; 6],
    }

    /// `wr.rdma` of a send WQE (RDMA read and write), padded to the union's 48 bytes.
    #[repr(C)]
    pub(crate) struct SqWrRdma {
        pub(crate) remote_addr: u64,
        pub(crate) rkey: u32,
        pub(crate) reserved: [u8; 4],
        /// Past the C member: the rest of the union.
        pub(crate) pad: [u8; 32],
    }

    /// `wr.atomic` of a send WQE (compare and swap, fetch and add), padded to 48 bytes.
    #[repr(C)]
    pub(crate) struct SqWrAtomic {
        pub(crate) remote_addr: u64,
        pub(crate) compare_add: u64,
        pub(crate) swap: u64,
        pub(crate) rkey: u32,
        pub(crate) reserved: u32,
        /// Past the C member: the rest of the union.
        pub(crate) pad: [u8; 16],
    }

    /// `wr.masked_atomics` of a masked compare-and-swap send WQE (`wr_data.cmp_swap`; 48 bytes).
    #[repr(C)]
    pub(crate) struct SqWrMaskedCmpSwap {
        pub(crate) remote_addr: u64,
        pub(crate) log_arg_sz: u32,
        pub(crate) rkey: u32,
        pub(crate) cmp_swap: ExCmpSwap,
    }

    /// `wr.masked_atomics` of a masked fetch-and-add send WQE (`wr_data.fetch_add`), padded to
    /// 48 bytes.
    #[repr(C)]
    pub(crate) struct SqWrMaskedFetchAdd {
        pub(crate) remote_addr: u64,
        pub(crate) log_arg_sz: u32,
        pub(crate) rkey: u32,
        pub(crate) fetch_add: ExFetchAdd,
        /// Past the C member: the rest of the `wr_data` union.
        pub(crate) pad: [u8; 16],
    }

    /// `wr.fast_reg` of a fast-register send WQE, padded to 48 bytes.
    #[repr(C)]
    pub(crate) struct SqWrFastReg {
        pub(crate) iova_start: u64,
        /// Bus address of the page list's page directory.
        pub(crate) pl_pdir_dma: u64,
        pub(crate) page_shift: u32,
        pub(crate) page_list_len: u32,
        pub(crate) length: u32,
        /// [`access`] bits.
        pub(crate) access_flags: u32,
        pub(crate) rkey: u32,
        pub(crate) reserved: u32,
        /// Past the C member: the rest of the union.
        pub(crate) pad: [u8; 8],
    }

    /// `wr.ud` of a send WQE on a UD (or GSI) QP (exactly the union's 48 bytes).
    #[repr(C)]
    pub(crate) struct SqWrUd {
        pub(crate) remote_qpn: u32,
        pub(crate) remote_qkey: u32,
        pub(crate) av: Av,
    }
}

pod! {
    /// The `wr` union of a send WQE, as raw bytes: build it from a variant with `From`
    /// ([`SqWrRdma`], [`SqWrAtomic`], [`SqWrMaskedCmpSwap`], [`SqWrMaskedFetchAdd`],
    /// [`SqWrFastReg`], [`SqWrUd`]); all zeroes (`Default`) for sends that use none.
    #[repr(C, align(8))]
    pub(crate) struct SqWr {
        pub(crate) raw: [u8; 48],
    }

    /// `struct pvrdma_sq_wqe_hdr`: a send WQE, followed in the ring by `num_sge` [`Sge`]s.
    #[repr(C)]
    pub(crate) struct SqWqeHdr {
        pub(crate) wr_id: u64,
        pub(crate) num_sge: u32,
        pub(crate) total_len: u32,
        /// A [`wr_opcode`].
        pub(crate) opcode: u32,
        /// [`send_flags`] bits.
        pub(crate) send_flags: u32,
        /// Union `ex`: `imm_data` (big-endian, as the verbs layer holds it) or
        /// `invalidate_rkey`.
        pub(crate) ex: u32,
        pub(crate) reserved: u32,
        pub(crate) wr: SqWr,
    }

    /// `struct pvrdma_sge`: a scatter/gather element.
    #[repr(C)]
    pub(crate) struct Sge {
        pub(crate) addr: u64,
        pub(crate) length: u32,
        pub(crate) lkey: u32,
    }

    /// `struct pvrdma_rq_wqe_hdr`: a receive WQE, followed in the ring by `num_sge` [`Sge`]s.
    #[repr(C)]
    pub(crate) struct RqWqeHdr {
        pub(crate) wr_id: u64,
        pub(crate) num_sge: u32,
        pub(crate) total_len: u32,
    }

    /// `struct pvrdma_cqe`: a completion queue element.
    #[repr(C)]
    pub(crate) struct Cqe {
        pub(crate) wr_id: u64,
        /// The QP's handle.
        pub(crate) qp: u64,
        /// A [`wc_opcode`].
        pub(crate) opcode: u32,
        /// A [`wc_status`].
        pub(crate) status: u32,
        pub(crate) byte_len: u32,
        /// Big-endian.
        pub(crate) imm_data: u32,
        pub(crate) src_qp: u32,
        /// [`wc_flags`] bits.
        pub(crate) wc_flags: u32,
        pub(crate) vendor_err: u32,
        pub(crate) pkey_index: u16,
        pub(crate) slid: u16,
        pub(crate) sl: u8,
        pub(crate) dlid_path_bits: u8,
        pub(crate) port_num: u8,
        pub(crate) smac: [u8; 6],
        /// A [`network_type`].
        pub(crate) network_hdr_type: u8,
        pub(crate) reserved2: [u8; 6],
    }
}

/// Offset of the `wr` union in a send WQE.
pub(crate) const SQ_WQE_WR_OFFSET: usize = offset_of!(SqWqeHdr, wr);

impl SqWr {
    /// The union holding `member`, which must be exactly the union's size.
    fn from_member<T: Encode>(member: &T) -> Self {
        const { assert!(size_of::<T>() == size_of::<SqWr>()) };
        let mut wr = Self::default();
        member.encode(&mut wr.raw);
        wr
    }
}

/// Implements `From<$variant> for SqWr` for each variant.
macro_rules! sq_wr_from {
    ($($variant:ty),*) => {$(
        impl From<$variant> for SqWr {
            fn from(member: $variant) -> Self {
                Self::from_member(&member)
            }
        }
    )*};
}

sq_wr_from!(
    SqWrRdma,
    SqWrAtomic,
    SqWrMaskedCmpSwap,
    SqWrMaskedFetchAdd,
    SqWrFastReg,
    SqWrUd
);

// ---------------------------------------------------------------------------------------------
// The C layout (x86-64, clang and gcc agree), checked at build time.
// ---------------------------------------------------------------------------------------------

const _: () = {
    use core::mem::align_of;

    // Embedded structs.
    assert!(size_of::<Gid>() == 16 && align_of::<Gid>() == 8);
    assert!(size_of::<GlobalRoute>() == 24);
    assert!(size_of::<Grh>() == 40);
    assert!(size_of::<AhAttr>() == 40);
    assert!(size_of::<QpCap>() == 24);
    assert!(size_of::<SrqAttr>() == 16);
    assert!(size_of::<QpAttr>() == 160);
    assert!(offset_of!(QpAttr, reserved) == 51);
    assert!(offset_of!(QpAttr, cap) == 56);
    assert!(offset_of!(QpAttr, ah_attr) == 80);
    assert!(offset_of!(QpAttr, alt_ah_attr) == 120);

    // Commands and responses.
    assert!(size_of::<CmdCreateMr>() == 56);
    assert!(size_of::<RespCreateMr>() == 32);
    assert!(size_of::<CmdDestroyMr>() == 24);
    assert!(size_of::<CmdCreateCq>() == 40);
    assert!(size_of::<RespCreateCq>() == 24);
    assert!(size_of::<CmdResizeCq>() == 24);
    assert!(size_of::<RespResizeCq>() == 24);
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

    // Every command fits the request slot, every response the response slot.
    assert!(size_of::<CmdCreateMr>() <= CMD_REQ_SIZE);
    assert!(size_of::<CmdDestroyMr>() <= CMD_REQ_SIZE);
    assert!(size_of::<CmdCreateCq>() <= CMD_REQ_SIZE);
    assert!(size_of::<CmdResizeCq>() <= CMD_REQ_SIZE);
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
    assert!(size_of::<RespResizeCq>() <= CMD_RESP_SIZE);
    assert!(size_of::<RespCreateSrq>() <= CMD_RESP_SIZE);
    assert!(size_of::<RespQuerySrq>() <= CMD_RESP_SIZE);
    assert!(size_of::<RespCreateQp>() <= CMD_RESP_SIZE);
    assert!(size_of::<RespCreateQpV2>() <= CMD_RESP_SIZE);
    assert!(size_of::<RespQueryQp>() <= CMD_RESP_SIZE);
    assert!(size_of::<RespDestroyQp>() <= CMD_RESP_SIZE);

    // User ABI.
    assert!(size_of::<UserCreateCq>() == 16);
    assert!(size_of::<UserCreateCqResp>() == 8);
    assert!(size_of::<UserResizeCq>() == 16);
    assert!(size_of::<UserCreateSrq>() == 16);
    assert!(size_of::<UserCreateSrqResp>() == 8);
    assert!(size_of::<UserCreateQp>() == 32);
    assert!(size_of::<UserCreateQpResp>() == 8);

    // Ring formats; every `wr` variant is exactly the union.
    assert!(size_of::<ExCmpSwap>() == 32);
    assert!(size_of::<ExFetchAdd>() == 16);
    assert!(size_of::<Av>() == 40);
    assert!(size_of::<Sge>() == 16);
    assert!(size_of::<RqWqeHdr>() == 16);
    assert!(size_of::<SqWqeHdr>() == 80);
    assert!(SQ_WQE_WR_OFFSET == 32);
    assert!(size_of::<SqWr>() == 48 && align_of::<SqWr>() == 8);
    assert!(size_of::<SqWrRdma>() == size_of::<SqWr>());
    assert!(size_of::<SqWrAtomic>() == size_of::<SqWr>());
    assert!(size_of::<SqWrMaskedCmpSwap>() == size_of::<SqWr>());
    assert!(size_of::<SqWrMaskedFetchAdd>() == size_of::<SqWr>());
    assert!(size_of::<SqWrFastReg>() == size_of::<SqWr>());
    assert!(size_of::<SqWrUd>() == size_of::<SqWr>());
    assert!(offset_of!(SqWrUd, av) == 8);
    assert!(size_of::<Cqe>() == 64);
    assert!(offset_of!(Cqe, smac) == 51);
    assert!(offset_of!(Cqe, network_hdr_type) == 57);
};
