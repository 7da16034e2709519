// SPDX-License-Identifier: GPL-2.0

//! Driver-specific data of a verbs call from user space (C's `struct ib_udata`).

use crate::{
    bindings,
    error::{code::EINVAL, to_result, Result},
    transmute::{AsBytes, FromBytes},
    types::Opaque,
    uaccess::{UserPtr, UserSlice},
};
use core::mem::{size_of, MaybeUninit};

/// The driver-specific request and response buffers of a verbs call.
///
/// Both live in user memory: reading and writing them are checked user copies.
///
/// # Invariants
///
/// Wraps the `driver_udata` of the `struct uverbs_attr_bundle` of a uverbs call in progress, valid
/// for the duration of a callback.
#[repr(transparent)]
pub struct UData(Opaque<bindings::ib_udata>);

impl UData {
    /// # Safety
    ///
    /// `ptr` must be the `driver_udata` of the attribute bundle of a uverbs call in progress,
    /// valid for `'a`.
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

    /// Reads the request as a `T`, as C's `ib_copy_validate_udata_in()` does with all of `T` as
    /// the minimum. Fails with `EINVAL` if user space passed fewer bytes than a `T`, with
    /// `EOPNOTSUPP` if it passed more and any byte after the `T` is not zero, and with `EFAULT`
    /// if the request is not readable.
    ///
    /// A longer request is how a newer user space asks for what a newer kernel added at the end
    /// of the struct. Refusing it when those bytes are set, the rule of the RDMA core's udata
    /// helpers (see `struct ib_udata` in [`include/rdma/ib_verbs.h`]), lets that user space learn
    /// that this kernel lacks the feature instead of having its request silently done without
    /// it. Zeros there ask for nothing new, so such a request is taken.
    ///
    /// [`include/rdma/ib_verbs.h`]: srctree/include/rdma/ib_verbs.h
    pub fn read<T: FromBytes>(&self) -> Result<T> {
        let mut req = MaybeUninit::<T>::uninit();
        let size = size_of::<T>();
        // SAFETY: By the type invariant `self.0` is the `driver_udata` of a uverbs call's
        // attribute bundle, which the function's debug messages find the device through; it
        // reads `inlen` bytes at `inbuf` with checked user copies only. `req` is valid for
        // writes of `size` bytes.
        to_result(unsafe {
            bindings::_ib_copy_validate_udata_in(self.0.get(), req.as_mut_ptr().cast(), size, size)
        })?;
        // SAFETY: The call succeeded with `inlen >= size`, so `copy_struct_from_user()` wrote
        // all `size` bytes of `req`; `T: FromBytes` makes any bytes a valid `T`.
        Ok(unsafe { req.assume_init() })
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
