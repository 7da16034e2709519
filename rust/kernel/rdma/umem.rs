// SPDX-License-Identifier: GPL-2.0

//! Pinned user memory (C's `struct ib_umem`).
//!
//! C header: [`include/rdma/ib_umem.h`](srctree/include/rdma/ib_umem.h)

#[cfg(doc)]
use super::Access;
use super::{ops::Operations, AccessFlags, Device, UData};
use crate::{
    bindings,
    dma::DmaAddress,
    error::{from_err_ptr, Result},
    page::PAGE_SIZE,
    scatterlist::SGTable,
};
use core::{marker::PhantomData, ptr::NonNull};

/// A range of user memory, pinned and mapped for DMA by the device; unpinned when dropped.
///
/// # Invariants
///
/// `ptr` is a umem returned by `ib_umem_get_va()` and not released yet.
pub struct Umem {
    ptr: NonNull<bindings::ib_umem>,
}

// SAFETY: A umem may be used and released from any thread.
unsafe impl Send for Umem {}
// SAFETY: Shared access only reads it.
unsafe impl Sync for Umem {}

impl Umem {
    /// Pins `size` bytes of the calling process's memory at `addr`, for access `access` (with
    /// [`Access::LocalWrite`] or remote write the pages are pinned writable), and
    /// maps them for DMA by `dev`.
    ///
    /// The calling process is the one whose user call (`udata`) is in progress: the core pins
    /// `current`'s memory, and a kernel thread (a work item, an interrupt thread) has none, which
    /// the core does not check. Requiring the call's [`UData`] makes that a compile-time fact.
    ///
    /// Fails with `EINVAL` for an empty or wrapping range, `ENOMEM` if the pinned memory limit is
    /// exceeded, `EFAULT` if the range is not mapped.
    pub fn get<T: Operations>(
        dev: &Device<T>,
        _udata: &UData,
        addr: u64,
        size: u64,
        access: AccessFlags,
    ) -> Result<Self> {
        let size = range_len(addr, size)?;
        // SAFETY: `dev` is a live device; a user call of the current process is in progress (its
        // `UData` is borrowed), so `current->mm` is that process's; `ib_umem_get_attr_or_va` (with
        // no attribute bundle) checks the range against its mappings itself.
        let raw = from_err_ptr(unsafe {
            bindings::ib_umem_get_attr_or_va(
                dev.as_raw(),
                core::ptr::null(),
                0,
                addr,
                size,
                access.as_raw() as i32,
            )
        })?;
        Self::from_core(raw)
    }

    /// Wraps what one of the core's umem constructors returned.
    fn from_core(raw: *mut bindings::ib_umem) -> Result<Self> {
        let ptr = NonNull::new(raw).ok_or(crate::error::code::ENOMEM)?;
        // INVARIANT: Just returned by the core's umem constructor, not released.
        Ok(Self { ptr })
    }

    /// The offset of the range's start in its first page (C's `ib_umem_offset()`).
    pub fn page_offset(&self) -> usize {
        // SAFETY: The umem is valid (type invariant); `address` is set at creation and never
        // changes.
        let address = unsafe { (*self.ptr.as_ptr()).address };
        address % PAGE_SIZE
    }

    /// The number of `PAGE_SIZE` blocks the range covers (C's `ib_umem_num_dma_blocks()`).
    pub fn num_pages(&self) -> usize {
        // SAFETY: The umem is valid (type invariant).
        unsafe { bindings::ib_umem_num_dma_blocks(self.ptr.as_ptr(), PAGE_SIZE) }
    }

    /// Calls `f` with the bus address of every `PAGE_SIZE` block, in order, stopping at the
    /// first error: [`Umem::num_pages`] calls, the blocks C's `rdma_umem_for_each_dma_block()`
    /// visits.
    ///
    /// It walks the mapped scatterlist a segment at a time, where C's block iterator makes a
    /// function call per block: the pages of a segment (contiguous in bus addresses, up to the
    /// device's segment size) cost a few instructions each. As in C, a segment's blocks are the
    /// pages it touches, from its start rounded down to a page.
    pub fn for_each_page(&self, mut f: impl FnMut(DmaAddress) -> Result) -> Result {
        const PAGE: DmaAddress = PAGE_SIZE as DmaAddress;
        let mut left = self.num_pages();
        // SAFETY: The umem is valid (type invariant), pinned and mapped: its table and the
        // segments' bus addresses stay unchanged until it is released, which `&self` prevents.
        let sgt = unsafe { SGTable::from_raw(&raw mut (*self.ptr.as_ptr()).sgt_append.sgt) };
        for segment in sgt.iter() {
            let start = segment.dma_address();
            let end = start.saturating_add(segment.dma_len());
            let mut block = start & !(PAGE - 1);
            loop {
                if left == 0 {
                    return Ok(());
                }
                f(block)?;
                left -= 1;
                block = match block.checked_add(PAGE) {
                    Some(next) if next < end => next,
                    _ => break,
                };
            }
        }
        Ok(())
    }
}

impl Drop for Umem {
    fn drop(&mut self) {
        // SAFETY: By the type invariant the umem was not released yet; it is released once.
        unsafe { bindings::ib_umem_release(self.ptr.as_ptr()) };
    }
}

/// The memory user space names for a new CQ's ring: the buffer attributes of the create command
/// (a range of its memory or a dma-buf), which the RDMA core resolves, or else the range the
/// driver's own request names.
///
/// Given to [`Operations::create_user_cq`] only.
///
/// [`Operations::create_user_cq`]: super::Operations::create_user_cq
///
/// # Invariants
///
/// `attrs` is the attribute bundle of a uverbs CQ creation of the current process, in progress
/// for `'a`.
pub struct UserCqBuffer<'a> {
    attrs: NonNull<bindings::uverbs_attr_bundle>,
    _call: PhantomData<&'a ()>,
}

impl UserCqBuffer<'_> {
    /// Wraps the attribute bundle of a CQ creation.
    ///
    /// # Safety
    ///
    /// `attrs` must be the attribute bundle of a uverbs CQ creation of the current process, in
    /// progress for the returned value's lifetime.
    pub(super) unsafe fn from_raw(attrs: NonNull<bindings::uverbs_attr_bundle>) -> Self {
        // INVARIANT: Guaranteed by the caller.
        Self {
            attrs,
            _call: PhantomData,
        }
    }

    /// Pins the ring's memory for access `access` and maps it for DMA by `dev` (C's
    /// `ib_umem_get_cq_buf_or_va()`): the buffer the command's attributes name, which must be at
    /// least `len` bytes long, or else `len` bytes at `addr` (the range the driver's own request
    /// names).
    ///
    /// Fails as [`Umem::get`] does, and with `EINVAL` for buffer attributes that contradict each
    /// other or a buffer shorter than `len`.
    pub fn pin<T: Operations>(
        self,
        dev: &Device<T>,
        addr: u64,
        len: u64,
        access: AccessFlags,
    ) -> Result<Umem> {
        let len = range_len(addr, len)?;
        // SAFETY: `dev` is a live device and, by the type invariant, `attrs` the bundle of a CQ
        // creation of the current process in progress, on that device: `current->mm` is the
        // caller's, and the core checks the attributes and the range itself.
        let raw = from_err_ptr(unsafe {
            bindings::ib_umem_get_cq_buf_or_va(
                dev.as_raw(),
                self.attrs.as_ptr(),
                addr,
                len,
                access.as_raw() as i32,
            )
        })?;
        Umem::from_core(raw)
    }
}

/// The length of the user range of `len` bytes at `addr`: `EINVAL` if it is empty or wraps.
fn range_len(addr: u64, len: u64) -> Result<usize> {
    if len == 0 || addr.checked_add(len).is_none() {
        return Err(crate::error::code::EINVAL);
    }
    usize::try_from(len).map_err(|_| crate::error::code::EINVAL)
}
