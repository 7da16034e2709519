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
//! the device a `wr_id` naming the queue ([`Side`]) and the work request's sequence number (the
//! count of work requests posted before it, modulo 2^32) instead; a completion is mapped back
//! only if it names work that is outstanding. A slot is reused only once its work has completed,
//! whatever the device's consumer index says: the device consumes an entry when it starts the
//! work, long before the completion is polled.
//!
//! Completions may come in any order. A work queue completes in order, but QEMU's device model
//! does not: a work request that fails at once (no room for its context in the backend, an SGE
//! outside its MR, a failed post to the backend) is completed from the doorbell, while the work
//! requests posted before it are still in flight and complete later. So each slot records whether
//! its work completed, and the oldest outstanding work ([`WorkQueue::completed`]) moves on over
//! the completed prefix. A completion also completes the unsignaled work posted before it (a
//! device that honours signaling reports none for it); a device that reports every work request
//! (QEMU's stock model does) may report such work afterwards: that completion is dropped, as is
//! a late one of work completed that way and retired since. A completion of work never posted,
//! or a second one of signaled work still outstanding, is a lie.
//!
//! Layer: RDMA device.

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
    rdma::{self, WrId},
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

    /// The `wr_id` the device gets for the work request with sequence number `seq` of this
    /// side's queue.
    fn device_wr_id(self, seq: u32) -> u64 {
        match self {
            Side::Send => u64::from(seq),
            Side::Recv => Self::RECV_BIT | u64::from(seq),
        }
    }

    /// The side and sequence number a device `wr_id` names, if it is one the driver could have
    /// made.
    pub(crate) fn of_device_wr_id(wr_id: u64) -> Option<(Side, u32)> {
        let seq = u32::try_from(wr_id & !Self::RECV_BIT).ok()?;
        let side = if wr_id & Self::RECV_BIT != 0 {
            Side::Recv
        } else {
            Side::Send
        };
        Some((side, seq))
    }
}

/// The work request a slot holds.
#[derive(Default)]
struct Work {
    /// The caller's `wr_id`, until a completion reports it (`None` for a free slot, and for
    /// work reported or completed without a report).
    wr_id: Option<WrId>,
    /// Whether the device reports its successful completion.
    signaled: bool,
    /// Whether it completed (outstanding work only; see [`WorkQueue`]).
    done: bool,
}

/// What a completion the device reported for a queue's work is.
pub(crate) enum Completed {
    /// The completion of outstanding work, whose caller's `wr_id` this is.
    Work(WrId),
    /// A completion of unsignaled work that a later completion already completed: nothing to
    /// report (see the module's documentation).
    Retired,
}

/// One work queue of a kernel QP.
///
/// # Invariants
///
/// `slots` is a power of two; `base + slots * wqe_size` lies inside the directory, and
/// `wqe_size` divides `PAGE_SIZE` and holds a header plus `max_sge` scatter/gather entries.
/// `work` has `slots` entries; outstanding work that is not done holds its `wr_id`. The
/// counters are sequence numbers (modulo 2^32):
/// `completed <= swept <= posted` and `posted - completed <= slots`. The outstanding work has the
/// sequence numbers `completed .. posted` and is in the slots they name (modulo `slots`); the
/// work at `completed`, if any, is not done. No unsignaled work before `swept` is outstanding
/// and not done.
pub(crate) struct WorkQueue {
    state: usize,
    base: usize,
    slots: u32,
    max_sge: u32,
    wqe_size: usize,
    side: Side,
    /// Whether every work request is signaled (a receive queue, or a send queue created so).
    signal_all: bool,
    work: KVec<Work>,
    /// The sequence number of the next work request.
    posted: u32,
    /// The sequence number of the oldest outstanding work request.
    completed: u32,
    /// Where the next search for unsignaled work to complete starts.
    swept: u32,
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
    /// entries of `wqe_size` bytes start at byte `base`; `signal_all` if every work request is
    /// signaled.
    pub(crate) fn new(
        side: Side,
        state: usize,
        base: usize,
        slots: u32,
        max_sge: u32,
        wqe_size: usize,
        signal_all: bool,
    ) -> Result<Self> {
        Ok(Self {
            state,
            base,
            slots,
            max_sge,
            wqe_size,
            side,
            signal_all,
            work: {
                let mut work = KVec::with_capacity(slots as usize, GFP_KERNEL)?;
                for _ in 0..slots {
                    work.push(Work::default(), GFP_KERNEL)?;
                }
                work
            },
            posted: 0,
            completed: 0,
            swept: 0,
        })
    }

    /// The slot of the work with sequence number `seq` (`slots` is a power of two, so the
    /// residue survives the counters' wrapping).
    fn slot(&self, seq: u32) -> usize {
        (seq & (self.slots - 1)) as usize
    }

    /// Takes the device's completion of the work with sequence number `seq`, which also completes
    /// the unsignaled work posted before it. `None` if the device cannot have reported it: work
    /// never posted, or signaled work completed already and still outstanding (see the module's
    /// documentation).
    pub(crate) fn complete(&mut self, seq: u32) -> Option<Completed> {
        let outstanding = self.posted.wrapping_sub(self.completed);
        let ahead = seq.wrapping_sub(self.completed);
        if ahead >= outstanding {
            // Before the oldest outstanding work (within half the sequence space): completed
            // and retired, and if it is reported again it was unsignaled work completed by a
            // later completion (a device's second completion of signaled work cannot be told
            // from that once the work is retired, and is dropped too: nothing is reported
            // twice). At or after the next sequence number: never posted.
            let behind = self.completed.wrapping_sub(seq);
            return (behind != 0 && behind <= u32::MAX / 2).then_some(Completed::Retired);
        }
        let slot = self.slot(seq);
        let work = self.work.get(slot)?;
        if work.done {
            return (!work.signaled).then_some(Completed::Retired);
        }
        // The unsignaled work before `seq` is complete too. Each sequence number is swept once:
        // a completion costs no more than the work it completes, whatever the order.
        if self.swept.wrapping_sub(self.completed) <= ahead {
            let mut earlier = self.swept;
            while earlier != seq {
                let slot = self.slot(earlier);
                if let Some(w) = self.work.get_mut(slot) {
                    if !w.signaled {
                        // Completed without a report of its own.
                        w.done = true;
                        w.wr_id = None;
                    }
                }
                earlier = earlier.wrapping_add(1);
            }
            self.swept = seq.wrapping_add(1);
        }
        let wr_id = self.work.get_mut(slot).and_then(|w| {
            w.done = true;
            w.wr_id.take()
        });
        self.retire_done();
        // Not done, so it holds its `wr_id` (the invariant).
        Some(Completed::Work(wr_id?))
    }

    /// Moves the oldest outstanding work past the work that is done.
    fn retire_done(&mut self) {
        while self.completed != self.posted
            && self
                .work
                .get(self.slot(self.completed))
                .is_some_and(|w| w.done)
        {
            self.completed = self.completed.wrapping_add(1);
        }
        // INVARIANT: `swept` stays at or after `completed`.
        if self.swept.wrapping_sub(self.completed) > self.posted.wrapping_sub(self.completed) {
            self.swept = self.completed;
        }
    }

    /// Whether work is outstanding: posted, and neither completed nor flushed.
    pub(crate) fn has_unfinished(&self) -> bool {
        self.posted != self.completed
    }

    /// Takes the oldest outstanding work request's `wr_id`, for a completion the driver makes
    /// itself (a dead device completes nothing: its driver flushes what is outstanding).
    pub(crate) fn take_unfinished(&mut self) -> Option<WrId> {
        if !self.has_unfinished() {
            return None;
        }
        // Not done (the invariant): the work completed out of order stays behind it.
        let slot = self.slot(self.completed);
        let work = self.work.get_mut(slot)?;
        work.done = true;
        let wr_id = work.wr_id.take();
        self.retire_done();
        wr_id
    }

    /// Records the work request whose ID `take_id` gives (`signaled` as its flags ask) in the
    /// slot of the next sequence number, which the caller checked is free, and counts it as
    /// posted. Nothing fails once the ID is taken: taking it tells the consumer the request was
    /// posted.
    fn record(&mut self, take_id: impl FnOnce() -> WrId, signaled: bool) -> Result {
        let signaled = signaled || self.signal_all;
        let slot = self.slot(self.posted);
        let work = self.work.get_mut(slot).ok_or(EINVAL)?;
        *work = Work {
            wr_id: Some(take_id()),
            signaled,
            done: false,
        };
        self.posted = self.posted.wrapping_add(1);
        Ok(())
    }

    /// Checks that an entry of header `H` and `sges` scatter/gather entries fits the queue's
    /// entries (`EINVAL` if not).
    fn check_entry<H>(&self, sges: usize) -> Result {
        if sges > self.max_sge as usize
            || size_of::<H>() + sges * size_of::<abi::Sge>() > self.wqe_size
        {
            return Err(EINVAL);
        }
        Ok(())
    }

    /// Accepts the work request whose ID `take_id` gives (header `H`, `sges`; `signaled` as its
    /// flags ask) without handing it to the device, which is dead: it is checked as
    /// [`WorkQueue::push`] checks it, and outstanding until [`WorkQueue::take_unfinished`]
    /// flushes it. Fails with `EINVAL` for too many entries, `ENOMEM` if the queue is full; the ID
    /// is taken only if it succeeds.
    pub(crate) fn push_unsent<H: WqeHeader>(
        &mut self,
        take_id: impl FnOnce() -> WrId,
        signaled: bool,
        sges: &[rdma::Sge],
    ) -> Result {
        self.check_entry::<H>(sges.len())?;
        if self.posted.wrapping_sub(self.completed) >= self.slots {
            return Err(ENOMEM);
        }
        self.record(take_id, signaled)
    }

    fn prod(&self) -> usize {
        self.state + offset_of!(RingIndexes, prod_tail)
    }

    fn cons(&self) -> usize {
        self.state + offset_of!(RingIndexes, cons_head)
    }

    /// Writes a work queue entry (`hdr` then `sges`) for the work request whose ID `take_id`
    /// gives (`signaled` as its flags ask) into the next free slot and hands it to the device.
    /// Fails with `EINVAL` for too many entries, `ENOMEM` if the queue is full (of entries not
    /// consumed or not completed), `EIO` if the device broke the ring's indexes; the ID is taken
    /// only if it succeeds.
    pub(crate) fn push<H: WqeHeader>(
        &mut self,
        pdir: &PageDir,
        take_id: impl FnOnce() -> WrId,
        signaled: bool,
        mut hdr: H,
        sges: &[rdma::Sge],
    ) -> Result {
        self.check_entry::<H>(sges.len())?;
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
        hdr.set_wr_id(self.side.device_wr_id(self.posted));
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
        // The entry must be complete before the device sees the new producer index.
        dma_mb(Write);
        state.write_u32(self.prod(), idx_next(tail, self.slots))?;
        // Recorded after the device has the entry, so that the ID is taken only once nothing can
        // fail (but a slot missing, which the invariant rules out): the queue's lock, held,
        // keeps its completion from being matched before.
        self.record(take_id, signaled)
    }

    /// Empties the queue (after the QP went to RESET and its completions were flushed).
    pub(crate) fn reset(&mut self, pdir: &PageDir) {
        self.posted = 0;
        self.completed = 0;
        self.swept = 0;
        if let Ok(state) = pdir.page(0) {
            let _ = state.write_u32(self.prod(), 0);
            let _ = state.write_u32(self.cons(), 0);
        }
    }
}
