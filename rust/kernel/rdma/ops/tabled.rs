// SPDX-License-Identifier: GPL-2.0

//! The one sequence that creates and destroys the objects a device names by handle (CQs, QPs,
//! SRQs): their table entries are made and removed here, never by a driver.

use super::super::{
    device::Device,
    table::{ObjectTable, TableIndex},
};
use super::{Adapter, Operations};
use crate::error::Result;

/// A kind of object with a table: its C type, its storage, its table and the driver's destroy
/// callback.
pub(super) trait Tabled<T: Operations> {
    /// The C object.
    type Raw;
    /// The driver's data.
    type Data: TableIndex;

    /// The device's table of this kind.
    fn table(dev: &Device<T>) -> &ObjectTable<Self::Raw>;

    /// Stores the data of a freshly created object.
    ///
    /// # Safety
    ///
    /// `raw` must be an object of this kind the core allocated for a device of driver `T`, whose
    /// data is not initialised.
    unsafe fn init(raw: *mut Self::Raw, data: Self::Data);

    /// Takes the data of an object being destroyed.
    ///
    /// # Safety
    ///
    /// `raw`'s data must have been stored with [`Tabled::init`] and not taken since.
    unsafe fn take(raw: *mut Self::Raw) -> Self::Data;

    /// The handle of a live object.
    ///
    /// # Safety
    ///
    /// `raw` must be a live object of this kind whose data is initialised.
    unsafe fn index(raw: *mut Self::Raw) -> u32;

    /// The driver's destroy callback.
    fn destroy(dev: &Device<T>, data: Self::Data);
}

/// Defines the [`Tabled`] kind `$kind` over storage `$storage` and wrapper `$wrapper`.
macro_rules! tabled_kind {
    (
        $kind:ident,
        $raw:ident,
        $data:ident,
        $storage:ident,
        $wrapper:ident,
        $table:ident,
        $destroy:ident
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

            unsafe fn init(raw: *mut $crate::bindings::$raw, data: T::$data) {
                // SAFETY: Guaranteed by the caller.
                unsafe { $storage::<T>::init(raw, data) }
            }

            unsafe fn take(raw: *mut $crate::bindings::$raw) -> T::$data {
                // SAFETY: Guaranteed by the caller.
                unsafe { $storage::<T>::take(raw) }
            }

            unsafe fn index(raw: *mut $crate::bindings::$raw) -> u32 {
                // SAFETY: Guaranteed by the caller: live, data initialised.
                <T::$data as $crate::rdma::TableIndex>::table_index(unsafe {
                    $wrapper::<T>::from_raw(raw)
                })
            }

            fn destroy(dev: &$crate::rdma::Device<T>, data: T::$data) {
                T::$destroy(dev, data)
            }
        }
    };
}
pub(super) use tabled_kind;

impl<T: Operations> Adapter<T> {
    /// Creates an object of kind `K`: reserves its table entry (the one step that can fail for
    /// want of memory, done before the device has the object), lets the driver create it
    /// (`create`), stores its data and enters it in the table. If the device handed out a handle
    /// that a live object has, the new object is destroyed again and the creation fails with
    /// `EBUSY`.
    ///
    /// # Safety
    ///
    /// `raw` must be an object of kind `K` that the core allocated for `dev` (with the size the
    /// operations table gives), whose data is not initialised.
    pub(super) unsafe fn create_tabled<K: Tabled<T>>(
        dev: &Device<T>,
        raw: *mut K::Raw,
        create: impl FnOnce() -> Result<K::Data>,
    ) -> Result {
        let entry = K::table(dev).reserve()?;
        let data = create()?;
        let index = data.table_index();
        // SAFETY: Guaranteed by the caller; the data is stored once, here.
        unsafe { K::init(raw, data) };
        // SAFETY: The object is live with initialised data until `destroy_tabled` removes it.
        if let Err(e) = unsafe { K::table(dev).insert(entry, index, raw) } {
            // SAFETY: Stored just above and not in the table: taken once.
            K::destroy(dev, unsafe { K::take(raw) });
            return Err(e);
        }
        Ok(())
    }

    /// Destroys an object of kind `K`: removes it from its table, so that no handle reaches it
    /// any more, then gives its data back to the driver.
    ///
    /// # Safety
    ///
    /// `raw` must be an object of kind `K` of `dev` whose creation succeeded, which the core is
    /// destroying (once).
    pub(super) unsafe fn destroy_tabled<K: Tabled<T>>(dev: &Device<T>, raw: *mut K::Raw) {
        // SAFETY: Guaranteed by the caller: the data is initialised until taken below.
        let index = unsafe { K::index(raw) };
        K::table(dev).remove(index, raw);
        // SAFETY: No longer reachable through the table; taken once.
        K::destroy(dev, unsafe { K::take(raw) });
    }
}
