// SPDX-License-Identifier: GPL-2.0

//! Page directories: how the device finds the pages of a ring or buffer.
//!
//! A directory page holds the bus addresses of up to 512 table pages, each table page the bus
//! addresses of up to 512 data pages. Commands and the DSR name a directory by its bus address
//! and a page count.

use crate::{
    abi::PAGE_DIR_MAX_PAGES,
    mem::{alloc_page, DmaPage},
};
use kernel::{
    device::{Bound, Device},
    dma::{Coherent, DmaAddress},
    io::io_write,
    page::PAGE_SIZE,
    prelude::*,
    rdma::Umem,
};

/// Entries (u64 bus addresses) in a directory or table page: 512, the device's 9 bits per level,
/// which assume 4 KiB pages (as does the device's ABI throughout).
const ENTRIES: usize = 512;
const _: () = assert!(
    PAGE_SIZE == ENTRIES * 8,
    "the device's page directories need 4 KiB pages"
);

/// A page directory: whose data pages are coherent DMA memory owned by it ([`PageDir::new`]), or
/// pinned user memory that the owner of the directory keeps pinned ([`PageDir::for_user`]).
///
/// A directory of at most 512 pages (rings and regions up to 2 MiB) needs one table, which
/// shares the directory's allocation as its second page (a coherent allocation is contiguous in
/// bus addresses and aligned to its size): one coherent allocation per directory instead of two.
/// The two had been the largest part of the driver's own work in creating a CQ (about 3,000 of
/// its 7,000 instructions; the C driver makes both, and an array of table pointers).
///
/// # Invariants
///
/// The directory describes `npages` pages (1..=`PAGE_DIR_MAX_PAGES`): `dir` starts with the
/// directory page, whose entry `t` holds the bus address of table `t`; entry `i % 512` of table
/// `i / 512` holds that of page `i`, which is `pages[i]` when the directory owns its pages
/// (`pages` is empty otherwise). With one table (`tables` empty), that table is the second page
/// of `dir`; with more, table `t` is `tables[t]`.
pub(crate) struct PageDir {
    dir: Coherent<[u64]>,
    /// Owned for the device, which reads them; the driver only writes them at creation. Empty
    /// when the one table follows the directory in `dir`.
    tables: KVec<Coherent<[u64]>>,
    pages: KVec<DmaPage>,
    npages: usize,
}

impl PageDir {
    /// Allocates the directory and tables for `npages` pages.
    fn tables(dev: &Device<Bound>, npages: usize) -> Result<Self> {
        if npages == 0 || npages > PAGE_DIR_MAX_PAGES {
            return Err(EINVAL);
        }
        let ntables = (npages - 1) / ENTRIES + 1;
        if ntables == 1 {
            // The directory page, then its table.
            let dir = Coherent::<u64>::zeroed_slice(dev, 2 * ENTRIES, GFP_KERNEL)?;
            io_write!(&dir, [try: 0], dir.dma_address() + PAGE_SIZE as DmaAddress);
            return Ok(Self {
                dir,
                tables: KVec::new(),
                pages: KVec::new(),
                npages,
            });
        }
        let dir = Coherent::<u64>::zeroed_slice(dev, ENTRIES, GFP_KERNEL)?;
        let mut tables = KVec::with_capacity(ntables, GFP_KERNEL)?;
        for t in 0..ntables {
            let table = Coherent::<u64>::zeroed_slice(dev, ENTRIES, GFP_KERNEL)?;
            io_write!(&dir, [try: t], table.dma_address());
            tables.push(table, GFP_KERNEL)?;
        }
        Ok(Self {
            dir,
            tables,
            pages: KVec::new(),
            npages,
        })
    }

    /// A directory for up to `npages` pages the owner enters later with [`PageDir::set`] (the
    /// page list of a fast-register MR).
    pub(crate) fn for_pages(dev: &Device<Bound>, npages: usize) -> Result<Self> {
        Self::tables(dev, npages)
    }

    /// Enters `addr` as page `index`.
    // Inlined into the page walks, where it runs once per page (65,536 times for a 256 MiB MR).
    #[inline]
    pub(crate) fn set(&self, index: usize, addr: DmaAddress) -> Result {
        if index >= self.npages {
            return Err(EINVAL);
        }
        if self.tables.is_empty() {
            // The one table, after the directory.
            io_write!(&self.dir, [try: ENTRIES + index], addr);
        } else {
            let table = self.tables.get(index / ENTRIES).ok_or(EINVAL)?;
            io_write!(table, [try: index % ENTRIES], addr);
        }
        Ok(())
    }

    /// A directory of the pages of `umems`, one after the other. The caller keeps them pinned
    /// for as long as the device may use the directory.
    pub(crate) fn for_user(dev: &Device<Bound>, umems: &[&Umem]) -> Result<Self> {
        let npages = umems
            .iter()
            .try_fold(0usize, |n, u| n.checked_add(u.num_pages()))
            .ok_or(EINVAL)?;
        let pdir = Self::tables(dev, npages)?;
        let mut index = 0;
        for umem in umems {
            umem.for_each_page(|addr| {
                pdir.set(index, addr)?;
                index += 1;
                Ok(())
            })?;
        }
        if index != npages {
            return Err(EINVAL);
        }
        Ok(pdir)
    }

    /// The number of pages described.
    pub(crate) fn npages(&self) -> usize {
        self.npages
    }

    /// Allocates a directory of `npages` zeroed pages for `dev`.
    pub(crate) fn new(dev: &Device<Bound>, npages: usize) -> Result<Self> {
        let mut pdir = Self::tables(dev, npages)?;
        let mut pages = KVec::with_capacity(npages, GFP_KERNEL)?;
        for i in 0..npages {
            let page = alloc_page(dev)?;
            pdir.set(i, page.dma_address())?;
            pages.push(page, GFP_KERNEL)?;
        }
        pdir.pages = pages;
        Ok(pdir)
    }

    /// The directory's bus address, for the device.
    pub(crate) fn dma_handle(&self) -> DmaAddress {
        self.dir.dma_address()
    }

    /// Data page `index` (of a directory that owns its pages).
    pub(crate) fn page(&self, index: usize) -> Result<&DmaPage> {
        self.pages.get(index).ok_or(EINVAL)
    }
}
