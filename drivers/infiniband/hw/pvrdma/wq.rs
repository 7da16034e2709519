// SPDX-License-Identifier: GPL-2.0

//! The work queues of kernel QPs: rings the driver produces into and the device consumes from.
//!
//! Page 0 of the QP's page directory holds the ring states (the send queue's at offset 0, the
//! receive queue's after it); the entries of a queue are `wqe_size` bytes (a power of two no
//! larger than a page, so none straddles two pages) from byte `base` of the directory on.
//!
//! The device never sees a caller's `wr_id`: kernel consumers (the CQ pool, the MAD layer)
//! take the `wr_id` of a completion for a pointer, so one read back from the device would let
//! the device steer a kernel pointer. Each queue keeps the callers' `wr_id`s per slot and hands
//! the device a `wr_id` naming the queue ([`Side`]) and the slot instead; a completion is mapped
//! back only if it names a slot whose work is outstanding. A slot is reused only once its work has
//! completed (a completion also completes the unsignaled work posted before it, as the queues
//! complete in order), whatever the device's consumer index says: the device consumes an entry
//! when it starts the work, long before the completion is polled.

use crate::{
    abi,
    abi::RingIndexes,
    mem::SharedBytes,
    pdir::PageDir,
    ring::{idx_next, idx_slot, idx_valid},
};
use core::mem::{offset_of, size_of};
use kernel::{
    page::PAGE_SIZE,
    prelude::*,
    rdma,
    sync::barrier::{dma_mb, Write},
};
use zerocopy::{Immutable, IntoBytes};

/// Which queue of a QP a work request went to. The device's `wr_id` for a work request is the
/// side (bit 32 set for receives) and the slot.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Side {
    /// The send queue.
    Send,
    /// The receive queue.
    Recv,
}

impl Side {
    const RECV_BIT: u64 = 1 << 32;

    /// The `wr_id` the device gets for the work request in `slot` of this side's queue.
    fn device_wr_id(self, slot: u32) -> u64 {
        match self {
            Side::Send => u64::from(slot),
            Side::Recv => Self::RECV_BIT | u64::from(slot),
        }
    }

    /// The side and slot a device `wr_id` names, if it is one the driver could have made.
    pub(crate) fn of_device_wr_id(wr_id: u64) -> Option<(Side, u32)> {
        let slot = u32::try_from(wr_id & !Self::RECV_BIT).ok()?;
        let side = if wr_id & Self::RECV_BIT != 0 {
            Side::Recv
        } else {
            Side::Send
        };
        Some((side, slot))
    }
}

/// One work queue of a kernel QP.
///
/// # Invariants
///
/// `slots` is a power of two; `base + slots * wqe_size` lies inside the directory, and
/// `wqe_size` divides `PAGE_SIZE` and holds a header plus `max_sge` scatter/gather entries.
/// `wr_ids` has `slots` entries; `posted - completed` (modulo 2^32) is at most `slots`, and the
/// outstanding work is in the slots `completed .. posted` (modulo `slots`).
pub(crate) struct WorkQueue {
    state: usize,
    base: usize,
    slots: u32,
    max_sge: u32,
    wqe_size: usize,
    side: Side,
    wr_ids: KVec<u64>,
    posted: u32,
    completed: u32,
}

/// A work queue entry's header, whose `wr_id` the queue sets.
pub(crate) trait WqeHeader: IntoBytes + Immutable {
    /// Sets the `wr_id` the device sees.
    fn set_wr_id(&mut self, wr_id: u64);
}

impl WqeHeader for abi::SqWqeHdr {
    fn set_wr_id(&mut self, wr_id: u64) {
        self.wr_id = wr_id;
    }
}

impl WqeHeader for abi::RqWqeHdr {
    fn set_wr_id(&mut self, wr_id: u64) {
        self.wr_id = wr_id;
    }
}

impl WorkQueue {
    /// A queue on `side` whose ring state is at byte `state` of page 0 and whose `slots`
    /// entries of `wqe_size` bytes start at byte `base`.
    pub(crate) fn new(
        side: Side,
        state: usize,
        base: usize,
        slots: u32,
        max_sge: u32,
        wqe_size: usize,
    ) -> Result<Self> {
        Ok(Self {
            state,
            base,
            slots,
            max_sge,
            wqe_size,
            side,
            wr_ids: KVec::from_elem(0, slots as usize, GFP_KERNEL)?,
            posted: 0,
            completed: 0,
        })
    }

    /// Takes the completion of the work in `slot`, which also completes the unsignaled work
    /// posted before it, and returns the caller's `wr_id`; `None` if no outstanding work is in
    /// `slot` (the device named a slot the driver did not hand it, or twice).
    pub(crate) fn complete(&mut self, slot: u32) -> Option<u64> {
        if slot >= self.slots {
            return None;
        }
        let outstanding = self.posted.wrapping_sub(self.completed);
        // How far `slot` is past the oldest outstanding work (`slots` is a power of two, so the
        // counters' residues survive their wrapping).
        let ahead = slot.wrapping_sub(self.completed) & (self.slots - 1);
        if ahead >= outstanding {
            return None;
        }
        self.completed = self.completed.wrapping_add(ahead + 1);
        self.wr_ids.get(slot as usize).copied()
    }

    /// Whether work is outstanding: posted, and neither completed nor flushed.
    pub(crate) fn has_unfinished(&self) -> bool {
        self.posted != self.completed
    }

    /// Takes the oldest outstanding work request's `wr_id`, for a completion the driver makes
    /// itself (a dead device completes nothing: its driver flushes what is outstanding).
    pub(crate) fn take_unfinished(&mut self) -> Option<u64> {
        if !self.has_unfinished() {
            return None;
        }
        let slot = self.completed % self.slots;
        self.completed = self.completed.wrapping_add(1);
        self.wr_ids.get(slot as usize).copied()
    }

    /// Accepts the work request `wr_id` without handing it to the device, which is dead: it is
    /// outstanding until [`WorkQueue::take_unfinished`] flushes it. Fails with `ENOMEM` if the
    /// queue is full.
    pub(crate) fn push_unsent(&mut self, wr_id: u64) -> Result {
        if self.posted.wrapping_sub(self.completed) >= self.slots {
            return Err(ENOMEM);
        }
        let slot = self.posted % self.slots;
        *self.wr_ids.get_mut(slot as usize).ok_or(EINVAL)? = wr_id;
        self.posted = self.posted.wrapping_add(1);
        Ok(())
    }

    fn prod(&self) -> usize {
        self.state + offset_of!(RingIndexes, prod_tail)
    }

    fn cons(&self) -> usize {
        self.state + offset_of!(RingIndexes, cons_head)
    }

    /// Writes a work queue entry (`hdr` then `sges`) for the work request `wr_id` into the next
    /// free slot and hands it to the device. Fails with `EINVAL` for too many entries, `ENOMEM`
    /// if the queue is full (of entries not consumed or not completed), `EIO` if the device
    /// broke the ring's indexes.
    pub(crate) fn push<H: WqeHeader>(
        &mut self,
        pdir: &PageDir,
        wr_id: u64,
        mut hdr: H,
        sges: &[rdma::Sge],
    ) -> Result {
        if sges.len() > self.max_sge as usize
            || size_of::<H>() + sges.len() * size_of::<abi::Sge>() > self.wqe_size
        {
            return Err(EINVAL);
        }
        let state = pdir.page(0)?;
        let tail = state.read_u32(self.prod())?;
        let head = state.read_u32(self.cons())?;
        if !idx_valid(tail, self.slots) || !idx_valid(head, self.slots) {
            return Err(EIO);
        }
        // Full when the producer is a whole lap ahead of the consumer, or of the completions.
        if tail == head ^ self.slots || self.posted.wrapping_sub(self.completed) >= self.slots {
            return Err(ENOMEM);
        }
        let slot = idx_slot(tail, self.slots);
        // The driver's count and the ring's producer index name the same slot: both start at 0
        // and advance together (`reset` restarts both).
        if slot != self.posted % self.slots {
            return Err(EIO);
        }
        hdr.set_wr_id(self.side.device_wr_id(slot));
        let offset = self.base + slot as usize * self.wqe_size;
        let page = pdir.page(offset / PAGE_SIZE)?;
        let mut at = offset % PAGE_SIZE;
        page.write_at(at, &hdr)?;
        at += size_of::<H>();
        for sge in sges {
            let entry = abi::Sge {
                addr: sge.addr,
                length: sge.length,
                lkey: sge.lkey,
            };
            page.write_at(at, &entry)?;
            at += size_of::<abi::Sge>();
        }
        *self.wr_ids.get_mut(slot as usize).ok_or(EINVAL)? = wr_id;
        // The entry must be complete before the device sees the new producer index.
        dma_mb(Write);
        state.write_u32(self.prod(), idx_next(tail, self.slots))?;
        self.posted = self.posted.wrapping_add(1);
        Ok(())
    }

    /// Empties the queue (after the QP went to RESET and its completions were flushed).
    pub(crate) fn reset(&mut self, pdir: &PageDir) {
        self.posted = 0;
        self.completed = 0;
        if let Ok(state) = pdir.page(0) {
            let _ = state.write_u32(self.prod(), 0);
            let _ = state.write_u32(self.cons(), 0);
        }
    }
}
