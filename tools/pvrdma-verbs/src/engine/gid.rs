// SPDX-License-Identifier: GPL-2.0-only
//! Port 1's GID table.
//!
//! Index 0 holds a fixed default GID (QEMU refuses index 0 as a source GID);
//! the guest's GIDs arrive at index >= 1 from the mux (through
//! [`pvrdma_fabric::GidSink`]) or, in tests, from [`crate::add_gid`] and
//! [`crate::add_gid_typed`]. Each entry has a type, RoCE v1 unless added as
//! RoCE v2: the type decides the network header a UD receive starts with
//! ([`super::grh`]). The guest's type comes from QEMU's REG (QEMU patch 29)
//! through the mux's GID_ADD ([`crate::fabric::DeviceGids`]).

use super::limits::GID_TABLE_LEN;
use pvrdma_fabric::Gid;
pub use pvrdma_fabric::GidType;

/// The default GID at index 0: link-local fe80::200:5eff:fe00:5300, built
/// from the documentation MAC 00:00:5e:00:53:00 (RFC 7042).
pub const DEFAULT_GID: Gid = [
    0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x02, 0x00, 0x5e, 0xff, 0xfe, 0x00, 0x53, 0x00,
];

/// The GID table of port 1.
pub struct GidTable {
    entries: [Option<Gid>; GID_TABLE_LEN],
    /// The type of each entry (RoCE v1 for an empty one).
    types: [GidType; GID_TABLE_LEN],
}

impl Default for GidTable {
    fn default() -> Self {
        let mut entries = [None; GID_TABLE_LEN];
        entries[0] = Some(DEFAULT_GID);
        GidTable {
            entries,
            types: [GidType::RoceV1; GID_TABLE_LEN],
        }
    }
}

impl GidTable {
    /// Adds `gid` as a RoCE v1 GID (see [`GidTable::add_typed`]).
    pub fn add(&mut self, gid: Gid) -> Result<u32, String> {
        self.add_typed(gid, GidType::RoceV1)
    }

    /// Adds `gid` of type `ty` at the lowest free index >= 1; adding a
    /// present GID returns its index and gives it type `ty` (one entry per
    /// GID: a guest binds each GID with the one type its port has).
    pub fn add_typed(&mut self, gid: Gid, ty: GidType) -> Result<u32, String> {
        if gid == [0; 16] {
            return Err("the zero GID cannot be added".into());
        }
        if let Some(i) = self.index_of(&gid) {
            if i > 0 {
                self.types[i as usize] = ty;
            }
            return Ok(i);
        }
        match self.entries.iter().skip(1).position(Option::is_none) {
            Some(free) => {
                self.entries[free + 1] = Some(gid);
                self.types[free + 1] = ty;
                Ok(free as u32 + 1)
            }
            None => Err(format!("GID table full ({GID_TABLE_LEN} entries)")),
        }
    }

    /// Removes `gid` (never the default GID at index 0); absent is a no-op.
    pub fn remove(&mut self, gid: &Gid) {
        for (e, t) in self.entries.iter_mut().zip(self.types.iter_mut()).skip(1) {
            if e.as_ref() == Some(gid) {
                *e = None;
                *t = GidType::RoceV1;
            }
        }
    }

    /// The type of `gid`, if this device owns it.
    pub fn gid_type(&self, gid: &Gid) -> Option<GidType> {
        self.index_of(gid).map(|i| self.types[i as usize])
    }

    /// The entry at `index`: `None` past the end of the table, the zero GID
    /// for an empty entry (as libibverbs reports it).
    pub fn query(&self, index: usize) -> Option<Gid> {
        self.entries.get(index).map(|e| e.unwrap_or([0; 16]))
    }

    /// The valid (non-empty) GID at `index`.
    pub fn valid(&self, index: usize) -> Option<Gid> {
        self.entries.get(index).copied().flatten()
    }

    /// The index of `gid`, if this device owns it.
    pub fn index_of(&self, gid: &Gid) -> Option<u32> {
        self.entries
            .iter()
            .position(|e| e.as_ref() == Some(gid))
            .map(|i| i as u32)
    }

    /// Whether this device owns `gid`.
    pub fn contains(&self, gid: &Gid) -> bool {
        self.index_of(gid).is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_at_zero_and_adds_from_one() {
        let mut t = GidTable::default();
        assert_eq!(t.query(0), Some(DEFAULT_GID));
        let g = [1u8; 16];
        assert_eq!(t.add(g), Ok(1));
        assert_eq!(t.add(g), Ok(1));
        assert_eq!(t.add([2u8; 16]), Ok(2));
        t.remove(&g);
        assert_eq!(t.query(1), Some([0; 16]));
        assert_eq!(t.valid(1), None);
        assert_eq!(t.add([3u8; 16]), Ok(1));
        t.remove(&DEFAULT_GID);
        assert!(t.contains(&DEFAULT_GID));
        assert_eq!(t.query(GID_TABLE_LEN), None);
        assert!(t.add([0; 16]).is_err());
    }

    #[test]
    fn types_follow_their_entries() {
        let mut t = GidTable::default();
        let (a, b) = ([1u8; 16], [2u8; 16]);
        assert_eq!(t.gid_type(&DEFAULT_GID), Some(GidType::RoceV1));
        assert_eq!(t.add_typed(a, GidType::RoceV2), Ok(1));
        assert_eq!(t.add(b), Ok(2));
        assert_eq!(t.gid_type(&a), Some(GidType::RoceV2));
        assert_eq!(t.gid_type(&b), Some(GidType::RoceV1));
        // Bound again with another type: the same entry, the new type.
        assert_eq!(t.add_typed(b, GidType::RoceV2), Ok(2));
        assert_eq!(t.gid_type(&b), Some(GidType::RoceV2));
        // A freed entry forgets its type.
        t.remove(&a);
        assert_eq!(t.gid_type(&a), None);
        assert_eq!(t.add([3u8; 16]), Ok(1));
        assert_eq!(t.gid_type(&[3u8; 16]), Some(GidType::RoceV1));
        // The default GID stays RoCE v1.
        assert_eq!(t.add_typed(DEFAULT_GID, GidType::RoceV2), Ok(0));
        assert_eq!(t.gid_type(&DEFAULT_GID), Some(GidType::RoceV1));
        assert_eq!(t.gid_type(&[9u8; 16]), None);
    }

    #[test]
    fn full_table_is_an_error() {
        let mut t = GidTable::default();
        for i in 1..GID_TABLE_LEN {
            let mut g = [0u8; 16];
            g[0] = 0x20;
            g[15] = i as u8;
            g[14] = (i >> 8) as u8;
            assert_eq!(t.add(g), Ok(i as u32));
        }
        assert!(t.add([9u8; 16]).is_err());
    }
}
