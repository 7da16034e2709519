// SPDX-License-Identifier: GPL-2.0-only
//! Address handles (UD destinations).

use super::limits::{MAX_AH, PORT_NUM};
use super::{Engine, Key};
use crate::cobj::CObj;
use crate::ffi;

/// An address handle.
pub struct Ah {
    /// The `struct ibv_ah` handed out.
    pub obj: CObj<ffi::ibv_ah>,
    /// Owning context.
    pub ctx: Key,
    /// Its PD.
    pub pd: Key,
    /// The address vector.
    pub attr: ffi::ibv_ah_attr,
}

impl Engine {
    /// Checks an address vector: RoCE needs a GRH (`is_global`), port 1 and
    /// a valid source GID index.
    pub fn check_ah_attr(&self, a: &ffi::ibv_ah_attr) -> Result<(), i32> {
        if a.is_global == 0 || a.port_num != PORT_NUM {
            return Err(libc::EINVAL);
        }
        if self.gids.valid(usize::from(a.grh.sgid_index)).is_none() {
            return Err(libc::EINVAL);
        }
        Ok(())
    }

    /// `ibv_create_ah`.
    pub fn create_ah(&mut self, pd: Key, attr: &ffi::ibv_ah_attr) -> Result<*mut ffi::ibv_ah, i32> {
        let p = self.pds.get(&pd).ok_or(libc::EINVAL)?;
        let (ctx, context, pd_ptr) = (p.ctx, p.obj.get().context, p.obj.as_ptr());
        self.check_ah_attr(attr)?;
        if self.ahs.len() >= MAX_AH as usize {
            return Err(libc::ENOMEM);
        }
        let handle = self.new_handle();
        let obj = CObj::new(ffi::ibv_ah {
            context,
            pd: pd_ptr,
            handle,
        });
        let ptr = obj.as_ptr();
        self.ahs.insert(
            obj.key(),
            Ah {
                obj,
                ctx,
                pd,
                attr: *attr,
            },
        );
        self.pd_use(pd, 1);
        Ok(ptr)
    }

    /// `ibv_destroy_ah`.
    pub fn destroy_ah(&mut self, ah: Key) -> Result<(), i32> {
        let a = self.ahs.remove(&ah).ok_or(libc::EINVAL)?;
        self.pd_use(a.pd, -1);
        Ok(())
    }
}
