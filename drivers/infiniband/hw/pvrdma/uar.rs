// SPDX-License-Identifier: GPL-2.0

//! The UAR table: which doorbell pages of BAR 2 belong to which user context.
//!
//! Page 0 is the kernel's; each user context gets one other page, which it maps into user space.
//!
//! Layer: RDMA device.

use kernel::prelude::*;

/// Allocation state of the UAR pages.
///
/// # Invariants
///
/// `used.len() >= 2`, and `used[0]` is always `true` (the kernel's page).
pub(crate) struct UarTable {
    used: KVec<bool>,
}

impl UarTable {
    /// A table of `count` pages (at least 2: the kernel's and one for a user).
    pub(crate) fn new(count: u32) -> Result<Self> {
        if count < 2 {
            return Err(EINVAL);
        }
        let mut used = KVec::with_capacity(count as usize, GFP_KERNEL)?;
        for i in 0..count {
            used.push(i == 0, GFP_KERNEL)?;
        }
        Ok(Self { used })
    }

    /// Takes a free page, returning its index.
    pub(crate) fn alloc(&mut self) -> Result<u32> {
        let index = self.used.iter().position(|used| !used).ok_or(ENOMEM)?;
        self.used[index] = true;
        Ok(index as u32)
    }

    /// Gives page `index` back. Index 0 and unknown indexes are ignored.
    pub(crate) fn free(&mut self, index: u32) {
        if index != 0 {
            if let Some(slot) = self.used.get_mut(index as usize) {
                *slot = false;
            }
        }
    }
}
