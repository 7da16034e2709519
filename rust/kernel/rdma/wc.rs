// SPDX-License-Identifier: GPL-2.0

//! Work completions: polling and arming a kernel CQ.

use super::{ops::Operations, qp::Qp, wr::WrId, Device};
use crate::bindings;
use core::marker::PhantomData;

/// What a consumer asked to be notified of (C's `enum ib_cq_notify_flags`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NotifyFlags(u32);

impl NotifyFlags {
    /// Whether only solicited completions should raise the next notification (otherwise any).
    pub fn solicited_only(self) -> bool {
        self.0 & bindings::ib_cq_notify_flags_IB_CQ_SOLICITED_MASK
            == bindings::ib_cq_notify_flags_IB_CQ_SOLICITED
    }

    /// Whether the caller wants to know if completions are already waiting.
    pub fn report_missed_events(self) -> bool {
        self.0 & bindings::ib_cq_notify_flags_IB_CQ_REPORT_MISSED_EVENTS != 0
    }

    pub(super) fn from_raw(raw: u32) -> Self {
        Self(raw)
    }
}

/// A work completion, as a driver reports it (C's `struct ib_wc`, without the QP pointer: the
/// driver names the QP by its device handle to [`WcSink::push`]).
///
/// Made with [`WorkCompletion::new`], whose other fields are zero, and struct update syntax.
#[derive(Debug)]
pub struct WorkCompletion {
    /// The ID of the work request completed, which only that request gives (see [`WrId`]).
    pub wr_id: WrId,
    /// C's `enum ib_wc_status` (see [`wc_status`]).
    pub status: u32,
    /// C's `enum ib_wc_opcode` (see [`wc_opcode`]).
    pub opcode: u32,
    /// Vendor error (device specific).
    pub vendor_err: u32,
    /// Bytes transferred.
    pub byte_len: u32,
    /// Immediate data, in network byte order (with `wc_flags::WITH_IMM`), or the invalidated
    /// rkey (with `wc_flags::WITH_INVALIDATE`).
    pub ex: u32,
    /// Source QP (UD).
    pub src_qp: u32,
    /// Source LID.
    pub slid: u32,
    /// C's `IB_WC_*` flags (see [`wc_flags`]).
    pub wc_flags: u32,
    /// P_Key index.
    pub pkey_index: u16,
    /// Service level.
    pub sl: u8,
    /// DLID path bits.
    pub dlid_path_bits: u8,
    /// Port number.
    pub port_num: u32,
    /// Source MAC (RoCE, with `wc_flags::WITH_SMAC`).
    pub smac: [u8; 6],
    /// VLAN ID (with `wc_flags::WITH_VLAN`).
    pub vlan_id: u16,
    /// Network header type (with `wc_flags::WITH_NETWORK_HDR_TYPE`): one of [`network_type`].
    pub network_hdr_type: u8,
}

impl WorkCompletion {
    /// A completion of the work request `wr_id` with `status` (one of [`wc_status`]) and `opcode`
    /// (one of [`wc_opcode`]); every other field zero.
    pub fn new(wr_id: WrId, status: u32, opcode: u32) -> Self {
        Self {
            wr_id,
            status,
            opcode,
            vendor_err: 0,
            byte_len: 0,
            ex: 0,
            src_qp: 0,
            slid: 0,
            wc_flags: 0,
            pkey_index: 0,
            sl: 0,
            dlid_path_bits: 0,
            port_num: 0,
            smac: [0; 6],
            vlan_id: 0,
            network_hdr_type: 0,
        }
    }
}

/// Work completion statuses (C's `enum ib_wc_status`).
pub mod wc_status {
    use crate::bindings;
    /// Success.
    pub const SUCCESS: u32 = bindings::ib_wc_status_IB_WC_SUCCESS;
    /// Flushed: the QP went to the error state.
    pub const WR_FLUSH_ERR: u32 = bindings::ib_wc_status_IB_WC_WR_FLUSH_ERR;
    /// General error.
    pub const GENERAL_ERR: u32 = bindings::ib_wc_status_IB_WC_GENERAL_ERR;
    /// The last status value.
    pub const MAX: u32 = bindings::ib_wc_status_IB_WC_GENERAL_ERR;
}

/// Work completion opcodes (C's `enum ib_wc_opcode`).
pub mod wc_opcode {
    use crate::bindings;
    /// A send.
    pub const SEND: u32 = bindings::ib_wc_opcode_IB_WC_SEND;
    /// An RDMA write.
    pub const RDMA_WRITE: u32 = bindings::ib_wc_opcode_IB_WC_RDMA_WRITE;
    /// An RDMA read.
    pub const RDMA_READ: u32 = bindings::ib_wc_opcode_IB_WC_RDMA_READ;
    /// A compare and swap.
    pub const COMP_SWAP: u32 = bindings::ib_wc_opcode_IB_WC_COMP_SWAP;
    /// A fetch and add.
    pub const FETCH_ADD: u32 = bindings::ib_wc_opcode_IB_WC_FETCH_ADD;
    /// A local invalidate.
    pub const LOCAL_INV: u32 = bindings::ib_wc_opcode_IB_WC_LOCAL_INV;
    /// A fast registration.
    pub const REG_MR: u32 = bindings::ib_wc_opcode_IB_WC_REG_MR;
    /// A receive.
    pub const RECV: u32 = bindings::ib_wc_opcode_IB_WC_RECV;
    /// A receive of an RDMA write with immediate data.
    pub const RECV_RDMA_WITH_IMM: u32 = bindings::ib_wc_opcode_IB_WC_RECV_RDMA_WITH_IMM;
}

/// Work completion flags (C's `enum ib_wc_flags`).
pub mod wc_flags {
    use crate::bindings;
    /// A GRH is present.
    pub const GRH: u32 = bindings::ib_wc_flags_IB_WC_GRH;
    /// Immediate data is present.
    pub const WITH_IMM: u32 = bindings::ib_wc_flags_IB_WC_WITH_IMM;
    /// An rkey was invalidated.
    pub const WITH_INVALIDATE: u32 = bindings::ib_wc_flags_IB_WC_WITH_INVALIDATE;
    /// The source MAC is present.
    pub const WITH_SMAC: u32 = bindings::ib_wc_flags_IB_WC_WITH_SMAC;
    /// The VLAN ID is present.
    pub const WITH_VLAN: u32 = bindings::ib_wc_flags_IB_WC_WITH_VLAN;
    /// The network header type is present.
    pub const WITH_NETWORK_HDR_TYPE: u32 = bindings::ib_wc_flags_IB_WC_WITH_NETWORK_HDR_TYPE;
}

/// The network header type of a completion (C's `enum rdma_network_type`), for
/// [`WorkCompletion::network_hdr_type`].
pub mod network_type {
    use crate::bindings;
    /// InfiniBand (a GRH).
    pub const IB: u8 = bindings::rdma_network_type_RDMA_NETWORK_IB as u8;
    /// RoCE v1 (a GRH over Ethernet).
    pub const ROCE_V1: u8 = bindings::rdma_network_type_RDMA_NETWORK_ROCE_V1 as u8;
    /// RoCE v2 over IPv4.
    pub const IPV4: u8 = bindings::rdma_network_type_RDMA_NETWORK_IPV4 as u8;
    /// RoCE v2 over IPv6.
    pub const IPV6: u8 = bindings::rdma_network_type_RDMA_NETWORK_IPV6 as u8;
}

/// Where `poll_cq` puts work completions: the caller's array of `struct ib_wc`.
///
/// # Invariants
///
/// `wc` points to `cap` writable `struct ib_wc`; `len <= cap` of them are filled. `cq` is the
/// CQ being polled (compared, never dereferenced).
pub struct WcSink<'a, T: Operations> {
    dev: &'a Device<T>,
    cq: *const bindings::ib_cq,
    wc: *mut bindings::ib_wc,
    cap: usize,
    len: usize,
    _p: PhantomData<&'a mut bindings::ib_wc>,
}

impl<'a, T: Operations> WcSink<'a, T> {
    /// A sink for the completions of `cq`, polled into `wc`.
    ///
    /// # Safety
    ///
    /// `wc` must be valid for writing `cap` entries for `'a`.
    pub(super) unsafe fn new(
        dev: &'a Device<T>,
        cq: *const bindings::ib_cq,
        wc: *mut bindings::ib_wc,
        cap: usize,
    ) -> Self {
        Self {
            dev,
            cq,
            wc,
            cap,
            len: 0,
            _p: PhantomData,
        }
    }

    /// Whether there is room for another completion.
    pub fn has_room(&self) -> bool {
        self.len < self.cap
    }

    /// The number of completions written so far.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether nothing was written yet.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Appends the completion `f` makes from the live QP the device knows as `qp_handle`.
    /// Returns `false`, writing nothing, if there is no room, no live QP has that handle (a
    /// completion of a QP destroyed meanwhile, which must be dropped), `f` refuses (returns
    /// `None`: the driver found the completion impossible for that QP), or the completion's
    /// [`WrId`] is not of that QP (see [`WcSink::push_for`]).
    pub fn push(
        &mut self,
        qp_handle: u32,
        f: impl FnOnce(&Qp<T>) -> Option<WorkCompletion>,
    ) -> bool {
        if !self.has_room() {
            return false;
        }
        let dev = self.dev;
        let written = dev.with_qp(qp_handle, |qp: &Qp<T>| {
            let wc = f(qp)?;
            Some(self.write(qp, wc))
        });
        written.flatten().unwrap_or(false)
    }

    /// Appends `wc` as a completion of `qp`, a QP of this device the caller holds (from
    /// [`Device::for_each_qp`]), as a driver does for work it completes itself: a device declared
    /// dead completes nothing, so its driver flushes the outstanding work. Returns `false`,
    /// writing nothing, if there is no room, `qp` belongs to another device, or `wc`'s [`WrId`]
    /// was not posted to `qp` (to another QP, or to a QP destroyed since, perhaps at the same
    /// address or handle: the consumer of `qp` would take it for one of its own pointers) or to a
    /// queue of `qp` that completes on another CQ than the one being polled.
    ///
    /// A refused completion's [`WrId`] is dropped: its request never completes, and its
    /// consumer waits for it (a driver bug, warned of once; nothing reaches a consumer).
    pub fn push_for(&mut self, qp: &Qp<T>, wc: WorkCompletion) -> bool {
        // SAFETY: `qp` is live (type invariant of `Qp`), so its `device` field may be read.
        let same_device = unsafe { (*qp.as_raw()).device } == self.dev.as_raw();
        same_device && self.write(qp, wc)
    }

    /// Fills the next entry with `wc` as a completion of `qp`; `false` if there is no room or
    /// `wc`'s ID was not posted to `qp`, to a queue that completes on the CQ being polled.
    fn write(&mut self, qp: &Qp<T>, wc: WorkCompletion) -> bool {
        if !self.has_room() {
            return false;
        }
        // A QP's serial is never another QP's: an ID of another QP, or of a destroyed one, does
        // not match.
        if wc.wr_id.qp() != qp.serial() {
            crate::pr_warn_once!(
                "rdma: a driver completed a work request on another QP: dropped\n"
            );
            return false;
        }
        // A consumer's handler takes the CQ's context for its own (SRP's reads `cq_context`): a
        // completion goes only to the CQ its queue completes on.
        // SAFETY: `qp` is live (type invariant of `Qp`): its CQ pointers, which the core sets
        // before `create_qp` and does not change while the QP lives, may be read.
        let queue_cq = unsafe {
            let raw = qp.as_raw();
            if wc.wr_id.is_recv() {
                (*raw).recv_cq
            } else {
                (*raw).send_cq
            }
        };
        if !core::ptr::eq(queue_cq.cast_const(), self.cq) {
            crate::pr_warn_once!(
                "rdma: a driver completed a work request on a CQ its queue does not use: dropped\n"
            );
            return false;
        }
        let out = self.wc.wrapping_add(self.len);
        // SAFETY: `out` is in bounds (`len < cap`, just checked) and valid for writes (type
        // invariant).
        unsafe {
            out.write(bindings::ib_wc {
                __bindgen_anon_1: bindings::ib_wc__bindgen_ty_1 {
                    wr_id: wc.wr_id.into_raw(),
                },
                status: wc.status,
                opcode: wc.opcode,
                vendor_err: wc.vendor_err,
                byte_len: wc.byte_len,
                qp: qp.as_raw(),
                ex: bindings::ib_wc__bindgen_ty_2 { imm_data: wc.ex },
                src_qp: wc.src_qp,
                slid: wc.slid,
                wc_flags: wc.wc_flags as i32,
                pkey_index: wc.pkey_index,
                sl: wc.sl,
                dlid_path_bits: wc.dlid_path_bits,
                port_num: wc.port_num,
                smac: wc.smac,
                vlan_id: wc.vlan_id,
                network_hdr_type: wc.network_hdr_type,
            })
        };
        // INVARIANT: The entry at `len` was just filled, and `len < cap` before.
        self.len += 1;
        true
    }
}
