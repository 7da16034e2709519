// SPDX-License-Identifier: GPL-2.0

//! Driver-specific data of a verbs call from user space (C's `struct ib_udata`).

use crate::{
    bindings,
    error::{code::EINVAL, Result},
    transmute::{AsBytes, FromBytes},
    types::Opaque,
    uaccess::{UserPtr, UserSlice},
};
use core::mem::size_of;

/// The driver-specific request and response buffers of a verbs call.
///
/// Both live in user memory: reading and writing them are checked user copies.
///
/// # Invariants
///
/// Wraps a valid `struct ib_udata` for the duration of a callback.
#[repr(transparent)]
pub struct UData(Opaque<bindings::ib_udata>);

impl UData {
    /// # Safety
    ///
    /// `ptr` must be valid for `'a`.
    pub(super) unsafe fn from_raw<'a>(ptr: *mut bindings::ib_udata) -> &'a mut Self {
        // SAFETY: Transparent wrapper; validity guaranteed by the caller.
        unsafe { &mut *ptr.cast() }
    }

    fn raw(&self) -> &bindings::ib_udata {
        // SAFETY: By the type invariant the struct is valid; the core does not change it during
        // the callback.
        unsafe { &*self.0.get() }
    }

    /// The length of the request user space passed.
    pub fn in_len(&self) -> usize {
        self.raw().inlen
    }

    /// The room user space gave for the response.
    pub fn out_len(&self) -> usize {
        self.raw().outlen
    }

    /// Reads the request as a `T`. Fails with `EINVAL` if user space passed fewer bytes; extra
    /// bytes (from a newer user ABI) are ignored.
    pub fn read<T: FromBytes>(&self) -> Result<T> {
        if self.in_len() < size_of::<T>() {
            return Err(EINVAL);
        }
        UserSlice::new(
            UserPtr::from_addr(self.raw().inbuf as usize),
            size_of::<T>(),
        )
        .reader()
        .read::<T>()
    }

    /// Writes the response `value`. Fails with `EINVAL`, writing nothing, if user space gave
    /// less room than a `T` (it could not learn what the response tells it, e.g. the handle of
    /// the object created).
    pub fn write<T: AsBytes>(&mut self, value: &T) -> Result {
        if self.out_len() < size_of::<T>() {
            return Err(EINVAL);
        }
        self.write_prefix(value)
    }

    /// Writes as much of the response `value` as user space gave room for: for responses that
    /// grew, whose older, shorter form user space may still use.
    pub fn write_prefix<T: AsBytes>(&mut self, value: &T) -> Result {
        let len = size_of::<T>().min(self.out_len());
        // SAFETY: `T: AsBytes`, so all `size_of::<T>()` bytes of `value` are initialised;
        // `len` does not exceed that.
        let bytes =
            unsafe { core::slice::from_raw_parts(core::ptr::from_ref(value).cast::<u8>(), len) };
        UserSlice::new(UserPtr::from_addr(self.raw().outbuf as usize), len)
            .writer()
            .write_slice(bytes)
    }
}
