// SPDX-License-Identifier: GPL-2.0-only
//! Queue pairs: creation, destruction, queries.

use super::limits::{MAX_INLINE_DATA, MAX_QP, MAX_QP_WR, MAX_SGE};
use super::wqe::{RecvWqe, SendWqe};
use super::{Engine, Key};
use crate::cobj::CObj;
use crate::ffi;
use std::collections::VecDeque;

/// The first QP number handed out (0 and 1 are the special QPs).
pub const FIRST_QPN: u32 = 0x11;
/// QP numbers are 24 bits; 0xffffff is the multicast QPN.
pub const QPN_MASK: u32 = 0x00ff_ffff;

/// What `ibv_create_qp` asked for, validated.
pub struct QpRequest {
    /// PD.
    pub pd: Key,
    /// Send CQ.
    pub send_cq: Key,
    /// Receive CQ.
    pub recv_cq: Key,
    /// SRQ, if receives come from one.
    pub srq: Option<Key>,
    /// `IBV_QPT_RC` or `IBV_QPT_UD`.
    pub qp_type: u32,
    /// Requested capacities.
    pub cap: ffi::ibv_qp_cap,
    /// Every send generates a completion.
    pub sq_sig_all: bool,
    /// Caller's context pointer.
    pub qp_context: *mut libc::c_void,
}

/// A queue pair.
pub struct Qp {
    /// The `struct ibv_qp` handed out.
    pub obj: CObj<ffi::ibv_qp>,
    /// Owning context.
    pub ctx: Key,
    /// PD.
    pub pd: Key,
    /// Send CQ.
    pub send_cq: Key,
    /// Receive CQ.
    pub recv_cq: Key,
    /// SRQ.
    pub srq: Option<Key>,
    /// `IBV_QPT_*`.
    pub qp_type: u32,
    /// QP number.
    pub qpn: u32,
    /// `IBV_QPS_*`.
    pub state: u32,
    /// Current attributes (what `ibv_query_qp` returns).
    pub attr: ffi::ibv_qp_attr,
    /// Actual capacities.
    pub cap: ffi::ibv_qp_cap,
    /// Every send generates a completion.
    pub sq_sig_all: bool,
    /// Posted sends not yet executed, oldest first; the head may be waiting
    /// for a receive at the responder (RNR).
    pub sq: VecDeque<SendWqe>,
    /// Posted receives (unused with an SRQ).
    pub rq: VecDeque<RecvWqe>,
    /// A message from a QP of another process, partly received.
    pub inbound: Option<super::remote::Inbound>,
    /// Requester: the sequence number of the next message to another
    /// process (consecutive per QP).
    pub next_psn: u32,
    /// Responder: the sequence number of the next message taken from
    /// another process (`None` until the first one, whose number it takes).
    pub expected_psn: Option<u32>,
}

impl Qp {
    /// Whether the receive side accepts incoming messages.
    pub fn can_receive(&self) -> bool {
        matches!(
            self.state,
            ffi::IBV_QPS_RTR | ffi::IBV_QPS_RTS | ffi::IBV_QPS_SQD | ffi::IBV_QPS_SQE
        )
    }

    /// Sets the state (also in the C struct, as libibverbs does).
    pub fn set_state(&mut self, state: u32) {
        self.state = state;
        self.attr.qp_state = state;
        self.attr.cur_qp_state = state;
        self.obj.update(|q| q.state = state);
    }
}

impl Engine {
    /// The lowest QP number not in use. Numbers are reused, as a device with a QP table does:
    /// rdma-core's vmw_pvrdma provider and Linux's C driver index tables of `max_qp` entries
    /// with the QP number (the device's QP handle before version 20), so numbers must stay
    /// below `FIRST_QPN + max_qp`.
    fn fresh_qpn(&mut self) -> u32 {
        (FIRST_QPN..QPN_MASK)
            .find(|n| !self.qp_by_num.contains_key(n))
            .unwrap_or(QPN_MASK)
    }

    /// `ibv_create_qp`; `req.cap` is updated to the actual capacities.
    pub fn create_qp(&mut self, req: &mut QpRequest) -> Result<*mut ffi::ibv_qp, i32> {
        let pd = self.pds.get(&req.pd).ok_or(libc::EINVAL)?;
        let (ctx, context, pd_ptr) = (pd.ctx, pd.obj.get().context, pd.obj.as_ptr());
        if req.qp_type != ffi::IBV_QPT_RC && req.qp_type != ffi::IBV_QPT_UD {
            return Err(libc::EOPNOTSUPP);
        }
        let cq_ptr = |k: Key| match self.cqs.get(&k) {
            Some(c) if c.ctx == ctx => Ok(c.obj.as_ptr()),
            _ => Err(libc::EINVAL),
        };
        let (scq, rcq) = (cq_ptr(req.send_cq)?, cq_ptr(req.recv_cq)?);
        let srq_ptr = match req.srq {
            None => std::ptr::null_mut(),
            Some(s) => match self.srqs.get(&s) {
                Some(s) if s.ctx == ctx => s.obj.as_ptr(),
                _ => return Err(libc::EINVAL),
            },
        };
        let c = &mut req.cap;
        if c.max_send_wr > MAX_QP_WR
            || c.max_send_sge > MAX_SGE
            || c.max_inline_data > MAX_INLINE_DATA
        {
            return Err(libc::EINVAL);
        }
        if req.srq.is_some() {
            // Receive capacities are the SRQ's.
            c.max_recv_wr = 0;
            c.max_recv_sge = 0;
        } else if c.max_recv_wr > MAX_QP_WR || c.max_recv_sge > MAX_SGE {
            return Err(libc::EINVAL);
        }
        // Rounded up like hardware does, so a zero request still allows one SGE.
        c.max_send_sge = c.max_send_sge.max(1);
        if req.srq.is_none() {
            c.max_recv_sge = c.max_recv_sge.max(1);
        }
        if self.qps.len() >= MAX_QP as usize {
            return Err(libc::ENOMEM);
        }
        let qpn = self.fresh_qpn();
        let handle = self.new_handle();
        let obj = CObj::new(ffi::ibv_qp {
            context,
            qp_context: req.qp_context,
            pd: pd_ptr,
            send_cq: scq,
            recv_cq: rcq,
            srq: srq_ptr,
            handle,
            qp_num: qpn,
            state: ffi::IBV_QPS_RESET,
            qp_type: req.qp_type,
            ..Default::default()
        });
        let ptr = obj.as_ptr();
        let attr = ffi::ibv_qp_attr {
            cap: *c,
            ..Default::default()
        };
        let qp = Qp {
            obj,
            ctx,
            pd: req.pd,
            send_cq: req.send_cq,
            recv_cq: req.recv_cq,
            srq: req.srq,
            qp_type: req.qp_type,
            qpn,
            state: ffi::IBV_QPS_RESET,
            attr,
            cap: *c,
            sq_sig_all: req.sq_sig_all,
            sq: VecDeque::new(),
            rq: VecDeque::new(),
            inbound: None,
            next_psn: 0,
            expected_psn: None,
        };
        self.qp_by_num.insert(qpn, qp.obj.key());
        self.qps.insert(qp.obj.key(), qp);
        self.pd_use(req.pd, 1);
        for cq in [req.send_cq, req.recv_cq] {
            if let Some(c) = self.cqs.get_mut(&cq) {
                c.users += 1;
            }
        }
        if let Some(s) = req.srq.and_then(|s| self.srqs.get_mut(&s)) {
            s.users += 1;
        }
        Ok(ptr)
    }

    /// `ibv_destroy_qp`: pending work is discarded without completions and
    /// the QP's completions still in its CQs are removed (as hardware
    /// providers clean their CQs); senders waiting on it see it vanish.
    pub fn destroy_qp(&mut self, qp: Key) -> Result<(), i32> {
        if !self.qps.contains_key(&qp) {
            return Err(libc::EINVAL);
        }
        self.release_qp(qp);
        self.progress();
        Ok(())
    }

    /// Removes a QP and its references.
    pub fn release_qp(&mut self, qp: Key) {
        let Some(q) = self.qps.remove(&qp) else {
            return;
        };
        self.qp_by_num.remove(&q.qpn);
        self.pd_use(q.pd, -1);
        for cq in [q.send_cq, q.recv_cq] {
            self.purge_completions(cq, q.qpn);
            if let Some(c) = self.cqs.get_mut(&cq) {
                c.users = c.users.saturating_sub(1);
            }
        }
        if let Some(s) = q.srq.and_then(|s| self.srqs.get_mut(&s)) {
            s.users = s.users.saturating_sub(1);
        }
    }

    /// `ibv_query_qp`: every attribute, whatever the mask (as providers do).
    pub fn query_qp(&self, qp: Key) -> Result<(ffi::ibv_qp_attr, ffi::ibv_qp_init_attr), i32> {
        let q = self.qps.get(&qp).ok_or(libc::EINVAL)?;
        let c = q.obj.get();
        let mut attr = q.attr;
        attr.qp_state = q.state;
        attr.cur_qp_state = q.state;
        attr.cap = q.cap;
        attr.sq_draining = 0;
        let init = ffi::ibv_qp_init_attr {
            qp_context: c.qp_context,
            send_cq: c.send_cq,
            recv_cq: c.recv_cq,
            srq: c.srq,
            cap: q.cap,
            qp_type: q.qp_type,
            sq_sig_all: i32::from(q.sq_sig_all),
        };
        Ok((attr, init))
    }
}
