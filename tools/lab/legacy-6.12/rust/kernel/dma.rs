// SPDX-License-Identifier: GPL-2.0

//! Direct memory access (DMA): coherent memory shared with a device.
//!
//! C header: [`include/linux/dma-mapping.h`](srctree/include/linux/dma-mapping.h)
//!
//! A [`CoherentAllocation`] owns a buffer that both the CPU and the device access at any time.
//! Because the device may write it concurrently, the CPU side never hands out references into
//! it: every access is a bounds-checked volatile copy of a plain-data value
//! ([`FromBytes`]/[`AsBytes`]).

use crate::{
    alloc::Flags,
    bindings, device,
    error::code::{EINVAL, ENOMEM},
    prelude::*,
    types::{ARef, AsBytes, FromBytes},
};
use core::{
    marker::PhantomData,
    mem::{align_of, size_of},
    ptr::NonNull,
};

/// A bus address as the device sees it (C's `dma_addr_t`).
pub type DmaAddress = bindings::dma_addr_t;

/// Sets the device's streaming and coherent DMA masks (C's `dma_set_mask_and_coherent()`).
///
/// `bits` is the number of address bits the device can drive (1..=64).
pub fn set_mask_and_coherent(dev: &device::Device, bits: u32) -> Result {
    if bits == 0 || bits > 64 {
        return Err(EINVAL);
    }
    let mask = if bits == 64 {
        u64::MAX
    } else {
        (1u64 << bits) - 1
    };
    // SAFETY: `dev.as_raw()` is a valid `struct device` by the type invariant of `Device`.
    crate::error::to_result(unsafe { bindings::dma_set_mask(dev.as_raw(), mask) })?;
    // SAFETY: As above.
    crate::error::to_result(unsafe { bindings::dma_set_coherent_mask(dev.as_raw(), mask) })
}

/// `count` elements of `T` in coherent DMA memory, allocated for one device.
///
/// The memory is zeroed when allocated and freed when the value is dropped.
///
/// # Invariants
///
/// - `cpu_addr` points to `count * size_of::<T>()` bytes (at least one byte) returned by
///   `dma_alloc_attrs()` for `dev`, whose bus address is `dma_handle`; the memory stays allocated
///   until `drop`.
/// - The CPU only ever accesses it through volatile reads and writes of whole `FromBytes`/`AsBytes`
///   values, so concurrent device writes cannot invalidate a Rust reference.
pub struct CoherentAllocation<T: AsBytes + FromBytes> {
    dev: ARef<device::Device>,
    dma_handle: DmaAddress,
    count: usize,
    cpu_addr: NonNull<u8>,
    _p: PhantomData<T>,
}

impl<T: AsBytes + FromBytes> CoherentAllocation<T> {
    /// Allocates zeroed coherent memory for `count` elements of `T`.
    pub fn alloc(dev: &device::Device, count: usize, flags: Flags) -> Result<Self> {
        let size = count.checked_mul(size_of::<T>()).ok_or(EINVAL)?;
        if size == 0 {
            return Err(EINVAL);
        }
        let mut dma_handle: DmaAddress = 0;
        // SAFETY: `dev.as_raw()` is a valid device; `dma_handle` is a valid out-pointer. Zeroed
        // memory is guaranteed by `dma_alloc_attrs` for coherent allocations.
        let cpu = unsafe {
            bindings::dma_alloc_attrs(
                dev.as_raw(),
                size,
                &mut dma_handle,
                flags.as_raw() | bindings::__GFP_ZERO,
                0,
            )
        };
        let cpu_addr = NonNull::new(cpu.cast::<u8>()).ok_or(ENOMEM)?;
        // INVARIANT: `cpu_addr` is a fresh allocation of `size` bytes for `dev`.
        Ok(Self {
            dev: dev.into(),
            dma_handle,
            count,
            cpu_addr,
            _p: PhantomData,
        })
    }

    /// The bus address of the first element, to be handed to the device.
    pub fn dma_handle(&self) -> DmaAddress {
        self.dma_handle
    }

    /// The bus address of element `index`.
    pub fn dma_handle_at(&self, index: usize) -> Result<DmaAddress> {
        if index >= self.count {
            return Err(EINVAL);
        }
        Ok(self.dma_handle + (index * size_of::<T>()) as DmaAddress)
    }

    /// The number of elements.
    pub fn count(&self) -> usize {
        self.count
    }

    /// The size in bytes.
    pub fn size(&self) -> usize {
        self.count * size_of::<T>()
    }

    /// Returns a pointer to `size_of::<U>()` bytes at byte `offset`, if they fit and `offset` is
    /// suitably aligned for `U`.
    fn ptr_at<U>(&self, offset: usize) -> Result<*mut U> {
        let end = offset.checked_add(size_of::<U>()).ok_or(EINVAL)?;
        if end > self.size() || (self.cpu_addr.as_ptr() as usize + offset) % align_of::<U>() != 0 {
            return Err(EINVAL);
        }
        // SAFETY: `offset + size_of::<U>() <= size()`, so the result stays inside the allocation.
        Ok(unsafe { self.cpu_addr.as_ptr().add(offset) }.cast::<U>())
    }

    /// Copies element `index` out of the buffer (a volatile read).
    pub fn read(&self, index: usize) -> Result<T> {
        self.read_at::<T>(index.checked_mul(size_of::<T>()).ok_or(EINVAL)?)
    }

    /// Copies `value` into element `index` (a volatile write).
    pub fn write(&self, index: usize, value: &T) -> Result {
        self.write_at::<T>(index.checked_mul(size_of::<T>()).ok_or(EINVAL)?, value)
    }

    /// Copies a `U` out of the buffer at byte `offset` (a volatile read).
    ///
    /// Fails with `EINVAL` if the value would not lie entirely inside the buffer or `offset` is
    /// not aligned for `U`.
    pub fn read_at<U: FromBytes>(&self, offset: usize) -> Result<U> {
        let ptr = self.ptr_at::<U>(offset)?;
        // SAFETY: `ptr` is in bounds and aligned (checked by `ptr_at`); the memory is
        // initialised (zeroed at allocation, then only written with whole values), and any bit
        // pattern is a valid `U` because `U: FromBytes`.
        Ok(unsafe { ptr.read_volatile() })
    }

    /// Copies `value` into the buffer at byte `offset` (a volatile write).
    ///
    /// Fails with `EINVAL` if the value would not lie entirely inside the buffer or `offset` is
    /// not aligned for `U`.
    pub fn write_at<U: AsBytes>(&self, offset: usize, value: &U) -> Result {
        let ptr = self.ptr_at::<U>(offset)?;
        // SAFETY: `ptr` is in bounds and aligned (checked by `ptr_at`); the buffer is only ever
        // accessed through volatile copies, so no Rust reference aliases the bytes written.
        unsafe { ptr.write_volatile(core::ptr::read(value)) };
        Ok(())
    }

    /// Fills the whole buffer with zeroes.
    pub fn zero(&self) {
        for offset in 0..self.size() {
            // SAFETY: `offset < size()`; a `u8` store is always aligned.
            unsafe { self.cpu_addr.as_ptr().add(offset).write_volatile(0) };
        }
    }
}

impl<T: AsBytes + FromBytes> Drop for CoherentAllocation<T> {
    fn drop(&mut self) {
        // SAFETY: By the type invariant the memory was allocated by `dma_alloc_attrs` for this
        // device with this size and bus address, and it is freed exactly once, here.
        unsafe {
            bindings::dma_free_attrs(
                self.dev.as_raw(),
                self.size(),
                self.cpu_addr.as_ptr().cast(),
                self.dma_handle,
                0,
            )
        };
    }
}

// SAFETY: The allocation is owned by this value and can be freed from any thread; `T` is plain
// data.
unsafe impl<T: AsBytes + FromBytes + Send> Send for CoherentAllocation<T> {}

// SAFETY: Shared access only performs volatile copies of plain data; concurrent accesses from
// several CPUs are no different from concurrent device accesses, which the type is built for.
unsafe impl<T: AsBytes + FromBytes + Sync> Sync for CoherentAllocation<T> {}
