// SPDX-License-Identifier: GPL-2.0-only
//! Work requests as the engine keeps them, and the completions it produces.

use crate::ffi;
use pvrdma_fabric::Gid;

/// One scatter/gather element (`struct ibv_sge`), copied at post time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sge {
    /// Address in the MR's iova space.
    pub addr: u64,
    /// Length in bytes.
    pub length: u32,
    /// Local key of the MR.
    pub lkey: u32,
}

/// Where the bytes of a send come from.
#[derive(Clone, Debug)]
pub enum Payload {
    /// Gathered from registered memory when the WR executes.
    Sges(Vec<Sge>),
    /// Copied at post time (`IBV_SEND_INLINE`).
    Inline(Vec<u8>),
}

impl Payload {
    /// Total length in bytes.
    pub fn byte_len(&self) -> u64 {
        match self {
            Payload::Sges(s) => s.iter().map(|s| u64::from(s.length)).sum(),
            Payload::Inline(d) => d.len() as u64,
        }
    }
}

/// The address vector of a UD send, copied from the AH at post time.
#[derive(Clone, Copy, Debug)]
pub struct UdDest {
    /// Destination GID.
    pub dgid: Gid,
    /// Source GID index.
    pub sgid_index: u8,
    /// GRH hop limit.
    pub hop_limit: u8,
    /// GRH traffic class.
    pub traffic_class: u8,
    /// GRH flow label.
    pub flow_label: u32,
    /// Service level.
    pub sl: u8,
    /// Destination QP number.
    pub remote_qpn: u32,
    /// Q_Key (high bit set: use the sender QP's Q_Key).
    pub remote_qkey: u32,
}

/// A posted send work request.
#[derive(Clone, Debug)]
pub struct SendWqe {
    /// Caller's id, returned in the completion.
    pub wr_id: u64,
    /// `IBV_WR_*`.
    pub opcode: u32,
    /// Generates a completion on success.
    pub signaled: bool,
    /// `IBV_SEND_SOLICITED`.
    pub solicited: bool,
    /// Immediate data (network order, as posted), or for LOCAL_INV and
    /// SEND_WITH_INV the key to invalidate (`invalidate_rkey`, the same
    /// field of `struct ibv_send_wr`).
    pub imm_data: u32,
    /// A fast registration's fields ([`super::fast_reg::WR_REG_MR`]).
    pub reg: Option<super::fast_reg::RegMr>,
    /// Local data.
    pub payload: Payload,
    /// Remote address of an RDMA operation.
    pub remote_addr: u64,
    /// Remote key of an RDMA operation.
    pub rkey: u32,
    /// UD destination.
    pub ud: Option<UdDest>,
    /// RC: nobody answered this request; it fails with
    /// `IBV_WC_RETRY_EXC_ERR` once this instant has passed (see
    /// [`super::retry`]).
    pub retry_deadline: Option<std::time::Instant>,
    /// RC to a QP of another process: where the request stands
    /// ([`super::remote`]).
    pub remote: Option<RemoteWait>,
    /// RC to a QP of another process: the message's sequence number, given
    /// when it is first sent and kept when it is sent again.
    pub psn: Option<u32>,
}

/// An RC request to another process, waiting at the head of its send queue.
#[derive(Clone, Debug)]
pub enum RemoteWait {
    /// Sent; at the head of the queue, it fails with
    /// `IBV_WC_RETRY_EXC_ERR` if no answer has come by `deadline`.
    Sent {
        /// When the requester gives up.
        deadline: std::time::Instant,
        /// An RDMA READ's response data so far.
        read: Vec<u8>,
    },
    /// The responder had no receive posted (RNR NAK): send it (and the
    /// messages behind it) again then.
    Rnr {
        /// When to send again.
        resend_at: std::time::Instant,
    },
}

impl SendWqe {
    /// The completion opcode of this request.
    pub fn wc_opcode(&self) -> u32 {
        match self.opcode {
            ffi::IBV_WR_RDMA_WRITE | ffi::IBV_WR_RDMA_WRITE_WITH_IMM => ffi::IBV_WC_RDMA_WRITE,
            ffi::IBV_WR_RDMA_READ => ffi::IBV_WC_RDMA_READ,
            ffi::IBV_WR_LOCAL_INV => ffi::IBV_WC_LOCAL_INV,
            super::fast_reg::WR_REG_MR => super::fast_reg::WC_REG_MR,
            _ => ffi::IBV_WC_SEND,
        }
    }
}

/// A posted receive work request.
#[derive(Clone, Debug)]
pub struct RecvWqe {
    /// Caller's id, returned in the completion.
    pub wr_id: u64,
    /// Receive buffers.
    pub sges: Vec<Sge>,
}

/// Vendor error codes this device puts in `ibv_wc.vendor_err` of error
/// completions (documented in the README).
pub mod vendor_err {
    /// No MR with this lkey/rkey.
    pub const BAD_KEY: u32 = 0x10;
    /// The MR belongs to another PD.
    pub const PD_MISMATCH: u32 = 0x11;
    /// The MR (or QP) lacks the access right.
    pub const ACCESS: u32 = 0x12;
    /// The SGE or remote range is outside the MR.
    pub const BOUNDS: u32 = 0x13;
    /// The message is longer than the transport allows.
    pub const MSG_TOO_LONG: u32 = 0x14;
    /// The receive buffers are too small for the message.
    pub const RECV_TOO_SMALL: u32 = 0x15;
    /// No responder answered (unknown GID/QP, wrong state, not connected).
    pub const NO_RESPONDER: u32 = 0x20;
    /// The responder rejected the request (its receive WQE failed).
    pub const RESPONDER_ERROR: u32 = 0x21;
    /// Flushed because the QP is in the error state.
    pub const FLUSH: u32 = 0x30;
    /// Dropped because its CQ overflowed.
    pub const CQ_OVERFLOW: u32 = 0x31;
}

/// A work completion, converted to `struct ibv_wc` by `poll_cq`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Completion {
    /// The WR's id.
    pub wr_id: u64,
    /// `IBV_WC_*` status.
    pub status: u32,
    /// `IBV_WC_*` opcode.
    pub opcode: u32,
    /// See [`vendor_err`].
    pub vendor_err: u32,
    /// Bytes transferred (received bytes, GRH included for UD).
    pub byte_len: u32,
    /// Immediate data (network order).
    pub imm_data: u32,
    /// Local QP number.
    pub qp_num: u32,
    /// Remote QP number.
    pub src_qp: u32,
    /// `IBV_WC_GRH`, `IBV_WC_WITH_IMM`.
    pub wc_flags: u32,
    /// Service level.
    pub sl: u8,
    /// Solicited (for `req_notify_cq(cq, 1)`): receive of a solicited
    /// message, or any error.
    pub solicited: bool,
}

impl Completion {
    /// The C view.
    pub fn to_wc(&self) -> ffi::ibv_wc {
        ffi::ibv_wc {
            wr_id: self.wr_id,
            status: self.status,
            opcode: self.opcode,
            vendor_err: self.vendor_err,
            byte_len: self.byte_len,
            __bindgen_anon_1: ffi::ibv_wc__bindgen_ty_1 {
                imm_data: self.imm_data,
            },
            qp_num: self.qp_num,
            src_qp: self.src_qp,
            wc_flags: self.wc_flags,
            pkey_index: 0,
            slid: 0,
            sl: self.sl,
            dlid_path_bits: 0,
        }
    }
}
