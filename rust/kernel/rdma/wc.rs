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
    /// The outcome.
    pub status: WcStatus,
    /// What was completed. Must be of the queue the request was posted to (a receive opcode for
    /// a receive, any other for a send): [`WcSink`] fails a successful completion that names
    /// the other queue's, and gives a failed one (whose opcode the consumer may not read) its
    /// queue's.
    pub opcode: WcOpcode,
    /// Vendor error (device specific).
    pub vendor_err: u32,
    /// Bytes transferred: at most what the request's scatter/gather list holds, which
    /// [`WcSink`] enforces (a larger count fails the completion with [`WcStatus::LocLenErr`]),
    /// except for [`WcOpcode::RecvRdmaWithImm`], which counts the bytes of the RDMA write.
    pub byte_len: u32,
    /// Immediate data, in network byte order (with [`WcFlag::WithImm`]), or the invalidated
    /// rkey (with [`WcFlag::WithInvalidate`]).
    pub ex: u32,
    /// Source QP (UD).
    pub src_qp: u32,
    /// Source LID.
    pub slid: u32,
    /// What else the completion carries.
    pub wc_flags: WcFlags,
    /// P_Key index.
    pub pkey_index: u16,
    /// Service level.
    pub sl: u8,
    /// DLID path bits.
    pub dlid_path_bits: u8,
    /// Port number.
    pub port_num: u32,
    /// Source MAC (RoCE, with [`WcFlag::WithSmac`]).
    pub smac: [u8; 6],
    /// VLAN ID (with [`WcFlag::WithVlan`]).
    pub vlan_id: u16,
    /// Network header type (with [`WcFlag::WithNetworkHdrType`]).
    pub network_hdr_type: NetworkType,
}

impl WorkCompletion {
    /// A completion of the work request `wr_id` with `status` and `opcode`; every other field
    /// zero (no flags, an InfiniBand network header type).
    pub fn new(wr_id: WrId, status: WcStatus, opcode: WcOpcode) -> Self {
        Self {
            wr_id,
            status,
            opcode,
            vendor_err: 0,
            byte_len: 0,
            ex: 0,
            src_qp: 0,
            slid: 0,
            wc_flags: WcFlags::default(),
            pkey_index: 0,
            sl: 0,
            dlid_path_bits: 0,
            port_num: 0,
            smac: [0; 6],
            vlan_id: 0,
            network_hdr_type: NetworkType::Ib,
        }
    }
}

/// Defines a `#[repr(u32)]` enum of C values with a checked conversion from the raw value.
macro_rules! c_enum {
    (
        $(#[$meta:meta])*
        pub enum $name:ident: $ty:ty {
            $($(#[$vmeta:meta])* $variant:ident = $value:expr,)+
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        #[repr(u32)]
        pub enum $name {
            $($(#[$vmeta])* $variant = $value as u32,)+
        }

        impl $name {
            /// The value for the C enum's `raw`; `None` if it names none.
            pub fn from_raw(raw: $ty) -> Option<Self> {
                $(if raw == $value as $ty {
                    return Some(Self::$variant);
                })+
                None
            }

            /// The C enum's value.
            pub fn as_raw(self) -> $ty {
                self as u32 as $ty
            }
        }
    };
}

c_enum! {
    /// The outcome of a work request (C's `enum ib_wc_status`).
    pub enum WcStatus: u32 {
        /// Success.
        Success = bindings::ib_wc_status_IB_WC_SUCCESS,
        /// Local length error: the message did not fit the receive buffer, or a send's gather
        /// list was too long.
        LocLenErr = bindings::ib_wc_status_IB_WC_LOC_LEN_ERR,
        /// Local QP operation error.
        LocQpOpErr = bindings::ib_wc_status_IB_WC_LOC_QP_OP_ERR,
        /// Local EE context operation error.
        LocEecOpErr = bindings::ib_wc_status_IB_WC_LOC_EEC_OP_ERR,
        /// Local protection error.
        LocProtErr = bindings::ib_wc_status_IB_WC_LOC_PROT_ERR,
        /// Flushed: the QP went to the error state.
        WrFlushErr = bindings::ib_wc_status_IB_WC_WR_FLUSH_ERR,
        /// Memory window bind error.
        MwBindErr = bindings::ib_wc_status_IB_WC_MW_BIND_ERR,
        /// Bad response.
        BadRespErr = bindings::ib_wc_status_IB_WC_BAD_RESP_ERR,
        /// Local access error.
        LocAccessErr = bindings::ib_wc_status_IB_WC_LOC_ACCESS_ERR,
        /// Remote invalid request.
        RemInvReqErr = bindings::ib_wc_status_IB_WC_REM_INV_REQ_ERR,
        /// Remote access error.
        RemAccessErr = bindings::ib_wc_status_IB_WC_REM_ACCESS_ERR,
        /// Remote operation error.
        RemOpErr = bindings::ib_wc_status_IB_WC_REM_OP_ERR,
        /// Transport retry counter exceeded.
        RetryExcErr = bindings::ib_wc_status_IB_WC_RETRY_EXC_ERR,
        /// RNR retry counter exceeded.
        RnrRetryExcErr = bindings::ib_wc_status_IB_WC_RNR_RETRY_EXC_ERR,
        /// Local RDD violation.
        LocRddViolErr = bindings::ib_wc_status_IB_WC_LOC_RDD_VIOL_ERR,
        /// Remote invalid RD request.
        RemInvRdReqErr = bindings::ib_wc_status_IB_WC_REM_INV_RD_REQ_ERR,
        /// Remote aborted.
        RemAbortErr = bindings::ib_wc_status_IB_WC_REM_ABORT_ERR,
        /// Invalid EE context number.
        InvEecnErr = bindings::ib_wc_status_IB_WC_INV_EECN_ERR,
        /// Invalid EE context state.
        InvEecStateErr = bindings::ib_wc_status_IB_WC_INV_EEC_STATE_ERR,
        /// Fatal error.
        FatalErr = bindings::ib_wc_status_IB_WC_FATAL_ERR,
        /// Response timeout.
        RespTimeoutErr = bindings::ib_wc_status_IB_WC_RESP_TIMEOUT_ERR,
        /// General error.
        GeneralErr = bindings::ib_wc_status_IB_WC_GENERAL_ERR,
    }
}

c_enum! {
    /// What a completion completed (C's `enum ib_wc_opcode`).
    pub enum WcOpcode: u32 {
        /// A send.
        Send = bindings::ib_wc_opcode_IB_WC_SEND,
        /// An RDMA write.
        RdmaWrite = bindings::ib_wc_opcode_IB_WC_RDMA_WRITE,
        /// An RDMA read.
        RdmaRead = bindings::ib_wc_opcode_IB_WC_RDMA_READ,
        /// A compare and swap.
        CompSwap = bindings::ib_wc_opcode_IB_WC_COMP_SWAP,
        /// A fetch and add.
        FetchAdd = bindings::ib_wc_opcode_IB_WC_FETCH_ADD,
        /// A memory window bind.
        BindMw = bindings::ib_wc_opcode_IB_WC_BIND_MW,
        /// A local invalidate.
        LocalInv = bindings::ib_wc_opcode_IB_WC_LOCAL_INV,
        /// A large send offload.
        Lso = bindings::ib_wc_opcode_IB_WC_LSO,
        /// An atomic write.
        AtomicWrite = bindings::ib_wc_opcode_IB_WC_ATOMIC_WRITE,
        /// A fast registration.
        RegMr = bindings::ib_wc_opcode_IB_WC_REG_MR,
        /// A masked compare and swap.
        MaskedCompSwap = bindings::ib_wc_opcode_IB_WC_MASKED_COMP_SWAP,
        /// A masked fetch and add.
        MaskedFetchAdd = bindings::ib_wc_opcode_IB_WC_MASKED_FETCH_ADD,
        /// A flush.
        Flush = bindings::ib_wc_opcode_IB_WC_FLUSH,
        /// A receive.
        Recv = bindings::ib_wc_opcode_IB_WC_RECV,
        /// A receive of an RDMA write with immediate data.
        RecvRdmaWithImm = bindings::ib_wc_opcode_IB_WC_RECV_RDMA_WITH_IMM,
    }
}

impl WcOpcode {
    /// Whether this completes a receive (C's `opcode & IB_WC_RECV`), else a send-queue request.
    pub fn is_recv(self) -> bool {
        self.as_raw() & bindings::ib_wc_opcode_IB_WC_RECV != 0
    }
}

c_enum! {
    /// The network header type of a completion (C's `enum rdma_network_type`).
    pub enum NetworkType: u8 {
        /// InfiniBand (a GRH).
        Ib = bindings::rdma_network_type_RDMA_NETWORK_IB,
        /// RoCE v1 (a GRH over Ethernet).
        RoceV1 = bindings::rdma_network_type_RDMA_NETWORK_ROCE_V1,
        /// RoCE v2 over IPv4.
        Ipv4 = bindings::rdma_network_type_RDMA_NETWORK_IPV4,
        /// RoCE v2 over IPv6.
        Ipv6 = bindings::rdma_network_type_RDMA_NETWORK_IPV6,
    }
}

crate::impl_flags!(
    /// What a completion carries besides its status (C's `enum ib_wc_flags`).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct WcFlags(u32);

    /// One of [`WcFlags`].
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum WcFlag {
        /// A GRH is present.
        Grh = bindings::ib_wc_flags_IB_WC_GRH,
        /// Immediate data is present.
        WithImm = bindings::ib_wc_flags_IB_WC_WITH_IMM,
        /// An rkey was invalidated.
        WithInvalidate = bindings::ib_wc_flags_IB_WC_WITH_INVALIDATE,
        /// The IP checksum was verified.
        IpCsumOk = bindings::ib_wc_flags_IB_WC_IP_CSUM_OK,
        /// The source MAC is present.
        WithSmac = bindings::ib_wc_flags_IB_WC_WITH_SMAC,
        /// The VLAN ID is present.
        WithVlan = bindings::ib_wc_flags_IB_WC_WITH_VLAN,
        /// The network header type is present.
        WithNetworkHdrType = bindings::ib_wc_flags_IB_WC_WITH_NETWORK_HDR_TYPE,
    }
);

impl WcFlags {
    /// The flags of `raw` that name a [`WcFlag`]; other bits are dropped.
    pub fn from_raw_truncate(raw: u32) -> Self {
        Self(raw & Self::all_bits())
    }
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
        if wc.wr_id.qp() != *qp.serial() {
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
        let (status, opcode, byte_len) = Self::checked(&wc);
        let out = self.wc.wrapping_add(self.len);
        // SAFETY: `out` is in bounds (`len < cap`, just checked) and valid for writes (type
        // invariant).
        unsafe {
            out.write(bindings::ib_wc {
                __bindgen_anon_1: bindings::ib_wc__bindgen_ty_1 {
                    wr_id: wc.wr_id.into_raw(),
                },
                status: status.as_raw(),
                opcode: opcode.as_raw(),
                vendor_err: wc.vendor_err,
                byte_len,
                qp: qp.as_raw(),
                ex: bindings::ib_wc__bindgen_ty_2 { imm_data: wc.ex },
                src_qp: wc.src_qp,
                slid: wc.slid,
                wc_flags: u32::from(wc.wc_flags) as i32,
                pkey_index: wc.pkey_index,
                sl: wc.sl,
                dlid_path_bits: wc.dlid_path_bits,
                port_num: wc.port_num,
                smac: wc.smac,
                vlan_id: wc.vlan_id,
                network_hdr_type: wc.network_hdr_type.as_raw(),
            })
        };
        // INVARIANT: The entry at `len` was just filled, and `len < cap` before.
        self.len += 1;
        true
    }

    /// The status, opcode and byte count to report for `wc`: what the driver says, unless it
    /// contradicts the request the completion's ID belongs to.
    ///
    /// Consumers read as many bytes of a receive buffer as `byte_len` says (xprtrdma parses an
    /// RPC reply of that length, the MAD layer a MAD), so a count beyond the request's
    /// scatter/gather list would have them read past their buffer: such a completion fails with
    /// `LOC_LEN_ERR` and no count, what a device reports when a message does not fit. A
    /// successful completion with an opcode of the other queue fails with `GENERAL_ERR`
    /// (consumers tell receives from sends by the opcode); a failed one gets its queue's, as the
    /// opcode of a failed completion is undefined.
    fn checked(wc: &WorkCompletion) -> (WcStatus, WcOpcode, u32) {
        let recv = wc.wr_id.is_recv();
        let mut status = wc.status;
        let mut opcode = wc.opcode;
        let mut byte_len = wc.byte_len;
        if opcode.is_recv() != recv {
            if status == WcStatus::Success {
                crate::pr_warn_once!(
                    "rdma: a completion's opcode is of the other work queue: failed\n"
                );
                status = WcStatus::GeneralErr;
            }
            opcode = if recv { WcOpcode::Recv } else { WcOpcode::Send };
        }
        // An RDMA write with immediate data counts the bytes it wrote into the consumer's
        // memory region, not into the receive request's buffers (which it does not use).
        if byte_len > wc.wr_id.posted_len() && opcode != WcOpcode::RecvRdmaWithImm {
            if status == WcStatus::Success {
                crate::pr_warn_once!(
                    "rdma: a completion counts more bytes than its request's buffers: failed\n"
                );
                status = WcStatus::LocLenErr;
            }
            byte_len = 0;
        }
        (status, opcode, byte_len)
    }
}
