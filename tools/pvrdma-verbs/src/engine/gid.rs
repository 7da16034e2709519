//! Port 1's GID table.
//!
//! Index 0 holds a fixed default GID (QEMU refuses index 0 as a source GID);
//! the guest's GIDs arrive at index >= 1 from the mux (through
//! [`pvrdma_fabric::GidSink`]) or, in tests, from [`crate::add_gid`].

use super::limits::GID_TABLE_LEN;
use pvrdma_fabric::Gid;

/// The default GID at index 0: link-local fe80::200:5eff:fe00:5300, built
/// from the documentation MAC 00:00:5e:00:53:00 (RFC 7042).
pub const DEFAULT_GID: Gid = [
    0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x02, 0x00, 0x5e, 0xff, 0xfe, 0x00, 0x53, 0x00,
];

/// The GID table of port 1.
pub struct GidTable {
    entries: [Option<Gid>; GID_TABLE_LEN],
}

impl Default for GidTable {
    fn default() -> Self {
        let mut entries = [None; GID_TABLE_LEN];
        entries[0] = Some(DEFAULT_GID);
        GidTable { entries }
    }
}

impl GidTable {
    /// Adds `gid` at the lowest free index >= 1; adding a present GID
    /// returns its index.
    pub fn add(&mut self, gid: Gid) -> Result<u32, String> {
        if gid == [0; 16] {
            return Err("the zero GID cannot be added".into());
        }
        if let Some(i) = self.index_of(&gid) {
            return Ok(i);
        }
        match self.entries.iter().skip(1).position(Option::is_none) {
            Some(free) => {
                self.entries[free + 1] = Some(gid);
                Ok(free as u32 + 1)
            }
            None => Err(format!("GID table full ({GID_TABLE_LEN} entries)")),
        }
    }

    /// Removes `gid` (never the default GID at index 0); absent is a no-op.
    pub fn remove(&mut self, gid: &Gid) {
        for e in self.entries.iter_mut().skip(1) {
            if e.as_ref() == Some(gid) {
                *e = None;
            }
        }
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
