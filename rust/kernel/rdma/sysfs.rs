// SPDX-License-Identifier: GPL-2.0

//! Read-only sysfs attributes of an RDMA device (`/sys/class/infiniband/<dev>/<name>`), the way
//! providers that predate netlink expose `hw_rev`, `hca_type` or `board_id`.
//!
//! Define them with [`rdma_device_attributes!`](crate::rdma_device_attributes) and name the group
//! in [`Operations::DEVICE_GROUP`](super::Operations::DEVICE_GROUP).

use super::{device::Device, ops::Operations};
use crate::{
    bindings,
    ffi::c_char,
    page::PAGE_SIZE,
    str::{CStr, Formatter},
    types::Opaque,
};
use core::marker::PhantomData;

/// The signature of an attribute's `show` function: it writes the attribute's contents into the
/// sysfs page through the [`Formatter`], which covers `PAGE_SIZE - 1` bytes (sysfs warns of a
/// `show` that fills the whole page).
///
/// A write that does not fit fails, after copying what fits of it: a `show` that returns the
/// error fails the read with `EINVAL`, one that returns `Ok` gives the cut contents.
pub type ShowFn<T> = fn(&Device<T>, &mut Formatter<'_>) -> core::fmt::Result;

/// Runs `show` over the sysfs page `page` and returns what sysfs expects of a `show` callback:
/// the length of the contents, or a negative error.
fn show_page(page: &mut [u8], show: impl FnOnce(&mut Formatter<'_>) -> core::fmt::Result) -> isize {
    let cap = page.len().saturating_sub(1);
    let mut out = Formatter::new(&mut page[..cap]);
    match show(&mut out) {
        // `bytes_written()` counts what did not fit too, and `show` may have swapped in a
        // formatter of its own: no more than the bytes given to it are reported.
        Ok(()) => out.bytes_written().min(cap) as isize,
        Err(_) => -(bindings::EINVAL as isize),
    }
}

/// A read-only device attribute of driver `T` (C's `struct device_attribute`).
///
/// # Invariants
///
/// `attr` is the first field, so a pointer to it is a pointer to the whole value; its `show`
/// callback is `DeviceAttribute::show_callback`.
#[repr(C)]
pub struct DeviceAttribute<T: Operations> {
    attr: Opaque<bindings::device_attribute>,
    show: ShowFn<T>,
    _p: PhantomData<T>,
}

// SAFETY: The C attribute is only read (by sysfs) after it was built at compile time; `show` is
// a plain function pointer.
unsafe impl<T: Operations> Sync for DeviceAttribute<T> {}

impl<T: Operations> DeviceAttribute<T> {
    /// An attribute `name` (mode 0444) whose contents `show` writes.
    pub const fn new(name: &'static CStr, show: ShowFn<T>) -> Self {
        // SAFETY: All-zeroes is a valid `device_attribute` (no callbacks, no name, no key).
        let mut attr: bindings::device_attribute = unsafe { core::mem::zeroed() };
        attr.attr.name = crate::str::as_char_ptr_in_const_context(name).cast();
        attr.attr.mode = 0o444;
        attr.__bindgen_anon_1.show = Some(Self::show_callback);
        // INVARIANT: `attr` comes first (`repr(C)`) and its `show` is `show_callback`.
        Self {
            attr: Opaque::new(attr),
            show,
            _p: PhantomData,
        }
    }

    /// The C attribute, for the attribute array of a group.
    pub const fn as_attr_ptr(&'static self) -> *mut bindings::attribute {
        // `attr` is the first field of `device_attribute`.
        self.attr.get().cast()
    }

    /// The C callback.
    ///
    /// # Safety
    ///
    /// Only sysfs calls it, for an attribute of a group installed on a device of driver `T`,
    /// with that device's `struct device` and a page-sized buffer.
    unsafe extern "C" fn show_callback(
        dev: *mut bindings::device,
        attr: *mut bindings::device_attribute,
        buf: *mut c_char,
    ) -> isize {
        // The attribute groups are installed on the device's own `struct device` and, in shared
        // network namespace mode, on the compat devices the core creates for every other
        // namespace: separate, smaller `ib_core_device` allocations. Only their `owner` leads
        // to the `ib_device` (C's `rdma_device_to_ibdev()`); a `container_of` from `dev` would
        // build a reference over the wrong object for a compat device.
        //
        // SAFETY: The attribute belongs to a group installed on (a core device of) a device of
        // driver `T`, so `dev` is embedded in an `ib_core_device`, whose `owner` is that device.
        let ib = unsafe { bindings::rdma_device_to_ibdev(dev) };
        // SAFETY: `ib` is a device of driver `T` whose data is initialised: sysfs removes the
        // attributes (and waits for running `show`s) during unregistration, before the data is
        // dropped.
        let ib = unsafe { Device::<T>::from_raw(ib) };
        // SAFETY: By the type invariant `attr` is the head of a `DeviceAttribute<T>`.
        let this = unsafe { &*attr.cast::<Self>() };
        // SAFETY: sysfs passes a buffer of `PAGE_SIZE` bytes, ours for the call, which it
        // cleared (`sysfs_kf_seq_show()`: the attributes are not `SYSFS_PREALLOC`), so every
        // byte of the length returned is one that `show` wrote or a zero.
        let page = unsafe { core::slice::from_raw_parts_mut(buf.cast::<u8>(), PAGE_SIZE) };
        show_page(page, |out| (this.show)(ib, out))
    }
}

/// A group of device attributes of driver `T` (C's `struct attribute_group`); build it with
/// [`rdma_device_attributes!`](crate::rdma_device_attributes).
///
/// Typed by the driver: [`Operations::DEVICE_GROUP`] of driver `T` only takes an
/// `AttributeGroup<T>`, so a group's `show` callbacks always see a device of the driver they
/// were written for.
#[repr(transparent)]
pub struct AttributeGroup<T: Operations>(Opaque<bindings::attribute_group>, PhantomData<fn() -> T>);

// SAFETY: The group is built at compile time and then only read by sysfs.
unsafe impl<T: Operations> Sync for AttributeGroup<T> {}

impl<T: Operations> AttributeGroup<T> {
    /// A group of the NULL-terminated attribute array `attrs`.
    ///
    /// # Safety
    ///
    /// `attrs` must point to a NULL-terminated array of attributes that live forever, each one a
    /// [`DeviceAttribute<T>`].
    pub const unsafe fn new(attrs: *const *mut bindings::attribute) -> Self {
        // SAFETY: All-zeroes is a valid `attribute_group`.
        let mut group: bindings::attribute_group = unsafe { core::mem::zeroed() };
        group.__bindgen_anon_2.attrs = attrs.cast_mut();
        Self(Opaque::new(group), PhantomData)
    }

    pub(super) fn as_raw(&'static self) -> *const bindings::attribute_group {
        self.0.get()
    }
}

/// A NULL-terminated array of attribute pointers that may live in a `static`.
#[repr(transparent)]
pub struct AttributeArray<const N: usize>(pub [*mut bindings::attribute; N]);

// SAFETY: The pointers point to `'static`, `Sync` attributes and are never written.
unsafe impl<const N: usize> Sync for AttributeArray<N> {}

/// Defines the read-only sysfs attributes of driver `$t`'s RDMA devices, as a `static`
/// [`AttributeGroup`] named `$group`.
///
/// ```ignore
/// kernel::rdma_device_attributes! {
///     static ATTRS: MyDriver = {
///         "hw_rev" => |_dev, out| writeln!(out, "1"),
///     };
/// }
/// // and in `impl rdma::Operations for MyDriver`:
/// // const DEVICE_GROUP: Option<&'static rdma::AttributeGroup<Self>> = Some(&ATTRS);
/// ```
#[macro_export]
macro_rules! rdma_device_attributes {
    ($vis:vis static $group:ident: $t:ty = { $($name:literal => $show:expr),+ $(,)? };) => {
        $vis static $group: $crate::rdma::AttributeGroup<$t> = {
            const COUNT: usize = [$($name),+].len();
            static ATTRS: [$crate::rdma::DeviceAttribute<$t>; COUNT] = [
                $($crate::rdma::DeviceAttribute::<$t>::new($crate::c_str!($name), $show)),+
            ];
            static PTRS: $crate::rdma::AttributeArray<{ COUNT + 1 }> = {
                let mut ptrs = [::core::ptr::null_mut(); COUNT + 1];
                let mut i = 0;
                while i < COUNT {
                    ptrs[i] = ATTRS[i].as_attr_ptr();
                    i += 1;
                }
                $crate::rdma::AttributeArray(ptrs)
            };
            // SAFETY: `PTRS` is a NULL-terminated array of `'static` attributes of driver `$t`.
            unsafe { $crate::rdma::AttributeGroup::new(PTRS.0.as_ptr()) }
        };
    };
}

#[cfg(CONFIG_RUST_INFINIBAND_KUNIT_TEST)]
#[macros::kunit_tests(rust_rdma_sysfs)]
mod tests {
    use super::*;
    use crate::prelude::*;
    use core::fmt::Write;

    /// A page of `byte`s.
    fn page(byte: u8) -> Result<KVec<u8>> {
        Ok(KVec::from_elem(byte, PAGE_SIZE, GFP_KERNEL)?)
    }

    /// The length of what was written is returned.
    #[test]
    fn show_len() -> Result {
        let mut page = page(0)?;
        assert_eq!(show_page(&mut page, |out| writeln!(out, "{}", 1)), 2);
        assert_eq!(&page[..3], b"1\n\0");
        Ok(())
    }

    /// At most `PAGE_SIZE - 1` bytes are written and returned (sysfs warns of `PAGE_SIZE`); the
    /// page's last byte is not touched.
    #[test]
    fn show_cut() -> Result {
        let mut page = page(0xff)?;
        let len = show_page(&mut page, |out| {
            for _ in 0..PAGE_SIZE {
                // A failed write is ignored: the contents are cut.
                let _ = out.write_str("x");
            }
            Ok(())
        });
        assert_eq!(len, PAGE_SIZE as isize - 1);
        assert!(page[..PAGE_SIZE - 1].iter().all(|&b| b == b'x'));
        assert_eq!(page[PAGE_SIZE - 1], 0xff);
        Ok(())
    }

    /// A `show` that returns the failure of a write that did not fit fails with `EINVAL`.
    #[test]
    fn show_overflow_fails() -> Result {
        let mut page = page(0)?;
        let len = show_page(&mut page, |out| write!(out, "{:>1$}", "", PAGE_SIZE));
        assert_eq!(len, -(bindings::EINVAL as isize));
        Ok(())
    }
}
