// SPDX-License-Identifier: GPL-2.0-only
//! Access to registered memory: SGE and remote-key checks, gather and
//! scatter.
//!
//! The verbs contract is that a registered range stays mapped until it is
//! deregistered; every access below is first checked to lie inside a live
//! MR of the right PD with the right access rights.

use super::pd_mr::{Mr, MrTable};
use super::wqe::{vendor_err, Payload, Sge};
use super::Key;
use crate::ffi;

/// Why a memory access was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemError {
    /// No MR with that key.
    BadKey,
    /// The MR belongs to another PD.
    PdMismatch,
    /// The MR lacks the access right.
    Access,
    /// The range is outside the MR.
    Bounds,
}

impl MemError {
    /// The vendor error code reported for it.
    pub fn vendor_err(self) -> u32 {
        match self {
            MemError::BadKey => vendor_err::BAD_KEY,
            MemError::PdMismatch => vendor_err::PD_MISMATCH,
            MemError::Access => vendor_err::ACCESS,
            MemError::Bounds => vendor_err::BOUNDS,
        }
    }
}

/// Why a scatter failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScatterError {
    /// A receive SGE is invalid.
    Mem(MemError),
    /// The receive SGEs are too small for the data.
    TooSmall,
}

/// A checked host range.
struct Range {
    host: usize,
    len: usize,
}

fn check(mr: &Mr, pd: Key, addr: u64, len: u64, access: u32) -> Result<Range, MemError> {
    if mr.pd != pd {
        return Err(MemError::PdMismatch);
    }
    if mr.access & access != access {
        return Err(MemError::Access);
    }
    let end = addr.checked_add(len).ok_or(MemError::Bounds)?;
    let mr_end = mr.iova + mr.length; // cannot overflow: checked at registration
    if addr < mr.iova || end > mr_end {
        return Err(MemError::Bounds);
    }
    let host = mr.host + (addr - mr.iova) as usize;
    Ok(Range {
        host,
        len: len as usize,
    })
}

impl MrTable {
    fn local(&self, sge: &Sge, pd: Key, access: u32) -> Result<Range, MemError> {
        let mr = self.by_key(sge.lkey).ok_or(MemError::BadKey)?;
        check(mr, pd, sge.addr, u64::from(sge.length), access)
    }

    /// Checks `[addr, addr+len)` under `rkey` for a remote access.
    pub fn check_remote(
        &self,
        rkey: u32,
        pd: Key,
        addr: u64,
        len: u64,
        access: u32,
    ) -> Result<(), MemError> {
        if len == 0 {
            return Ok(()); // zero-length RDMA touches no memory and checks no key
        }
        let mr = self.by_key(rkey).ok_or(MemError::BadKey)?;
        check(mr, pd, addr, len, access).map(|_| ())
    }

    /// Gathers a send's bytes from local memory of `pd`.
    pub fn gather(&self, payload: &Payload, pd: Key) -> Result<Vec<u8>, MemError> {
        let sges = match payload {
            Payload::Inline(d) => return Ok(d.clone()),
            Payload::Sges(s) => s,
        };
        let ranges = sges
            .iter()
            .map(|s| self.local(s, pd, 0))
            .collect::<Result<Vec<_>, _>>()?;
        let total: usize = ranges.iter().map(|r| r.len).sum();
        let mut out = Vec::with_capacity(total);
        for r in ranges {
            // SAFETY: the range lies inside a live MR, which its registrant
            // keeps mapped until deregistration (the verbs contract).
            out.extend_from_slice(unsafe {
                std::slice::from_raw_parts(r.host as *const u8, r.len)
            });
        }
        Ok(out)
    }

    /// Checks that the SGEs are local-writable memory of `pd` (the
    /// destination of an RDMA read), without touching it.
    pub fn check_writable(&self, sges: &[Sge], pd: Key) -> Result<(), MemError> {
        for s in sges {
            self.local(s, pd, ffi::IBV_ACCESS_LOCAL_WRITE)?;
        }
        Ok(())
    }

    /// Scatters `data` over receive SGEs of `pd` (which need local write).
    /// Only the SGEs the data reaches are checked, each as a whole; nothing
    /// is written unless all of them pass and the data fits.
    pub fn scatter(&self, sges: &[Sge], pd: Key, data: &[u8]) -> Result<(), ScatterError> {
        let mut ranges = Vec::new();
        let mut room = 0usize;
        for s in sges {
            if room >= data.len() {
                break;
            }
            let r = self
                .local(s, pd, ffi::IBV_ACCESS_LOCAL_WRITE)
                .map_err(ScatterError::Mem)?;
            room += r.len;
            ranges.push(r);
        }
        if room < data.len() {
            return Err(ScatterError::TooSmall);
        }
        let mut rest = data;
        for r in ranges {
            let n = r.len.min(rest.len());
            // SAFETY: inside a live, locally writable MR (verbs contract);
            // `data` is our own buffer, so the ranges cannot overlap it.
            unsafe { std::ptr::copy_nonoverlapping(rest.as_ptr(), r.host as *mut u8, n) };
            rest = &rest[n..];
        }
        Ok(())
    }

    /// Reads `len` bytes at `addr` under `rkey` (already checked).
    pub fn read_remote(&self, rkey: u32, addr: u64, len: u64) -> Vec<u8> {
        match self.by_key(rkey) {
            Some(mr) if len > 0 => {
                let host = mr.host + (addr - mr.iova) as usize;
                // SAFETY: checked by check_remote under the same lock.
                unsafe { std::slice::from_raw_parts(host as *const u8, len as usize) }.to_vec()
            }
            _ => Vec::new(),
        }
    }

    /// Writes `data` at `addr` under `rkey` (already checked).
    pub fn write_remote(&self, rkey: u32, addr: u64, data: &[u8]) {
        if let Some(mr) = self.by_key(rkey) {
            if !data.is_empty() {
                let host = mr.host + (addr - mr.iova) as usize;
                // SAFETY: checked by check_remote under the same lock; `data`
                // is our own buffer.
                unsafe {
                    std::ptr::copy_nonoverlapping(data.as_ptr(), host as *mut u8, data.len())
                };
            }
        }
    }
}
