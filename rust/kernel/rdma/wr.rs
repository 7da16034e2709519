// SPDX-License-Identifier: GPL-2.0

//! Work requests that kernel consumers post to QPs (C's `struct ib_send_wr` and
//! `struct ib_recv_wr` chains).

use super::{
    ah::Ah,
    mr::{AccessFlags, Mr},
    ops::Operations,
    qp::{Qp, QpSerial},
};
use crate::bindings;
use core::{cell::Cell, marker::PhantomData};

/// The ID of a posted work request, to report in the request's completion.
///
/// Kernel consumers take the ID of a completion for a pointer (a `struct ib_cqe *`, whose `done`
/// the core calls), so a driver must report exactly the IDs it was posted, each at most once, as
/// completions of the QP they were posted to, and only IDs of requests the consumer was told
/// were posted. An ID is obtained only by consuming the work request it belongs to
/// ([`SendWr::into_wr_id`], [`RecvWr::into_wr_id`]), which posts the request: the post's
/// trampoline tells the consumer that exactly the requests whose IDs were taken were posted,
/// whatever the driver returns. It is neither `Copy` nor `Clone`: safe code can neither make one
/// up nor report one request twice. It carries the serial of its QP, which no other QP ever
/// has, and the queue it was posted to: [`WcSink`](super::WcSink) refuses it as a completion of
/// any other QP, including one created after its QP was destroyed, and on any CQ but the one
/// that queue completes on.
///
/// # Invariants
///
/// `raw` is the `wr_id` of a work request as a consumer posted it to this driver's QP whose
/// serial is `qp`, to its receive queue if `recv` (else its send queue), and the consumer was
/// told that request was posted; each posting of a request yields one `WrId`. `posted_len` is
/// the sum of the lengths of the request's scatter/gather entries, saturated at `u32::MAX`.
#[derive(Debug)]
pub struct WrId {
    raw: u64,
    qp: QpSerial,
    recv: bool,
    posted_len: u32,
}

impl WrId {
    /// The ID as the consumer gave it, for a completion to be written.
    pub(super) fn into_raw(self) -> u64 {
        self.raw
    }

    /// The serial of the QP the request was posted to.
    pub(super) fn qp(&self) -> QpSerial {
        self.qp
    }

    /// Whether the request was posted to the QP's receive queue (else its send queue).
    pub(super) fn is_recv(&self) -> bool {
        self.recv
    }

    /// The bytes the request's scatter/gather list holds (saturated at `u32::MAX`): the most a
    /// completion of it may count.
    pub(super) fn posted_len(&self) -> u32 {
        self.posted_len
    }
}

/// How far the driver consumed the chain of work requests of one post: the first request whose
/// ID it did not take (NULL once it took them all). The post's trampoline owns it and tells the
/// consumer from it which requests were posted; the chain's iterator ([`SendWrs`], [`RecvWrs`])
/// and the requests it yields borrow it.
///
/// # Invariants
///
/// The chain's requests before the one it holds are exactly those whose IDs were taken.
pub(super) struct PostProgress<W>(Cell<*const W>);

impl<W> PostProgress<W> {
    /// The progress of a post of the chain starting at `first` (NULL or a valid chain), before
    /// the driver sees it.
    pub(super) fn new(first: *const W) -> Self {
        // INVARIANT: No ID was taken, and no request comes before `first`.
        Self(Cell::new(first))
    }

    /// The first request of the chain whose ID was not taken; NULL if every ID was.
    pub(super) fn first_untaken(&self) -> *const W {
        self.0.get()
    }
}

/// The bytes a scatter/gather list holds, saturated at `u32::MAX`.
fn sges_len(sges: &[Sge]) -> u32 {
    let len: u64 = sges.iter().map(|sge| u64::from(sge.length)).sum();
    u32::try_from(len).unwrap_or(u32::MAX)
}

/// A scatter/gather entry (C's `struct ib_sge`).
#[repr(C)]
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct Sge {
    /// Address (as the MR maps it).
    pub addr: u64,
    /// Length in bytes.
    pub length: u32,
    /// Local key of the MR.
    pub lkey: u32,
}

const _: () = {
    assert!(core::mem::size_of::<Sge>() == core::mem::size_of::<bindings::ib_sge>());
    assert!(core::mem::offset_of!(Sge, lkey) == core::mem::offset_of!(bindings::ib_sge, lkey));
};

/// The scatter/gather list of a work request.
///
/// # Safety
///
/// `list` must point to `num` valid entries (or be anything if `num <= 0`), for `'a`.
unsafe fn sge_slice<'a>(list: *const bindings::ib_sge, num: i32) -> &'a [Sge] {
    if num <= 0 || list.is_null() {
        return &[];
    }
    // SAFETY: `Sge` has the layout of `ib_sge` (checked above); the caller guarantees `num`
    // valid entries, which the consumer does not change while the post runs.
    unsafe { core::slice::from_raw_parts(list.cast::<Sge>(), num as usize) }
}

/// What a send work request does (C's `enum ib_wr_opcode`, the opcodes of the IB spec).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(u32)]
pub enum WrOpcode {
    /// RDMA write.
    RdmaWrite = bindings::ib_wr_opcode_IB_WR_RDMA_WRITE,
    /// RDMA write with immediate data.
    RdmaWriteWithImm = bindings::ib_wr_opcode_IB_WR_RDMA_WRITE_WITH_IMM,
    /// Send.
    Send = bindings::ib_wr_opcode_IB_WR_SEND,
    /// Send with immediate data.
    SendWithImm = bindings::ib_wr_opcode_IB_WR_SEND_WITH_IMM,
    /// RDMA read.
    RdmaRead = bindings::ib_wr_opcode_IB_WR_RDMA_READ,
    /// Atomic compare and swap.
    AtomicCmpAndSwp = bindings::ib_wr_opcode_IB_WR_ATOMIC_CMP_AND_SWP,
    /// Atomic fetch and add.
    AtomicFetchAndAdd = bindings::ib_wr_opcode_IB_WR_ATOMIC_FETCH_AND_ADD,
    /// Send with invalidate.
    SendWithInv = bindings::ib_wr_opcode_IB_WR_SEND_WITH_INV,
    /// Local invalidate.
    LocalInv = bindings::ib_wr_opcode_IB_WR_LOCAL_INV,
    /// Fast registration of an MR.
    RegMr = bindings::ib_wr_opcode_IB_WR_REG_MR,
}

impl WrOpcode {
    /// The opcode C's value `raw` names, if it is one of these.
    pub fn from_raw(raw: u32) -> Option<Self> {
        [
            Self::RdmaWrite,
            Self::RdmaWriteWithImm,
            Self::Send,
            Self::SendWithImm,
            Self::RdmaRead,
            Self::AtomicCmpAndSwp,
            Self::AtomicFetchAndAdd,
            Self::SendWithInv,
            Self::LocalInv,
            Self::RegMr,
        ]
        .into_iter()
        .find(|op| *op as u32 == raw)
    }

    /// Whether the request carries immediate data.
    pub fn has_imm(self) -> bool {
        matches!(self, Self::SendWithImm | Self::RdmaWriteWithImm)
    }
}

crate::impl_flags!(
    /// How a send work request is to be carried out (C's `enum ib_send_flags`).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct SendFlags(u32);

    /// One of [`SendFlags`].
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub enum SendFlag {
        /// Wait for earlier RDMA reads and atomics.
        Fence = bindings::ib_send_flags_IB_SEND_FENCE as u32,
        /// Produce a completion.
        Signaled = bindings::ib_send_flags_IB_SEND_SIGNALED as u32,
        /// Solicited event at the receiver.
        Solicited = bindings::ib_send_flags_IB_SEND_SOLICITED as u32,
        /// Data inline in the work request.
        Inline = bindings::ib_send_flags_IB_SEND_INLINE as u32,
        /// IP checksum offload.
        IpCsum = bindings::ib_send_flags_IB_SEND_IP_CSUM as u32,
    }
);

/// The remote side of an RDMA read or write.
#[derive(Clone, Copy, Debug)]
pub struct RdmaFields {
    /// Remote address.
    pub remote_addr: u64,
    /// Remote key.
    pub rkey: u32,
}

/// The operands of an atomic operation.
#[derive(Clone, Copy, Debug)]
pub struct AtomicFields {
    /// Remote address.
    pub remote_addr: u64,
    /// Compare (CAS) or add (FAA) operand.
    pub compare_add: u64,
    /// Swap operand (CAS).
    pub swap: u64,
    /// Remote key.
    pub rkey: u32,
}

/// The destination of a datagram send.
pub struct UdFields<'a, T: Operations> {
    /// The address handle.
    pub ah: &'a Ah<T>,
    /// Destination QP number.
    pub remote_qpn: u32,
    /// Destination Q_Key.
    pub remote_qkey: u32,
}

/// A fast registration of an MR.
pub struct RegFields<'a, T: Operations> {
    /// The MR.
    pub mr: &'a Mr<T>,
    /// The new key.
    pub key: u32,
    /// Access rights.
    pub access: AccessFlags,
}

/// A send work request of driver `T`'s QP.
///
/// # Invariants
///
/// Wraps a valid `struct ib_send_wr` of a post to a live QP (`datagram` if of a datagram type),
/// embedded in the container struct its opcode calls for (as the verbs API requires): an
/// `ib_ud_wr` for a send on a datagram QP. (Other opcodes posted to a datagram QP are not in
/// one: the core's drain posts a stack `ib_rdma_wr` whatever the QP's type.)
///
/// It is the first request of its post's chain whose ID was not taken (`progress` holds it), and
/// `qp` is the serial of the QP of the post.
pub struct SendWr<'a, T: Operations> {
    raw: &'a bindings::ib_send_wr,
    datagram: bool,
    qp: QpSerial,
    progress: &'a PostProgress<bindings::ib_send_wr>,
    _p: PhantomData<T>,
}

impl<'a, T: Operations> SendWr<'a, T> {
    /// The container struct `C` (`ib_rdma_wr`, `ib_ud_wr`, ...) whose head the request is.
    ///
    /// # Safety
    ///
    /// The opcode and the QP's type must say that the consumer embedded the request in a `C`
    /// (the type invariant then guarantees it did).
    unsafe fn container<C>(&self) -> &'a C {
        // SAFETY: Guaranteed by the caller: the request is the first field of a live `C`.
        unsafe { &*core::ptr::from_ref::<bindings::ib_send_wr>(self.raw).cast::<C>() }
    }

    /// The ID to report in the request's completion; consumes the request, of which the
    /// driver takes everything else first.
    ///
    /// Taking the ID posts the request: the consumer is told it was posted (even if the post
    /// then fails), and waits for its completion. A driver takes it once nothing can fail any
    /// more, and keeps it until it reports the completion.
    pub fn into_wr_id(self) -> WrId {
        // INVARIANT: `self` is the first request whose ID was not taken (type invariant), and
        // now its ID is: the first untaken is the next one.
        self.progress.0.set(self.raw.next);
        // INVARIANT: The consumer will be told that the request was posted (the trampoline
        // reports the requests before `progress` as posted), to the QP whose serial is `qp`;
        // `self` is consumed, and `SendWrs` yields each request of a post once.
        WrId {
            // SAFETY: Both union members are 64-bit values; reading the integer is always valid.
            raw: unsafe { self.raw.__bindgen_anon_1.wr_id },
            qp: self.qp,
            recv: false,
            posted_len: sges_len(self.sges()),
        }
    }

    /// The opcode; `None` for one beyond the IB spec's (LSO, memory windows, driver-specific),
    /// which no driver is offered.
    pub fn opcode(&self) -> Option<WrOpcode> {
        WrOpcode::from_raw(self.raw.opcode)
    }

    /// The send flags; bits that name no [`SendFlag`] (the range C reserves for drivers'
    /// own flags, which no driver is offered) are dropped.
    pub fn send_flags(&self) -> SendFlags {
        SendFlags(self.raw.send_flags as u32 & SendFlags::all_bits())
    }

    /// The scatter/gather list.
    pub fn sges(&self) -> &'a [Sge] {
        // SAFETY: The consumer passes `num_sge` valid entries (type invariant).
        unsafe { sge_slice(self.raw.sg_list, self.raw.num_sge) }
    }

    /// The number of scatter/gather entries as the consumer gave it (may be negative: invalid).
    pub fn num_sge(&self) -> i32 {
        self.raw.num_sge
    }

    /// Immediate data in network byte order, or the rkey to invalidate (same field).
    pub fn ex(&self) -> u32 {
        // SAFETY: Both union members are 32-bit integers.
        unsafe { self.raw.ex.imm_data }
    }

    /// The remote side, for RDMA reads and writes.
    pub fn rdma(&self) -> Option<RdmaFields> {
        use WrOpcode::*;
        if self.datagram || !matches!(self.opcode()?, RdmaWrite | RdmaWriteWithImm | RdmaRead) {
            return None;
        }
        // SAFETY: By the type invariant an RDMA work request is the head of an `ib_rdma_wr`.
        let r: &bindings::ib_rdma_wr = unsafe { self.container() };
        Some(RdmaFields {
            remote_addr: r.remote_addr,
            rkey: r.rkey,
        })
    }

    /// The operands, for atomics.
    pub fn atomic(&self) -> Option<AtomicFields> {
        use WrOpcode::*;
        if self.datagram || !matches!(self.opcode()?, AtomicCmpAndSwp | AtomicFetchAndAdd) {
            return None;
        }
        // SAFETY: By the type invariant an atomic work request is the head of an
        // `ib_atomic_wr`.
        let a: &bindings::ib_atomic_wr = unsafe { self.container() };
        Some(AtomicFields {
            remote_addr: a.remote_addr,
            compare_add: a.compare_add,
            swap: a.swap,
            rkey: a.rkey,
        })
    }

    /// The destination, for sends on datagram QPs. `None` for other opcodes, or if the AH is
    /// missing.
    pub fn ud(&self) -> Option<UdFields<'a, T>> {
        use WrOpcode::*;
        if !self.datagram || !matches!(self.opcode()?, Send | SendWithImm) {
            return None;
        }
        // SAFETY: By the type invariant a send on a datagram QP is the head of an `ib_ud_wr`.
        let u: &bindings::ib_ud_wr = unsafe { self.container() };
        if u.ah.is_null() {
            return None;
        }
        Some(UdFields {
            // SAFETY: The consumer holds the AH, an AH of this device (driver `T`), for the
            // duration of the post.
            ah: unsafe { Ah::from_raw(u.ah) },
            remote_qpn: u.remote_qpn,
            remote_qkey: u.remote_qkey,
        })
    }

    /// The MR, its new key and its access rights, for fast registrations (`None` also for
    /// rights the IB core does not define).
    pub fn reg(&self) -> Option<RegFields<'a, T>> {
        if self.datagram || self.opcode()? != WrOpcode::RegMr {
            return None;
        }
        // SAFETY: By the type invariant a REG_MR work request is the head of an `ib_reg_wr`.
        let r: &bindings::ib_reg_wr = unsafe { self.container() };
        if r.mr.is_null() {
            return None;
        }
        Some(RegFields {
            // SAFETY: The consumer holds the MR, one of this device's, for the post.
            mr: unsafe { Mr::from_raw(r.mr) },
            key: r.key,
            access: AccessFlags::from_raw(r.access as u32)?,
        })
    }
}

/// The chain of send work requests of one post.
///
/// Yields the next request only once the ID of the one before was taken: the requests whose IDs
/// the driver takes are always the first ones of the chain, and the iteration ends at the first
/// request dropped without its ID taken.
///
/// # Invariants
///
/// `next` is NULL or a request of the valid chain of `progress`, for `'a`: either the first whose
/// ID was not taken, or the one after it (that request was yielded). `qp` is the serial of the
/// QP of the post, which is `datagram` if of a datagram type.
pub struct SendWrs<'a, T: Operations> {
    next: *const bindings::ib_send_wr,
    datagram: bool,
    qp: QpSerial,
    progress: &'a PostProgress<bindings::ib_send_wr>,
    _p: PhantomData<(&'a bindings::ib_send_wr, T)>,
}

impl<'a, T: Operations> SendWrs<'a, T> {
    /// # Safety
    ///
    /// `first` must be NULL or a valid chain of work requests for `'a`, posted to `qp`, each
    /// embedded as the verbs API requires; `progress` must be new, of the same chain.
    pub(super) unsafe fn new(
        first: *const bindings::ib_send_wr,
        qp: &Qp<T>,
        progress: &'a PostProgress<bindings::ib_send_wr>,
    ) -> Self {
        // INVARIANT: `first` is the first request whose ID was not taken (`progress` is new).
        Self {
            next: first,
            datagram: qp.qp_type().is_datagram(),
            qp: *qp.serial(),
            progress,
            _p: PhantomData,
        }
    }
}

impl<'a, T: Operations> Iterator for SendWrs<'a, T> {
    type Item = SendWr<'a, T>;

    fn next(&mut self) -> Option<Self::Item> {
        // Past the end, or the request yielded last still has its ID (it may be dropped): a
        // valid chain ends in NULL, so the request after the first untaken is not that one.
        if self.next.is_null() || self.next != self.progress.first_untaken() {
            return None;
        }
        // SAFETY: The chain is valid for `'a` (type invariant).
        let raw = unsafe { &*self.next };
        // INVARIANT: `raw` was the first untaken request and is yielded, so `next` is the one
        // after it.
        self.next = raw.next;
        // INVARIANT: `raw` is the first request whose ID was not taken (checked above).
        Some(SendWr {
            raw,
            datagram: self.datagram,
            qp: self.qp,
            progress: self.progress,
            _p: PhantomData,
        })
    }
}

/// A receive work request.
///
/// # Invariants
///
/// Wraps a valid `struct ib_recv_wr` of a post in progress, the first of its chain whose ID was
/// not taken (`progress` holds it); `qp` is the serial of the QP of the post.
pub struct RecvWr<'a> {
    raw: &'a bindings::ib_recv_wr,
    qp: QpSerial,
    progress: &'a PostProgress<bindings::ib_recv_wr>,
}

impl<'a> RecvWr<'a> {
    /// The ID to report in the request's completion; consumes the request, of which the
    /// driver takes everything else first.
    ///
    /// Taking the ID posts the request, as [`SendWr::into_wr_id`] does.
    pub fn into_wr_id(self) -> WrId {
        // INVARIANT: As in `SendWr::into_wr_id`.
        self.progress.0.set(self.raw.next);
        // INVARIANT: As in `SendWr::into_wr_id`.
        WrId {
            // SAFETY: Both union members are 64-bit values.
            raw: unsafe { self.raw.__bindgen_anon_1.wr_id },
            qp: self.qp,
            recv: true,
            posted_len: sges_len(self.sges()),
        }
    }

    /// The scatter/gather list.
    pub fn sges(&self) -> &'a [Sge] {
        // SAFETY: The consumer passes `num_sge` valid entries (type invariant).
        unsafe { sge_slice(self.raw.sg_list, self.raw.num_sge) }
    }

    /// The number of scatter/gather entries as the consumer gave it.
    pub fn num_sge(&self) -> i32 {
        self.raw.num_sge
    }
}

/// The chain of receive work requests of one post.
///
/// Yields the next request only once the ID of the one before was taken, as [`SendWrs`] does.
///
/// # Invariants
///
/// As for [`SendWrs`]: `next` is NULL or a request of the valid chain of `progress`, for `'a`,
/// either the first whose ID was not taken or the one after it; `qp` is the serial of the QP of
/// the post.
pub struct RecvWrs<'a> {
    next: *const bindings::ib_recv_wr,
    qp: QpSerial,
    progress: &'a PostProgress<bindings::ib_recv_wr>,
}

impl<'a> RecvWrs<'a> {
    /// # Safety
    ///
    /// `first` must be NULL or a valid chain of work requests for `'a`, posted to the QP whose
    /// serial is `qp`; `progress` must be new, of the same chain.
    pub(super) unsafe fn new(
        first: *const bindings::ib_recv_wr,
        qp: QpSerial,
        progress: &'a PostProgress<bindings::ib_recv_wr>,
    ) -> Self {
        // INVARIANT: `first` is the first request whose ID was not taken (`progress` is new).
        Self {
            next: first,
            qp,
            progress,
        }
    }
}

impl<'a> Iterator for RecvWrs<'a> {
    type Item = RecvWr<'a>;

    fn next(&mut self) -> Option<Self::Item> {
        // As in `SendWrs::next`.
        if self.next.is_null() || self.next != self.progress.first_untaken() {
            return None;
        }
        // SAFETY: The chain is valid for `'a` (type invariant).
        let raw = unsafe { &*self.next };
        // INVARIANT: As in `SendWrs::next`.
        self.next = raw.next;
        // INVARIANT: As in `SendWrs::next`.
        Some(RecvWr {
            raw,
            qp: self.qp,
            progress: self.progress,
        })
    }
}
