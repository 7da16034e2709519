// SPDX-License-Identifier: GPL-2.0

//! Page directories: how the device finds the pages of a ring or buffer.
//!
//! A directory page holds the bus addresses of up to 512 table pages, each table page the bus
//! addresses of up to 512 data pages. Commands and the DSR name a directory by its bus address
//! and a page count.

use crate::abi::PAGE_DIR_MAX_PAGES;
use kernel::{device, dma::CoherentAllocation, dma::DmaAddress, page::PAGE_SIZE, prelude::*};

/// Entries (u64 bus addresses) in a directory or table page.
const ENTRIES: usize = PAGE_SIZE / 8;

/// A page directory whose data pages are coherent DMA memory owned by it.
///
/// # Invariants
///
/// `pages.len()` is the page count (1..=`PAGE_DIR_MAX_PAGES`); entry `i` of table `i / 512`
/// holds the bus address of `pages[i]`, and entry `t` of `dir` that of `tables[t]`.
pub(crate) struct PageDir {
    dir: CoherentAllocation<u64>,
    /// Owned for the device, which reads them; the driver only writes them at creation.
    _tables: KVec<CoherentAllocation<u64>>,
    pages: KVec<CoherentAllocation<u8>>,
}

impl PageDir {
    /// Allocates a directory of `npages` zeroed pages for `dev`.
    pub(crate) fn new(dev: &device::Device, npages: usize) -> Result<Self> {
        if npages == 0 || npages > PAGE_DIR_MAX_PAGES {
            return Err(EINVAL);
        }
        let dir = CoherentAllocation::<u64>::alloc(dev, ENTRIES, GFP_KERNEL)?;
        let ntables = (npages - 1) / ENTRIES + 1;
        let mut tables = KVec::with_capacity(ntables, GFP_KERNEL)?;
        for t in 0..ntables {
            let table = CoherentAllocation::<u64>::alloc(dev, ENTRIES, GFP_KERNEL)?;
            dir.write(t, &table.dma_handle())?;
            tables.push(table, GFP_KERNEL)?;
        }
        let mut pages = KVec::with_capacity(npages, GFP_KERNEL)?;
        for i in 0..npages {
            let page = CoherentAllocation::<u8>::alloc(dev, PAGE_SIZE, GFP_KERNEL)?;
            tables[i / ENTRIES].write(i % ENTRIES, &page.dma_handle())?;
            pages.push(page, GFP_KERNEL)?;
        }
        Ok(Self {
            dir,
            _tables: tables,
            pages,
        })
    }

    /// The directory's bus address, for the device.
    pub(crate) fn dma_handle(&self) -> DmaAddress {
        self.dir.dma_handle()
    }

    /// Data page `index`.
    pub(crate) fn page(&self, index: usize) -> Result<&CoherentAllocation<u8>> {
        self.pages.get(index).ok_or(EINVAL)
    }
}
