// SPDX-License-Identifier: GPL-2.0

//! Objects the RDMA core allocates for a provider: user contexts and protection domains.
//!
//! The core allocates `size_ib_*` bytes (zeroed), with the C object first, then calls the
//! provider's `alloc_*` callback; on success the provider's data follows the C object. The
//! `dealloc_*` callback gets the data back by value, and then the core frees the memory.

use super::{ops::Operations, Device};
use crate::{
    bindings,
    error::{code::EINVAL, to_result, Result},
    types::Opaque,
};
use core::{marker::PhantomData, mem::MaybeUninit};

/// The memory of a user context of driver `T`.
#[repr(C)]
pub(super) struct UserContextStorage<T: Operations> {
    ib: Opaque<bindings::ib_ucontext>,
    data: MaybeUninit<T::UserContext>,
}

/// The memory of a protection domain of driver `T`.
#[repr(C)]
pub(super) struct PdStorage<T: Operations> {
    ib: Opaque<bindings::ib_pd>,
    data: MaybeUninit<T::Pd>,
}

/// Checks at build time that the core's allocation (at least 8-byte aligned) suits `S`.
const fn check_layout<S>() {
    assert!(
        core::mem::align_of::<S>() <= 8,
        "driver object data needs more than 8-byte alignment"
    );
}

impl<T: Operations> UserContextStorage<T> {
    /// Stores the data of a freshly allocated context.
    ///
    /// # Safety
    ///
    /// `uctx` must be a context the core allocated with `size_ib_ucontext` bytes for a device of
    /// driver `T`, whose data is not initialised.
    pub(super) unsafe fn init(uctx: *mut bindings::ib_ucontext, data: T::UserContext) {
        const { check_layout::<Self>() };
        let this = uctx.cast::<Self>();
        // SAFETY: `this` covers the allocation (guaranteed by the caller); `data` is written
        // once, here.
        unsafe { (*this).data.write(data) };
    }

    /// Takes the data of a context being deallocated.
    ///
    /// # Safety
    ///
    /// `uctx` must have been initialised with [`Self::init`] and not taken since.
    pub(super) unsafe fn take(uctx: *mut bindings::ib_ucontext) -> T::UserContext {
        // SAFETY: Guaranteed by the caller: the data is initialised and read out once.
        unsafe { (*uctx.cast::<Self>()).data.assume_init_read() }
    }
}

impl<T: Operations> PdStorage<T> {
    /// Stores the data of a freshly allocated PD.
    ///
    /// # Safety
    ///
    /// `pd` must be a PD the core allocated with `size_ib_pd` bytes for a device of driver `T`,
    /// whose data is not initialised.
    pub(super) unsafe fn init(pd: *mut bindings::ib_pd, data: T::Pd) {
        const { check_layout::<Self>() };
        // SAFETY: As in `UserContextStorage::init`.
        unsafe { (*pd.cast::<Self>()).data.write(data) };
    }

    /// Takes the data of a PD being deallocated.
    ///
    /// # Safety
    ///
    /// `pd` must have been initialised with [`Self::init`] and not taken since.
    pub(super) unsafe fn take(pd: *mut bindings::ib_pd) -> T::Pd {
        // SAFETY: Guaranteed by the caller.
        unsafe { (*pd.cast::<Self>()).data.assume_init_read() }
    }
}

/// A live user context of driver `T`; dereferences to its data.
///
/// # Invariants
///
/// Wraps the `struct ib_ucontext` head of a `UserContextStorage<T>` whose data is initialised.
#[repr(transparent)]
pub struct UserContext<T: Operations>(Opaque<bindings::ib_ucontext>, PhantomData<T>);

impl<T: Operations> UserContext<T> {
    /// # Safety
    ///
    /// `ptr` must be a live context of driver `T` whose `alloc_ucontext` succeeded, for `'a`.
    pub(super) unsafe fn from_raw<'a>(ptr: *mut bindings::ib_ucontext) -> &'a Self {
        // SAFETY: Transparent wrapper; validity guaranteed by the caller.
        unsafe { &*ptr.cast() }
    }

    fn as_raw(&self) -> *mut bindings::ib_ucontext {
        self.0.get()
    }

    /// The device the context belongs to.
    pub fn device(&self) -> &Device<T> {
        // SAFETY: A live context's device is a live device of driver `T`.
        unsafe { Device::from_raw((*self.as_raw()).device) }
    }

    /// Maps `pfn`'s `vma.size()` bytes of device memory (e.g. a doorbell page) into the calling
    /// process at `vma`, uncached (C's `rdma_user_mmap_io()` with `pgprot_noncached()`).
    ///
    /// The core tracks the mapping and zaps it if the device goes away while it exists.
    pub fn mmap_io_uncached(&self, vma: &mut Vma, pfn: u64) -> Result {
        let raw = vma.as_raw();
        let size = vma.size();
        // SAFETY: `raw` is the VMA of the current `mmap` call on this context; reading its
        // protection is allowed during the call.
        let prot = unsafe { bindings::pgprot_noncached((*raw).vm_page_prot) };
        // SAFETY: The context is live and this runs inside its `mmap` callback (the only place a
        // `&mut Vma` exists), as `rdma_user_mmap_io` requires.
        to_result(unsafe {
            bindings::rdma_user_mmap_io(
                self.as_raw(),
                raw,
                pfn as crate::ffi::c_ulong,
                size as crate::ffi::c_ulong,
                prot,
                core::ptr::null_mut(),
            )
        })
    }
}

impl<T: Operations> core::ops::Deref for UserContext<T> {
    type Target = T::UserContext;

    fn deref(&self) -> &T::UserContext {
        // SAFETY: By the type invariant the data is initialised.
        unsafe {
            (*self.as_raw().cast::<UserContextStorage<T>>())
                .data
                .assume_init_ref()
        }
    }
}

/// A live protection domain of driver `T`; dereferences to its data.
///
/// # Invariants
///
/// Wraps the `struct ib_pd` head of a `PdStorage<T>` whose data is initialised.
#[repr(transparent)]
pub struct Pd<T: Operations>(Opaque<bindings::ib_pd>, PhantomData<T>);

impl<T: Operations> core::ops::Deref for Pd<T> {
    type Target = T::Pd;

    fn deref(&self) -> &T::Pd {
        // SAFETY: By the type invariant the data is initialised.
        unsafe {
            (*self.0.get().cast::<PdStorage<T>>())
                .data
                .assume_init_ref()
        }
    }
}

/// The user-space mapping being created by an `mmap` callback (C's `struct vm_area_struct`).
///
/// # Invariants
///
/// Wraps a valid VMA whose `mmap` is in progress.
#[repr(transparent)]
pub struct Vma(Opaque<bindings::vm_area_struct>);

impl Vma {
    /// # Safety
    ///
    /// `ptr` must be a VMA in the middle of being mapped, valid for `'a`.
    pub(super) unsafe fn from_raw<'a>(ptr: *mut bindings::vm_area_struct) -> &'a mut Self {
        // SAFETY: Transparent wrapper; validity guaranteed by the caller.
        unsafe { &mut *ptr.cast() }
    }

    fn as_raw(&self) -> *mut bindings::vm_area_struct {
        self.0.get()
    }

    /// The start address.
    pub fn start(&self) -> usize {
        // SAFETY: The VMA is valid (type invariant).
        unsafe { (*self.as_raw()).__bindgen_anon_1.__bindgen_anon_1.vm_start }
    }

    /// The end address (exclusive).
    pub fn end(&self) -> usize {
        // SAFETY: The VMA is valid (type invariant).
        unsafe { (*self.as_raw()).__bindgen_anon_1.__bindgen_anon_1.vm_end }
    }

    /// The length in bytes.
    pub fn size(&self) -> usize {
        self.end().saturating_sub(self.start())
    }

    /// The offset user space passed to `mmap()`, in pages.
    pub fn pgoff(&self) -> usize {
        // SAFETY: The VMA is valid (type invariant).
        unsafe { (*self.as_raw()).vm_pgoff }
    }

    /// Checks that the mapping is exactly `pages` pages long and starts at page offset `pgoff`.
    pub fn expect(&self, pgoff: usize, pages: usize) -> Result {
        if self.pgoff() != pgoff || self.size() != pages * crate::page::PAGE_SIZE {
            return Err(EINVAL);
        }
        Ok(())
    }
}
