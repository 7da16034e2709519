// SPDX-License-Identifier: GPL-2.0-only
//! Shared receive queues.

use super::limits::{MAX_SRQ, MAX_SRQ_SGE, MAX_SRQ_WR};
use super::wqe::RecvWqe;
use super::{Engine, Key};
use crate::cobj::CObj;
use crate::ffi;
use std::collections::VecDeque;

/// A shared receive queue.
pub struct Srq {
    /// The `struct ibv_srq` handed out.
    pub obj: CObj<ffi::ibv_srq>,
    /// Owning context.
    pub ctx: Key,
    /// Its PD (receive buffers must belong to it).
    pub pd: Key,
    /// Most posted receives.
    pub max_wr: u32,
    /// Most SGEs per receive.
    pub max_sge: u32,
    /// Armed limit: when fewer receives remain, the limit event fires and
    /// the limit is disarmed (reset to 0); 0 = not armed.
    pub limit: u32,
    /// Limit events raised (there is no async event channel here; counted
    /// for tests and the log).
    pub limit_events: u32,
    /// Posted receives, oldest first.
    pub rq: VecDeque<RecvWqe>,
    /// QPs attached (destroying it is refused while > 0).
    pub users: u32,
}

impl Srq {
    /// Takes the oldest receive, firing the limit event if the queue drops
    /// below an armed limit.
    pub fn pop(&mut self) -> Option<RecvWqe> {
        let w = self.rq.pop_front()?;
        if self.limit > 0 && (self.rq.len() as u32) < self.limit {
            self.limit = 0;
            self.limit_events += 1;
            crate::log::vlog!("srq_limit_reached", "srq={:#x}", self.obj.key());
        }
        Some(w)
    }
}

impl Engine {
    /// `ibv_create_srq`; `attr` is updated to the actual capacities.
    pub fn create_srq(
        &mut self,
        pd: Key,
        srq_context: *mut libc::c_void,
        attr: &mut ffi::ibv_srq_attr,
    ) -> Result<*mut ffi::ibv_srq, i32> {
        let p = self.pds.get(&pd).ok_or(libc::EINVAL)?;
        let (ctx, context, pd_ptr) = (p.ctx, p.obj.get().context, p.obj.as_ptr());
        if attr.max_wr == 0 || attr.max_wr > MAX_SRQ_WR || attr.max_sge > MAX_SRQ_SGE {
            return Err(libc::EINVAL);
        }
        // As with the kernel: a limit is armed later with ibv_modify_srq.
        if attr.srq_limit > attr.max_wr {
            return Err(libc::EINVAL);
        }
        if self.srqs.len() >= MAX_SRQ as usize {
            return Err(libc::ENOMEM);
        }
        attr.max_sge = attr.max_sge.max(1);
        let handle = self.new_handle();
        let obj = CObj::new(ffi::ibv_srq {
            context,
            srq_context,
            pd: pd_ptr,
            handle,
            ..Default::default()
        });
        let ptr = obj.as_ptr();
        self.srqs.insert(
            obj.key(),
            Srq {
                obj,
                ctx,
                pd,
                max_wr: attr.max_wr,
                max_sge: attr.max_sge,
                limit: 0,
                limit_events: 0,
                rq: VecDeque::new(),
                users: 0,
            },
        );
        self.pd_use(pd, 1);
        Ok(ptr)
    }

    /// `ibv_modify_srq`: `IBV_SRQ_MAX_WR` resizes (not below the posted
    /// count), `IBV_SRQ_LIMIT` arms the limit (must be < max_wr).
    pub fn modify_srq(&mut self, srq: Key, attr: &ffi::ibv_srq_attr, mask: u32) -> Result<(), i32> {
        let s = self.srqs.get_mut(&srq).ok_or(libc::EINVAL)?;
        if mask & !(ffi::IBV_SRQ_MAX_WR | ffi::IBV_SRQ_LIMIT) != 0 {
            return Err(libc::EINVAL);
        }
        let max_wr = if mask & ffi::IBV_SRQ_MAX_WR != 0 {
            if attr.max_wr == 0 || attr.max_wr > MAX_SRQ_WR || (attr.max_wr as usize) < s.rq.len() {
                return Err(libc::EINVAL);
            }
            attr.max_wr
        } else {
            s.max_wr
        };
        if mask & ffi::IBV_SRQ_LIMIT != 0 && attr.srq_limit >= max_wr {
            return Err(libc::EINVAL);
        }
        s.max_wr = max_wr;
        if mask & ffi::IBV_SRQ_LIMIT != 0 {
            s.limit = attr.srq_limit;
        }
        Ok(())
    }

    /// `ibv_query_srq`.
    pub fn query_srq(&self, srq: Key) -> Result<ffi::ibv_srq_attr, i32> {
        let s = self.srqs.get(&srq).ok_or(libc::EINVAL)?;
        Ok(ffi::ibv_srq_attr {
            max_wr: s.max_wr,
            max_sge: s.max_sge,
            srq_limit: s.limit,
        })
    }

    /// `ibv_destroy_srq`: EBUSY while QPs use it; posted receives are
    /// discarded.
    pub fn destroy_srq(&mut self, srq: Key) -> Result<(), i32> {
        match self.srqs.get(&srq) {
            None => Err(libc::EINVAL),
            Some(s) if s.users > 0 => Err(libc::EBUSY),
            Some(s) => {
                let pd = s.pd;
                self.srqs.remove(&srq);
                self.pd_use(pd, -1);
                Ok(())
            }
        }
    }
}
