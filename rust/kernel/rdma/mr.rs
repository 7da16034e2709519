// SPDX-License-Identifier: GPL-2.0

//! Memory regions. Unlike the other objects, the provider allocates them (the core's
//! `reg_user_mr` and friends return a `struct ib_mr *`): the abstraction boxes the C object
//! together with the driver's data.

use super::{ops::Operations, Device};
use crate::{alloc::KBox, bindings, error::Result, prelude::*, types::Opaque};
use core::{marker::PhantomData, mem::MaybeUninit};

/// The keys of a memory region, as the device assigned them.
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct MrKeys {
    /// Local key: names the region in local work requests.
    pub lkey: u32,
    /// Remote key: names it in remote peers' RDMA requests.
    pub rkey: u32,
}

/// Access rights (C's `enum ib_access_flags`).
pub mod access {
    use crate::bindings;
    /// Local write.
    pub const LOCAL_WRITE: u32 = bindings::ib_access_flags_IB_ACCESS_LOCAL_WRITE;
    /// Remote write.
    pub const REMOTE_WRITE: u32 = bindings::ib_access_flags_IB_ACCESS_REMOTE_WRITE;
    /// Remote read.
    pub const REMOTE_READ: u32 = bindings::ib_access_flags_IB_ACCESS_REMOTE_READ;
    /// Remote atomics.
    pub const REMOTE_ATOMIC: u32 = bindings::ib_access_flags_IB_ACCESS_REMOTE_ATOMIC;
    /// Memory window binding.
    pub const MW_BIND: u32 = bindings::ib_access_flags_IB_ACCESS_MW_BIND;
    /// Addresses start at 0.
    pub const ZERO_BASED: u32 = bindings::ib_access_flags_IB_ZERO_BASED;
    /// On-demand paging.
    pub const ON_DEMAND: u32 = bindings::ib_access_flags_IB_ACCESS_ON_DEMAND;
    /// Relaxed ordering (optional).
    pub const RELAXED_ORDERING: u32 = bindings::ib_access_flags_IB_ACCESS_RELAXED_ORDERING;
}

/// The memory of a memory region of driver `T`.
#[repr(C)]
pub(super) struct MrStorage<T: Operations> {
    ib: Opaque<bindings::ib_mr>,
    data: T::Mr,
}

impl<T: Operations> MrStorage<T> {
    /// Allocates the storage of a region before the driver registers it with the device, so
    /// that nothing can fail between the driver's registration and the core taking the region
    /// (a region whose storage could not be allocated afterwards would be dropped without
    /// `dereg_mr`, leaving the device with a region over freed memory).
    pub(super) fn alloc() -> Result<KBox<MaybeUninit<Self>>> {
        Ok(KBox::new_uninit(GFP_KERNEL)?)
    }

    /// Fills `slot` with `data` and a zeroed C object carrying `keys`; returns the C object for
    /// the core.
    pub(super) fn into_raw(
        slot: KBox<MaybeUninit<Self>>,
        data: T::Mr,
        keys: MrKeys,
    ) -> *mut bindings::ib_mr {
        let boxed = KBox::write(
            slot,
            Self {
                // SAFETY: All-zeroes is a valid `struct ib_mr` before the core fills it in.
                ib: Opaque::new(unsafe { core::mem::zeroed() }),
                data,
            },
        );
        let raw = KBox::into_raw(boxed);
        // SAFETY: Just allocated; nothing else knows it yet.
        unsafe {
            let mr = Opaque::cast_into(core::ptr::addr_of!((*raw).ib));
            (*mr).lkey = keys.lkey;
            (*mr).rkey = keys.rkey;
            mr
        }
    }

    /// Takes back the storage of `mr`, returning the driver's data.
    ///
    /// # Safety
    ///
    /// `mr` must come from [`Self::into_raw`] and not be taken back yet.
    pub(super) unsafe fn from_raw(mr: *mut bindings::ib_mr) -> T::Mr {
        // SAFETY: `ib` is the first field of the `repr(C)` storage, so the pointers coincide;
        // the box was made by `into_raw` (guaranteed by the caller).
        let boxed = unsafe { KBox::from_raw(mr.cast::<Self>()) };
        KBox::into_inner(boxed).data
    }
}

/// A live memory region of driver `T`; dereferences to its data.
///
/// # Invariants
///
/// Wraps the C object at the head of an `MrStorage<T>`.
#[repr(transparent)]
pub struct Mr<T: Operations>(Opaque<bindings::ib_mr>, PhantomData<T>);

impl<T: Operations> Mr<T> {
    /// # Safety
    ///
    /// `ptr` must be a live memory region of driver `T`, for `'a`.
    pub(super) unsafe fn from_raw<'a>(ptr: *mut bindings::ib_mr) -> &'a Self {
        // SAFETY: Transparent wrapper; validity guaranteed by the caller.
        unsafe { &*ptr.cast() }
    }

    /// The device the region belongs to.
    pub fn device(&self) -> &Device<T> {
        // SAFETY: A live region's device is a live device of driver `T`.
        unsafe { Device::from_raw((*self.0.get()).device) }
    }

    /// The address the region starts at, as work requests name it (set by registration or by
    /// mapping pages into a fast-register region).
    pub fn iova(&self) -> u64 {
        // SAFETY: The region is live; the core writes `iova` only while mapping it, which its
        // consumer serialises with posting work requests that use it.
        unsafe { (*self.0.get()).iova }
    }

    /// The length in bytes (see [`Mr::iova`]).
    pub fn length(&self) -> u64 {
        // SAFETY: As in `iova`.
        unsafe { (*self.0.get()).length }
    }

    /// The page size of a fast-register region's page list (see [`Mr::iova`]).
    pub fn page_size(&self) -> u32 {
        // SAFETY: As in `iova`.
        unsafe { (*self.0.get()).page_size }
    }

    /// The keys.
    pub fn keys(&self) -> MrKeys {
        // SAFETY: The region is live; the keys are only changed by the driver through
        // fast-register work requests, which do not run concurrently with this read in a way
        // that could tear a `u32`.
        unsafe {
            MrKeys {
                lkey: (*self.0.get()).lkey,
                rkey: (*self.0.get()).rkey,
            }
        }
    }
}

impl<T: Operations> core::ops::Deref for Mr<T> {
    type Target = T::Mr;

    fn deref(&self) -> &T::Mr {
        // SAFETY: By the type invariant the region heads an `MrStorage<T>`.
        unsafe { &(*self.0.get().cast::<MrStorage<T>>()).data }
    }
}

/// The kind of region `alloc_mr` is asked for (C's `enum ib_mr_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MrType {
    /// A fast-register region: pages are mapped into it with `map_mr_sg` and registered with a
    /// `REG_MR` work request.
    MemReg,
    /// Any other kind (signature, gaps), by its C value.
    Other(u32),
}

impl MrType {
    pub(super) fn from_raw(raw: bindings::ib_mr_type) -> Self {
        match raw {
            bindings::ib_mr_type_IB_MR_TYPE_MEM_REG => Self::MemReg,
            other => Self::Other(other),
        }
    }
}
