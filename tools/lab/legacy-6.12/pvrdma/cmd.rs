// SPDX-License-Identifier: GPL-2.0

//! The command channel: one request slot, one response slot, one command at a time.
//!
//! The driver writes a request into the command slot and 0 to `REQUEST`; `ERR` then tells
//! whether the device accepted it, and the response interrupt (vector 0) says the response is in
//! the response slot. Every request carries a sequence number in `hdr.response`, which the
//! device echoes, so a late or stray response is recognised instead of being taken for the
//! current one.

use crate::abi::{CmdHdr, RespHdr, CMD_REQ_SIZE, CMD_RESP_SIZE, REGS_SIZE, REG_ERR, REG_REQUEST};
use core::mem::size_of;
use kernel::{
    device,
    dma::CoherentAllocation,
    new_completion, new_mutex,
    page::PAGE_SIZE,
    pci,
    prelude::*,
    sync::{Completion, Mutex},
    time::msecs_to_jiffies,
    types::{AsBytes, FromBytes},
};

/// How long the device may take to answer a command.
const CMD_TIMEOUT_MS: u32 = 10_000;

/// The device's register window.
pub(crate) type Regs = pci::Bar<REGS_SIZE>;

/// The command and response slots and what serialises their use.
#[pin_data]
pub(crate) struct CmdChannel {
    req: CoherentAllocation<u8>,
    resp: CoherentAllocation<u8>,
    /// Held for a whole round trip; the value is the last sequence number used.
    #[pin]
    seq: Mutex<u64>,
    /// Completed by the response interrupt.
    #[pin]
    done: Completion,
}

impl CmdChannel {
    /// Allocates a command or response slot (a page) for `dev`.
    pub(crate) fn alloc_slot(dev: &device::Device) -> Result<CoherentAllocation<u8>> {
        CoherentAllocation::<u8>::alloc(dev, PAGE_SIZE, GFP_KERNEL)
    }

    /// A channel over the slots `req` and `resp` (from [`CmdChannel::alloc_slot`]).
    pub(crate) fn new(
        req: CoherentAllocation<u8>,
        resp: CoherentAllocation<u8>,
    ) -> impl PinInit<Self> {
        pin_init!(Self {
            req,
            resp,
            seq <- new_mutex!(0, "pvrdma::CmdChannel::seq"),
            done <- new_completion!("pvrdma::CmdChannel::done"),
        })
    }

    /// Called by the response interrupt.
    pub(crate) fn response_ready(&self) {
        self.done.complete();
    }

    /// Runs command `code` with the request `body` (whose `hdr` is filled in here) and returns
    /// the response, after checking that it answers this request with `resp_code` and no error.
    pub(crate) fn run<C: AsBytes, R: FromBytes>(
        &self,
        regs: &Regs,
        (code, resp_code): (u32, u32),
        body: &C,
    ) -> Result<R> {
        const {
            assert!(size_of::<C>() >= size_of::<CmdHdr>() && size_of::<C>() <= CMD_REQ_SIZE);
            assert!(size_of::<R>() >= size_of::<RespHdr>() && size_of::<R>() <= CMD_RESP_SIZE);
        };
        let mut seq = self.seq.lock();
        *seq = seq.wrapping_add(1);
        let hdr = CmdHdr {
            response: *seq,
            cmd: code,
            reserved: 0,
        };
        self.req.write_at(0, &[0u8; CMD_REQ_SIZE])?;
        self.req.write_at(0, body)?;
        self.req.write_at(0, &hdr)?;
        self.resp.write_at(0, &RespHdr::default())?;

        self.done.reinit();
        regs.write32::<REG_REQUEST>(0);
        // The request must reach the device before its verdict is read.
        kernel::io::mb();
        let err = regs.read32::<REG_ERR>();
        if err != 0 {
            pr_warn!("command {} refused by the device (error {})\n", code, err);
            return Err(EIO);
        }
        if let Err(e) = self.done.wait_timeout(msecs_to_jiffies(CMD_TIMEOUT_MS)) {
            pr_warn!("command {}: no response from the device\n", code);
            return Err(e);
        }
        kernel::io::rmb();
        let rhdr: RespHdr = self.resp.read_at(0)?;
        if rhdr.response != *seq || rhdr.ack != resp_code {
            pr_warn!(
                "command {}: unexpected response {:#x} (seq {}, expected {:#x} seq {})\n",
                code,
                rhdr.ack,
                rhdr.response,
                resp_code,
                *seq
            );
            return Err(EIO);
        }
        if rhdr.err != 0 {
            pr_warn!(
                "command {} failed in the device (error {})\n",
                code,
                rhdr.err
            );
            return Err(EIO);
        }
        self.resp.read_at(0)
    }
}
