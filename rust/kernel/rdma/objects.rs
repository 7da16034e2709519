// SPDX-License-Identifier: GPL-2.0

//! Objects the RDMA core allocates for a provider: user contexts and protection domains here,
//! and the storage and wrapper every other kind (CQs, QPs, SRQs, address handles) is defined
//! with in its own file (`core_object!`).
//!
//! The core allocates `size_ib_*` bytes (zeroed), with the C object first, then calls the
//! provider's `alloc_*` callback; on success the provider's data follows the C object. The
//! `dealloc_*` callback gets the data back by value, and then the core frees the memory.

use super::{
    mmap::{own_memory_bar, BarPages, ContextEntries, MmapEntry},
    ops::Operations,
    Device,
};
use crate::{
    alloc::KVec,
    bindings,
    device::{self, Bound},
    error::{code::EINVAL, Result},
    pci,
    prelude::*,
    types::Opaque,
};
use core::{marker::PhantomData, mem::MaybeUninit};

/// The memory of a user context of driver `T`.
#[repr(C)]
pub(super) struct UserContextStorage<T: Operations> {
    ib: Opaque<bindings::ib_ucontext>,
    /// The entries of the context's mmap table, which the abstraction removes.
    entries: MaybeUninit<ContextEntries>,
    data: MaybeUninit<T::UserContext>,
}

/// Checks at build time that the core's allocation (at least 8-byte aligned) suits `S`.
pub(super) const fn check_layout<S>() {
    assert!(
        core::mem::align_of::<S>() <= 8,
        "driver object data needs more than 8-byte alignment"
    );
}

impl<T: Operations> UserContextStorage<T> {
    /// Stores the data of a freshly allocated context and the entries its creation inserted.
    ///
    /// # Safety
    ///
    /// `uctx` must be a context the core allocated with `size_ib_ucontext` bytes for a device of
    /// driver `T`, whose data is not initialised, and `new` its [`NewUserContext`].
    pub(super) unsafe fn init(
        uctx: *mut bindings::ib_ucontext,
        new: NewUserContext<'_, T>,
        data: T::UserContext,
    ) {
        const { check_layout::<Self>() };
        let this = uctx.cast::<Self>();
        // SAFETY: `this` covers the allocation (guaranteed by the caller); each field is written
        // once, here.
        unsafe {
            (*this).entries.write(new.into_entries());
            (*this).data.write(data);
        }
    }

    /// Takes the data of a context being deallocated, after removing the entries of its mmap
    /// table: none can be mapped any more by the time the driver gets its data back.
    ///
    /// # Safety
    ///
    /// `uctx` must have been initialised with [`Self::init`] and not taken since, and be live.
    pub(super) unsafe fn take(uctx: *mut bindings::ib_ucontext) -> T::UserContext {
        let this = uctx.cast::<Self>();
        // SAFETY: Guaranteed by the caller: the entries and the data are initialised and read
        // out once. The context is live while the entries are dropped (removed), as they need.
        unsafe {
            drop((*this).entries.assume_init_read());
            (*this).data.assume_init_read()
        }
    }
}

/// A user context being created: what [`Operations::alloc_ucontext`] sets up in it before its
/// data exists, namely what the context's process can map.
///
/// # Invariants
///
/// `ptr` is a context the core allocated for a device of driver `T`, in its `alloc_ucontext`
/// call, live for `'a`, with its device, uverbs file and mmap table set up; `entries` holds
/// every entry inserted into its table.
pub struct NewUserContext<'a, T: Operations> {
    ptr: *mut bindings::ib_ucontext,
    entries: ContextEntries,
    _p: PhantomData<(&'a (), T)>,
}

impl<'a, T: Operations> NewUserContext<'a, T> {
    /// # Safety
    ///
    /// `ptr` must be a context the core allocated for a device of driver `T` and passed to
    /// `alloc_ucontext`, live for `'a`.
    pub(super) unsafe fn new(ptr: *mut bindings::ib_ucontext) -> Self {
        // INVARIANT: `ib_alloc_ucontext()` sets the device, file and table up before the core
        // calls `alloc_ucontext` (guaranteed by the caller); no entry is inserted yet.
        Self {
            ptr,
            entries: KVec::new(),
            _p: PhantomData,
        }
    }

    /// The entries inserted, which the context keeps until it is deallocated. (Dropping a
    /// `NewUserContext` instead, when the creation fails, removes them.)
    fn into_entries(self) -> ContextEntries {
        self.entries
    }

    /// The device the context belongs to.
    fn device(&self) -> &Device<T> {
        // SAFETY: The context's device is a live device of driver `T` (type invariant).
        unsafe { Device::from_raw((*self.ptr).device) }
    }

    /// Lets the context's process map `pages` pages of memory BAR `bar` of the RDMA device's
    /// parent, from page `first_page` of the BAR on, uncached (a doorbell page, for example),
    /// with an `mmap()` of the uverbs file at byte offset `pgoff * PAGE_SIZE` and of exactly that
    /// length. Until the context is deallocated.
    ///
    /// Only device memory can be mapped this way: the range must lie inside the BAR, which must
    /// be one of the parent's standard memory BARs, assigned, enabled and starting on a page
    /// boundary, of a parent that is a PCI device (`EINVAL` otherwise, and for no page).
    /// `ENOMEM` if a page of the offsets is taken already. The core zaps the mapping when the RDMA
    /// device is unregistered (or the context otherwise disassociated), which happens before the
    /// parent is unbound: the BAR is the parent's own for that reason, never that of another
    /// device, whose unbinding (and the release of its BAR) the core would not see.
    pub fn map_bar_uncached(
        &mut self,
        pgoff: u32,
        bar: u32,
        first_page: u64,
        pages: usize,
    ) -> Result {
        let pdev = <&pci::Device<Bound>>::try_from(self.device().parent())?;
        let start = pdev.resource_start(bar)?;
        let len = pdev.resource_len(bar)?;
        let dev: &device::Device<Bound> = pdev.as_ref();
        // SAFETY: `dev` is the `struct device` embedded in the `struct pci_dev` of `pdev`, which is
        // live while `pdev` is borrowed; `bar` is a valid BAR index (`resource_start` checked it).
        let flags = unsafe {
            let pci = crate::container_of!(dev.as_raw(), bindings::pci_dev, dev);
            (*pci).resource[bar as usize].flags
        };
        if !own_memory_bar(bar, flags) {
            return Err(EINVAL);
        }
        // SAFETY: `start` and `len` are those of one of the parent's own memory BARs (just
        // checked), the parent of the device of this context, whose table the entry goes into.
        let mapping = unsafe { BarPages::new(start, len, first_page, pages) }?;
        // Room first: an entry that could not be kept would be removed again at once.
        self.entries.reserve(1, GFP_KERNEL)?;
        // SAFETY: The context is live, with its table set up, until it is deallocated (type
        // invariant), before which the entry is dropped: it is kept in `entries`, which either
        // `Drop` drops (creation failed) or the context's storage keeps until `take`. The device's
        // `mmap_free` is `free::<BarPages>` (`Adapter::OPS`, with `alloc_ucontext`).
        // `alloc_ucontext` may sleep.
        let entry = unsafe { MmapEntry::insert_exact(self.ptr, pgoff, pages, mapping) }?;
        // Cannot fail: room was reserved above. (Were it to, the entry would be dropped, which
        // removes it.)
        self.entries
            .push_within_capacity(entry)
            .map_err(|_| ENOMEM)?;
        Ok(())
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

/// Defines, for one kind of object the RDMA core allocates (`size_ib_*` bytes, C object first),
/// the storage type (`$storage`: the C object, then the driver's data `T::$data`) and the public
/// wrapper (`$name`) through which callbacks see a live object. `$release` says how the data
/// ends: `take` (moved out to a destroy callback that consumes it; the data must be `Unpin`) or
/// `drop_data` (dropped in place after a destroy callback that borrows the object).
///
/// Optional last arguments, `$extra: $extra_ty = $extra_init`, add fields of the abstraction's
/// own to the storage: `init` initialises each in place with `$extra_init` (a value or an
/// initialiser that cannot fail) before the data, and the wrapper's `$extra()` lends it (a field
/// that changes does so through interior mutability). They are never dropped (the core frees the
/// memory), so their types must not need to be.
macro_rules! core_object {
    (
        $(#[$doc:meta])* $name:ident, $storage:ident, $c:ident, $data:ident, $release:ident
        $(, $extra:ident: $extra_ty:ty = $extra_init:expr)*
    ) => {
        /// The memory of one object of driver `T`.
        #[repr(C)]
        pub(super) struct $storage<T: $crate::rdma::Operations> {
            ib: $crate::types::Opaque<$crate::bindings::$c>,
            $($extra: $extra_ty,)*
            data: ::core::mem::MaybeUninit<T::$data>,
        }

        impl<T: $crate::rdma::Operations> $storage<T> {
            /// Initialises the data of a freshly allocated object in place, where it stays until
            /// the object is freed: it may hold what must not move (locks, for instance). Sets the
            /// extra fields first, if there are any.
            ///
            /// # Safety
            ///
            /// `ptr` must be an object the core allocated with the size the operations table
            /// gives for this kind, for a device of driver `T`, whose data is not initialised.
            pub(super) unsafe fn init(
                ptr: *mut $crate::bindings::$c,
                init: impl $crate::prelude::PinInit<T::$data>,
            ) {
                const { $crate::rdma::objects::check_layout::<Self>() };
                $(
                    const { assert!(!::core::mem::needs_drop::<$extra_ty>()) };
                    // SAFETY: `ptr` covers the whole storage (guaranteed by the caller), so the
                    // field is valid for writes and suitably aligned; the core never moves the
                    // object, so the field stays pinned. The initialiser cannot fail.
                    unsafe {
                        ::pin_init::raw_init::<$extra_ty>(
                            ::core::ptr::addr_of_mut!((*ptr.cast::<Self>()).$extra),
                            $extra_init,
                        )
                    };
                )*
                // SAFETY: `ptr` covers the whole storage (guaranteed by the caller), so the slot
                // is valid for writes and suitably aligned; the core never moves the object, so
                // the data stays pinned until `drop_data` or `take` ends it.
                let slot = unsafe { ::core::ptr::addr_of_mut!((*ptr.cast::<Self>()).data) };
                // SAFETY: As just said.
                unsafe { ::pin_init::raw_init(slot.cast::<T::$data>(), init) };
            }
        }

        $crate::rdma::objects::core_object_release!($release, $storage, $c, $data);

        $(#[$doc])*
        ///
        /// # Invariants
        ///
        /// Wraps the C object at the head of a storage of driver `T` that `init` initialised (its
        /// data, and its extra field if it has one).
        #[repr(transparent)]
        pub struct $name<T: $crate::rdma::Operations>(
            $crate::types::Opaque<$crate::bindings::$c>,
            ::core::marker::PhantomData<T>,
        );

        impl<T: $crate::rdma::Operations> $name<T> {
            /// # Safety
            ///
            /// `ptr` must be a live object of driver `T` whose creation succeeded (its data is
            /// initialised), for `'a`.
            pub(super) unsafe fn from_raw<'a>(ptr: *mut $crate::bindings::$c) -> &'a Self {
                // SAFETY: Transparent wrapper; validity guaranteed by the caller.
                unsafe { &*ptr.cast() }
            }

            /// The C object.
            pub(super) fn as_raw(&self) -> *mut $crate::bindings::$c {
                self.0.get()
            }

            /// The device the object belongs to.
            pub fn device(&self) -> &$crate::rdma::Device<T> {
                // SAFETY: A live object's device is a live device of driver `T`.
                unsafe { $crate::rdma::Device::from_raw((*self.as_raw()).device) }
            }

            $(
                /// The abstraction's own field of the storage (see `core_object!`).
                pub(super) fn $extra(&self) -> &$extra_ty {
                    // SAFETY: By the type invariant the storage was initialised by `init`, which
                    // set this field, and lives as long as `self`; it is only ever shared (a
                    // field that changes does so through interior mutability).
                    unsafe { &(*self.as_raw().cast::<$storage<T>>()).$extra }
                }
            )*
        }

        impl<T: $crate::rdma::Operations> core::ops::Deref for $name<T> {
            type Target = T::$data;

            fn deref(&self) -> &T::$data {
                // SAFETY: By the type invariant the data is initialised; it is only taken out
                // when the object is destroyed, after which no reference to it exists.
                unsafe { (*self.as_raw().cast::<$storage<T>>()).data.assume_init_ref() }
            }
        }

        // SAFETY: The data is `Send + Sync` (bounds of `Operations`); the C object is protected
        // by the RDMA core.
        unsafe impl<T: $crate::rdma::Operations> Sync for $name<T> {}
        // SAFETY: As above.
        unsafe impl<T: $crate::rdma::Operations> Send for $name<T> {}
    };
}
pub(super) use core_object;

/// The way the data of one kind of [`core_object!`] ends (see there).
macro_rules! core_object_release {
    (take, $storage:ident, $c:ident, $data:ident) => {
        impl<T: $crate::rdma::Operations> $storage<T> {
            /// Takes the data of an object being destroyed, for data that may move.
            ///
            /// # Safety
            ///
            /// `ptr` must have been initialised with `init` and not taken or dropped since.
            pub(super) unsafe fn take(ptr: *mut $crate::bindings::$c) -> T::$data
            where
                T::$data: Unpin,
            {
                // SAFETY: Guaranteed by the caller: the data is initialised and read out once;
                // being `Unpin`, it may move.
                unsafe { (*ptr.cast::<Self>()).data.assume_init_read() }
            }
        }
    };
    (drop_data, $storage:ident, $c:ident, $data:ident) => {
        impl<T: $crate::rdma::Operations> $storage<T> {
            /// Drops the data of an object being destroyed, in place.
            ///
            /// # Safety
            ///
            /// `ptr` must have been initialised with `init` and not taken or dropped since, and
            /// no reference to the data may be used afterwards.
            pub(super) unsafe fn drop_data(ptr: *mut $crate::bindings::$c) {
                // SAFETY: Guaranteed by the caller: the data is initialised and dropped once.
                unsafe { (*ptr.cast::<Self>()).data.assume_init_drop() }
            }
        }
    };
}
pub(super) use core_object_release;

core_object!(
    /// A live protection domain of driver `T`; dereferences to its data.
    Pd, PdStorage, ib_pd, Pd, take
);
