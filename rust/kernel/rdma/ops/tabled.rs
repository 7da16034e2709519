// SPDX-License-Identifier: GPL-2.0

//! The one sequence that creates and destroys the objects a device names by handle (CQs, QPs,
//! SRQs): their table entries are made and removed here, never by a driver.

use super::super::{
    device::Device,
    table::{ObjectTable, TableIndex, Users},
};
use super::{Adapter, Operations};
use crate::{error::Result, prelude::PinInit};

/// A kind of object with a table: its C type, its storage, its table and the driver's destroy
/// callback.
pub(super) trait Tabled<T: Operations> {
    /// The C object.
    type Raw: 'static;
    /// The driver's data.
    type Data: TableIndex;

    /// The device's table of this kind.
    fn table(dev: &Device<T>) -> &ObjectTable<Self::Raw>;

    /// Initialises the data of a freshly created object in place.
    ///
    /// # Safety
    ///
    /// `raw` must be an object of this kind the core allocated for a device of driver `T`, whose
    /// data is not initialised.
    unsafe fn init(raw: *mut Self::Raw, init: impl PinInit<Self::Data>);

    /// Drops the data of an object being destroyed, in place.
    ///
    /// # Safety
    ///
    /// `raw`'s data must have been initialised with [`Tabled::init`] and not dropped since; it
    /// is not used afterwards.
    unsafe fn drop_data(raw: *mut Self::Raw);

    /// The uses of a live object (see [`Users`]).
    ///
    /// # Safety
    ///
    /// `raw` must be a live object of this kind whose storage is initialised, for `'a`.
    unsafe fn users<'a>(raw: *mut Self::Raw) -> &'a Users;

    /// The handle of a live object.
    ///
    /// # Safety
    ///
    /// `raw` must be a live object of this kind whose data is initialised.
    unsafe fn index(raw: *mut Self::Raw) -> u32;

    /// The driver's destroy callback.
    ///
    /// # Safety
    ///
    /// `raw` must be a live object of this kind whose data is initialised, being destroyed (or
    /// its creation undone): out of the device's table, once.
    unsafe fn destroy(dev: &Device<T>, raw: *mut Self::Raw);
}

/// Defines the [`Tabled`] kind `$kind` over storage `$storage` and wrapper `$wrapper`; the
/// driver's destroy callback `$destroy` sees the object as `$destroyed` (the wrapper itself, or a
/// view of it without what must not be used while the object is destroyed).
macro_rules! tabled_kind {
    (
        $kind:ident,
        $raw:ident,
        $data:ident,
        $storage:ident,
        $wrapper:ident,
        $table:ident,
        $destroy:ident,
        $destroyed:ident
    ) => {
        /// The tabled kind of the same name.
        pub(super) struct $kind<T>(::core::marker::PhantomData<T>);

        impl<T: $crate::rdma::Operations> $crate::rdma::ops::tabled::Tabled<T> for $kind<T> {
            type Raw = $crate::bindings::$raw;
            type Data = T::$data;

            fn table(
                dev: &$crate::rdma::Device<T>,
            ) -> &$crate::rdma::table::ObjectTable<$crate::bindings::$raw> {
                &dev.tables().$table
            }

            unsafe fn init(
                raw: *mut $crate::bindings::$raw,
                init: impl $crate::prelude::PinInit<T::$data>,
            ) {
                // SAFETY: Guaranteed by the caller.
                unsafe { $storage::<T>::init(raw, init) }
            }

            unsafe fn drop_data(raw: *mut $crate::bindings::$raw) {
                // SAFETY: Guaranteed by the caller.
                unsafe { $storage::<T>::drop_data(raw) }
            }

            unsafe fn users<'a>(
                raw: *mut $crate::bindings::$raw,
            ) -> &'a $crate::rdma::table::Users {
                // SAFETY: Guaranteed by the caller: live, storage initialised, for `'a`.
                unsafe { $wrapper::<T>::from_raw(raw) }.users()
            }

            unsafe fn index(raw: *mut $crate::bindings::$raw) -> u32 {
                // SAFETY: Guaranteed by the caller: live, data initialised.
                <T::$data as $crate::rdma::TableIndex>::table_index(unsafe {
                    $wrapper::<T>::from_raw(raw)
                })
            }

            unsafe fn destroy(dev: &$crate::rdma::Device<T>, raw: *mut $crate::bindings::$raw) {
                // SAFETY: Guaranteed by the caller: live, data initialised, being destroyed.
                T::$destroy(dev, unsafe { $destroyed::<T>::from_raw(raw) })
            }
        }
    };
}
pub(super) use tabled_kind;

impl<T: Operations> Adapter<T> {
    /// Creates an object of kind `K`: lets the driver create it (`create`, which returns the
    /// initialiser of its data), initialises the data in place and enters the object in the
    /// table. If the device handed out a handle that a live object has (`EBUSY`), or the table
    /// cannot grow (`ENOMEM`), the new object is destroyed again and the creation fails.
    ///
    /// # Safety
    ///
    /// `raw` must be an object of kind `K` that the core allocated for `dev` (with the size the
    /// operations table gives), whose data is not initialised.
    pub(super) unsafe fn create_tabled<K: Tabled<T>, I: PinInit<K::Data>>(
        dev: &Device<T>,
        raw: *mut K::Raw,
        create: impl FnOnce() -> Result<I>,
    ) -> Result {
        let init = create()?;
        // SAFETY: Guaranteed by the caller; the data is initialised once, here.
        unsafe { K::init(raw, init) };
        // SAFETY: Initialised just above.
        let index = unsafe { K::index(raw) };
        // SAFETY: The object is live with initialised data until `destroy_tabled` removes it.
        if let Err(e) = unsafe { K::table(dev).insert(index, raw) } {
            // SAFETY: Initialised above and not in the table: destroyed and dropped once, and
            // the core frees the object without calling back when the creation fails.
            unsafe {
                K::destroy(dev, raw);
                K::drop_data(raw);
            }
            return Err(e);
        }
        Ok(())
    }

    /// Destroys an object of kind `K`: removes it from its table, so that no handle reaches it
    /// any more, lets the driver destroy it, then drops its data in place.
    ///
    /// # Safety
    ///
    /// `raw` must be an object of kind `K` of `dev` whose creation succeeded, which the core is
    /// destroying (once).
    pub(super) unsafe fn destroy_tabled<K: Tabled<T>>(dev: &Device<T>, raw: *mut K::Raw) {
        // SAFETY: Guaranteed by the caller.
        unsafe {
            Self::leave_table::<K>(dev, raw);
            Self::destroy_untabled::<K>(dev, raw);
        }
    }

    /// The first half of [`Adapter::destroy_tabled`]: removes an object of kind `K` from its
    /// table, so that no handle reaches it any more, and waits for the lookups that found it
    /// before to be done with it.
    ///
    /// # Safety
    ///
    /// `raw` must be an object of kind `K` of `dev` whose creation succeeded and whose data is
    /// initialised.
    pub(super) unsafe fn leave_table<K: Tabled<T>>(dev: &Device<T>, raw: *mut K::Raw) {
        // SAFETY: Guaranteed by the caller.
        let index = unsafe { K::index(raw) };
        K::table(dev).remove(index, raw);
        // SAFETY: Guaranteed by the caller: the object is live until its destruction, which
        // follows this. It left the table just now, once.
        unsafe { K::users(raw) }.drain();
    }

    /// The second half of [`Adapter::destroy_tabled`]: lets the driver destroy an object of kind
    /// `K` that left its table, then drops its data in place.
    ///
    /// # Safety
    ///
    /// `raw` must be an object of kind `K` of `dev` whose creation succeeded, which the core is
    /// destroying (once) and which [`Adapter::leave_table`] removed from its table.
    pub(super) unsafe fn destroy_untabled<K: Tabled<T>>(dev: &Device<T>, raw: *mut K::Raw) {
        // SAFETY: No longer reachable through the table; the driver's callback is the last user
        // of the data, which is dropped once, after it.
        unsafe {
            K::destroy(dev, raw);
            K::drop_data(raw);
        }
    }
}
