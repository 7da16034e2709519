// SPDX-License-Identifier: GPL-2.0-only
//! Fast registration: work requests that register and invalidate MRs.
//!
//! The kernel's consumers (nvme-rdma, xprtrdma, iSER) allocate MRs without
//! memory (`ib_alloc_mr()`), register pages into them with a REG_MR work
//! request on a QP's send queue, hand the key to the peer, and invalidate it
//! afterwards, locally (LOCAL_INV) or by the peer's SEND_WITH_INV. A device
//! model executing the guest's send queue (QEMU's pvrdma with the lab's
//! patches) does the same here: it allocates a host range per such MR with
//! [`Engine::alloc_fast_reg_mr`], maps the guest's pages into it, and posts
//!
//! - [`WR_REG_MR`] (this device's own opcode): `bind_mw.bind_info.mr` the MR,
//!   `bind_mw.rkey` its new key (the MR's index, the guest's variant byte),
//!   `bind_info.addr` and `.length` the iova range, `.mw_access_flags` the
//!   access rights; `wr.rdma.remote_addr` how many bytes into the MR's host
//!   range the iova range starts (a first page's offset); `bind_mw.mw` NULL.
//!   The MR must be free (invalid), of the QP's PD, and offset plus length at
//!   most its capacity.
//! - `IBV_WR_LOCAL_INV` with `invalidate_rkey`: the MR with that exact key,
//!   of the QP's PD, registered, becomes free.
//! - `IBV_WR_SEND_WITH_INV` with `invalidate_rkey`: a SEND whose responder
//!   invalidates that key among its own PD's MRs before it delivers the
//!   message; the receive completes with `IBV_WC_WITH_INV` and the key in
//!   `invalidated_rkey`.
//!
//! Local operations execute in order when they reach the head of the send
//! queue (nothing posted before them is still outstanding), and nothing
//! behind them leaves before they do: a SEND that carries a key just
//! registered never reaches the peer first.

use super::datapath::{fail, ok, Outcome, Sender};
use super::memory::MemError;
use super::pd_mr::{checked_access, MrTable, KEY_VARIANT_MASK};
use super::wqe::SendWqe;
use super::{Engine, Key};
use crate::ffi;

/// `ibv_send_wr.opcode` of a fast registration (no libibverbs opcode
/// exists: user space has no fast registration). Outside `ibv_wr_opcode`.
pub const WR_REG_MR: u32 = 0x100;

/// `ibv_wc.opcode` of a fast registration's completion (the kernel's
/// `IB_WC_REG_MR` has no libibverbs counterpart). Outside `ibv_wc_opcode`.
pub const WC_REG_MR: u32 = 0x100;

/// A fast registration as posted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RegMr {
    /// The MR (pointer key of its `struct ibv_mr`).
    pub mr: Key,
    /// Its key from now on (index unchanged, new variant).
    pub key: u32,
    /// First byte of the registered range, in its iova space.
    pub iova: u64,
    /// Where that byte is: this many bytes into the MR's host range.
    pub offset: u64,
    /// Length of the range.
    pub length: u64,
    /// `IBV_ACCESS_*`.
    pub access: u32,
}

/// Whether `opcode` is a local operation: executed by the requester alone,
/// no packet, no responder.
pub fn is_local(opcode: u32) -> bool {
    matches!(opcode, WR_REG_MR | ffi::IBV_WR_LOCAL_INV)
}

impl MrTable {
    /// Registers fast-registration MR `reg.mr` of `pd` as `reg` says.
    pub fn fast_register(&mut self, pd: Key, reg: &RegMr) -> Result<(), MemError> {
        let access = checked_access(reg.access).ok_or(MemError::Access)?;
        reg.iova.checked_add(reg.length).ok_or(MemError::Bounds)?;
        let mr = self.get(reg.mr).ok_or(MemError::BadKey)?;
        let Some(fr) = mr.fast_reg else {
            return Err(MemError::BadKey); // a registered MR is not re-registered by a WR
        };
        if mr.pd != pd {
            return Err(MemError::PdMismatch);
        }
        if fr.valid || reg.key & !KEY_VARIANT_MASK != mr.key & !KEY_VARIANT_MASK {
            return Err(MemError::BadKey);
        }
        let in_range = reg.offset.checked_add(reg.length);
        if in_range.is_none_or(|end| end > fr.capacity) {
            return Err(MemError::Bounds);
        }
        let host = fr.base + reg.offset as usize; // within the range: checked above
        let m = self.any_by_key_mut(reg.key).ok_or(MemError::BadKey)?;
        (m.key, m.host, m.iova, m.length, m.access) = (reg.key, host, reg.iova, reg.length, access);
        m.fast_reg = Some(super::pd_mr::FastReg { valid: true, ..fr });
        let (key, length) = (reg.key, reg.length as usize);
        m.obj
            .update(|o| (o.lkey, o.rkey, o.length) = (key, key, length));
        Ok(())
    }

    /// Invalidates the registered fast-registration MR of `pd` whose key is
    /// exactly `key`.
    pub fn invalidate(&mut self, pd: Key, key: u32) -> Result<(), MemError> {
        let m = self.any_by_key_mut(key).ok_or(MemError::BadKey)?;
        if m.pd != pd {
            return Err(MemError::PdMismatch);
        }
        match &mut m.fast_reg {
            Some(fr) if fr.valid && m.key == key => {
                fr.valid = false;
                Ok(())
            }
            _ => Err(MemError::BadKey),
        }
    }
}

impl Engine {
    /// Executes local operation `w` of sender `me` (see [`is_local`]).
    pub(super) fn exec_local(&mut self, me: &Sender, w: &SendWqe) -> Option<Outcome> {
        let result = match (w.opcode, &w.reg) {
            (WR_REG_MR, Some(reg)) => self.mrs.fast_register(me.pd, reg),
            (ffi::IBV_WR_LOCAL_INV, _) => self.mrs.invalidate(me.pd, w.imm_data),
            _ => return fail(ffi::IBV_WC_LOC_QP_OP_ERR, 0),
        };
        crate::log::vlog!(
            "fast_reg",
            "qp_num={:#x} wr_id={:#x} opcode={:#x} key={:#x} {:?} -> {result:?}",
            me.qpn,
            w.wr_id,
            w.opcode,
            w.reg.map_or(w.imm_data, |r| r.key),
            w.reg.map(|r| (r.iova, r.offset, r.length, r.access))
        );
        match result {
            Ok(()) => ok(0),
            // An MR operation the device refuses: a memory-window bind error
            // is what InfiniBand reports for a bad fast registration or
            // invalidation (IB_WC_MW_BIND_ERR).
            Err(e) => fail(ffi::IBV_WC_MW_BIND_ERR, e.vendor_err()),
        }
    }
}
