// SPDX-License-Identifier: GPL-2.0-only
//! `ibv_modify_qp`: the QP state machine, with the required and optional
//! attribute masks of each transition (the kernel's `qp_state_table` in
//! `drivers/infiniband/core/verbs.c`, for RC and UD).

use super::limits::{
    mtu_bytes, MAX_QP_INIT_RD_ATOM, MAX_QP_RD_ATOM, PKEY_TABLE_LEN, PORT_MTU, PORT_NUM,
};
use super::qp::QPN_MASK;
use super::wqe::{vendor_err, Completion};
use super::{Engine, Key};
use crate::ffi;

const STATE: u32 = ffi::IBV_QP_STATE;
const CUR_STATE: u32 = ffi::IBV_QP_CUR_STATE;
const SQD_NOTIFY: u32 = ffi::IBV_QP_EN_SQD_ASYNC_NOTIFY;
const ACCESS: u32 = ffi::IBV_QP_ACCESS_FLAGS;
const PKEY: u32 = ffi::IBV_QP_PKEY_INDEX;
const PORT: u32 = ffi::IBV_QP_PORT;
const QKEY: u32 = ffi::IBV_QP_QKEY;
const AV: u32 = ffi::IBV_QP_AV;
const PATH_MTU: u32 = ffi::IBV_QP_PATH_MTU;
const TIMEOUT: u32 = ffi::IBV_QP_TIMEOUT;
const RETRY_CNT: u32 = ffi::IBV_QP_RETRY_CNT;
const RNR_RETRY: u32 = ffi::IBV_QP_RNR_RETRY;
const RQ_PSN: u32 = ffi::IBV_QP_RQ_PSN;
const MAX_QP_RD_ATOMIC: u32 = ffi::IBV_QP_MAX_QP_RD_ATOMIC;
const ALT_PATH: u32 = ffi::IBV_QP_ALT_PATH;
const MIN_RNR_TIMER: u32 = ffi::IBV_QP_MIN_RNR_TIMER;
const SQ_PSN: u32 = ffi::IBV_QP_SQ_PSN;
const MAX_DEST_RD_ATOMIC: u32 = ffi::IBV_QP_MAX_DEST_RD_ATOMIC;
const PATH_MIG_STATE: u32 = ffi::IBV_QP_PATH_MIG_STATE;
const DEST_QPN: u32 = ffi::IBV_QP_DEST_QPN;

/// The (required, optional) attribute masks of the transition `cur` →
/// `next` for `qp_type`, or `None` if the transition is invalid.
pub fn transition_masks(cur: u32, next: u32, qp_type: u32) -> Option<(u32, u32)> {
    use ffi::{
        IBV_QPS_ERR as ERR, IBV_QPS_INIT as INIT, IBV_QPS_RESET as RESET, IBV_QPS_RTR as RTR,
    };
    use ffi::{IBV_QPS_RTS as RTS, IBV_QPS_SQD as SQD, IBV_QPS_SQE as SQE};
    let rc = qp_type == ffi::IBV_QPT_RC;
    let pick = |rc_mask: u32, ud_mask: u32| if rc { rc_mask } else { ud_mask };
    let masks = match (cur, next) {
        (RESET, RESET) => (0, 0),
        (RESET, INIT) => (pick(PKEY | PORT | ACCESS, PKEY | PORT | QKEY), 0),
        (INIT..=ERR, RESET) | (INIT..=ERR, ERR) => (0, 0),
        (INIT, INIT) => (0, pick(PKEY | PORT | ACCESS, PKEY | PORT | QKEY)),
        (INIT, RTR) => (
            pick(
                AV | PATH_MTU | DEST_QPN | RQ_PSN | MAX_DEST_RD_ATOMIC | MIN_RNR_TIMER,
                0,
            ),
            pick(ALT_PATH | ACCESS | PKEY, PKEY | QKEY),
        ),
        (RTR, RTS) => (
            pick(
                TIMEOUT | RETRY_CNT | RNR_RETRY | SQ_PSN | MAX_QP_RD_ATOMIC,
                SQ_PSN,
            ),
            pick(
                CUR_STATE | ALT_PATH | ACCESS | MIN_RNR_TIMER | PATH_MIG_STATE,
                CUR_STATE | QKEY,
            ),
        ),
        (RTS, RTS) | (SQD, RTS) => (
            0,
            pick(
                CUR_STATE | ACCESS | ALT_PATH | PATH_MIG_STATE | MIN_RNR_TIMER,
                CUR_STATE | QKEY,
            ),
        ),
        (RTS, SQD) => (0, SQD_NOTIFY),
        (SQD, SQD) => (
            0,
            pick(
                PORT | AV
                    | TIMEOUT
                    | RETRY_CNT
                    | RNR_RETRY
                    | MAX_QP_RD_ATOMIC
                    | MAX_DEST_RD_ATOMIC
                    | ALT_PATH
                    | ACCESS
                    | PKEY
                    | MIN_RNR_TIMER
                    | PATH_MIG_STATE,
                PKEY | QKEY,
            ),
        ),
        (SQE, RTS) => (0, pick(0, CUR_STATE | QKEY)),
        _ => return None,
    };
    Some(masks)
}

/// Whether `mask` is acceptable for `cur` → `next` (the kernel's
/// `ib_modify_qp_is_ok`).
pub fn mask_is_ok(cur: u32, next: u32, qp_type: u32, mask: u32) -> bool {
    if mask & CUR_STATE != 0
        && !matches!(
            cur,
            ffi::IBV_QPS_RTR | ffi::IBV_QPS_RTS | ffi::IBV_QPS_SQD | ffi::IBV_QPS_SQE
        )
    {
        return false;
    }
    let Some((req, opt)) = transition_masks(cur, next, qp_type) else {
        return false;
    };
    mask & req == req && mask & !(req | opt | STATE) == 0
}

/// QP access flags this device knows.
const QP_ACCESS: u32 = ffi::IBV_ACCESS_LOCAL_WRITE
    | ffi::IBV_ACCESS_REMOTE_WRITE
    | ffi::IBV_ACCESS_REMOTE_READ
    | ffi::IBV_ACCESS_REMOTE_ATOMIC;

impl Engine {
    /// Checks the values of the attributes selected by `mask`.
    fn check_qp_attr_values(&self, attr: &ffi::ibv_qp_attr, mask: u32) -> Result<(), i32> {
        let bad = |cond: bool| if cond { Err(libc::EINVAL) } else { Ok(()) };
        if mask & PKEY != 0 {
            bad(attr.pkey_index >= PKEY_TABLE_LEN)?;
        }
        if mask & PORT != 0 {
            bad(attr.port_num != PORT_NUM)?;
        }
        if mask & ACCESS != 0 {
            bad(attr.qp_access_flags & !QP_ACCESS != 0)?;
        }
        if mask & AV != 0 {
            self.check_ah_attr(&attr.ah_attr)?;
        }
        if mask & ALT_PATH != 0 {
            self.check_ah_attr(&attr.alt_ah_attr)?;
            bad(attr.alt_port_num != PORT_NUM || attr.alt_pkey_index >= PKEY_TABLE_LEN)?;
            bad(attr.alt_timeout > 31)?;
        }
        if mask & PATH_MTU != 0 {
            bad(mtu_bytes(attr.path_mtu).is_none() || attr.path_mtu > PORT_MTU)?;
        }
        if mask & DEST_QPN != 0 {
            bad(attr.dest_qp_num > QPN_MASK)?;
        }
        if mask & MAX_DEST_RD_ATOMIC != 0 {
            bad(u32::from(attr.max_dest_rd_atomic) > MAX_QP_RD_ATOM)?;
        }
        if mask & MAX_QP_RD_ATOMIC != 0 {
            bad(u32::from(attr.max_rd_atomic) > MAX_QP_INIT_RD_ATOM)?;
        }
        if mask & MIN_RNR_TIMER != 0 {
            bad(attr.min_rnr_timer > 31)?;
        }
        if mask & TIMEOUT != 0 {
            bad(attr.timeout > 31)?;
        }
        if mask & RETRY_CNT != 0 {
            bad(attr.retry_cnt > 7)?;
        }
        if mask & RNR_RETRY != 0 {
            bad(attr.rnr_retry > 7)?;
        }
        if mask & PATH_MIG_STATE != 0 {
            bad(attr.path_mig_state > ffi::IBV_MIG_ARMED)?;
        }
        Ok(())
    }

    /// `ibv_modify_qp`.
    pub fn modify_qp(&mut self, qp: Key, attr: &ffi::ibv_qp_attr, mask: u32) -> Result<(), i32> {
        let q = self.qps.get(&qp).ok_or(libc::EINVAL)?;
        let cur = q.state;
        if mask & CUR_STATE != 0 && attr.cur_qp_state != cur {
            return Err(libc::EINVAL);
        }
        let next = if mask & STATE != 0 {
            attr.qp_state
        } else {
            cur
        };
        if next > ffi::IBV_QPS_ERR || !mask_is_ok(cur, next, q.qp_type, mask) {
            return Err(libc::EINVAL);
        }
        self.check_qp_attr_values(attr, mask)?;

        let q = self.qps.get_mut(&qp).ok_or(libc::EINVAL)?;
        let a = &mut q.attr;
        let set = |bit: u32| mask & bit != 0;
        if set(PKEY) {
            a.pkey_index = attr.pkey_index;
        }
        if set(PORT) {
            a.port_num = attr.port_num;
        }
        if set(QKEY) {
            a.qkey = attr.qkey;
        }
        if set(ACCESS) {
            a.qp_access_flags = attr.qp_access_flags;
        }
        if set(AV) {
            a.ah_attr = attr.ah_attr;
        }
        if set(ALT_PATH) {
            a.alt_ah_attr = attr.alt_ah_attr;
            a.alt_port_num = attr.alt_port_num;
            a.alt_pkey_index = attr.alt_pkey_index;
            a.alt_timeout = attr.alt_timeout;
        }
        if set(PATH_MTU) {
            a.path_mtu = attr.path_mtu;
        }
        if set(DEST_QPN) {
            a.dest_qp_num = attr.dest_qp_num;
        }
        if set(RQ_PSN) {
            a.rq_psn = attr.rq_psn & QPN_MASK;
        }
        if set(SQ_PSN) {
            a.sq_psn = attr.sq_psn & QPN_MASK;
        }
        if set(MAX_DEST_RD_ATOMIC) {
            a.max_dest_rd_atomic = attr.max_dest_rd_atomic;
        }
        if set(MAX_QP_RD_ATOMIC) {
            a.max_rd_atomic = attr.max_rd_atomic;
        }
        if set(MIN_RNR_TIMER) {
            a.min_rnr_timer = attr.min_rnr_timer;
        }
        if set(TIMEOUT) {
            a.timeout = attr.timeout;
        }
        if set(RETRY_CNT) {
            a.retry_cnt = attr.retry_cnt;
        }
        if set(RNR_RETRY) {
            a.rnr_retry = attr.rnr_retry;
        }
        if set(PATH_MIG_STATE) {
            a.path_mig_state = attr.path_mig_state;
        }
        if set(SQD_NOTIFY) {
            a.en_sqd_async_notify = attr.en_sqd_async_notify;
        }

        match next {
            ffi::IBV_QPS_RESET => {
                // Work is discarded without completions; attributes restart.
                q.sq.clear();
                q.rq.clear();
                q.inbound = None;
                q.expected_psn = None;
                q.attr = ffi::ibv_qp_attr {
                    cap: q.cap,
                    ..Default::default()
                };
                q.set_state(next);
            }
            ffi::IBV_QPS_ERR if cur != ffi::IBV_QPS_ERR => self.qp_to_error(qp),
            _ => q.set_state(next),
        }
        self.progress();
        Ok(())
    }

    /// Moves a QP to the error state and flushes all its posted work.
    pub fn qp_to_error(&mut self, qp: Key) {
        if let Some(q) = self.qps.get_mut(&qp) {
            q.set_state(ffi::IBV_QPS_ERR);
            q.inbound = None;
            q.expected_psn = None;
        }
        self.flush_sq(qp);
        self.flush_rq(qp);
    }

    /// Moves a UD QP to the send-queue-error state and flushes its sends.
    pub fn qp_to_sqe(&mut self, qp: Key) {
        if let Some(q) = self.qps.get_mut(&qp) {
            q.set_state(ffi::IBV_QPS_SQE);
        }
        self.flush_sq(qp);
    }

    /// Completes every posted send with `IBV_WC_WR_FLUSH_ERR`.
    pub fn flush_sq(&mut self, qp: Key) {
        let Some(q) = self.qps.get_mut(&qp) else {
            return;
        };
        let (cq, qpn) = (q.send_cq, q.qpn);
        let wqes: Vec<_> = q.sq.drain(..).collect();
        for w in wqes {
            self.complete(cq, qp, flush_completion(w.wr_id, w.wc_opcode(), qpn));
        }
    }

    /// Completes every posted receive (of the QP's own RQ) with
    /// `IBV_WC_WR_FLUSH_ERR`.
    pub fn flush_rq(&mut self, qp: Key) {
        let Some(q) = self.qps.get_mut(&qp) else {
            return;
        };
        let (cq, qpn) = (q.recv_cq, q.qpn);
        let wqes: Vec<_> = q.rq.drain(..).collect();
        for w in wqes {
            self.complete(cq, qp, flush_completion(w.wr_id, ffi::IBV_WC_RECV, qpn));
        }
    }
}

/// A flush completion.
pub fn flush_completion(wr_id: u64, opcode: u32, qpn: u32) -> Completion {
    Completion {
        wr_id,
        status: ffi::IBV_WC_WR_FLUSH_ERR,
        opcode,
        vendor_err: vendor_err::FLUSH,
        qp_num: qpn,
        solicited: true,
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ffi::{
        IBV_QPS_ERR, IBV_QPS_INIT, IBV_QPS_RESET, IBV_QPS_RTR, IBV_QPS_RTS, IBV_QPS_SQD,
        IBV_QPS_SQE,
    };
    use ffi::{IBV_QPT_RC as RC, IBV_QPT_UD as UD};

    #[test]
    fn qemu_masks_are_accepted() {
        // rdma_backend_qp_state_init/rtr/rts in QEMU 7.2.
        assert!(mask_is_ok(
            IBV_QPS_RESET,
            IBV_QPS_INIT,
            RC,
            STATE | PKEY | PORT | ACCESS
        ));
        assert!(mask_is_ok(
            IBV_QPS_RESET,
            IBV_QPS_INIT,
            UD,
            STATE | PKEY | PORT | QKEY
        ));
        let rc_rtr = STATE | AV | PATH_MTU | DEST_QPN | RQ_PSN | MAX_DEST_RD_ATOMIC | MIN_RNR_TIMER;
        assert!(mask_is_ok(IBV_QPS_INIT, IBV_QPS_RTR, RC, rc_rtr));
        assert!(mask_is_ok(IBV_QPS_INIT, IBV_QPS_RTR, UD, STATE));
        assert!(mask_is_ok(IBV_QPS_INIT, IBV_QPS_RTR, UD, STATE | QKEY));
        let rc_rts = STATE | SQ_PSN | TIMEOUT | RETRY_CNT | RNR_RETRY | MAX_QP_RD_ATOMIC;
        assert!(mask_is_ok(IBV_QPS_RTR, IBV_QPS_RTS, RC, rc_rts));
        assert!(mask_is_ok(
            IBV_QPS_RTR,
            IBV_QPS_RTS,
            UD,
            STATE | SQ_PSN | QKEY
        ));
    }

    #[test]
    fn invalid_transitions_and_masks() {
        assert!(!mask_is_ok(IBV_QPS_RESET, IBV_QPS_RTR, RC, STATE));
        assert!(!mask_is_ok(IBV_QPS_RESET, IBV_QPS_ERR, RC, STATE));
        assert!(!mask_is_ok(IBV_QPS_INIT, IBV_QPS_RTS, RC, STATE | SQ_PSN));
        assert!(!mask_is_ok(IBV_QPS_ERR, IBV_QPS_RTS, UD, STATE | SQ_PSN));
        // Missing a required attribute.
        assert!(!mask_is_ok(
            IBV_QPS_RESET,
            IBV_QPS_INIT,
            RC,
            STATE | PKEY | PORT
        ));
        // An attribute not allowed for the transition.
        assert!(!mask_is_ok(
            IBV_QPS_RESET,
            IBV_QPS_INIT,
            RC,
            STATE | PKEY | PORT | ACCESS | QKEY
        ));
        assert!(!mask_is_ok(
            IBV_QPS_RTR,
            IBV_QPS_RTS,
            UD,
            STATE | SQ_PSN | AV
        ));
        // CUR_STATE only from RTR/RTS/SQD/SQE.
        assert!(!mask_is_ok(
            IBV_QPS_INIT,
            IBV_QPS_INIT,
            UD,
            STATE | CUR_STATE
        ));
        assert!(mask_is_ok(IBV_QPS_RTS, IBV_QPS_RTS, UD, CUR_STATE | QKEY));
        assert!(mask_is_ok(IBV_QPS_RTS, IBV_QPS_SQD, RC, STATE | SQD_NOTIFY));
        assert!(mask_is_ok(IBV_QPS_SQE, IBV_QPS_RTS, UD, STATE));
        for s in [
            IBV_QPS_INIT,
            IBV_QPS_RTR,
            IBV_QPS_RTS,
            IBV_QPS_SQD,
            IBV_QPS_SQE,
            IBV_QPS_ERR,
        ] {
            assert!(mask_is_ok(s, IBV_QPS_ERR, RC, STATE));
            assert!(mask_is_ok(s, IBV_QPS_RESET, UD, STATE));
        }
    }
}
