// SPDX-License-Identifier: GPL-2.0

//! Queue pairs: creation, modification and query attributes, events.

use super::{
    ah::AhAttr, cq::Cq, mr::AccessFlags, objects::core_object, ops::Operations, srq::Srq,
    table::Users,
};
use crate::{
    bindings,
    error::Result,
    prelude::*,
    sync::atomic::{Atomic, Relaxed},
    types::Opaque,
};
use core::marker::PhantomData;

core_object!(
    /// A live queue pair of driver `T`; dereferences to its data.
    Qp, QpStorage, ib_qp, Qp, drop_data, users: Users = Users::new(),
    serial: QpSerial = QpSerial::next()
);

/// The identity of one QP, which no other QP is ever given (unlike its address or handle, which
/// the next QP may reuse): a work request ID carries the serial of the QP it was posted to (see
/// [`WrId`](super::WrId)), so that it is reported for that QP only, and not after the QP is
/// destroyed.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) struct QpSerial(u64);

impl QpSerial {
    /// A serial no QP had before: one counter for every device, taken once per QP created. At one
    /// creation per nanosecond it would wrap after 584 years.
    fn next() -> Self {
        static NEXT: Atomic<u64> = Atomic::new(0);
        Self(NEXT.fetch_add(1, Relaxed))
    }
}

/// The transport of a QP (C's `enum ib_qp_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QpType {
    /// QP0, subnet management (InfiniBand only).
    Smi,
    /// QP1, general services (MADs).
    Gsi,
    /// Reliable connected.
    Rc,
    /// Unreliable connected.
    Uc,
    /// Unreliable datagram.
    Ud,
    /// Any other type (raw packet, XRC, driver specific), by its C value.
    Other(u32),
}

impl QpType {
    fn from_raw(raw: bindings::ib_qp_type) -> Self {
        match raw {
            bindings::ib_qp_type_IB_QPT_SMI => Self::Smi,
            bindings::ib_qp_type_IB_QPT_GSI => Self::Gsi,
            bindings::ib_qp_type_IB_QPT_RC => Self::Rc,
            bindings::ib_qp_type_IB_QPT_UC => Self::Uc,
            bindings::ib_qp_type_IB_QPT_UD => Self::Ud,
            other => Self::Other(other),
        }
    }

    /// Whether work requests name their destination with an address handle (UD and GSI).
    pub fn is_datagram(self) -> bool {
        matches!(self, Self::Ud | Self::Gsi | Self::Smi)
    }
}

/// The sizes of a QP's queues (C's `struct ib_qp_cap`).
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct QpCap {
    /// Send queue depth.
    pub max_send_wr: u32,
    /// Receive queue depth.
    pub max_recv_wr: u32,
    /// Scatter/gather entries per send work request.
    pub max_send_sge: u32,
    /// Scatter/gather entries per receive work request.
    pub max_recv_sge: u32,
    /// Bytes of inline data per send work request.
    pub max_inline_data: u32,
}

impl QpCap {
    fn from_raw(c: &bindings::ib_qp_cap) -> Self {
        Self {
            max_send_wr: c.max_send_wr,
            max_recv_wr: c.max_recv_wr,
            max_send_sge: c.max_send_sge,
            max_recv_sge: c.max_recv_sge,
            max_inline_data: c.max_inline_data,
        }
    }

    fn write_raw(&self, c: &mut bindings::ib_qp_cap) {
        c.max_send_wr = self.max_send_wr;
        c.max_recv_wr = self.max_recv_wr;
        c.max_send_sge = self.max_send_sge;
        c.max_recv_sge = self.max_recv_sge;
        c.max_inline_data = self.max_inline_data;
    }
}

/// The attributes a QP is created with (C's `struct ib_qp_init_attr`), for driver `T`.
///
/// # Invariants
///
/// Wraps a valid `struct ib_qp_init_attr` for the duration of the create callback, whose CQs
/// (and SRQ, if any) are live objects of driver `T`.
#[repr(transparent)]
pub struct QpInitAttr<T: Operations>(Opaque<bindings::ib_qp_init_attr>, PhantomData<T>);

impl<T: Operations> QpInitAttr<T> {
    /// # Safety
    ///
    /// `ptr` must be valid for reads and writes for `'a`, and its CQs and SRQ live objects of
    /// driver `T`.
    pub(super) unsafe fn from_raw<'a>(ptr: *mut bindings::ib_qp_init_attr) -> &'a mut Self {
        // SAFETY: Transparent wrapper; validity guaranteed by the caller.
        unsafe { &mut *ptr.cast() }
    }

    fn raw(&self) -> &bindings::ib_qp_init_attr {
        // SAFETY: Valid by the type invariant.
        unsafe { &*self.0.get() }
    }

    /// The transport.
    pub fn qp_type(&self) -> QpType {
        QpType::from_raw(self.raw().qp_type)
    }

    /// The CQ of the send queue.
    pub fn send_cq(&self) -> Option<&Cq<T>> {
        let cq = self.raw().send_cq;
        // SAFETY: By the type invariant a non-NULL CQ is a live CQ of driver `T`, held by the
        // core (it counts the QP's use of it) for longer than the callback.
        (!cq.is_null()).then(|| unsafe { Cq::from_raw(cq) })
    }

    /// The CQ of the receive queue.
    pub fn recv_cq(&self) -> Option<&Cq<T>> {
        let cq = self.raw().recv_cq;
        // SAFETY: As in `send_cq`.
        (!cq.is_null()).then(|| unsafe { Cq::from_raw(cq) })
    }

    /// The shared receive queue, if the QP uses one.
    pub fn srq(&self) -> Option<&Srq<T>> {
        let srq = self.raw().srq;
        // SAFETY: As in `send_cq`.
        (!srq.is_null()).then(|| unsafe { Srq::from_raw(srq) })
    }

    /// The queue sizes asked for.
    pub fn cap(&self) -> QpCap {
        QpCap::from_raw(&self.raw().cap)
    }

    /// Reports the queue sizes actually given.
    pub fn set_cap(&mut self, cap: &QpCap) {
        // SAFETY: Valid for writes by the type invariant; `&mut self` is the only access.
        cap.write_raw(unsafe { &mut (*self.0.get()).cap });
    }

    /// Whether every send work request produces a completion (otherwise only signalled ones).
    pub fn sq_sig_all(&self) -> bool {
        self.raw().sq_sig_type == bindings::ib_sig_type_IB_SIGNAL_ALL_WR
    }

    /// Creation flags (C's `IB_QP_CREATE_*`).
    pub fn create_flags(&self) -> u32 {
        self.raw().create_flags
    }

    /// The port (for GSI and SMI QPs).
    pub fn port_num(&self) -> u32 {
        self.raw().port_num
    }
}

/// QP attributes (C's `struct ib_qp_attr`), as a query reports them (a modify gets a
/// [`QpModifyAttr`]).
#[derive(Clone, Copy, Default, Debug)]
pub struct QpAttr {
    /// The current state.
    pub qp_state: QpState,
    /// The current state, again (C reports it in both fields).
    pub cur_qp_state: QpState,
    /// Path MTU (C's `enum ib_mtu`).
    pub path_mtu: u32,
    /// Path migration state.
    pub path_mig_state: u32,
    /// Q_Key (UD).
    pub qkey: u32,
    /// Receive PSN.
    pub rq_psn: u32,
    /// Send PSN.
    pub sq_psn: u32,
    /// Destination QP number.
    pub dest_qp_num: u32,
    /// What remote peers may do.
    pub qp_access_flags: AccessFlags,
    /// Queue sizes.
    pub cap: QpCap,
    /// Primary path.
    pub ah_attr: AhAttr,
    /// Alternate path.
    pub alt_ah_attr: AhAttr,
    /// P_Key index.
    pub pkey_index: u16,
    /// Alternate P_Key index.
    pub alt_pkey_index: u16,
    /// Ask for an event when the send queue drained.
    pub en_sqd_async_notify: u8,
    /// Whether the send queue is draining.
    pub sq_draining: u8,
    /// Outstanding RDMA reads/atomics as initiator.
    pub max_rd_atomic: u8,
    /// Outstanding RDMA reads/atomics as responder.
    pub max_dest_rd_atomic: u8,
    /// RNR NAK timer.
    pub min_rnr_timer: u8,
    /// Port.
    pub port_num: u32,
    /// Local ACK timeout.
    pub timeout: u8,
    /// Retry count.
    pub retry_cnt: u8,
    /// RNR retry count.
    pub rnr_retry: u8,
    /// Alternate port.
    pub alt_port_num: u32,
    /// Alternate local ACK timeout.
    pub alt_timeout: u8,
    /// Rate limit.
    pub rate_limit: u32,
}

/// The alternate path of a QP (the fields of C's `struct ib_qp_attr` that `IB_QP_ALT_PATH`
/// names).
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct QpAltPath {
    /// The address vector.
    pub ah_attr: AhAttr,
    /// P_Key index.
    pub pkey_index: u16,
    /// Port.
    pub port_num: u32,
    /// Local ACK timeout.
    pub timeout: u8,
}

/// The attributes a modify sets (C's `struct ib_qp_attr` with the mask naming them): each is
/// `Some` exactly when the modify's [`QpAttrMask`] names its [`QpAttrFlag`].
///
/// The attributes the mask does not name are not read from C at all: callers set only those
/// the mask names (rdma_cm modifies with an `ib_qp_attr` on its stack), the others may be
/// uninitialised.
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct QpModifyAttr {
    /// The state to move to ([`QpAttrFlag::State`]).
    pub qp_state: Option<QpState>,
    /// The state the consumer believes the QP is in ([`QpAttrFlag::CurState`]).
    pub cur_qp_state: Option<QpState>,
    /// Ask for an event when the send queue drained ([`QpAttrFlag::EnSqdAsyncNotify`]).
    pub en_sqd_async_notify: Option<u8>,
    /// What remote peers may do ([`QpAttrFlag::AccessFlags`]).
    pub qp_access_flags: Option<AccessFlags>,
    /// P_Key index ([`QpAttrFlag::PkeyIndex`]).
    pub pkey_index: Option<u16>,
    /// Port ([`QpAttrFlag::Port`]).
    pub port_num: Option<u32>,
    /// Q_Key, UD ([`QpAttrFlag::Qkey`]).
    pub qkey: Option<u32>,
    /// Primary path ([`QpAttrFlag::Av`]).
    pub ah_attr: Option<AhAttr>,
    /// Path MTU, C's `enum ib_mtu` ([`QpAttrFlag::PathMtu`]).
    pub path_mtu: Option<u32>,
    /// Local ACK timeout ([`QpAttrFlag::Timeout`]).
    pub timeout: Option<u8>,
    /// Retry count ([`QpAttrFlag::RetryCnt`]).
    pub retry_cnt: Option<u8>,
    /// RNR retry count ([`QpAttrFlag::RnrRetry`]).
    pub rnr_retry: Option<u8>,
    /// Receive PSN ([`QpAttrFlag::RqPsn`]).
    pub rq_psn: Option<u32>,
    /// Outstanding RDMA reads/atomics as initiator ([`QpAttrFlag::MaxQpRdAtomic`]).
    pub max_rd_atomic: Option<u8>,
    /// Alternate path ([`QpAttrFlag::AltPath`]).
    pub alt_path: Option<QpAltPath>,
    /// RNR NAK timer ([`QpAttrFlag::MinRnrTimer`]).
    pub min_rnr_timer: Option<u8>,
    /// Send PSN ([`QpAttrFlag::SqPsn`]).
    pub sq_psn: Option<u32>,
    /// Outstanding RDMA reads/atomics as responder ([`QpAttrFlag::MaxDestRdAtomic`]).
    pub max_dest_rd_atomic: Option<u8>,
    /// Path migration state ([`QpAttrFlag::PathMigState`]).
    pub path_mig_state: Option<u32>,
    /// Queue sizes ([`QpAttrFlag::Cap`]).
    pub cap: Option<QpCap>,
    /// Destination QP number ([`QpAttrFlag::DestQpn`]).
    pub dest_qp_num: Option<u32>,
}

impl QpModifyAttr {
    /// The attributes of a modify with `mask`, read from `a`: only the fields `mask` names are
    /// read. A state or access flags the mask names must be valid ones, or the modify is
    /// refused with `EINVAL`.
    ///
    /// # Safety
    ///
    /// For the duration of the call, the fields of `*a` that `mask` names (all of `ah_attr` and
    /// `cap` if named, the four `alt_*` fields for [`QpAttrFlag::AltPath`]) must be valid for
    /// reads and initialised. The other fields may be uninitialised.
    pub(super) unsafe fn from_raw(
        a: *const bindings::ib_qp_attr,
        mask: QpAttrMask,
    ) -> Result<Self> {
        // The field `$field` of `*a` if the mask names `$flag`. Only that field is read, through
        // a raw place: no reference to the whole struct, whose other fields may be
        // uninitialised, is formed.
        macro_rules! read {
            ($flag:ident, $field:ident) => {
                if mask.contains(QpAttrFlag::$flag) {
                    // SAFETY: The mask names the field, so the caller guarantees it is valid for
                    // reads and initialised; `&raw const` only computes its address.
                    Some(unsafe { (&raw const (*a).$field).read() })
                } else {
                    None
                }
            };
        }
        let state = |raw: Option<u32>| raw.map(|s| QpState::from_raw(s).ok_or(EINVAL)).transpose();
        let access = read!(AccessFlags, qp_access_flags)
            .map(|f| AccessFlags::from_raw(f as u32).ok_or(EINVAL))
            .transpose()?;
        let ah_attr = mask.contains(QpAttrFlag::Av).then(|| {
            // SAFETY: The mask names the address vector, so the caller guarantees all of it is
            // initialised (the core's address vectors are built whole: zeroed, then set); the
            // reference is to that field only, not to the whole `*a`.
            AhAttr::from_raw(unsafe { &(*a).ah_attr })
        });
        let alt_path = mask.contains(QpAttrFlag::AltPath).then(|| {
            // SAFETY: The mask names the alternate path, so the caller guarantees its four
            // fields are initialised, as `ah_attr` above; only they are read (the reference is
            // to `alt_ah_attr` only).
            unsafe {
                QpAltPath {
                    ah_attr: AhAttr::from_raw(&(*a).alt_ah_attr),
                    pkey_index: (&raw const (*a).alt_pkey_index).read(),
                    port_num: (&raw const (*a).alt_port_num).read(),
                    timeout: (&raw const (*a).alt_timeout).read(),
                }
            }
        });
        Ok(Self {
            qp_state: state(read!(State, qp_state))?,
            cur_qp_state: state(read!(CurState, cur_qp_state))?,
            en_sqd_async_notify: read!(EnSqdAsyncNotify, en_sqd_async_notify),
            qp_access_flags: access,
            pkey_index: read!(PkeyIndex, pkey_index),
            port_num: read!(Port, port_num),
            qkey: read!(Qkey, qkey),
            ah_attr,
            path_mtu: read!(PathMtu, path_mtu),
            timeout: read!(Timeout, timeout),
            retry_cnt: read!(RetryCnt, retry_cnt),
            rnr_retry: read!(RnrRetry, rnr_retry),
            rq_psn: read!(RqPsn, rq_psn),
            max_rd_atomic: read!(MaxQpRdAtomic, max_rd_atomic),
            alt_path,
            min_rnr_timer: read!(MinRnrTimer, min_rnr_timer),
            sq_psn: read!(SqPsn, sq_psn),
            max_dest_rd_atomic: read!(MaxDestRdAtomic, max_dest_rd_atomic),
            path_mig_state: read!(PathMigState, path_mig_state),
            cap: read!(Cap, cap).map(|c| QpCap::from_raw(&c)),
            dest_qp_num: read!(DestQpn, dest_qp_num),
        })
    }
}

impl QpAttr {
    pub(super) fn write_raw(&self, a: &mut bindings::ib_qp_attr) {
        a.qp_state = self.qp_state.as_raw();
        a.cur_qp_state = self.cur_qp_state.as_raw();
        a.path_mtu = self.path_mtu;
        a.path_mig_state = self.path_mig_state;
        a.qkey = self.qkey;
        a.rq_psn = self.rq_psn;
        a.sq_psn = self.sq_psn;
        a.dest_qp_num = self.dest_qp_num;
        a.qp_access_flags = self.qp_access_flags.as_raw() as i32;
        self.cap.write_raw(&mut a.cap);
        self.ah_attr.write_raw(&mut a.ah_attr);
        self.alt_ah_attr.write_raw(&mut a.alt_ah_attr);
        a.pkey_index = self.pkey_index;
        a.alt_pkey_index = self.alt_pkey_index;
        a.en_sqd_async_notify = self.en_sqd_async_notify;
        a.sq_draining = self.sq_draining;
        a.max_rd_atomic = self.max_rd_atomic;
        a.max_dest_rd_atomic = self.max_dest_rd_atomic;
        a.min_rnr_timer = self.min_rnr_timer;
        a.port_num = self.port_num;
        a.timeout = self.timeout;
        a.retry_cnt = self.retry_cnt;
        a.rnr_retry = self.rnr_retry;
        a.alt_port_num = self.alt_port_num;
        a.alt_timeout = self.alt_timeout;
        a.rate_limit = self.rate_limit;
    }
}

/// What `query_qp` reports: the attributes, and the creation attributes that can be queried.
#[derive(Clone, Copy, Default, Debug)]
pub struct QpQuery {
    /// The current attributes.
    pub attr: QpAttr,
    /// The queue sizes (also reported as creation attributes).
    pub init_cap: QpCap,
    /// Whether every send work request is signalled.
    pub sq_sig_all: bool,
}

/// The state of a QP (C's `enum ib_qp_state`).
#[derive(Clone, Copy, PartialEq, Eq, Default, Debug)]
#[repr(u32)]
pub enum QpState {
    /// Reset: no work, no completions.
    #[default]
    Reset = bindings::ib_qp_state_IB_QPS_RESET,
    /// Initialised: receives may be posted.
    Init = bindings::ib_qp_state_IB_QPS_INIT,
    /// Ready to receive.
    Rtr = bindings::ib_qp_state_IB_QPS_RTR,
    /// Ready to send.
    Rts = bindings::ib_qp_state_IB_QPS_RTS,
    /// Send queue drained.
    Sqd = bindings::ib_qp_state_IB_QPS_SQD,
    /// Send queue error.
    Sqe = bindings::ib_qp_state_IB_QPS_SQE,
    /// Error: outstanding work is flushed.
    Err = bindings::ib_qp_state_IB_QPS_ERR,
}

impl QpState {
    /// The state C's value `raw` names, if any.
    pub fn from_raw(raw: u32) -> Option<Self> {
        [
            Self::Reset,
            Self::Init,
            Self::Rtr,
            Self::Rts,
            Self::Sqd,
            Self::Sqe,
            Self::Err,
        ]
        .into_iter()
        .find(|s| s.as_raw() == raw)
    }

    /// The C value.
    pub const fn as_raw(self) -> u32 {
        self as u32
    }

    /// Whether send work requests may be posted (from RTS on; in SQD, SQE and ERR they complete
    /// with errors or wait, as the device decides).
    pub fn may_send(self) -> bool {
        matches!(self, Self::Rts | Self::Sqd | Self::Sqe | Self::Err)
    }
}

crate::impl_flags!(
    /// Which attributes a modify sets ([`QpModifyAttr`]) or a query concerns (C's
    /// `enum ib_qp_attr_mask`, the attributes of the IB spec).
    #[derive(Clone, Copy, Default, PartialEq, Eq, Debug)]
    pub struct QpAttrMask(u32);

    /// One attribute of a QP (C's `IB_QP_*`).
    #[derive(Clone, Copy, PartialEq, Eq, Debug)]
    pub enum QpAttrFlag {
        /// `qp_state`.
        State = bindings::ib_qp_attr_mask_IB_QP_STATE,
        /// `cur_qp_state`.
        CurState = bindings::ib_qp_attr_mask_IB_QP_CUR_STATE,
        /// `en_sqd_async_notify`.
        EnSqdAsyncNotify = bindings::ib_qp_attr_mask_IB_QP_EN_SQD_ASYNC_NOTIFY,
        /// `qp_access_flags`.
        AccessFlags = bindings::ib_qp_attr_mask_IB_QP_ACCESS_FLAGS,
        /// `pkey_index`.
        PkeyIndex = bindings::ib_qp_attr_mask_IB_QP_PKEY_INDEX,
        /// `port_num`.
        Port = bindings::ib_qp_attr_mask_IB_QP_PORT,
        /// `qkey`.
        Qkey = bindings::ib_qp_attr_mask_IB_QP_QKEY,
        /// `ah_attr`.
        Av = bindings::ib_qp_attr_mask_IB_QP_AV,
        /// `path_mtu`.
        PathMtu = bindings::ib_qp_attr_mask_IB_QP_PATH_MTU,
        /// `timeout`.
        Timeout = bindings::ib_qp_attr_mask_IB_QP_TIMEOUT,
        /// `retry_cnt`.
        RetryCnt = bindings::ib_qp_attr_mask_IB_QP_RETRY_CNT,
        /// `rnr_retry`.
        RnrRetry = bindings::ib_qp_attr_mask_IB_QP_RNR_RETRY,
        /// `rq_psn`.
        RqPsn = bindings::ib_qp_attr_mask_IB_QP_RQ_PSN,
        /// `max_rd_atomic`.
        MaxQpRdAtomic = bindings::ib_qp_attr_mask_IB_QP_MAX_QP_RD_ATOMIC,
        /// `alt_ah_attr`, `alt_pkey_index`, `alt_port_num`, `alt_timeout`.
        AltPath = bindings::ib_qp_attr_mask_IB_QP_ALT_PATH,
        /// `min_rnr_timer`.
        MinRnrTimer = bindings::ib_qp_attr_mask_IB_QP_MIN_RNR_TIMER,
        /// `sq_psn`.
        SqPsn = bindings::ib_qp_attr_mask_IB_QP_SQ_PSN,
        /// `max_dest_rd_atomic`.
        MaxDestRdAtomic = bindings::ib_qp_attr_mask_IB_QP_MAX_DEST_RD_ATOMIC,
        /// `path_mig_state`.
        PathMigState = bindings::ib_qp_attr_mask_IB_QP_PATH_MIG_STATE,
        /// `cap`.
        Cap = bindings::ib_qp_attr_mask_IB_QP_CAP,
        /// `dest_qp_num`.
        DestQpn = bindings::ib_qp_attr_mask_IB_QP_DEST_QPN,
    }
);

impl QpAttrMask {
    /// The mask C's `raw` is, if it names only attributes of the IB spec (the extensions, such
    /// as `IB_QP_RATE_LIMIT`, are not offered).
    pub fn from_raw(raw: u32) -> Option<Self> {
        (raw & !Self::all_bits() == 0).then_some(Self(raw))
    }

    /// The attributes of the IB spec that C's `raw` names; other bits are dropped.
    pub fn from_raw_truncate(raw: u32) -> Self {
        Self(raw & Self::all_bits())
    }

    /// The C value.
    pub fn as_raw(self) -> u32 {
        self.0
    }
}

/// Whether the IB spec allows moving a QP of type `qp_type` from state `cur` to `next` with the
/// attributes in `mask` (C's `ib_modify_qp_is_ok()`).
///
/// # Examples
///
/// ```
/// use kernel::rdma::{modify_qp_is_ok, QpAttrFlag, QpAttrMask, QpState, QpType};
///
/// // Any QP can go from ERR back to RESET.
/// assert!(modify_qp_is_ok(QpState::Err, QpState::Reset, QpType::Ud, QpAttrMask::empty()));
/// // RESET -> INIT of a UD QP needs its P_Key index, port and Q_Key.
/// let init = QpAttrFlag::State | QpAttrFlag::PkeyIndex | QpAttrFlag::Port | QpAttrFlag::Qkey;
/// assert!(modify_qp_is_ok(QpState::Reset, QpState::Init, QpType::Ud, init));
/// assert!(!modify_qp_is_ok(QpState::Reset, QpState::Init, QpType::Ud, QpAttrFlag::State.into()));
/// // Types outside the core's table are refused, not looked up.
/// let none = QpAttrMask::empty();
/// assert!(!modify_qp_is_ok(QpState::Err, QpState::Reset, QpType::Other(0xff), none));
/// assert!(!modify_qp_is_ok(QpState::Err, QpState::Reset, QpType::Other(0x1000), none));
/// // Only the IB spec's attributes make a mask.
/// assert_eq!(QpAttrMask::from_raw(1 << 25), None);
/// ```
pub fn modify_qp_is_ok(cur: QpState, next: QpState, qp_type: QpType, mask: QpAttrMask) -> bool {
    let raw_type = match qp_type {
        QpType::Smi => bindings::ib_qp_type_IB_QPT_SMI,
        QpType::Gsi => bindings::ib_qp_type_IB_QPT_GSI,
        QpType::Rc => bindings::ib_qp_type_IB_QPT_RC,
        QpType::Uc => bindings::ib_qp_type_IB_QPT_UC,
        QpType::Ud => bindings::ib_qp_type_IB_QPT_UD,
        // The core's table has a column per type below `IB_QPT_MAX` (XRC included); other
        // values (`IB_QPT_DRIVER`, the reserved ones) are not in it.
        QpType::Other(t) if t < bindings::ib_qp_type_IB_QPT_MAX => t,
        QpType::Other(_) => return false,
    };
    // SAFETY: A pure function of its arguments; the states (typed) and the type (checked above)
    // are in range, which its table lookup needs.
    unsafe { bindings::ib_modify_qp_is_ok(cur.as_raw(), next.as_raw(), raw_type, mask.as_raw()) }
}

/// An asynchronous event about a QP (C's `enum ib_event_type`, the QP subset).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum QpEvent {
    /// Fatal error.
    Fatal = bindings::ib_event_type_IB_EVENT_QP_FATAL,
    /// Invalid request on the responder side.
    ReqErr = bindings::ib_event_type_IB_EVENT_QP_REQ_ERR,
    /// Access error on the responder side.
    AccessErr = bindings::ib_event_type_IB_EVENT_QP_ACCESS_ERR,
    /// Communication established.
    CommEst = bindings::ib_event_type_IB_EVENT_COMM_EST,
    /// The send queue drained.
    SqDrained = bindings::ib_event_type_IB_EVENT_SQ_DRAINED,
    /// Path migrated.
    PathMig = bindings::ib_event_type_IB_EVENT_PATH_MIG,
    /// Path migration failed.
    PathMigErr = bindings::ib_event_type_IB_EVENT_PATH_MIG_ERR,
    /// The last WQE of a QP on an SRQ was reached.
    LastWqeReached = bindings::ib_event_type_IB_EVENT_QP_LAST_WQE_REACHED,
}

impl QpEvent {
    /// The QP event C's `raw` is; `None` for any other event type.
    pub fn from_raw(raw: u32) -> Option<Self> {
        [
            Self::Fatal,
            Self::ReqErr,
            Self::AccessErr,
            Self::CommEst,
            Self::SqDrained,
            Self::PathMig,
            Self::PathMigErr,
            Self::LastWqeReached,
        ]
        .into_iter()
        .find(|event| *event as u32 == raw)
    }
}

impl<T: Operations> Qp<T> {
    /// The QP number.
    pub fn qp_num(&self) -> u32 {
        // SAFETY: The QP is live (type invariant); `qp_num` is set at creation.
        unsafe { (*self.as_raw()).qp_num }
    }

    /// The transport.
    pub fn qp_type(&self) -> QpType {
        // SAFETY: The QP is live (type invariant); the type never changes.
        QpType::from_raw(unsafe { (*self.as_raw()).qp_type })
    }

    /// Reports an asynchronous event to the QP's consumer. Returns whether it was delivered (not
    /// if the consumer has no handler). May be called from interrupt context.
    pub fn dispatch_event(&self, event: QpEvent) -> bool {
        let qp = self.as_raw();
        // SAFETY: The object is live (type invariant); its device, handler and context are fixed
        // while it lives, and the element names it.
        unsafe {
            super::event::deliver(
                (*qp).device,
                (*qp).event_handler,
                (*qp).qp_context,
                event as u32,
                |e| e.qp = qp,
            )
        }
    }
}

#[cfg(CONFIG_RUST_INFINIBAND_KUNIT_TEST)]
#[macros::kunit_tests(rust_rdma_modify_qp_attr)]
mod tests {
    use super::*;
    use core::mem::MaybeUninit;

    /// Garbage as a consumer's stack holds it: no QP state, MTU or set of access flags.
    const GARBAGE: u8 = 0xad;

    /// The attributes of a modify with `mask`, in an `ib_qp_attr` that `set` writes the named
    /// fields of and whose other bytes are [`GARBAGE`]. (Garbage rather than uninitialised
    /// memory: were an unnamed field read, the test would see it, where reading uninitialised
    /// memory would be undefined.)
    fn modify(
        mask: QpAttrMask,
        set: impl FnOnce(&mut bindings::ib_qp_attr),
    ) -> Result<QpModifyAttr> {
        let mut named = bindings::ib_qp_attr::default();
        set(&mut named);
        let mut a = MaybeUninit::<bindings::ib_qp_attr>::uninit();
        let p = a.as_mut_ptr();
        // SAFETY: `p` is valid for writes of one `ib_qp_attr`, which the writes fill (garbage,
        // then the named fields); so every field `from_raw` may read is initialised.
        unsafe {
            p.write_bytes(GARBAGE, 1);
            if mask.contains(QpAttrFlag::State) {
                (&raw mut (*p).qp_state).write(named.qp_state);
            }
            if mask.contains(QpAttrFlag::CurState) {
                (&raw mut (*p).cur_qp_state).write(named.cur_qp_state);
            }
            if mask.contains(QpAttrFlag::AccessFlags) {
                (&raw mut (*p).qp_access_flags).write(named.qp_access_flags);
            }
            if mask.contains(QpAttrFlag::PkeyIndex) {
                (&raw mut (*p).pkey_index).write(named.pkey_index);
            }
            if mask.contains(QpAttrFlag::Port) {
                (&raw mut (*p).port_num).write(named.port_num);
            }
            if mask.contains(QpAttrFlag::Av) {
                (&raw mut (*p).ah_attr).write(named.ah_attr);
            }
            QpModifyAttr::from_raw(p, mask)
        }
    }

    /// A modify reads the fields its mask names and nothing else: garbage in the others (an
    /// invalid state, an unknown MTU, access flags no right has) neither refuses the modify nor
    /// reaches the driver.
    #[test]
    fn unnamed_fields_are_not_read() {
        let attr = modify(QpAttrFlag::PkeyIndex.into(), |a| a.pkey_index = 3);
        let pkey_only = QpModifyAttr {
            pkey_index: Some(3),
            ..Default::default()
        };
        assert_eq!(attr, Ok(pkey_only));

        // RESET -> INIT of an RC QP.
        let mask =
            QpAttrFlag::State | QpAttrFlag::PkeyIndex | QpAttrFlag::Port | QpAttrFlag::AccessFlags;
        let attr = modify(mask, |a| {
            a.qp_state = bindings::ib_qp_state_IB_QPS_INIT;
            a.pkey_index = 0;
            a.port_num = 1;
            a.qp_access_flags = bindings::ib_access_flags_IB_ACCESS_REMOTE_WRITE as i32;
        });
        let init = QpModifyAttr {
            qp_state: Some(QpState::Init),
            pkey_index: Some(0),
            port_num: Some(1),
            qp_access_flags: AccessFlags::from_raw(
                bindings::ib_access_flags_IB_ACCESS_REMOTE_WRITE,
            ),
            ..Default::default()
        };
        assert_eq!(attr, Ok(init));

        // A path: the primary one, not the alternate one.
        let attr = modify(QpAttrFlag::Av.into(), |a| {
            a.ah_attr.type_ = bindings::rdma_ah_attr_type_RDMA_AH_ATTR_TYPE_ROCE;
            a.ah_attr.sl = 2;
        });
        let av_only = QpModifyAttr {
            ah_attr: Some(AhAttr {
                sl: 2,
                roce: true,
                ..Default::default()
            }),
            ..Default::default()
        };
        assert_eq!(attr, Ok(av_only));
    }

    /// A state or access flags the mask names are still checked.
    #[test]
    fn named_invalid_values_are_refused() {
        let bad_state = |a: &mut bindings::ib_qp_attr| {
            a.qp_state = 0xdead;
            a.cur_qp_state = 0xdead;
        };
        assert_eq!(modify(QpAttrFlag::State.into(), bad_state), Err(EINVAL));
        assert_eq!(modify(QpAttrFlag::CurState.into(), bad_state), Err(EINVAL));
        let unknown_right = |a: &mut bindings::ib_qp_attr| a.qp_access_flags = 1 << 15;
        assert_eq!(
            modify(QpAttrFlag::AccessFlags.into(), unknown_right),
            Err(EINVAL)
        );
    }
}
