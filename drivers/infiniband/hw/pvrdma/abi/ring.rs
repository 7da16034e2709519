// SPDX-License-Identifier: GPL-2.0

//! The rings the driver and the device share (Linux's `pvrdma_ring.h`): each has a pair of
//! indexes in front of its entries.

use kernel::pod;

pod! {
    /// A ring's indexes: in [0, 2N) for N slots, the extra bit telling full from empty.
    #[repr(C)]
    pub(crate) struct RingIndexes {
        pub(crate) prod_tail: u32,
        pub(crate) cons_head: u32,
    }
}

const _: () = assert!(core::mem::size_of::<RingIndexes>() == 8);
