// SPDX-License-Identifier: GPL-2.0

//! The device's rings: async events and CQ notifications, produced by the device.
//!
//! Page 0 of a ring's page directory holds the ring state (a tx and an rx pair of indexes; the
//! device produces into rx), the entries start at page 1. An index runs over [0, 2N) for N
//! slots; the extra bit tells a full ring from an empty one. The arithmetic is the device's, as
//! in Linux's `pvrdma_ring.h`, bit for bit, so that driver and device agree even for the slot
//! counts that are not powers of two.
//!
//! Layer: device.

use crate::{
    abi::RingIndexes,
    mem::{DmaPage, SharedBytes},
    pdir::{DirCache, PageDir},
};
use core::mem::{offset_of, size_of};
use kernel::{
    device::{Bound, Device},
    page::PAGE_SIZE,
    prelude::*,
    sync::{
        barrier::{dma_mb, mb, Full, Read, Write},
        Arc,
    },
};
use zerocopy::{FromBytes, Immutable, IntoBytes};

/// Whether `idx` is a valid index of a ring of `slots` slots (C's `pvrdma_idx_valid`).
pub(crate) fn idx_valid(idx: u32, slots: u32) -> bool {
    idx & !((slots << 1).wrapping_sub(1)) == 0
}

/// The slot an index names (C's `pvrdma_idx`); always `< slots`.
pub(crate) fn idx_slot(idx: u32, slots: u32) -> u32 {
    idx & (slots - 1)
}

/// The index after `idx` (C's `pvrdma_idx_ring_inc`).
pub(crate) fn idx_next(idx: u32, slots: u32) -> u32 {
    idx.wrapping_add(1) & (slots << 1).wrapping_sub(1)
}

/// A ring the device produces into and the driver consumes from.
///
/// # Invariants
///
/// `slots` entries of `size_of::<E>()` bytes fit in the pages after the state page, and
/// `slots >= 1`; entry sizes divide the page size, so no entry straddles two pages.
pub(crate) struct DeviceRing<E> {
    pdir: PageDir,
    slots: u32,
    _entry: core::marker::PhantomData<E>,
}

/// Byte offset of the rx ring's producer index in the state page.
const RX_PROD: usize = size_of::<RingIndexes>() + offset_of!(RingIndexes, prod_tail);
/// Byte offset of the rx ring's consumer index in the state page.
const RX_CONS: usize = size_of::<RingIndexes>() + offset_of!(RingIndexes, cons_head);

impl<E: FromBytes + IntoBytes> DeviceRing<E> {
    /// Allocates a ring of `npages` pages (state page included) for `dev`.
    pub(crate) fn new(dev: &Device<Bound>, cache: &Arc<DirCache>, npages: u32) -> Result<Self> {
        const { assert!(size_of::<E>() != 0 && PAGE_SIZE % size_of::<E>() == 0) };
        if npages < 2 {
            return Err(EINVAL);
        }
        let slots = Self::capacity(npages);
        Self::alloc(dev, cache, npages, slots)
    }

    fn alloc(dev: &Device<Bound>, cache: &Arc<DirCache>, npages: u32, slots: u32) -> Result<Self> {
        let pdir = PageDir::new(dev, cache, npages as usize)?;
        Ok(Self {
            pdir,
            slots,
            _entry: core::marker::PhantomData,
        })
    }

    /// The number of entry slots the data pages of an `npages`-page ring hold.
    pub(crate) fn capacity(npages: u32) -> u32 {
        ((npages.saturating_sub(1) as usize) * PAGE_SIZE / size_of::<E>()) as u32
    }

    /// Allocates a ring of `npages` pages (state page included) with `slots` entries, a power of
    /// two that fits the data pages.
    pub(crate) fn with_slots(
        dev: &Device<Bound>,
        cache: &Arc<DirCache>,
        npages: u32,
        slots: u32,
    ) -> Result<Self> {
        const { assert!(size_of::<E>() != 0 && PAGE_SIZE % size_of::<E>() == 0) };
        if npages < 2 || slots == 0 || !slots.is_power_of_two() || slots > Self::capacity(npages) {
            return Err(EINVAL);
        }
        Self::alloc(dev, cache, npages, slots)
    }

    /// Uses only the first `slots` entries (a power of two no larger than the ring's): the
    /// device's idea of the ring's size, if it differs from the one asked for.
    pub(crate) fn shrink_to(&mut self, slots: u32) -> Result {
        if slots == 0 || !slots.is_power_of_two() || slots > self.slots {
            return Err(EINVAL);
        }
        self.slots = slots;
        Ok(())
    }

    /// Whether the device produced entries the driver has not consumed.
    pub(crate) fn has_data(&self) -> Result<bool> {
        let state = self.pdir.page(0)?;
        let tail = state.read_u32(RX_PROD)?;
        let head = state.read_u32(RX_CONS)?;
        if !idx_valid(tail, self.slots) || !idx_valid(head, self.slots) {
            return Err(EIO);
        }
        Ok(tail != head)
    }

    /// The number of entry slots: the most entries the device can have produced at once, so
    /// the most a consumer takes in one go (a device that refills the ring as fast as the
    /// driver empties it must not keep the driver in a loop).
    pub(crate) fn slots(&self) -> u32 {
        self.slots
    }

    /// Consumes at most one ring's worth of entries, calling `f` for each; `what` names the
    /// ring in the warning (printed once) about entries left for the next call by a device that
    /// kept producing. Fails with `EIO`, consuming nothing more, if the device broke the ring's
    /// indexes.
    pub(crate) fn drain(&self, device: &CStr, what: &str, mut f: impl FnMut(E)) -> Result {
        for _ in 0..self.slots {
            match self.pop()? {
                Some(entry) => f(entry),
                None => return Ok(()),
            }
        }
        if self.has_data()? {
            kernel::pr_warn_once!(
                "{}: {} ring: entries keep coming; draining later\n",
                device,
                what
            );
        }
        Ok(())
    }

    /// The page directory, for the DSR.
    pub(crate) fn pdir(&self) -> &PageDir {
        &self.pdir
    }

    /// Takes the next entry the device produced, if any.
    ///
    /// Returns `Err(EIO)` if the device's indexes are invalid; the ring is then left alone.
    pub(crate) fn pop(&self) -> Result<Option<E>> {
        let state = self.pdir.page(0)?;
        let tail = state.read_u32(RX_PROD)?;
        let head = state.read_u32(RX_CONS)?;
        if !idx_valid(tail, self.slots) || !idx_valid(head, self.slots) {
            return Err(EIO);
        }
        if tail == head {
            return Ok(None);
        }
        // Read the entry only after seeing the producer index that covers it.
        dma_mb(Read);
        let offset = PAGE_SIZE + idx_slot(head, self.slots) as usize * size_of::<E>();
        let page = self.pdir.page(offset / PAGE_SIZE)?;
        let entry = page.read_at::<E>(offset % PAGE_SIZE)?;
        // The entry is copied out before the slot is handed back to the device.
        mb(Full);
        state.write_u32(RX_CONS, idx_next(head, self.slots))?;
        Ok(Some(entry))
    }
}

impl<E: FromBytes + IntoBytes + Immutable> DeviceRing<E> {
    fn entry_at(&self, slot: u32) -> Result<(&DmaPage, usize)> {
        let offset = PAGE_SIZE + slot as usize * size_of::<E>();
        Ok((self.pdir.page(offset / PAGE_SIZE)?, offset % PAGE_SIZE))
    }

    /// Drops the unconsumed entries for which `keep` is false, keeping the order of the others
    /// (C's `_pvrdma_flush_cqe`): the kept ones move towards the producer's end, and the
    /// consumer index moves past the dropped ones. The caller keeps the device from producing
    /// meanwhile for the entries in question (they belong to an object being destroyed).
    pub(crate) fn retain(&self, keep: impl Fn(&E) -> bool) -> Result {
        let state = self.pdir.page(0)?;
        let tail_idx = state.read_u32(RX_PROD)?;
        let head_idx = state.read_u32(RX_CONS)?;
        if !idx_valid(tail_idx, self.slots) || !idx_valid(head_idx, self.slots) {
            return Err(EIO);
        }
        if tail_idx == head_idx {
            return Ok(());
        }
        dma_mb(Read);
        let slots = self.slots;
        let (head, tail) = (idx_slot(head_idx, slots), idx_slot(tail_idx, slots));
        // A full ring has head == tail as slots, but different indexes.
        let items = if tail > head {
            tail - head
        } else {
            slots - head + tail
        };
        let prev = |slot: u32| if slot == 0 { slots - 1 } else { slot - 1 };
        let mut dst = prev(tail);
        let mut cur = dst;
        let mut dropped = 0u32;
        for _ in 0..items {
            let (page, off) = self.entry_at(cur)?;
            let entry = page.read_at::<E>(off)?;
            if keep(&entry) {
                if cur != dst {
                    let (page, off) = self.entry_at(dst)?;
                    page.write_at(off, &entry)?;
                }
                dst = prev(dst);
            } else {
                dropped += 1;
            }
            cur = prev(cur);
        }
        dma_mb(Write);
        let new_head = head_idx.wrapping_add(dropped) & ((slots << 1).wrapping_sub(1));
        state.write_u32(RX_CONS, new_head)
    }
}
