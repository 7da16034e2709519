// SPDX-License-Identifier: GPL-2.0

//! Memory-mapped I/O.
//!
//! C header: [`include/asm-generic/io.h`](srctree/include/asm-generic/io.h)
//!
//! [`IoMem`] is a window of device registers of at least `SIZE` bytes. Accesses whose offset is a
//! constant are checked when the driver is compiled ([`IoMem::read32`], [`IoMem::write32`]);
//! accesses whose offset is only known at run time are checked when they happen
//! ([`IoMem::try_read32`], [`IoMem::try_write32`]). Either way an access never leaves the window.
//!
//! The window itself is created by a bus abstraction that owns the mapping, e.g.
//! [`crate::pci::Bar`].

use crate::{bindings, error::code::EINVAL, prelude::*};

/// A mapped window of device memory, at least `SIZE` bytes long.
///
/// # Invariants
///
/// `addr` is the start of a live `__iomem` mapping of `maxsize` bytes, `maxsize >= SIZE`, and the
/// mapping stays live for as long as the `IoMem` exists (the owner of the mapping guarantees this
/// by unmapping only after dropping or never handing out the `IoMem`).
pub struct IoMem<const SIZE: usize> {
    addr: usize,
    maxsize: usize,
}

impl<const SIZE: usize> IoMem<SIZE> {
    /// Wraps an existing mapping.
    ///
    /// # Safety
    ///
    /// `addr` must be the start of an `__iomem` mapping of at least `maxsize` bytes that stays
    /// mapped for the whole life of the returned value, and `maxsize >= SIZE`.
    pub(crate) unsafe fn new(addr: usize, maxsize: usize) -> Self {
        // INVARIANT: Guaranteed by the safety requirements.
        Self { addr, maxsize }
    }

    /// The start address of the mapping, for the owner that unmaps it.
    pub(crate) fn base(&self) -> usize {
        self.addr
    }

    /// The size of the mapping in bytes (at least `SIZE`).
    pub fn maxsize(&self) -> usize {
        self.maxsize
    }

    /// Checks, when the caller is compiled, that a `width`-byte access at `OFFSET` fits.
    const fn assert_fits<const OFFSET: usize>(width: usize) {
        assert!(OFFSET % width == 0, "unaligned register access");
        assert!(
            OFFSET + width <= SIZE,
            "register access past the end of the window"
        );
    }

    /// Checks, at run time, that a `width`-byte access at `offset` fits.
    fn check(&self, offset: usize, width: usize) -> Result<usize> {
        let end = offset.checked_add(width).ok_or(EINVAL)?;
        if offset % width != 0 || end > self.maxsize {
            return Err(EINVAL);
        }
        Ok(self.addr + offset)
    }

    /// Reads the 32-bit little-endian register at the constant offset `OFFSET`.
    ///
    /// An offset that does not fit in `SIZE` bytes, or is not 4-byte aligned, fails the build.
    #[inline]
    pub fn read32<const OFFSET: usize>(&self) -> u32 {
        const { Self::assert_fits::<OFFSET>(4) };
        // SAFETY: By the type invariant `addr..addr + SIZE` is mapped, and the const assertion
        // above proves that the 4 bytes at `OFFSET` lie inside it.
        unsafe { bindings::readl((self.addr + OFFSET) as *const _) }
    }

    /// Writes the 32-bit little-endian register at the constant offset `OFFSET`.
    ///
    /// An offset that does not fit in `SIZE` bytes, or is not 4-byte aligned, fails the build.
    #[inline]
    pub fn write32<const OFFSET: usize>(&self, value: u32) {
        const { Self::assert_fits::<OFFSET>(4) };
        // SAFETY: By the type invariant `addr..addr + SIZE` is mapped, and the const assertion
        // above proves that the 4 bytes at `OFFSET` lie inside it.
        unsafe { bindings::writel(value, (self.addr + OFFSET) as *mut _) }
    }

    /// Reads the 32-bit register at `offset`, checked at run time against the mapping's size.
    pub fn try_read32(&self, offset: usize) -> Result<u32> {
        let addr = self.check(offset, 4)?;
        // SAFETY: `check` proved that the 4 bytes at `addr` lie inside the live mapping.
        Ok(unsafe { bindings::readl(addr as *const _) })
    }

    /// Writes the 32-bit register at `offset`, checked at run time against the mapping's size.
    pub fn try_write32(&self, offset: usize, value: u32) -> Result {
        let addr = self.check(offset, 4)?;
        // SAFETY: `check` proved that the 4 bytes at `addr` lie inside the live mapping.
        unsafe { bindings::writel(value, addr as *mut _) };
        Ok(())
    }
}

// SAFETY: An `IoMem` is an address of device memory; device register accesses are single
// instructions that may be issued from any thread.
unsafe impl<const SIZE: usize> Send for IoMem<SIZE> {}

// SAFETY: Every method takes `&self` and performs single, self-contained MMIO accesses, which the
// hardware serialises; concurrent use from several threads cannot cause a data race in memory.
unsafe impl<const SIZE: usize> Sync for IoMem<SIZE> {}

/// Full memory barrier: orders all earlier loads and stores, to memory and to device registers,
/// before all later ones (C's `mb()`).
#[inline]
pub fn mb() {
    // SAFETY: A barrier has no preconditions.
    unsafe { bindings::mb() }
}

/// Read memory barrier (C's `rmb()`): earlier loads complete before later loads.
#[inline]
pub fn rmb() {
    // SAFETY: A barrier has no preconditions.
    unsafe { bindings::rmb() }
}

/// Write memory barrier (C's `wmb()`): earlier stores complete before later stores.
#[inline]
pub fn wmb() {
    // SAFETY: A barrier has no preconditions.
    unsafe { bindings::wmb() }
}
