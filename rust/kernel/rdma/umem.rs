// SPDX-License-Identifier: GPL-2.0

//! Pinned user memory (C's `struct ib_umem`).
//!
//! C header: [`include/rdma/ib_umem.h`](srctree/include/rdma/ib_umem.h)

#[cfg(doc)]
use super::Access;
use super::{ops::Operations, AccessFlags, Device, UData};
use crate::{
    bindings, device,
    dma::DmaAddress,
    error::{from_err_ptr, Result},
    page::PAGE_SIZE,
    scatterlist::SGTable,
    sync::aref::ARef,
};
use core::{marker::PhantomData, ptr::NonNull};

/// A range of user memory, pinned and mapped for DMA by the device; unpinned when dropped.
///
/// Its release reads the `ib_device` (`umem->ibdev`, for its DMA device) and unmaps through that
/// DMA device, which must still be bound to its driver then. So a umem holds a registration
/// reference of the `ib_device` (C's `ib_device_try_get()`), for which `ib_unregister_device()`
/// waits, after it destroyed the user objects the umems are normally pinned for: a umem the
/// driver keeps elsewhere (moved to a work item, say) delays the unregistration, and with it
/// the parent's unbind, until it is dropped. It also holds references on the `ib_device`'s
/// `struct device` and on the DMA device, so that the memory its release reads stays allocated
/// whatever order the last references are dropped in.
///
/// # Invariants
///
/// - `ptr` is a umem returned by one of the core's umem constructors and not released yet.
/// - `_registration` is a registration reference of the umem's `ib_device`.
/// - `_ib_device` is the `struct device` embedded in the umem's `ib_device` (`umem->ibdev`):
///   while it is referenced, the `ib_device` stays allocated.
/// - `_dma_device` is the `ib_device`'s DMA device (`dma_device`, which is set at registration and
///   then never changes), if it has one.
pub struct Umem {
    ptr: NonNull<bindings::ib_umem>,
    // Dropped (put) after the umem is released, before the device references.
    _registration: RegistrationRef,
    _ib_device: ARef<device::Device>,
    _dma_device: Option<ARef<device::Device>>,
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
        // SAFETY: `raw` was just returned by the core's constructor for `dev`, which is live
        // while borrowed; its `dma_device` is NULL or the parent `register` gave it, which is
        // bound, so live, while `dev` is borrowed (see `Device::parent`).
        unsafe { Self::from_core(raw, dev.as_raw()) }
    }

    /// Wraps what one of the core's umem constructors returned for `ib`, taking references on
    /// `ib` and its DMA device.
    ///
    /// # Safety
    ///
    /// `raw` must be a umem the core made for `ib` (or NULL) and not released; `ib` must be a
    /// live `ib_device` (its `struct device` has a reference that lasts through this call), whose
    /// `dma_device` is NULL or a live device with the same guarantee.
    unsafe fn from_core(raw: *mut bindings::ib_umem, ib: *mut bindings::ib_device) -> Result<Self> {
        let ptr = NonNull::new(raw).ok_or(crate::error::code::ENOMEM)?;
        // SAFETY: `ib` is live (guaranteed by the caller).
        let Some(registration) = (unsafe { RegistrationRef::try_get(ib) }) else {
            // The device is being unregistered, which would not wait for this umem.
            // SAFETY: `raw` was made by the core and not released (guaranteed by the caller).
            unsafe { bindings::ib_umem_release(raw) };
            return Err(crate::error::code::ENODEV);
        };
        // SAFETY: `ib` is live (guaranteed by the caller), so the `struct device` embedded in it
        // has a reference that lasts through the call; its release (`ib_device_release`) may
        // run in any thread.
        let ib_device = unsafe { device::Device::get_device(&raw mut (*ib).__bindgen_anon_1.dev) };
        // SAFETY: `ib` is live; `dma_device` is NULL or a live device (guaranteed by the caller)
        // with the same guarantee as above.
        let dma_device = unsafe {
            let dma = (*ib).dma_device;
            (!dma.is_null()).then(|| device::Device::get_device(dma))
        };
        // INVARIANT: Just returned by the core's umem constructor for `ib`, not released; the
        // references are on `ib` (registration and memory) and its DMA device.
        Ok(Self {
            ptr,
            _registration: registration,
            _ib_device: ib_device,
            _dma_device: dma_device,
        })
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
        // SAFETY: By the type invariant the umem was not released yet; it is released once. The
        // `ib_device` it reads and the DMA device it unmaps through are still allocated, and the
        // `ib_device` not unregistered (so its parent is bound): the references in `self` are
        // dropped only after this.
        unsafe { bindings::ib_umem_release(self.ptr.as_ptr()) };
    }
}

/// A registration reference of an `ib_device` (C's `ib_device_try_get()`): the device's
/// unregistration waits for it to be put.
///
/// # Invariants
///
/// `ib` is an `ib_device` of which this holds a registration reference; its memory is kept by
/// its owner (a [`Umem`] also holds a reference on the device's `struct device`).
struct RegistrationRef {
    ib: NonNull<bindings::ib_device>,
}

impl RegistrationRef {
    /// A registration reference of `ib`; `None` if it is not registered (or being unregistered).
    ///
    /// # Safety
    ///
    /// `ib` must be live, and stay allocated as long as the reference is held.
    unsafe fn try_get(ib: *mut bindings::ib_device) -> Option<Self> {
        let ib = NonNull::new(ib)?;
        // SAFETY: `ib` is live (guaranteed by the caller).
        let got = unsafe { bindings::ib_device_try_get(ib.as_ptr()) };
        // INVARIANT: The reference was just taken; the caller keeps `ib` allocated.
        got.then_some(Self { ib })
    }
}

impl Drop for RegistrationRef {
    fn drop(&mut self) {
        // SAFETY: A registration reference of the device is held (type invariant), and the
        // device is allocated. It may be the last: the put completes the unregistration's wait.
        unsafe { bindings::ib_device_put(self.ib.as_ptr()) };
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
        // SAFETY: As in `Umem::get`.
        unsafe { Umem::from_core(raw, dev.as_raw()) }
    }
}

/// The length of the user range of `len` bytes at `addr`: `EINVAL` if it is empty or wraps.
fn range_len(addr: u64, len: u64) -> Result<usize> {
    if len == 0 || addr.checked_add(len).is_none() {
        return Err(crate::error::code::EINVAL);
    }
    usize::try_from(len).map_err(|_| crate::error::code::EINVAL)
}

// The fake umem has no DMA device: only the core's virtual-DMA builds (no HIGHMEM) release such
// a umem without unmapping through it.
#[cfg(all(CONFIG_RUST_INFINIBAND_KUNIT_TEST, CONFIG_INFINIBAND_VIRT_DMA))]
#[macros::kunit_tests(rust_rdma_umem)]
mod tests {
    use super::*;
    use crate::prelude::*;

    /// The reference count of the `struct device` embedded in `ib`.
    ///
    /// # Safety
    ///
    /// `ib` must be allocated.
    unsafe fn refs(ib: *mut bindings::ib_device) -> i32 {
        // SAFETY: `ib` is allocated (guaranteed by the caller); the count is read atomically.
        unsafe {
            core::ptr::read_volatile(
                &raw const (*ib).__bindgen_anon_1.dev.kobj.kref.refcount.refs.counter,
            )
        }
    }

    /// The unregistration of a device waits for its umems: a umem dropped after the parent
    /// device was unbound would unmap DMA through an unbound device. Before, a umem held only
    /// references that keep memory, and the unregistration went on at once.
    ///
    /// The device is a bare one, never registered, whose registration reference is set up as
    /// `enable_device()` sets it, with no DMA device (so the core's release unmaps nothing); the
    /// umem a fake one that pins no page: `ib_umem_release()` still reads
    /// `umem->ibdev->dma_device`, as it does for a real one.
    #[test]
    fn unregistration_waits_for_umem() -> Result {
        // SAFETY: All zeroes is a valid `ib_umem`: no pages, no scatterlist, not a dma-buf or
        // ODP umem.
        let fake: bindings::ib_umem = unsafe { core::mem::zeroed() };
        // The umem's release (`kfree()`) frees what `KBox` allocates.
        let raw = KBox::into_raw(KBox::new(fake, GFP_KERNEL)?);
        // SAFETY: The size covers a whole `struct ib_device`.
        let ib = unsafe {
            bindings::_ib_alloc_device(
                core::mem::size_of::<bindings::ib_device>(),
                &raw mut bindings::init_net,
            )
        };
        if ib.is_null() {
            // SAFETY: `raw` came from `KBox::into_raw` above and was not used since.
            drop(unsafe { KBox::from_raw(raw) });
            return Err(ENOMEM);
        }
        let mm = &raw mut bindings::init_mm;
        // SAFETY: `raw` is the umem allocated above, not shared; `init_mm` is never freed, and
        // the release's `mmdrop()` balances the `mmgrab()`. `ib` was just allocated, not shared:
        // its registration reference is set as `enable_device()` does.
        unsafe {
            (*raw).ibdev = ib;
            (*raw).owning_mm = mm;
            bindings::mmgrab(mm);
            bindings::refcount_set(&raw mut (*ib).refcount, 1);
        }
        // SAFETY: `ib` was allocated above.
        let before = unsafe { refs(ib) };
        // SAFETY: `raw` is a umem of `ib` as the core would make it (one that pins no page, for
        // a device with no DMA device), not released; `ib` is live.
        let umem = unsafe { Umem::from_core(raw, ib) }?;
        // SAFETY: `ib` is allocated: the umem holds a reference.
        assert_eq!(unsafe { refs(ib) }, before + 1);
        // SAFETY: `ib` is live; `unreg_completion` was initialised by `_ib_alloc_device()`. The
        // put is the one `disable_device()` makes, which then waits for the completion.
        let done = unsafe {
            bindings::ib_device_put(ib);
            bindings::try_wait_for_completion(&raw mut (*ib).unreg_completion)
        };
        // The unregistration would wait: the umem holds a registration reference.
        assert!(!done);
        // Releases the umem, then puts its registration reference: the wait ends.
        drop(umem);
        // SAFETY: As above; the device is still allocated (never registered, not deallocated).
        let done = unsafe { bindings::try_wait_for_completion(&raw mut (*ib).unreg_completion) };
        assert!(done);
        // SAFETY: `ib` was allocated above, never registered, and no reference of any kind is
        // held on it any more.
        unsafe { bindings::ib_dealloc_device(ib) };
        Ok(())
    }
}
