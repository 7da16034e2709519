// SPDX-License-Identifier: GPL-2.0-only
//! The common MAD header (IBTA vol. 1, 13.4.2) and the CM class constants
//! (IBTA vol. 1, chapter 12; Linux `include/rdma/ib_cm.h`).
//!
//! All multi-byte MAD fields are big-endian on the wire.

use std::fmt;

/// Size of the common MAD header; class data starts right after it.
pub const MAD_HDR_SIZE: usize = 24;

/// Management class of the Communication Manager (what rdma_cm speaks).
pub const MGMT_CLASS_CM: u8 = 0x07;

/// CM attribute IDs.
pub mod cm_attr {
    /// ClassPortInfo.
    pub const CLASS_PORT_INFO: u16 = 0x0001;
    /// Connect request.
    pub const REQ: u16 = 0x0010;
    /// Message receipt acknowledgement.
    pub const MRA: u16 = 0x0011;
    /// Reject.
    pub const REJ: u16 = 0x0012;
    /// Connect reply.
    pub const REP: u16 = 0x0013;
    /// Ready to use.
    pub const RTU: u16 = 0x0014;
    /// Disconnect request.
    pub const DREQ: u16 = 0x0015;
    /// Disconnect reply.
    pub const DREP: u16 = 0x0016;
    /// Service ID resolution request (UD).
    pub const SIDR_REQ: u16 = 0x0017;
    /// Service ID resolution reply.
    pub const SIDR_REP: u16 = 0x0018;
    /// Load alternate path.
    pub const LAP: u16 = 0x0019;
    /// Alternate path response.
    pub const APR: u16 = 0x001a;

    /// A short name for logs.
    pub fn name(attr_id: u16) -> &'static str {
        match attr_id {
            CLASS_PORT_INFO => "ClassPortInfo",
            REQ => "REQ",
            MRA => "MRA",
            REJ => "REJ",
            REP => "REP",
            RTU => "RTU",
            DREQ => "DREQ",
            DREP => "DREP",
            SIDR_REQ => "SIDR_REQ",
            SIDR_REP => "SIDR_REP",
            LAP => "LAP",
            APR => "APR",
            _ => "?",
        }
    }

    /// The attribute a short name of [`name`] stands for (`"RTU"`), if any.
    pub fn by_name(name: &str) -> Option<u16> {
        (CLASS_PORT_INFO..=APR)
            .find(|&id| self::name(id) == name)
            .filter(|_| name != "?")
    }
}

/// The common MAD header, decoded to host values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct MadHdr {
    /// Base version (1 for IB MADs).
    pub base_version: u8,
    /// Management class, e.g. [`MGMT_CLASS_CM`].
    pub mgmt_class: u8,
    /// Class version (2 for CM).
    pub class_version: u8,
    /// Method (Send = 0x03 for CM).
    pub method: u8,
    /// Status.
    pub status: u16,
    /// Class-specific field.
    pub class_specific: u16,
    /// Transaction ID.
    pub tid: u64,
    /// Attribute ID.
    pub attr_id: u16,
    /// Reserved.
    pub resv: u16,
    /// Attribute modifier.
    pub attr_mod: u32,
}

impl MadHdr {
    /// Decodes the header from the start of `mad`; `None` if it is shorter than
    /// [`MAD_HDR_SIZE`].
    pub fn parse(mad: &[u8]) -> Option<MadHdr> {
        let h = mad.get(..MAD_HDR_SIZE)?;
        Some(MadHdr {
            base_version: h[0],
            mgmt_class: h[1],
            class_version: h[2],
            method: h[3],
            status: be16(&h[4..6]),
            class_specific: be16(&h[6..8]),
            tid: u64::from_be_bytes(h[8..16].try_into().ok()?),
            attr_id: be16(&h[16..18]),
            resv: be16(&h[18..20]),
            attr_mod: be32(&h[20..24]),
        })
    }

    /// Encodes the header into the first [`MAD_HDR_SIZE`] bytes of `out`.
    ///
    /// # Panics
    /// If `out` is shorter than [`MAD_HDR_SIZE`].
    pub fn write(&self, out: &mut [u8]) {
        let h = &mut out[..MAD_HDR_SIZE];
        h[0] = self.base_version;
        h[1] = self.mgmt_class;
        h[2] = self.class_version;
        h[3] = self.method;
        h[4..6].copy_from_slice(&self.status.to_be_bytes());
        h[6..8].copy_from_slice(&self.class_specific.to_be_bytes());
        h[8..16].copy_from_slice(&self.tid.to_be_bytes());
        h[16..18].copy_from_slice(&self.attr_id.to_be_bytes());
        h[18..20].copy_from_slice(&self.resv.to_be_bytes());
        h[20..24].copy_from_slice(&self.attr_mod.to_be_bytes());
    }
}

impl fmt::Display for MadHdr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "class=0x{:02x} method=0x{:02x} attr=0x{:04x}",
            self.mgmt_class, self.method, self.attr_id
        )?;
        if self.mgmt_class == MGMT_CLASS_CM {
            write!(f, "({})", cm_attr::name(self.attr_id))?;
        }
        write!(f, " tid=0x{:016x}", self.tid)
    }
}

/// Builds a 256-byte CM MAD (base version 1, class 0x07, class version 2,
/// method Send) with `attr_id` and `tid`, and each `(offset, bytes)` of
/// `fields` copied into the CM data (offsets count from the end of the MAD
/// header, as in IBTA's CM tables). For tests and lab tools.
///
/// # Panics
/// If a field does not fit in the MAD.
pub fn cm_mad(attr_id: u16, tid: u64, fields: &[(usize, &[u8])]) -> [u8; 256] {
    let mut mad = [0u8; 256];
    MadHdr {
        base_version: 1,
        mgmt_class: MGMT_CLASS_CM,
        class_version: 2,
        method: 0x03,
        tid,
        attr_id,
        ..MadHdr::default()
    }
    .write(&mut mad);
    for (offset, bytes) in fields {
        let at = MAD_HDR_SIZE + offset;
        mad[at..at + bytes.len()].copy_from_slice(bytes);
    }
    mad
}

/// Reads a big-endian u16 from the first two bytes of `b`.
fn be16(b: &[u8]) -> u16 {
    u16::from_be_bytes([b[0], b[1]])
}

/// Reads a big-endian u32 from the first four bytes of `b`.
fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cm_attribute_names_round_trip() {
        for id in [
            cm_attr::REQ,
            cm_attr::REP,
            cm_attr::RTU,
            cm_attr::SIDR_REQ,
            cm_attr::APR,
        ] {
            assert_eq!(cm_attr::by_name(cm_attr::name(id)), Some(id));
        }
        assert_eq!(cm_attr::by_name("?"), None);
        assert_eq!(cm_attr::by_name("rtu"), None);
        assert_eq!(cm_attr::by_name(""), None);
    }

    #[test]
    fn header_round_trip_and_offsets() {
        let hdr = MadHdr {
            base_version: 1,
            mgmt_class: MGMT_CLASS_CM,
            class_version: 2,
            method: 3,
            status: 0x1234,
            class_specific: 0x5678,
            tid: 0x0102_0304_0506_0708,
            attr_id: cm_attr::REQ,
            resv: 0,
            attr_mod: 0xdead_beef,
        };
        let mut buf = [0u8; 256];
        hdr.write(&mut buf);
        assert_eq!(&buf[..4], &[1, 0x07, 2, 3]);
        assert_eq!(&buf[4..6], &[0x12, 0x34]);
        assert_eq!(&buf[8..16], &[1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(&buf[16..18], &[0x00, 0x10]);
        assert_eq!(&buf[20..24], &[0xde, 0xad, 0xbe, 0xef]);
        assert_eq!(MadHdr::parse(&buf), Some(hdr));
        assert_eq!(MadHdr::parse(&buf[..23]), None);
    }

    #[test]
    fn builds_cm_mads() {
        let mad = cm_mad(cm_attr::REP, 9, &[(0, &[0, 0, 0, 5]), (4, &[0, 0, 0, 6])]);
        let hdr = MadHdr::parse(&mad).unwrap();
        assert_eq!(
            (hdr.mgmt_class, hdr.attr_id, hdr.tid),
            (MGMT_CLASS_CM, cm_attr::REP, 9)
        );
        assert_eq!(&mad[24..32], &[0, 0, 0, 5, 0, 0, 0, 6]);
    }
}
