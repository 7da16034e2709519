// SPDX-License-Identifier: GPL-2.0

//! User contexts (a doorbell page of BAR 2 each) and protection domains.
//!
//! Layer: RDMA device.

use crate::{abi::*, device::IbDev};
use kernel::{
    prelude::*,
    rdma::{self, NewUserContext, UData, UserContext},
};

/// A user context: its doorbell page and the device's handle.
pub(crate) struct UserCtx {
    uar_index: u32,
    pub(crate) ctx_handle: u32,
}

impl UserCtx {
    /// Creates a user context (see [`rdma::Operations::alloc_ucontext`]): a UAR page of its own,
    /// which the process maps (uncached) with one page at offset 0, as the provider's ABI has it,
    /// and the device's context, whose table size the provider learns from the response.
    pub(crate) fn new(
        dev: &rdma::Device<IbDev>,
        new: &mut NewUserContext<'_, IbDev>,
        udata: &mut UData,
    ) -> Result<Self> {
        let uar_index = dev.uars.lock().alloc()?;
        let uar_pfn = dev.hw.uar_pfn(uar_index);
        let pfn = if dev.hw.version < VERSION_PPN64 {
            u32::try_from(uar_pfn).map_err(|_| ENOMEM)?.into()
        } else {
            uar_pfn
        };
        let cmd = CmdCreateUc {
            pfn,
            ..Default::default()
        };
        let resp: RespCreateUc = match dev.hw.command(opcode::CREATE_UC, &cmd) {
            Ok(resp) => resp,
            Err(e) => {
                dev.uars.lock().free(uar_index);
                return Err(e);
            }
        };
        let ctx = Self {
            uar_index,
            ctx_handle: resp.ctx_handle,
        };
        let reply = UctxResp {
            qp_tab_size: dev.caps.max_qp,
            reserved: 0,
        };
        // The provider maps the doorbell page at offset 0: its response has no field for an
        // offset. Any other offset or length is refused.
        let mapped = new.map_bar_uncached(0, BAR_UAR, uar_index.into(), 1);
        if let Err(e) = mapped.and_then(|()| udata.write(&reply)) {
            // The abstraction removes the mapping, which no process can have made yet.
            ctx.destroy(dev);
            return Err(e);
        }
        Ok(ctx)
    }

    /// Destroys the context in the device and gives its page back.
    pub(crate) fn destroy(self, dev: &rdma::Device<IbDev>) {
        let cmd = CmdDestroyUc {
            ctx_handle: self.ctx_handle,
            ..Default::default()
        };
        dev.hw.destroy_object::<_, RespNoop>(
            opcode::DESTROY_UC,
            &cmd,
            "user context",
            self.ctx_handle,
        );
        // The page goes back even if the device refused: the context is gone either way.
        dev.uars.lock().free(self.uar_index);
    }
}

/// A protection domain: the device's handle.
pub(crate) struct Pd {
    pub(crate) handle: u32,
}

impl Pd {
    /// Creates a PD (see [`rdma::Operations::alloc_pd`]), in the caller's context if it is user
    /// space's.
    pub(crate) fn new(
        dev: &rdma::Device<IbDev>,
        ctx: Option<&UserContext<IbDev>>,
        udata: Option<&mut UData>,
    ) -> Result<Self> {
        let reservation = dev.counts.pds.take(dev.caps.max_pd)?;
        let cmd = CmdCreatePd {
            ctx_handle: ctx.map_or(0, |c| c.ctx_handle),
            ..Default::default()
        };
        let resp: RespCreatePd = dev.hw.command(opcode::CREATE_PD, &cmd)?;
        reservation.keep();
        let pd = Self {
            handle: resp.pd_handle,
        };
        if let Some(udata) = udata {
            let reply = PdResp {
                pdn: pd.handle,
                reserved: 0,
            };
            if let Err(e) = udata.write(&reply) {
                pd.destroy(dev);
                return Err(e);
            }
        }
        Ok(pd)
    }

    /// Destroys the PD in the device.
    pub(crate) fn destroy(self, dev: &rdma::Device<IbDev>) {
        let cmd = CmdDestroyPd {
            pd_handle: self.handle,
            ..Default::default()
        };
        dev.hw
            .destroy_object::<_, RespNoop>(opcode::DESTROY_PD, &cmd, "PD", self.handle);
        dev.counts.pds.release();
    }
}
