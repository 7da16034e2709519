// SPDX-License-Identifier: GPL-2.0-only
//! Completion queues: capacity, overflow, arming and event accounting.

use super::limits::{MAX_CQ, MAX_CQE};
use super::wqe::Completion;
use super::{Engine, Key};
use crate::cobj::CObj;
use crate::ffi;
use std::collections::VecDeque;

/// What the next completion must be to raise a channel event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arm {
    /// Not armed.
    Off,
    /// Any completion (`ibv_req_notify_cq(cq, 0)`).
    Next,
    /// A solicited or error completion (`ibv_req_notify_cq(cq, 1)`).
    Solicited,
}

/// A completion queue.
pub struct Cq {
    /// The `struct ibv_cq` handed out.
    pub obj: CObj<ffi::ibv_cq>,
    /// Owning context.
    pub ctx: Key,
    /// Its completion channel.
    pub channel: Option<Key>,
    /// Most entries it holds.
    pub capacity: usize,
    /// Unpolled completions, oldest first.
    pub entries: VecDeque<Completion>,
    /// Arm state; an event disarms it.
    pub arm: Arm,
    /// A completion was lost because the CQ was full; the CQ is in error.
    pub overflowed: bool,
    /// Events handed out by `ibv_get_cq_event`.
    pub events_reported: u32,
    /// Events acknowledged by `ibv_ack_cq_events`.
    pub events_acked: u32,
    /// QPs using it (destroying it is refused while > 0).
    pub users: u32,
}

/// Result of one attempt to destroy a CQ.
#[derive(Debug, PartialEq, Eq)]
pub enum DestroyCq {
    /// Destroyed.
    Done,
    /// Events handed out by `ibv_get_cq_event` are not all acknowledged
    /// yet; like libibverbs, the destroy waits for them.
    WaitForAcks,
}

impl Engine {
    /// `ibv_create_cq`.
    pub fn create_cq(
        &mut self,
        ctx: Key,
        cqe: i32,
        cq_context: *mut libc::c_void,
        channel: Option<Key>,
        comp_vector: i32,
    ) -> Result<*mut ffi::ibv_cq, i32> {
        let context = self.context(ctx)?.obj.as_ptr();
        if cqe < 1 || cqe as u32 > MAX_CQE || comp_vector != 0 {
            return Err(libc::EINVAL);
        }
        let channel_ptr = match channel {
            None => std::ptr::null_mut(),
            Some(ch) => match self.channels.get(&ch) {
                Some(c) if c.ctx == ctx => c.obj.as_ptr(),
                _ => return Err(libc::EINVAL),
            },
        };
        if self.cqs.len() >= MAX_CQ as usize {
            return Err(libc::ENOMEM);
        }
        let handle = self.new_handle();
        let obj = CObj::new(ffi::ibv_cq {
            context,
            channel: channel_ptr,
            cq_context,
            handle,
            cqe,
            ..Default::default()
        });
        let ptr = obj.as_ptr();
        if let Some(ch) = channel.and_then(|ch| self.channels.get_mut(&ch)) {
            ch.cqs += 1;
            ch.obj.update(|c| c.refcnt += 1);
        }
        self.cqs.insert(
            obj.key(),
            Cq {
                obj,
                ctx,
                channel,
                capacity: cqe as usize,
                entries: VecDeque::new(),
                arm: Arm::Off,
                overflowed: false,
                events_reported: 0,
                events_acked: 0,
                users: 0,
            },
        );
        Ok(ptr)
    }

    /// One attempt of `ibv_destroy_cq`: EBUSY while QPs use it; drops its
    /// events still queued on the channel (as the kernel does) and then
    /// waits until every event handed out has been acknowledged.
    pub fn try_destroy_cq(&mut self, cq: Key) -> Result<DestroyCq, i32> {
        let c = self.cqs.get(&cq).ok_or(libc::EINVAL)?;
        if c.users > 0 {
            return Err(libc::EBUSY);
        }
        let (channel, pending) = (c.channel, c.events_reported != c.events_acked);
        if let Some(ch) = channel.and_then(|ch| self.channels.get_mut(&ch)) {
            ch.discard(cq);
        }
        if pending {
            return Ok(DestroyCq::WaitForAcks);
        }
        self.cqs.remove(&cq);
        if let Some(ch) = channel.and_then(|ch| self.channels.get_mut(&ch)) {
            ch.cqs = ch.cqs.saturating_sub(1);
            ch.obj.update(|c| c.refcnt -= 1);
        }
        Ok(DestroyCq::Done)
    }

    /// `ibv_ack_cq_events`.
    pub fn ack_cq_events(&mut self, cq: Key, n: u32) -> Result<(), i32> {
        let c = self.cqs.get_mut(&cq).ok_or(libc::EINVAL)?;
        c.events_acked = c.events_acked.wrapping_add(n);
        let acked = c.events_acked;
        c.obj.update(|c| c.comp_events_completed = acked);
        Ok(())
    }

    /// `ibv_req_notify_cq`: arms for the next (or next solicited)
    /// completion added from now on.
    pub fn req_notify_cq(&mut self, cq: Key, solicited_only: bool) -> Result<(), i32> {
        let c = self.cqs.get_mut(&cq).ok_or(libc::EINVAL)?;
        c.arm = match (c.arm, solicited_only) {
            (_, false) | (Arm::Next, true) => Arm::Next,
            _ => Arm::Solicited,
        };
        Ok(())
    }

    /// `ibv_poll_cq`: moves up to `out.len()` completions into `out`.
    /// A CQ that overflowed reports `EOVERFLOW` once it is drained.
    pub fn poll_cq(&mut self, cq: Key, out: &mut [ffi::ibv_wc]) -> Result<usize, i32> {
        let c = self.cqs.get_mut(&cq).ok_or(libc::EINVAL)?;
        if c.entries.is_empty() && c.overflowed && !out.is_empty() {
            return Err(libc::EOVERFLOW);
        }
        let mut n = 0;
        for slot in out.iter_mut() {
            match c.entries.pop_front() {
                Some(e) => *slot = e.to_wc(),
                None => break,
            }
            n += 1;
        }
        Ok(n)
    }

    /// Adds a completion produced by QP `qp`; raises the channel event if
    /// the CQ is armed for it. A full CQ enters the error state, loses the
    /// completion and sends the QP to the error state (after the current
    /// operation, see [`Engine::settle`]).
    pub fn complete(&mut self, cq: Key, qp: Key, c: Completion) {
        let Some(q) = self.cqs.get_mut(&cq) else {
            return;
        };
        if q.overflowed || q.entries.len() >= q.capacity {
            q.overflowed = true;
            self.pending_errors.push(qp);
            return;
        }
        q.entries.push_back(c);
        let fire = match q.arm {
            Arm::Off => false,
            Arm::Next => true,
            Arm::Solicited => c.solicited || c.status != ffi::IBV_WC_SUCCESS,
        };
        if fire {
            q.arm = Arm::Off;
            if let Some(ch) = q.channel.and_then(|ch| self.channels.get_mut(&ch)) {
                ch.signal(cq);
            }
        }
    }

    /// Removes the completions of QP number `qpn` from `cq` (the QP is
    /// being destroyed).
    pub fn purge_completions(&mut self, cq: Key, qpn: u32) {
        if let Some(q) = self.cqs.get_mut(&cq) {
            q.entries.retain(|e| e.qp_num != qpn);
        }
    }

    /// Sends the QPs whose completions were lost to overflowed CQs to the
    /// error state. Run at the end of every operation that completes work.
    pub fn settle(&mut self) {
        while let Some(qp) = self.pending_errors.pop() {
            if self
                .qps
                .get(&qp)
                .is_some_and(|q| q.state != ffi::IBV_QPS_ERR)
            {
                self.qp_to_error(qp);
            }
        }
    }
}
