// SPDX-License-Identifier: GPL-2.0

//! The work queues of kernel QPs: rings the driver produces into and the device consumes from.
//!
//! Page 0 of the QP's page directory holds the ring states (the send queue's at offset 0, the
//! receive queue's after it); the entries of a queue are `wqe_size` bytes (a power of two no
//! larger than a page, so none straddles two pages) from byte `base` of the directory on.

use crate::{
    abi::RingIndexes,
    abi_verbs,
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

/// One work queue of a kernel QP.
///
/// # Invariants
///
/// `slots` is a power of two; `base + slots * wqe_size` lies inside the directory, and
/// `wqe_size` divides `PAGE_SIZE` and holds a header plus `max_sge` scatter/gather entries.
pub(crate) struct WorkQueue {
    state: usize,
    base: usize,
    slots: u32,
    max_sge: u32,
    wqe_size: usize,
}

impl WorkQueue {
    /// A queue whose ring state is at byte `state` of page 0 and whose `slots` entries of
    /// `wqe_size` bytes start at byte `base`.
    pub(crate) fn new(
        state: usize,
        base: usize,
        slots: u32,
        max_sge: u32,
        wqe_size: usize,
    ) -> Self {
        Self {
            state,
            base,
            slots,
            max_sge,
            wqe_size,
        }
    }

    fn prod(&self) -> usize {
        self.state + offset_of!(RingIndexes, prod_tail)
    }

    fn cons(&self) -> usize {
        self.state + offset_of!(RingIndexes, cons_head)
    }

    /// Writes a work queue entry (`hdr` then `sges`) into the next free slot and hands it to the
    /// device. Fails with `EINVAL` for too many entries, `ENOMEM` if the queue is full, `EIO` if
    /// the device broke the ring's indexes.
    pub(crate) fn push<H: IntoBytes + Immutable>(
        &mut self,
        pdir: &PageDir,
        hdr: &H,
        sges: &[rdma::Sge],
    ) -> Result {
        if sges.len() > self.max_sge as usize
            || size_of::<H>() + sges.len() * size_of::<abi_verbs::Sge>() > self.wqe_size
        {
            return Err(EINVAL);
        }
        let state = pdir.page(0)?;
        let tail = state.read_u32(self.prod())?;
        let head = state.read_u32(self.cons())?;
        if !idx_valid(tail, self.slots) || !idx_valid(head, self.slots) {
            return Err(EIO);
        }
        // Full when the producer is a whole lap ahead of the consumer.
        if tail == head ^ self.slots {
            return Err(ENOMEM);
        }
        let offset = self.base + idx_slot(tail, self.slots) as usize * self.wqe_size;
        let page = pdir.page(offset / PAGE_SIZE)?;
        let mut at = offset % PAGE_SIZE;
        page.write_at(at, hdr)?;
        at += size_of::<H>();
        for sge in sges {
            let entry = abi_verbs::Sge {
                addr: sge.addr,
                length: sge.length,
                lkey: sge.lkey,
            };
            page.write_at(at, &entry)?;
            at += size_of::<abi_verbs::Sge>();
        }
        // The entry must be complete before the device sees the new producer index.
        dma_mb(Write);
        state.write_u32(self.prod(), idx_next(tail, self.slots))
    }

    /// Empties the queue (after the QP went to RESET).
    pub(crate) fn reset(&mut self, pdir: &PageDir) {
        if let Ok(state) = pdir.page(0) {
            let _ = state.write_u32(self.prod(), 0);
            let _ = state.write_u32(self.cons(), 0);
        }
    }
}
