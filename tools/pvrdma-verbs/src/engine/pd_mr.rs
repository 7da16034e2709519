// SPDX-License-Identifier: GPL-2.0-only
//! Protection domains and memory regions.

use super::limits::{MAX_MR, MAX_MR_SIZE, MAX_PD};
use super::{Engine, Key};
use crate::cobj::CObj;
use crate::ffi;
use std::collections::HashMap;

/// A protection domain.
pub struct Pd {
    /// The `struct ibv_pd` handed out.
    pub obj: CObj<ffi::ibv_pd>,
    /// Owning context.
    pub ctx: Key,
    /// MRs, QPs, SRQs and AHs created on it (dealloc is refused while > 0).
    pub users: u32,
}

/// A memory region.
pub struct Mr {
    /// The `struct ibv_mr` handed out.
    pub obj: CObj<ffi::ibv_mr>,
    /// Owning context.
    pub ctx: Key,
    /// Its PD.
    pub pd: Key,
    /// Host address of the first byte.
    pub host: usize,
    /// Address of the first byte in the MR's own address space (what SGEs
    /// and RDMA remote addresses use).
    pub iova: u64,
    /// Length in bytes.
    pub length: u64,
    /// `IBV_ACCESS_*`.
    pub access: u32,
    /// lkey == rkey: the MR's index in its high 24 bits, a variant (0 until a
    /// fast registration names another) in the low 8, as InfiniBand keys are.
    pub key: u32,
    /// A fast-registration MR's state; `None` for an MR registered by `reg_mr`.
    pub fast_reg: Option<FastReg>,
}

/// What a fast-registration MR (`alloc_fast_reg_mr`) is: a host range of
/// fixed size that work requests register (REG_MR) and invalidate
/// (LOCAL_INV, SEND_WITH_INV) in turn (see [`super::fast_reg`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FastReg {
    /// First byte of the host range (a registration's `host` lies
    /// `offset` bytes into it).
    pub base: usize,
    /// Bytes of host memory the MR can cover (a registration's `offset +
    /// length` is at most this).
    pub capacity: u64,
    /// Registered (valid) or free (invalid: no access with any key).
    pub valid: bool,
}

impl Mr {
    /// Whether memory can be reached through this MR's key: always for a
    /// registered MR, while registered for a fast-registration MR.
    pub fn usable(&self) -> bool {
        self.fast_reg.is_none_or(|f| f.valid)
    }
}

/// Bits of a key that hold its variant (the low byte, which consumers change
/// with `ib_inc_rkey()` at each fast registration).
pub const KEY_VARIANT_MASK: u32 = 0xff;

/// Memory regions, by pointer and by key index.
#[derive(Default)]
pub struct MrTable {
    by_ptr: HashMap<Key, Mr>,
    /// By the key's index (`key >> 8`): the variant is checked on lookup.
    by_index: HashMap<u32, Key>,
    last_index: u32,
}

impl MrTable {
    /// The MR memory can be reached through with lkey/rkey `key`: the key's
    /// index and variant both match, and the MR is not an invalidated (or
    /// never registered) fast-registration MR.
    pub fn by_key(&self, key: u32) -> Option<&Mr> {
        self.any_by_key(key).filter(|m| m.key == key && m.usable())
    }

    /// The MR whose key has `key`'s index, whatever its variant and state.
    pub(super) fn any_by_key(&self, key: u32) -> Option<&Mr> {
        self.by_index
            .get(&(key >> 8))
            .and_then(|p| self.by_ptr.get(p))
    }

    /// The MR whose key has `key`'s index, for a change of its registration.
    pub(super) fn any_by_key_mut(&mut self, key: u32) -> Option<&mut Mr> {
        let ptr = *self.by_index.get(&(key >> 8))?;
        self.by_ptr.get_mut(&ptr)
    }

    /// The MR at pointer `ptr`.
    pub fn get(&self, ptr: Key) -> Option<&Mr> {
        self.by_ptr.get(&ptr)
    }

    /// Number of registered MRs.
    pub fn len(&self) -> usize {
        self.by_ptr.len()
    }

    /// Whether no MR is registered.
    pub fn is_empty(&self) -> bool {
        self.by_ptr.is_empty()
    }

    /// A key whose index no live MR uses, variant 0 (never 0: QEMU's DMA
    /// MRs have lkey 0). There are 2^24 - 2 indexes for at most `MAX_MR` MRs.
    fn fresh_key(&mut self) -> u32 {
        loop {
            self.last_index = (self.last_index + 1) & 0xff_ffff;
            if self.last_index != 0
                && self.last_index != 0xff_ffff
                && !self.by_index.contains_key(&self.last_index)
            {
                return self.last_index << 8;
            }
        }
    }

    fn insert(&mut self, mr: Mr) {
        self.by_index.insert(mr.key >> 8, mr.obj.key());
        self.by_ptr.insert(mr.obj.key(), mr);
    }

    fn remove(&mut self, ptr: Key) -> Option<Mr> {
        let mr = self.by_ptr.remove(&ptr)?;
        self.by_index.remove(&(mr.key >> 8));
        Some(mr)
    }

    /// Drops every MR of context `ctx`.
    pub fn retain_not_in_context(&mut self, ctx: Key) {
        let gone: Vec<Key> = self
            .by_ptr
            .iter()
            .filter(|(_, m)| m.ctx == ctx)
            .map(|(k, _)| *k)
            .collect();
        for k in gone {
            self.remove(k);
        }
    }
}

/// Access flags accepted at registration. Remote atomic and MW bind are
/// accepted (guests ask for them) although no atomic or MW operation exists.
const SUPPORTED_ACCESS: u32 = ffi::IBV_ACCESS_LOCAL_WRITE
    | ffi::IBV_ACCESS_REMOTE_WRITE
    | ffi::IBV_ACCESS_REMOTE_READ
    | ffi::IBV_ACCESS_REMOTE_ATOMIC
    | ffi::IBV_ACCESS_MW_BIND;

/// `IBV_ACCESS_OPTIONAL_RANGE`: hints a device may ignore (libibverbs
/// drops them for providers that do not know them).
const OPTIONAL_ACCESS: u32 = 0x3ff0_0000;

/// `access` without the optional hints, if a registration may ask for it:
/// only supported rights, and remote write or atomic only with local write
/// (the kernel's `ib_check_mr_access()` refuses that with EINVAL).
pub(super) fn checked_access(access: u32) -> Option<u32> {
    let access = access & !OPTIONAL_ACCESS;
    let needs_local = ffi::IBV_ACCESS_REMOTE_WRITE | ffi::IBV_ACCESS_REMOTE_ATOMIC;
    let ok = access & !SUPPORTED_ACCESS == 0
        && (access & needs_local == 0 || access & ffi::IBV_ACCESS_LOCAL_WRITE != 0);
    ok.then_some(access)
}

impl Engine {
    /// `ibv_alloc_pd`.
    pub fn alloc_pd(&mut self, ctx: Key) -> Result<*mut ffi::ibv_pd, i32> {
        let context = self.context(ctx)?.obj.as_ptr();
        if self.pds.len() >= MAX_PD as usize {
            return Err(libc::ENOMEM);
        }
        let handle = self.new_handle();
        let obj = CObj::new(ffi::ibv_pd { context, handle });
        let ptr = obj.as_ptr();
        self.pds.insert(obj.key(), Pd { obj, ctx, users: 0 });
        Ok(ptr)
    }

    /// `ibv_dealloc_pd`: EBUSY while objects still use it.
    pub fn dealloc_pd(&mut self, pd: Key) -> Result<(), i32> {
        match self.pds.get(&pd) {
            None => Err(libc::EINVAL),
            Some(p) if p.users > 0 => Err(libc::EBUSY),
            Some(_) => {
                self.pds.remove(&pd);
                Ok(())
            }
        }
    }

    /// Counts one more (or one fewer) user of `pd`.
    pub fn pd_use(&mut self, pd: Key, delta: i32) {
        if let Some(p) = self.pds.get_mut(&pd) {
            p.users = p.users.saturating_add_signed(delta);
        }
    }

    /// `ibv_reg_mr` / `ibv_reg_mr_iova2`: registers `[addr, addr+length)`
    /// of this process, addressed as `[iova, iova+length)`.
    pub fn reg_mr(
        &mut self,
        pd: Key,
        addr: usize,
        length: usize,
        iova: u64,
        access: u32,
    ) -> Result<*mut ffi::ibv_mr, i32> {
        let access = checked_access(access).ok_or(libc::EINVAL)?;
        self.new_mr(pd, addr, length, iova, access, false)
    }

    /// `pvrdma_sw_alloc_fast_reg_mr`: an MR over `[addr, addr+capacity)` of
    /// this process that no key reaches until a REG_MR work request
    /// registers it (the device's side of the kernel's `ib_alloc_mr()`).
    pub fn alloc_fast_reg_mr(
        &mut self,
        pd: Key,
        addr: usize,
        capacity: usize,
    ) -> Result<*mut ffi::ibv_mr, i32> {
        self.new_mr(pd, addr, capacity, 0, 0, true)
    }

    /// Enters an MR of `pd` over `[addr, addr+length)` of this process:
    /// registered at `iova` with `access`, or (`fast_reg`) free, its range
    /// the most a fast registration may cover.
    fn new_mr(
        &mut self,
        pd: Key,
        addr: usize,
        length: usize,
        iova: u64,
        access: u32,
        fast_reg: bool,
    ) -> Result<*mut ffi::ibv_mr, i32> {
        let p = self.pds.get(&pd).ok_or(libc::EINVAL)?;
        let (ctx, context, pd_ptr) = (p.ctx, p.obj.get().context, p.obj.as_ptr());
        let len = length as u64;
        if length == 0 || addr == 0 || len > MAX_MR_SIZE {
            return Err(libc::EINVAL);
        }
        if addr.checked_add(length).is_none() || iova.checked_add(len).is_none() {
            return Err(libc::EINVAL);
        }
        if self.mrs.len() >= MAX_MR as usize {
            return Err(libc::ENOMEM);
        }
        // A free fast-registration MR covers nothing yet.
        let registered = if fast_reg { 0 } else { length };
        let key = self.mrs.fresh_key();
        let handle = self.new_handle();
        let obj = CObj::new(ffi::ibv_mr {
            context,
            pd: pd_ptr,
            addr: addr as *mut libc::c_void,
            length: registered,
            handle,
            lkey: key,
            rkey: key,
        });
        let ptr = obj.as_ptr();
        self.mrs.insert(Mr {
            obj,
            ctx,
            pd,
            host: addr,
            iova,
            length: registered as u64,
            access,
            key,
            fast_reg: fast_reg.then_some(FastReg {
                base: addr,
                capacity: len,
                valid: false,
            }),
        });
        self.pd_use(pd, 1);
        Ok(ptr)
    }

    /// `ibv_dereg_mr`.
    pub fn dereg_mr(&mut self, mr: Key) -> Result<(), i32> {
        let m = self.mrs.remove(mr).ok_or(libc::EINVAL)?;
        self.pd_use(m.pd, -1);
        Ok(())
    }
}
