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

crate::impl_flags!(
    /// Access rights of a memory region, or granted to a QP's peers (C's `enum ib_access_flags`).
    #[derive(Clone, Copy, Default, PartialEq, Eq, Debug)]
    pub struct AccessFlags(u32);

    /// One access right.
    #[derive(Clone, Copy, PartialEq, Eq, Debug)]
    pub enum Access {
        /// Local write.
        LocalWrite = bindings::ib_access_flags_IB_ACCESS_LOCAL_WRITE,
        /// Remote write.
        RemoteWrite = bindings::ib_access_flags_IB_ACCESS_REMOTE_WRITE,
        /// Remote read.
        RemoteRead = bindings::ib_access_flags_IB_ACCESS_REMOTE_READ,
        /// Remote atomics.
        RemoteAtomic = bindings::ib_access_flags_IB_ACCESS_REMOTE_ATOMIC,
        /// Memory window binding.
        MwBind = bindings::ib_access_flags_IB_ACCESS_MW_BIND,
        /// Addresses start at 0.
        ZeroBased = bindings::ib_access_flags_IB_ZERO_BASED,
        /// On-demand paging.
        OnDemand = bindings::ib_access_flags_IB_ACCESS_ON_DEMAND,
        /// Huge pages.
        Hugetlb = bindings::ib_access_flags_IB_ACCESS_HUGETLB,
        /// Global visibility flush.
        FlushGlobal = bindings::ib_access_flags_IB_ACCESS_FLUSH_GLOBAL,
        /// Persistence flush.
        FlushPersistent = bindings::ib_access_flags_IB_ACCESS_FLUSH_PERSISTENT,
        /// Relaxed ordering (optional: a provider may ignore it).
        RelaxedOrdering = bindings::ib_access_flags_IB_ACCESS_RELAXED_ORDERING,
    }
);

impl AccessFlags {
    /// The rights C's `raw` names, if it names only rights the IB core defines. Optional bits
    /// other than [`Access::RelaxedOrdering`], which providers may ignore, are dropped.
    ///
    /// # Examples
    ///
    /// ```
    /// use kernel::rdma::{Access, AccessFlags};
    ///
    /// let rw = AccessFlags::from_raw(0x3).unwrap();
    /// assert_eq!(rw, Access::LocalWrite | Access::RemoteWrite);
    /// // Bit 15 is no right; bit 21 is an optional one nobody defined yet.
    /// assert_eq!(AccessFlags::from_raw(1 << 15), None);
    /// assert_eq!(AccessFlags::from_raw(1 << 21), Some(AccessFlags::empty()));
    /// ```
    pub fn from_raw(raw: u32) -> Option<Self> {
        let optional = bindings::ib_access_flags_IB_ACCESS_OPTIONAL;
        (raw & !(Self::all_bits() | optional) == 0).then_some(Self(raw & Self::all_bits()))
    }

    /// The rights of C's `raw` the IB core defines; other bits are dropped.
    pub fn from_raw_truncate(raw: u32) -> Self {
        Self(raw & Self::all_bits())
    }

    /// The C value.
    pub fn as_raw(self) -> u32 {
        self.0
    }
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
