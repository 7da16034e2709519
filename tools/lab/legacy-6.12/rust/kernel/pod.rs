// SPDX-License-Identifier: GPL-2.0

//! Plain old data: structs that may be copied to and from devices and user space byte for byte.
//!
//! [`pod!`](crate::pod!) defines structs that implement [`FromBytes`](crate::types::FromBytes)
//! and [`AsBytes`](crate::types::AsBytes) without `unsafe` in the caller: it checks, when the
//! caller is compiled, that every field is itself plain data and that the struct has no padding.
//!
//! # Examples
//!
//! ```
//! kernel::pod! {
//!     /// A command header, as the device reads it.
//!     #[repr(C)]
//!     pub struct CmdHdr {
//!         /// Echoed in the response.
//!         pub response: u64,
//!         /// The command code.
//!         pub cmd: u32,
//!         /// Must be zero.
//!         pub reserved: u32,
//!     }
//! }
//! let hdr = CmdHdr { cmd: 3, ..Default::default() };
//! assert_eq!(hdr.response, 0);
//! assert_eq!(core::mem::size_of::<CmdHdr>(), 16);
//! ```
//!
//! A struct with padding (say a `u8` followed by a `u32`) fails the build.

/// Defines `#[repr(C)]` (or `#[repr(C, packed)]`) structs of plain data.
///
/// Each struct gets `Clone`, `Copy`, a zeroing `Default`, and implementations of
/// [`FromBytes`](crate::types::FromBytes) and [`AsBytes`](crate::types::AsBytes). The build fails
/// if a field is not plain data or if the fields leave padding.
#[macro_export]
macro_rules! pod {
    ($(
        $(#[$attr:meta])*
        $vis:vis struct $name:ident {
            $($(#[$fattr:meta])* $fvis:vis $field:ident : $ty:ty),* $(,)?
        }
    )*) => {$(
        $(#[$attr])*
        #[derive(Clone, Copy)]
        $vis struct $name {
            $($(#[$fattr])* $fvis $field : $ty),*
        }

        const _: () = {
            const fn assert_plain<T: $crate::types::FromBytes + $crate::types::AsBytes>() {}
            $(assert_plain::<$ty>();)*
            ::core::assert!(
                ::core::mem::size_of::<$name>() == 0 $(+ ::core::mem::size_of::<$ty>())*,
                "a pod! struct must not have padding"
            );
        };

        // SAFETY: Every field is `FromBytes` (checked above), and there is no padding, so every
        // bit pattern of the struct is a valid value. There is no interior mutability.
        unsafe impl $crate::types::FromBytes for $name {}

        // SAFETY: Every field is `AsBytes` (checked above) and there is no padding, so every
        // byte of a value is initialised. There is no interior mutability.
        unsafe impl $crate::types::AsBytes for $name {}

        impl ::core::default::Default for $name {
            fn default() -> Self {
                // SAFETY: The type is `FromBytes`, so all zeroes is a valid value.
                unsafe { ::core::mem::zeroed() }
            }
        }
    )*};
}
