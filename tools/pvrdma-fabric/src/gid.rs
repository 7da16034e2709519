// SPDX-License-Identifier: GPL-2.0-only
//! Printing GIDs for logs.

use std::fmt;

use crate::Gid;

/// The all-zero GID: never a valid port GID.
pub const ZERO_GID: Gid = [0; 16];

/// Displays a GID as eight uncompressed groups of four hex digits, like an
/// IPv6 address without `::` shortening, so log lines are easy to grep.
pub struct GidFmt<'a>(pub &'a Gid);

impl fmt::Display for GidFmt<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, pair) in self.0.chunks_exact(2).enumerate() {
            if i > 0 {
                f.write_str(":")?;
            }
            write!(f, "{:02x}{:02x}", pair[0], pair[1])?;
        }
        Ok(())
    }
}

/// The interface identifier: the low 8 bytes of a GID, which is what the
/// original rdmacm-mux keyed its tables on.
pub fn interface_id(gid: &Gid) -> [u8; 8] {
    let mut ifid = [0; 8];
    ifid.copy_from_slice(&gid[8..]);
    ifid
}

/// The IPv4-mapped GID `::ffff:a.b.c.d`, the RoCE v1 GID of an IPv4 address.
pub fn ipv4_mapped_gid(addr: [u8; 4]) -> Gid {
    let mut gid = ZERO_GID;
    gid[10] = 0xff;
    gid[11] = 0xff;
    gid[12..].copy_from_slice(&addr);
    gid
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_link_local_gid() {
        let gid = [
            0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x02, 0x50, 0x56, 0xff, 0xfe, 0x00, 0x00, 0x01,
        ];
        assert_eq!(
            GidFmt(&gid).to_string(),
            "fe80:0000:0000:0000:0250:56ff:fe00:0001"
        );
    }

    #[test]
    fn maps_ipv4() {
        let gid = ipv4_mapped_gid([192, 0, 2, 7]);
        assert_eq!(
            GidFmt(&gid).to_string(),
            "0000:0000:0000:0000:0000:ffff:c000:0207"
        );
        assert_eq!(interface_id(&gid), [0, 0, 0xff, 0xff, 192, 0, 2, 7]);
    }
}
