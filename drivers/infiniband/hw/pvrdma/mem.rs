// SPDX-License-Identifier: GPL-2.0

//! Pages of coherent DMA memory shared with the device, read and written at byte offsets.
//!
//! The rings, slots and page directories the device uses are pages of
//! [`Coherent<[u8]>`](Coherent). The device writes them concurrently, so every access is a
//! bounds-checked copy (a volatile one for the ring indexes), never a reference.
//!
//! Layer: device.

use kernel::{
    device::{Bound, Device},
    dma::Coherent,
    io::{io_project, Io},
    page::PAGE_SIZE,
    prelude::*,
};
use zerocopy::{FromBytes, Immutable, IntoBytes};

/// A page of coherent memory the device reads or writes.
pub(crate) type DmaPage = Coherent<[u8]>;

/// Allocates a zeroed [`DmaPage`] for `dev`.
pub(crate) fn alloc_page(dev: &Device<Bound>) -> Result<DmaPage> {
    Coherent::<u8>::zeroed_slice(dev, PAGE_SIZE, GFP_KERNEL)
}

/// Byte-offset access to device-shared memory.
pub(crate) trait SharedBytes {
    /// Copies a `T` out of the bytes at `offset`.
    fn read_at<T: FromBytes + IntoBytes>(&self, offset: usize) -> Result<T>;
    /// Copies `value` into the bytes at `offset`.
    fn write_at<T: IntoBytes + Immutable>(&self, offset: usize, value: &T) -> Result;
    /// Reads the aligned `u32` at `offset` in one access (an index the device updates).
    fn read_u32(&self, offset: usize) -> Result<u32>;
    /// Writes the aligned `u32` at `offset` in one access (an index the device reads).
    fn write_u32(&self, offset: usize, value: u32) -> Result;
}

/// The end of `size` bytes at `offset`, if it does not overflow.
fn end(offset: usize, size: usize) -> Result<usize> {
    offset.checked_add(size).ok_or(EINVAL)
}

impl SharedBytes for DmaPage {
    fn read_at<T: FromBytes + IntoBytes>(&self, offset: usize) -> Result<T> {
        let end = end(offset, size_of::<T>())?;
        let mut value = T::new_zeroed();
        io_project!(self, [try: offset..end]).copy_to_slice(value.as_mut_bytes());
        Ok(value)
    }

    fn write_at<T: IntoBytes + Immutable>(&self, offset: usize, value: &T) -> Result {
        let end = end(offset, size_of::<T>())?;
        io_project!(self, [try: offset..end]).copy_from_slice(value.as_bytes());
        Ok(())
    }

    fn read_u32(&self, offset: usize) -> Result<u32> {
        let end = end(offset, size_of::<u32>())?;
        Ok(io_project!(self, [try: offset..end])
            .try_cast::<u32>()?
            .read_val())
    }

    fn write_u32(&self, offset: usize, value: u32) -> Result {
        let end = end(offset, size_of::<u32>())?;
        io_project!(self, [try: offset..end])
            .try_cast::<u32>()?
            .write_val(value);
        Ok(())
    }
}
