// SPDX-License-Identifier: GPL-2.0

//! Shared receive queues, for user space only (as in the C driver: no kernel consumer uses them
//! on this device).
//!
//! Layer: RDMA device.

use crate::{abi::*, device::IbDev, pdir::PageDir};
use kernel::{
    page::PAGE_SIZE,
    prelude::*,
    rdma::{
        self, srq_attr_mask, ResEntry, SrqAttr, SrqModifyAttr, SrqType, TableIndex, UData, Umem,
    },
};

/// An SRQ: the device's handle and its ring in user memory.
pub(crate) struct Srq {
    /// The device's handle (what QP commands and async events name it by).
    pub(crate) handle: u32,
    pdir: PageDir,
    _umem: Umem,
}

impl TableIndex for Srq {
    fn table_index(&self) -> u32 {
        self.handle
    }
}

impl Srq {
    /// The driver's details of the SRQ in `rdma res show srq -dd`: the device's handle and the
    /// pages of its ring (always in user memory).
    pub(crate) fn fill_res(&self, entry: &mut ResEntry<'_>) -> Result {
        entry.put_u32(c"dev_handle", self.handle)?;
        entry.put_u64(c"ring_pages", self.pdir.npages() as u64)
    }
}

impl Srq {
    /// Creates an SRQ (see [`rdma::Operations::create_srq`]).
    pub(crate) fn new(
        dev: &rdma::Device<IbDev>,
        pd: &rdma::Pd<IbDev>,
        srq_type: SrqType,
        attr: &mut SrqAttr,
        udata: Option<&mut UData>,
    ) -> Result<Srq> {
        let Some(udata) = udata else {
            return Err(EOPNOTSUPP);
        };
        if srq_type != SrqType::Basic {
            return Err(EOPNOTSUPP);
        }
        if attr.max_wr > dev.caps.max_srq_wr || attr.max_sge > dev.caps.max_srq_sge {
            return Err(EINVAL);
        }
        let reservation = dev.counts.srqs.take(dev.caps.max_srq)?;
        let req: UserCreateSrq = udata.read()?;
        // The ring state is at the start of the first page the device maps.
        if req.buf_addr % PAGE_SIZE as u64 != 0 {
            return Err(EINVAL);
        }
        // The device writes the ring state (the consumer index) in the first page.
        let umem = Umem::get(
            dev,
            udata,
            req.buf_addr,
            req.buf_size.into(),
            rdma::Access::LocalWrite.into(),
        )?;
        // The device lays the ring out from the counts in the command, not from the memory
        // (after the ring state's page): a ring too small for them would have it read and write
        // past it (as for a QP's rings, `crate::qp`).
        let ring_pages = crate::qp::user_ring_bytes(
            attr.max_wr,
            core::mem::size_of::<crate::abi::RqWqeHdr>(),
            attr.max_sge,
        )
        .div_ceil(PAGE_SIZE);
        if umem.num_pages() > PAGE_DIR_MAX_PAGES || umem.num_pages() < 1 + ring_pages {
            return Err(EINVAL);
        }
        let pdir = PageDir::for_user(dev.parent(), &dev.hw.pdirs, &[&umem])?;
        let cmd = CmdCreateSrq {
            pdir_dma: pdir.dma_handle(),
            pd_handle: pd.handle,
            nchunks: pdir.npages() as u32,
            attrs: crate::abi::SrqAttr {
                max_wr: attr.max_wr,
                max_sge: attr.max_sge,
                srq_limit: attr.srq_limit,
                reserved: 0,
            },
            srq_type: 0,
            ..Default::default()
        };
        let resp: RespCreateSrq = dev.hw.command(opcode_verbs::CREATE_SRQ, &cmd)?;
        let srq = Srq {
            handle: resp.srqn,
            pdir,
            _umem: umem,
        };
        let reply = UserCreateSrqResp {
            srqn: srq.handle,
            reserved: 0,
        };
        if let Err(e) = udata.write(&reply) {
            // The room is given back by `destroy`, once.
            reservation.keep();
            srq.destroy(dev);
            return Err(e);
        }
        reservation.keep();
        Ok(srq)
    }

    /// Modifies an SRQ: only arming its limit is supported.
    pub(crate) fn modify(
        &self,
        dev: &rdma::Device<IbDev>,
        attr: &SrqModifyAttr,
        mask: u32,
    ) -> Result {
        // The limit is all the device can change. A change of nothing is refused, as C does; so
        // is a resize (`MAX_WR`), which C passes on with the limit: the device's ring, laid out
        // at creation in the provider's buffer, cannot grow.
        let srq_limit = match attr.srq_limit {
            Some(limit) if mask == srq_attr_mask::LIMIT => limit,
            _ => return Err(EINVAL),
        };
        let cmd = CmdModifySrq {
            srq_handle: self.handle,
            attr_mask: mask,
            attrs: crate::abi::SrqAttr {
                srq_limit,
                ..Default::default()
            },
            ..Default::default()
        };
        let _: crate::abi::RespNoop = dev.hw.command(opcode_verbs::MODIFY_SRQ, &cmd)?;
        Ok(())
    }

    /// Queries an SRQ.
    pub(crate) fn query(&self, dev: &rdma::Device<IbDev>) -> Result<SrqAttr> {
        let cmd = CmdQuerySrq {
            srq_handle: self.handle,
            ..Default::default()
        };
        let resp: RespQuerySrq = dev.hw.command(opcode_verbs::QUERY_SRQ, &cmd)?;
        Ok(SrqAttr {
            max_wr: resp.attrs.max_wr,
            max_sge: resp.attrs.max_sge,
            srq_limit: resp.attrs.srq_limit,
        })
    }

    /// Destroys an SRQ in the device; its memory goes with `srq`.
    pub(crate) fn destroy(&self, dev: &rdma::Device<IbDev>) {
        let cmd = CmdDestroySrq {
            srq_handle: self.handle,
            ..Default::default()
        };
        dev.hw.destroy_object::<_, crate::abi::RespNoop>(
            opcode_verbs::DESTROY_SRQ,
            &cmd,
            "SRQ",
            self.handle,
        );
        dev.counts.srqs.release();
    }
}
