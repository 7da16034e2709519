// SPDX-License-Identifier: GPL-2.0-only
//! The device and its open contexts.

use super::limits;
use super::{Engine, Key};
use crate::cobj::CObj;
use crate::ffi;
use std::sync::OnceLock;

/// The process-wide `struct ibv_device` (never freed: QEMU reads its name
/// after `ibv_free_device_list`).
pub fn device_ptr() -> *mut ffi::ibv_device {
    static DEVICE: OnceLock<usize> = OnceLock::new();
    *DEVICE.get_or_init(|| Box::leak(Box::new(limits::device_struct())) as *mut _ as usize)
        as *mut ffi::ibv_device
}

/// An open device context.
pub struct Context {
    /// The `struct ibv_context` handed out.
    pub obj: CObj<ffi::ibv_context>,
}

impl Engine {
    /// Opens a context whose inline verbs dispatch through `ops`.
    pub fn open_context(&mut self, ops: ffi::ibv_context_ops) -> *mut ffi::ibv_context {
        let obj = CObj::new(ffi::ibv_context {
            device: device_ptr(),
            ops,
            cmd_fd: -1,
            async_fd: -1,
            num_comp_vectors: 1,
            // Not __VERBS_ABI_IS_EXTENDED: callers take the plain
            // (exported-symbol) paths of the inline verbs.
            abi_compat: std::ptr::null_mut(),
            ..Default::default()
        });
        let ptr = obj.as_ptr();
        self.contexts.insert(obj.key(), Context { obj });
        ptr
    }

    /// Checks that `ctx` is an open context.
    pub fn context(&self, ctx: Key) -> Result<&Context, i32> {
        self.contexts.get(&ctx).ok_or(libc::EINVAL)
    }

    /// Closes a context and releases everything still created on it (as
    /// the kernel does when a verbs file is closed).
    pub fn close_context(&mut self, ctx: Key) -> Result<(), i32> {
        self.context(ctx)?;
        let qps: Vec<Key> = self
            .qps
            .iter()
            .filter(|(_, q)| q.ctx == ctx)
            .map(|(k, _)| *k)
            .collect();
        for k in qps {
            self.release_qp(k);
        }
        self.ahs.retain(|_, a| a.ctx != ctx);
        self.srqs.retain(|_, s| s.ctx != ctx);
        self.cqs.retain(|_, c| c.ctx != ctx);
        self.channels.retain(|_, c| c.ctx != ctx);
        self.mrs.retain_not_in_context(ctx);
        self.pds.retain(|_, p| p.ctx != ctx);
        self.contexts.remove(&ctx);
        Ok(())
    }
}
