// SPDX-License-Identifier: GPL-2.0

//! Page directories: how the device finds the pages of a ring or buffer.
//!
//! A directory page holds the bus addresses of up to 512 table pages, each table page the bus
//! addresses of up to 512 data pages. Commands and the DSR name a directory by its bus address
//! and a page count.
//!
//! Layer: device.

use crate::{
    abi::PAGE_DIR_MAX_PAGES,
    mem::{alloc_page, DmaPage},
};
use kernel::{
    device::{Bound, Device},
    dma::{Coherent, DmaAddress},
    io::io_write,
    new_spinlock,
    page::PAGE_SIZE,
    prelude::*,
    rdma::Umem,
    sync::{Arc, SpinLock},
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
/// bus addresses and aligned to its size): one allocation of two pages per directory instead of
/// two of one. That allocation comes from the device's [`DirCache`] and goes back to it when the
/// directory is dropped, so that creating an object after another was destroyed neither
/// allocates nor zeroes pages.
///
/// # Invariants
///
/// The directory describes `npages` pages (1..=`PAGE_DIR_MAX_PAGES`): `dir` starts with the
/// directory page, whose entry `t` holds the bus address of table `t`; entry `i % 512` of table
/// `i / 512` holds that of page `i`, which is `pages[i]` when the directory owns its pages
/// (`pages` is empty otherwise), and the table entries from `npages` on are zero. With one table
/// (`tables` empty), that table is the second page of `dir`, which goes back to `cache` when the
/// directory is dropped; with more, table `t` is `tables[t]`. `dir` is `None` only in the drop,
/// once handed back; `dma` is its bus address.
pub(crate) struct PageDir {
    dir: Option<Coherent<[u64]>>,
    dma: DmaAddress,
    /// Owned for the device, which reads them; the driver only writes them at creation. Empty
    /// when the one table follows the directory in `dir`.
    tables: KVec<Coherent<[u64]>>,
    pages: KVec<DmaPage>,
    npages: usize,
    cache: Arc<DirCache>,
}

/// The most two-page directory allocations a device keeps for reuse: 4 MiB. Creating and
/// destroying objects in bursts of hundreds (a server's connections, a benchmark's rounds) then
/// reuses them all; what a burst leaves behind is kept until the device is unbound, as
/// `dma_pool`s and the RDMA drivers' MR caches keep theirs.
const CACHED_DIRS: usize = 512;

/// The two-page directory allocations (a directory page and its one table) of destroyed objects,
/// kept for the next ones: taking one is a list operation where allocating is the page
/// allocator's work and zeroing two pages (under TCG a few thousand guest instructions and more
/// host time, for each CQ, QP, SRQ and MR created).
///
/// # Invariants
///
/// Every allocation in `free` is two pages whose first entry holds the bus address of the
/// second page and whose other entries are zero (a directory of no pages). `free` never grows
/// beyond the capacity it was allocated with, so giving back does not allocate.
#[pin_data]
pub(crate) struct DirCache {
    /// Taken only in process context: by the verbs that create and destroy objects, and at
    /// probe and unbind.
    #[pin]
    free: SpinLock<KVec<Coherent<[u64]>>>,
}

impl DirCache {
    /// An empty cache with room for [`CACHED_DIRS`] allocations.
    pub(crate) fn new() -> Result<Arc<Self>> {
        let free = KVec::with_capacity(CACHED_DIRS, GFP_KERNEL)?;
        Arc::pin_init(
            pin_init!(Self {
                free <- new_spinlock!(free, "pvrdma::DirCache::free"),
            }),
            GFP_KERNEL,
        )
    }

    /// A two-page directory allocation whose first entry points at its second page, all other
    /// entries zero: a kept one, or a new one.
    fn take(&self, dev: &Device<Bound>) -> Result<Coherent<[u64]>> {
        if let Some(dir) = self.free.lock().pop() {
            return Ok(dir);
        }
        let dir = Coherent::<u64>::zeroed_slice(dev, 2 * ENTRIES, GFP_KERNEL)?;
        io_write!(&dir, [try: 0], dir.dma_address() + PAGE_SIZE as DmaAddress);
        Ok(dir)
    }

    /// Takes back `dir`, a directory of `npages` pages in its one table that the device no
    /// longer uses: its entries are cleared and it is kept, or freed if the cache is full.
    fn give(&self, dir: Coherent<[u64]>, npages: usize) {
        if Self::clear_table(&dir, npages).is_ok() {
            // A full cache hands `dir` back, to be freed outside the lock.
            let _rejected = self.free.lock().push_within_capacity(dir);
        }
    }

    /// Zeroes the first `npages` entries of the table, the second page of `dir`: all it can
    /// hold that is not zero. Fails (leaving `dir` to be freed) only if `dir` were not two pages.
    fn clear_table(dir: &Coherent<[u64]>, npages: usize) -> Result {
        for i in ENTRIES..ENTRIES.checked_add(npages).ok_or(EINVAL)? {
            io_write!(dir, [try: i], 0);
        }
        Ok(())
    }
}

impl PageDir {
    /// Allocates the directory and tables for `npages` pages, one table from `cache`.
    fn tables(dev: &Device<Bound>, cache: &Arc<DirCache>, npages: usize) -> Result<Self> {
        if npages == 0 || npages > PAGE_DIR_MAX_PAGES {
            return Err(EINVAL);
        }
        let ntables = (npages - 1) / ENTRIES + 1;
        if ntables == 1 {
            // The directory page, then its table.
            let dir = cache.take(dev)?;
            return Ok(Self {
                dma: dir.dma_address(),
                dir: Some(dir),
                tables: KVec::new(),
                pages: KVec::new(),
                npages,
                cache: cache.clone(),
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
            dma: dir.dma_address(),
            dir: Some(dir),
            tables,
            pages: KVec::new(),
            npages,
            cache: cache.clone(),
        })
    }

    /// A directory for up to `npages` pages the owner enters later with [`PageDir::set`] (the
    /// page list of a fast-register MR).
    pub(crate) fn for_pages(
        dev: &Device<Bound>,
        cache: &Arc<DirCache>,
        npages: usize,
    ) -> Result<Self> {
        Self::tables(dev, cache, npages)
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
            let dir = self.dir.as_ref().ok_or(EINVAL)?;
            io_write!(dir, [try: ENTRIES + index], addr);
        } else {
            let table = self.tables.get(index / ENTRIES).ok_or(EINVAL)?;
            io_write!(table, [try: index % ENTRIES], addr);
        }
        Ok(())
    }

    /// A directory of the pages of `umems`, one after the other. The caller keeps them pinned
    /// for as long as the device may use the directory.
    pub(crate) fn for_user(
        dev: &Device<Bound>,
        cache: &Arc<DirCache>,
        umems: &[&Umem],
    ) -> Result<Self> {
        let npages = umems
            .iter()
            .try_fold(0usize, |n, u| n.checked_add(u.num_pages()))
            .ok_or(EINVAL)?;
        let pdir = Self::tables(dev, cache, npages)?;
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
    pub(crate) fn new(dev: &Device<Bound>, cache: &Arc<DirCache>, npages: usize) -> Result<Self> {
        let mut pdir = Self::tables(dev, cache, npages)?;
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
        self.dma
    }

    /// Data page `index` (of a directory that owns its pages).
    pub(crate) fn page(&self, index: usize) -> Result<&DmaPage> {
        self.pages.get(index).ok_or(EINVAL)
    }
}

impl Drop for PageDir {
    /// Gives a one-table directory's allocation back to its cache. The owner drops a directory
    /// once the device no longer uses it: after the command that destroyed the object, or when
    /// the object was never created.
    fn drop(&mut self) {
        if self.tables.is_empty() {
            if let Some(dir) = self.dir.take() {
                self.cache.give(dir, self.npages);
            }
        }
    }
}
