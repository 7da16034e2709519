// SPDX-License-Identifier: GPL-2.0

//! Plain old data: structs that are copied byte for byte to and from devices and user space.
//!
//! The kernel has two sets of byte-copy traits: zerocopy's ([`zerocopy::FromBytes`],
//! [`zerocopy::IntoBytes`]), which the I/O and DMA accessors use, and
//! [`transmute::FromBytes`](crate::transmute::FromBytes) /
//! [`transmute::AsBytes`](crate::transmute::AsBytes), which user-space copies
//! ([`uaccess`](crate::uaccess)) use. A device ABI struct that is both written to DMA memory and
//! returned to user space needs both. [`pod!`](crate::pod!) derives zerocopy's traits, whose
//! derives check the layout the compiler chose (no padding, every field plain data, `#[cfg]`
//! taken into account), and implements the `transmute` traits on the strength of those checks,
//! so that drivers need no `unsafe impl`.
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
/// Each struct gets `Clone`, `Copy`, a zeroing `Default`, zerocopy's `FromBytes`, `IntoBytes`,
/// `Immutable` and `KnownLayout`, and [`transmute::FromBytes`](crate::transmute::FromBytes) and
/// [`transmute::AsBytes`](crate::transmute::AsBytes). The build fails if a field is not plain
/// data or if the fields leave padding.
#[macro_export]
macro_rules! pod {
    ($(
        $(#[$attr:meta])*
        $vis:vis struct $name:ident {
            $($(#[$fattr:meta])* $fvis:vis $field:ident : $ty:ty),* $(,)?
        }
    )*) => {$(
        $(#[$attr])*
        #[derive(
            Clone,
            Copy,
            ::zerocopy_derive::FromBytes,
            ::zerocopy_derive::IntoBytes,
            ::zerocopy_derive::Immutable,
            ::zerocopy_derive::KnownLayout,
        )]
        $vis struct $name {
            $($(#[$fattr])* $fvis $field : $ty),*
        }

        // SAFETY: zerocopy's `FromBytes` derive above accepts the struct only if every field is
        // `FromBytes`, so every bit pattern is a valid value; its `Immutable` derive only if no
        // field has interior mutability.
        unsafe impl $crate::transmute::FromBytes for $name {}

        // SAFETY: zerocopy's `IntoBytes` derive above accepts the struct only if the layout the
        // compiler chose has no padding and every field is `IntoBytes`, so every byte of a value
        // is initialised; no interior mutability (`Immutable`).
        unsafe impl $crate::transmute::AsBytes for $name {}

        impl ::core::default::Default for $name {
            fn default() -> Self {
                <Self as ::zerocopy::FromZeros>::new_zeroed()
            }
        }
    )*};
}
