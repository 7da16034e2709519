// SPDX-License-Identifier: GPL-2.0-only
//! The exported `ibv_*` symbols (bound in place of libibverbs' versioned
//! ones when this library is preloaded) and the `ibv_context_ops` entries
//! the inline verbs dispatch through.
//!
//! Every function validates its pointer arguments by engine lookup before
//! reading through them, returns the way libibverbs does (NULL + errno, or
//! an errno value), and contains panics (see [`crate::guard`]).

pub mod ah;
pub mod cq;
pub mod device;
pub mod pd_mr;
pub mod post;
pub mod qp;
pub mod srq;
pub mod status;

use crate::engine::limits::MAX_SGE;
use crate::engine::wqe::Sge;
use crate::ffi;

/// Reads `n` SGEs at `list`.
///
/// # Safety
/// `list` must point to `n` readable `ibv_sge` if `n` is in 1..=MAX_SGE.
pub(crate) unsafe fn read_sges(list: *const ffi::ibv_sge, n: i32) -> Result<Vec<Sge>, i32> {
    if n < 0 || n as u32 > MAX_SGE || (n > 0 && list.is_null()) {
        return Err(libc::EINVAL);
    }
    let mut out = Vec::with_capacity(n as usize);
    for i in 0..n as usize {
        // SAFETY: the caller guarantees `n` readable entries.
        let s = unsafe { list.add(i).read_unaligned() };
        out.push(Sge {
            addr: s.addr,
            length: s.length,
            lkey: s.lkey,
        });
    }
    Ok(out)
}
