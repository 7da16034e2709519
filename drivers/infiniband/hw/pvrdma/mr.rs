// SPDX-License-Identifier: GPL-2.0

//! Memory regions: user memory pinned and described to the device by a page directory, and DMA
//! regions (all of memory) for kernel consumers.
//!
//! Layer: RDMA device.

use crate::{
    abi::*,
    abi::{MAX_FAST_REG_PAGES, PAGE_DIR_MAX_PAGES},
    device::IbDev,
    pdir::PageDir,
};
use kernel::{
    new_spinlock_irq,
    page::PAGE_SHIFT,
    prelude::*,
    rdma::{self, Access, AccessFlags, MrKeys, MrType, ResEntry, UData, Umem},
    sync::SpinLockIrq,
};

/// The page list of a fast-register MR.
///
/// # Invariants
///
/// `len <= pages.len()`; `pages[..len]` are the bus addresses `map_mr_sg` mapped.
struct PageList {
    pages: KVec<u64>,
    len: usize,
}

/// What an MR keeps alive for the device.
enum MrMemory {
    /// User memory, pinned, and its page directory.
    User { pdir: PageDir, _umem: Umem },
    /// All of memory: nothing to keep.
    Dma,
    /// A fast-register region: the directory a `REG_MR` work request hands the device, and the
    /// page list `map_mr_sg` built, copied into the directory when the request is posted.
    FastReg {
        pdir: PageDir,
        list: Pin<KBox<SpinLockIrq<PageList>>>,
    },
}

/// An MR: the device's handle and its memory.
pub(crate) struct Mr {
    handle: u32,
    memory: MrMemory,
}

impl Mr {
    /// The driver's details of the MR in `rdma res show mr -dd`: the device's handle, what kind
    /// of memory it covers and the pages of its directory.
    pub(crate) fn fill_res(&self, entry: &mut ResEntry<'_>) -> Result {
        entry.put_u32(c"dev_handle", self.handle)?;
        let (kind, pages) = match &self.memory {
            MrMemory::User { pdir, .. } => (c"user", pdir.npages()),
            MrMemory::Dma => (c"dma", 0),
            MrMemory::FastReg { pdir, .. } => (c"fast_reg", pdir.npages()),
        };
        entry.put_str(c"memory", kind)?;
        entry.put_u64(c"dir_pages", pages as u64)
    }
}

/// The MR the device created (`resp`), keeping `memory` alive, and its keys.
fn created(resp: &RespCreateMr, memory: MrMemory) -> (Mr, MrKeys) {
    (
        Mr {
            handle: resp.mr_handle,
            memory,
        },
        MrKeys {
            lkey: resp.lkey,
            rkey: resp.rkey,
        },
    )
}

impl Mr {
    /// Registers user memory (see [`rdma::Operations::reg_user_mr`]).
    pub(crate) fn reg_user(
        dev: &rdma::Device<IbDev>,
        pd: &rdma::Pd<IbDev>,
        start: u64,
        length: u64,
        virt_addr: u64,
        access: AccessFlags,
        udata: &UData,
    ) -> Result<(Mr, MrKeys)> {
        if length == 0 || length > dev.caps.max_mr_size {
            return Err(EINVAL);
        }
        let reservation = dev.counts.mrs.take(dev.caps.max_mr)?;
        let umem = Umem::get(dev, udata, start, length, access)?;
        if umem.num_pages() > PAGE_DIR_MAX_PAGES {
            return Err(EINVAL);
        }
        let pdir = PageDir::for_user(dev.parent(), &dev.hw.pdirs, &[&umem])?;
        let cmd = CmdCreateMr {
            start: virt_addr,
            length,
            pdir_dma: pdir.dma_handle(),
            pd_handle: pd.handle,
            access_flags: access.as_raw(),
            flags: 0,
            nchunks: pdir.npages() as u32,
            ..Default::default()
        };
        let resp: RespCreateMr = dev.hw.command(opcode_verbs::CREATE_MR, &cmd)?;
        reservation.keep();
        Ok(created(&resp, MrMemory::User { pdir, _umem: umem }))
    }

    /// Creates a DMA MR (see [`rdma::Operations::get_dma_mr`]).
    pub(crate) fn dma(
        dev: &rdma::Device<IbDev>,
        pd: &rdma::Pd<IbDev>,
        access: AccessFlags,
    ) -> Result<(Mr, MrKeys)> {
        // A DMA MR covers all of guest memory: only local write access, as C allows (with
        // `IB_PD_UNSAFE_GLOBAL_RKEY` remote access would hand out a key to all of it).
        if access & !AccessFlags::from(Access::LocalWrite) != AccessFlags::empty() {
            dev_warn!(
                dev.hw.dev(),
                "unsupported DMA MR access flags {:#x}\n",
                access.as_raw()
            );
            return Err(EOPNOTSUPP);
        }
        let reservation = dev.counts.mrs.take(dev.caps.max_mr)?;
        let cmd = CmdCreateMr {
            pd_handle: pd.handle,
            access_flags: access.as_raw(),
            flags: MR_FLAG_DMA,
            ..Default::default()
        };
        let resp: RespCreateMr = dev.hw.command(opcode_verbs::CREATE_MR, &cmd)?;
        reservation.keep();
        Ok(created(&resp, MrMemory::Dma))
    }

    /// Deregisters an MR: the device forgets it, then the memory is unpinned.
    pub(crate) fn destroy(self, dev: &rdma::Device<IbDev>) {
        let cmd = CmdDestroyMr {
            mr_handle: self.handle,
            ..Default::default()
        };
        dev.hw.destroy_object::<_, crate::abi::RespNoop>(
            opcode_verbs::DESTROY_MR,
            &cmd,
            "MR",
            self.handle,
        );
        dev.counts.mrs.release();
        drop(self);
    }

    /// Allocates a fast-register MR (see [`rdma::Operations::alloc_mr`]).
    pub(crate) fn fast_reg(
        dev: &rdma::Device<IbDev>,
        pd: &rdma::Pd<IbDev>,
        mr_type: MrType,
        max_num_sg: u32,
    ) -> Result<(Mr, MrKeys)> {
        if mr_type != MrType::MemReg {
            return Err(EINVAL);
        }
        if max_num_sg == 0 || max_num_sg > MAX_FAST_REG_PAGES {
            return Err(EINVAL);
        }
        let reservation = dev.counts.mrs.take(dev.caps.max_mr)?;
        let max = max_num_sg as usize;
        let pdir = PageDir::for_pages(dev.parent(), &dev.hw.pdirs, max)?;
        let list = PageList {
            pages: KVec::from_elem(0, max, GFP_KERNEL)?,
            len: 0,
        };
        let list = KBox::pin_init(new_spinlock_irq!(list, "pvrdma::Mr::list"), GFP_KERNEL)?;
        let cmd = CmdCreateMr {
            pd_handle: pd.handle,
            access_flags: 0,
            flags: MR_FLAG_FRMR,
            nchunks: max_num_sg,
            ..Default::default()
        };
        let resp: RespCreateMr = dev.hw.command(opcode_verbs::CREATE_MR, &cmd)?;
        reservation.keep();
        Ok(created(&resp, MrMemory::FastReg { pdir, list }))
    }

    /// Forgets the page list of a fast-register MR (`map_mr_sg` starts).
    pub(crate) fn map_sg_begin(&self) {
        if let MrMemory::FastReg { list, .. } = &self.memory {
            list.lock().len = 0;
        }
    }

    /// Appends a page to the list of a fast-register MR.
    pub(crate) fn map_sg_page(&self, addr: u64) -> Result {
        let MrMemory::FastReg { list, .. } = &self.memory else {
            return Err(EINVAL);
        };
        let mut list = list.lock();
        let len = list.len;
        *list.pages.get_mut(len).ok_or(ENOMEM)? = addr;
        list.len = len + 1;
        Ok(())
    }

    /// The fast-register part of a `REG_MR` work request for `mr`, with its page list entered in
    /// the directory the device will read.
    pub(crate) fn fast_reg_wr(
        mr: &rdma::Mr<IbDev>,
        key: u32,
        access: AccessFlags,
    ) -> Result<SqWrFastReg> {
        let MrMemory::FastReg { pdir, list } = &mr.memory else {
            return Err(EINVAL);
        };
        let list = list.lock();
        for (i, addr) in list.pages[..list.len].iter().enumerate() {
            pdir.set(i, *addr)?;
        }
        let page_size = mr.page_size();
        let page_shift = if page_size.is_power_of_two() {
            page_size.trailing_zeros()
        } else {
            PAGE_SHIFT as u32
        };
        Ok(SqWrFastReg {
            iova_start: mr.iova(),
            pl_pdir_dma: pdir.dma_handle(),
            page_shift,
            page_list_len: list.len as u32,
            length: u32::try_from(mr.length()).map_err(|_| EINVAL)?,
            access_flags: access.as_raw(),
            rkey: key,
            ..Default::default()
        })
    }
}
