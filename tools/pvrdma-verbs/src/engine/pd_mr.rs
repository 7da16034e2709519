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
    /// lkey == rkey.
    pub key: u32,
}

/// Memory regions, by pointer and by key.
#[derive(Default)]
pub struct MrTable {
    by_ptr: HashMap<Key, Mr>,
    by_key: HashMap<u32, Key>,
    last_key: u32,
}

impl MrTable {
    /// The MR with lkey/rkey `key`.
    pub fn by_key(&self, key: u32) -> Option<&Mr> {
        self.by_key.get(&key).and_then(|p| self.by_ptr.get(p))
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

    /// A key no live MR uses (never 0).
    fn fresh_key(&mut self) -> u32 {
        loop {
            self.last_key = self.last_key.wrapping_add(1);
            if self.last_key != 0
                && self.last_key != u32::MAX
                && !self.by_key.contains_key(&self.last_key)
            {
                return self.last_key;
            }
        }
    }

    fn insert(&mut self, mr: Mr) {
        self.by_key.insert(mr.key, mr.obj.key());
        self.by_ptr.insert(mr.obj.key(), mr);
    }

    fn remove(&mut self, ptr: Key) -> Option<Mr> {
        let mr = self.by_ptr.remove(&ptr)?;
        self.by_key.remove(&mr.key);
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
        let p = self.pds.get(&pd).ok_or(libc::EINVAL)?;
        let (ctx, context, pd_ptr) = (p.ctx, p.obj.get().context, p.obj.as_ptr());
        let access = access & !OPTIONAL_ACCESS;
        if access & !SUPPORTED_ACCESS != 0 {
            return Err(libc::EINVAL);
        }
        // Remote write/atomic needs local write (the kernel's
        // ib_check_mr_access refuses it with EINVAL).
        let needs_local = ffi::IBV_ACCESS_REMOTE_WRITE | ffi::IBV_ACCESS_REMOTE_ATOMIC;
        if access & needs_local != 0 && access & ffi::IBV_ACCESS_LOCAL_WRITE == 0 {
            return Err(libc::EINVAL);
        }
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
        let key = self.mrs.fresh_key();
        let handle = self.new_handle();
        let obj = CObj::new(ffi::ibv_mr {
            context,
            pd: pd_ptr,
            addr: addr as *mut libc::c_void,
            length,
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
            length: len,
            access,
            key,
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
