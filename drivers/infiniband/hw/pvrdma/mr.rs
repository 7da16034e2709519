// SPDX-License-Identifier: GPL-2.0

//! Memory regions: user memory pinned and described to the device by a page directory, and DMA
//! regions (all of memory) for kernel consumers.

use crate::{abi::PAGE_DIR_MAX_PAGES, abi_verbs::*, ib::IbDev, pdir::PageDir};
use kernel::{
    prelude::*,
    rdma::{self, MrKeys, Umem},
};

/// What an MR keeps alive for the device.
enum MrMemory {
    /// User memory, pinned, and its page directory.
    User { _pdir: PageDir, _umem: Umem },
    /// All of memory: nothing to keep.
    Dma,
}

/// An MR: the device's handle and its memory.
pub(crate) struct Mr {
    handle: u32,
    _memory: MrMemory,
}

/// Registers user memory (see [`rdma::Operations::reg_user_mr`]).
pub(crate) fn reg_user(
    dev: &rdma::Device<IbDev>,
    pd: &rdma::Pd<IbDev>,
    start: u64,
    length: u64,
    virt_addr: u64,
    access: u32,
) -> Result<(Mr, MrKeys)> {
    if length == 0 || length > dev.caps.max_mr_size {
        return Err(EINVAL);
    }
    let reservation = dev.counts.mrs.take(dev.caps.max_mr)?;
    let umem = Umem::get(dev, start, length, access)?;
    if umem.num_pages() > PAGE_DIR_MAX_PAGES {
        return Err(EINVAL);
    }
    let pdir = PageDir::for_user(dev.hw.pdev.as_dev(), &[&umem])?;
    let cmd = CmdCreateMr {
        start: virt_addr,
        length,
        pdir_dma: pdir.dma_handle(),
        pd_handle: pd.handle,
        access_flags: access,
        flags: 0,
        nchunks: pdir.npages() as u32,
        ..Default::default()
    };
    let resp: RespCreateMr = dev.hw.command(opcode_verbs::CREATE_MR, &cmd)?;
    reservation.keep();
    Ok((
        Mr {
            handle: resp.mr_handle,
            _memory: MrMemory::User {
                _pdir: pdir,
                _umem: umem,
            },
        },
        MrKeys {
            lkey: resp.lkey,
            rkey: resp.rkey,
        },
    ))
}

/// Creates a DMA MR (see [`rdma::Operations::get_dma_mr`]).
pub(crate) fn get_dma(
    dev: &rdma::Device<IbDev>,
    pd: &rdma::Pd<IbDev>,
    access: u32,
) -> Result<(Mr, MrKeys)> {
    let reservation = dev.counts.mrs.take(dev.caps.max_mr)?;
    let cmd = CmdCreateMr {
        pd_handle: pd.handle,
        access_flags: access,
        flags: MR_FLAG_DMA,
        ..Default::default()
    };
    let resp: RespCreateMr = dev.hw.command(opcode_verbs::CREATE_MR, &cmd)?;
    reservation.keep();
    Ok((
        Mr {
            handle: resp.mr_handle,
            _memory: MrMemory::Dma,
        },
        MrKeys {
            lkey: resp.lkey,
            rkey: resp.rkey,
        },
    ))
}

/// Deregisters an MR: the device forgets it, then the memory is unpinned.
pub(crate) fn dereg(dev: &rdma::Device<IbDev>, mr: Mr) {
    let cmd = CmdDestroyMr {
        mr_handle: mr.handle,
        ..Default::default()
    };
    if let Err(e) = dev
        .hw
        .command::<_, crate::abi::RespNoop>(opcode_verbs::DESTROY_MR, &cmd)
    {
        pr_warn!(
            "{}: could not destroy MR {}: {:?}\n",
            dev.hw.pdev.name(),
            mr.handle,
            e
        );
    }
    dev.counts.mrs.release();
    drop(mr);
}
