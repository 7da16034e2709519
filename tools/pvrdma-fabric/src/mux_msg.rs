// SPDX-License-Identifier: GPL-2.0-only
//! The rdmacm-mux message exchanged between QEMU's pvrdma backend and the mux
//! over the `mad-chardev` unix socket.
//!
//! The layout is QEMU 7.2's `RdmaCmMuxMsg` (`contrib/rdmacm-mux/rdmacm-mux.h`)
//! as laid out by the C compiler on x86-64: 360 bytes, host-endian integers,
//! with `struct ib_user_mad` (whose address fields are big-endian) and a 256-byte
//! MAD buffer, then the `gid_type` of a REG (QEMU patch 29, in what was the
//! struct's trailing padding). [`offset`] lists every field's byte offset.

use std::fmt;

use crate::gid::GidFmt;
use crate::mad::MadHdr;
use crate::{Gid, GidType};

/// Size of every message in both directions.
pub const MSG_SIZE: usize = 360;
/// Size of the MAD buffer (`RDMA_MAX_PRIVATE_DATA`).
pub const MAD_BUF_SIZE: usize = 256;
/// Size of `struct ib_user_mad` without its data.
pub const UMAD_HDR_SIZE: usize = 64;
/// The well-known Q_Key of QP1 (GSI).
pub const QP1_QKEY: u32 = 0x8001_0000;

/// Byte offsets of the fields in a message (checked against the C layout by
/// compiling `rdmacm-mux.h`'s structures with `offsetof`).
pub mod offset {
    /// `hdr.msg_type` (u32).
    pub const MSG_TYPE: usize = 0;
    /// `hdr.op_code` (u32).
    pub const OP_CODE: usize = 4;
    /// `hdr.sgid` (16 bytes; 8-aligned because `union ibv_gid` holds u64s).
    pub const SGID: usize = 8;
    /// `hdr.err_code` (u32), followed by 4 bytes of padding.
    pub const ERR_CODE: usize = 24;
    /// `umad_len` (i32).
    pub const UMAD_LEN: usize = 32;
    /// `umad.hdr` (`struct ib_user_mad`, 64 bytes).
    pub const UMAD_HDR: usize = 36;
    /// `umad.hdr.agent_id` (u32).
    pub const AGENT_ID: usize = 36;
    /// `umad.hdr.status` (u32).
    pub const STATUS: usize = 40;
    /// `umad.hdr.timeout_ms` (u32).
    pub const TIMEOUT_MS: usize = 44;
    /// `umad.hdr.retries` (u32).
    pub const RETRIES: usize = 48;
    /// `umad.hdr.length` (u32).
    pub const LENGTH: usize = 52;
    /// `umad.hdr.addr.qpn` (big-endian u32).
    pub const QPN: usize = 56;
    /// `umad.hdr.addr.qkey` (big-endian u32).
    pub const QKEY: usize = 60;
    /// `umad.hdr.addr.lid` (big-endian u16).
    pub const LID: usize = 64;
    /// `umad.hdr.addr.sl` (u8).
    pub const SL: usize = 66;
    /// `umad.hdr.addr.path_bits` (u8).
    pub const PATH_BITS: usize = 67;
    /// `umad.hdr.addr.grh_present` (u8).
    pub const GRH_PRESENT: usize = 68;
    /// `umad.hdr.addr.gid_index` (u8).
    pub const GID_INDEX: usize = 69;
    /// `umad.hdr.addr.hop_limit` (u8).
    pub const HOP_LIMIT: usize = 70;
    /// `umad.hdr.addr.traffic_class` (u8).
    pub const TRAFFIC_CLASS: usize = 71;
    /// `umad.hdr.addr.gid` (16 bytes).
    pub const GID: usize = 72;
    /// `umad.hdr.addr.flow_label` (big-endian u32).
    pub const FLOW_LABEL: usize = 88;
    /// `umad.hdr.addr.pkey_index` (host-endian u16).
    pub const PKEY_INDEX: usize = 92;
    /// `umad.hdr.addr.reserved` (6 bytes).
    pub const RESERVED: usize = 94;
    /// `umad.mad` (256 bytes).
    pub const MAD: usize = 100;
    /// `gid_type` (u32): a REG's [`GidType`](crate::GidType), 0 in every
    /// other message. It took the 4 bytes of trailing padding (QEMU patch
    /// 29), which older QEMUs send as zeros: RoCE v1.
    pub const GID_TYPE: usize = 356;
}

/// `RdmaCmMuxMsgType`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MsgType {
    /// A request (QEMU -> mux), or an unsolicited MAD delivery (mux -> QEMU).
    Req = 0,
    /// The answer to a request.
    Resp = 1,
}

/// `RdmaCmMuxOpCode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpCode {
    /// Register a GID (guest CREATE_BIND).
    Reg = 0,
    /// Unregister a GID (guest DESTROY_BIND, device teardown).
    Unreg = 1,
    /// A MAD (QP1 send from the guest, or a delivery to the guest).
    Mad = 2,
}

/// The op code the mux puts in the RESP to a MAD request.
///
/// It is outside QEMU's enum on purpose. QEMU's synchronous reader
/// (`rdmacm_mux_check_op_status`) never looks at a RESP's op code, but its
/// asynchronous reader (`rdmacm_mux_read`) processes a message as an incoming
/// MAD when `msg_type != REQ && op_code != MAD` is false, i.e. whenever the op
/// code is MAD. A RESP that ends up at the asynchronous reader (see the race
/// described in the mux's README) must therefore not say MAD, or QEMU would
/// hand it to the guest as a received MAD, and sleep 5000 s in its main loop if
/// the guest has no QP1 receive posted.
pub const OP_CODE_MAD_RESP: u32 = 0x102;

/// `RdmaCmMuxErrCode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrCode {
    /// Success.
    Ok = 0,
    /// Malformed request.
    Einval = 1,
    /// The GID is already registered by this connection.
    Eexist = 2,
    /// The GID belongs to someone else, or the verbs library refused it.
    Eacces = 3,
    /// No such GID, or no verbs library for this QEMU.
    Enotfound = 4,
}

impl MsgType {
    /// The enum value for a raw `msg_type`, if it is one.
    pub fn from_raw(raw: u32) -> Option<MsgType> {
        match raw {
            0 => Some(MsgType::Req),
            1 => Some(MsgType::Resp),
            _ => None,
        }
    }
}

impl OpCode {
    /// The enum value for a raw `op_code`, if it is one.
    pub fn from_raw(raw: u32) -> Option<OpCode> {
        match raw {
            0 => Some(OpCode::Reg),
            1 => Some(OpCode::Unreg),
            2 => Some(OpCode::Mad),
            _ => None,
        }
    }
}

impl ErrCode {
    /// The enum value for a raw `err_code`, if it is one.
    pub fn from_raw(raw: u32) -> Option<ErrCode> {
        match raw {
            0 => Some(ErrCode::Ok),
            1 => Some(ErrCode::Einval),
            2 => Some(ErrCode::Eexist),
            3 => Some(ErrCode::Eacces),
            4 => Some(ErrCode::Enotfound),
            _ => None,
        }
    }
}

/// `struct ib_mad_addr`, with the big-endian fields decoded to host values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct MadAddr {
    /// Remote QP number (1 for GSI).
    pub qpn: u32,
    /// Q_Key.
    pub qkey: u32,
    /// Remote LID (0 on RoCE).
    pub lid: u16,
    /// Service level.
    pub sl: u8,
    /// Path bits.
    pub path_bits: u8,
    /// Non-zero when the GRH fields below are valid.
    pub grh_present: u8,
    /// Local GID index the MAD was sent from / received on.
    pub gid_index: u8,
    /// GRH hop limit.
    pub hop_limit: u8,
    /// GRH traffic class.
    pub traffic_class: u8,
    /// The remote GID (on a delivery: the source of the MAD).
    pub gid: Gid,
    /// GRH flow label.
    pub flow_label: u32,
    /// P_Key index (host-endian in the kernel ABI).
    pub pkey_index: u16,
    /// Reserved bytes, kept for a faithful round trip.
    pub reserved: [u8; 6],
}

/// `struct ib_user_mad` without its data.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct UmadHdr {
    /// Agent ID.
    pub agent_id: u32,
    /// Status.
    pub status: u32,
    /// Send timeout.
    pub timeout_ms: u32,
    /// Send retries.
    pub retries: u32,
    /// Length of header plus MAD.
    pub length: u32,
    /// Addressing.
    pub addr: MadAddr,
}

/// One rdmacm-mux message, decoded.
///
/// `msg_type`, `op_code` and `err_code` stay raw so that unknown values from a
/// peer survive decoding and can be logged and answered.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct MuxMsg {
    /// Raw [`MsgType`].
    pub msg_type: u32,
    /// Raw [`OpCode`] (or [`OP_CODE_MAD_RESP`]).
    pub op_code: u32,
    /// The GID: REG/UNREG's GID, a MAD's source (QEMU -> mux) or destination
    /// (mux -> QEMU).
    pub sgid: Gid,
    /// Raw [`ErrCode`].
    pub err_code: u32,
    /// Number of valid bytes in `mad` (signed in C; validate before use).
    pub umad_len: i32,
    /// The `ib_user_mad` header.
    pub umad: UmadHdr,
    /// The MAD buffer.
    pub mad: [u8; MAD_BUF_SIZE],
    /// Raw [`GidType`] of a REG (0 in other messages).
    pub gid_type: u32,
}

/// Why bytes could not be decoded as a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DecodeError {
    /// The buffer is not exactly [`MSG_SIZE`] bytes long.
    WrongSize(usize),
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecodeError::WrongSize(n) => {
                write!(f, "message is {n} bytes, expected {MSG_SIZE}")
            }
        }
    }
}

impl std::error::Error for DecodeError {}

impl Default for MuxMsg {
    fn default() -> Self {
        MuxMsg {
            msg_type: MsgType::Req as u32,
            op_code: OpCode::Reg as u32,
            sgid: [0; 16],
            err_code: ErrCode::Ok as u32,
            umad_len: 0,
            umad: UmadHdr::default(),
            mad: [0; MAD_BUF_SIZE],
            gid_type: GidType::RoceV1 as u32,
        }
    }
}

impl MuxMsg {
    /// A request with the given op code and GID, everything else zero.
    pub fn request(op: OpCode, sgid: Gid) -> MuxMsg {
        MuxMsg {
            msg_type: MsgType::Req as u32,
            op_code: op as u32,
            sgid,
            ..MuxMsg::default()
        }
    }

    /// A MAD request as QEMU's `mad_send` builds it: source GID in `sgid` and
    /// `addr.gid`, QPN 1, GRH present, hop limit 255.
    ///
    /// # Panics
    /// If `mad` is longer than [`MAD_BUF_SIZE`].
    pub fn mad_request(sgid: Gid, gid_index: u8, mad: &[u8]) -> MuxMsg {
        let mut msg = MuxMsg::request(OpCode::Mad, sgid);
        msg.umad_len = i32::try_from(mad.len()).expect("MAD fits in i32");
        msg.umad.addr.qpn = 1;
        msg.umad.addr.grh_present = 1;
        msg.umad.addr.gid_index = gid_index;
        msg.umad.addr.gid = sgid;
        msg.umad.addr.hop_limit = 0xff;
        msg.mad[..mad.len()].copy_from_slice(mad);
        msg
    }

    /// The typed message type, if known.
    pub fn msg_type(&self) -> Option<MsgType> {
        MsgType::from_raw(self.msg_type)
    }

    /// The typed op code, if known.
    pub fn op_code(&self) -> Option<OpCode> {
        OpCode::from_raw(self.op_code)
    }

    /// The typed error code, if known.
    pub fn err_code(&self) -> Option<ErrCode> {
        ErrCode::from_raw(self.err_code)
    }

    /// The typed GID type, if known.
    pub fn gid_type(&self) -> Option<GidType> {
        GidType::from_raw(self.gid_type)
    }

    /// The valid part of the MAD buffer, or `None` when `umad_len` is negative
    /// or larger than the buffer.
    pub fn mad_bytes(&self) -> Option<&[u8]> {
        let len = usize::try_from(self.umad_len).ok()?;
        self.mad.get(..len)
    }

    /// Encodes the message into its 360-byte wire form (padding zeroed).
    pub fn encode(&self) -> [u8; MSG_SIZE] {
        use offset as o;
        let mut b = [0u8; MSG_SIZE];
        put(&mut b, o::MSG_TYPE, &self.msg_type.to_ne_bytes());
        put(&mut b, o::OP_CODE, &self.op_code.to_ne_bytes());
        put(&mut b, o::SGID, &self.sgid);
        put(&mut b, o::ERR_CODE, &self.err_code.to_ne_bytes());
        put(&mut b, o::UMAD_LEN, &self.umad_len.to_ne_bytes());
        let u = &self.umad;
        put(&mut b, o::AGENT_ID, &u.agent_id.to_ne_bytes());
        put(&mut b, o::STATUS, &u.status.to_ne_bytes());
        put(&mut b, o::TIMEOUT_MS, &u.timeout_ms.to_ne_bytes());
        put(&mut b, o::RETRIES, &u.retries.to_ne_bytes());
        put(&mut b, o::LENGTH, &u.length.to_ne_bytes());
        let a = &u.addr;
        put(&mut b, o::QPN, &a.qpn.to_be_bytes());
        put(&mut b, o::QKEY, &a.qkey.to_be_bytes());
        put(&mut b, o::LID, &a.lid.to_be_bytes());
        b[o::SL] = a.sl;
        b[o::PATH_BITS] = a.path_bits;
        b[o::GRH_PRESENT] = a.grh_present;
        b[o::GID_INDEX] = a.gid_index;
        b[o::HOP_LIMIT] = a.hop_limit;
        b[o::TRAFFIC_CLASS] = a.traffic_class;
        put(&mut b, o::GID, &a.gid);
        put(&mut b, o::FLOW_LABEL, &a.flow_label.to_be_bytes());
        put(&mut b, o::PKEY_INDEX, &a.pkey_index.to_ne_bytes());
        put(&mut b, o::RESERVED, &a.reserved);
        put(&mut b, o::MAD, &self.mad);
        put(&mut b, o::GID_TYPE, &self.gid_type.to_ne_bytes());
        b
    }

    /// Decodes a message; `bytes` must be exactly [`MSG_SIZE`] long. Field
    /// values are not validated here (see [`MuxMsg::mad_bytes`]).
    pub fn decode(bytes: &[u8]) -> Result<MuxMsg, DecodeError> {
        use offset as o;
        let b: &[u8; MSG_SIZE] = bytes
            .try_into()
            .map_err(|_| DecodeError::WrongSize(bytes.len()))?;
        Ok(MuxMsg {
            msg_type: u32::from_ne_bytes(take(b, o::MSG_TYPE)),
            op_code: u32::from_ne_bytes(take(b, o::OP_CODE)),
            sgid: take(b, o::SGID),
            err_code: u32::from_ne_bytes(take(b, o::ERR_CODE)),
            umad_len: i32::from_ne_bytes(take(b, o::UMAD_LEN)),
            umad: UmadHdr {
                agent_id: u32::from_ne_bytes(take(b, o::AGENT_ID)),
                status: u32::from_ne_bytes(take(b, o::STATUS)),
                timeout_ms: u32::from_ne_bytes(take(b, o::TIMEOUT_MS)),
                retries: u32::from_ne_bytes(take(b, o::RETRIES)),
                length: u32::from_ne_bytes(take(b, o::LENGTH)),
                addr: MadAddr {
                    qpn: u32::from_be_bytes(take(b, o::QPN)),
                    qkey: u32::from_be_bytes(take(b, o::QKEY)),
                    lid: u16::from_be_bytes(take(b, o::LID)),
                    sl: b[o::SL],
                    path_bits: b[o::PATH_BITS],
                    grh_present: b[o::GRH_PRESENT],
                    gid_index: b[o::GID_INDEX],
                    hop_limit: b[o::HOP_LIMIT],
                    traffic_class: b[o::TRAFFIC_CLASS],
                    gid: take(b, o::GID),
                    flow_label: u32::from_be_bytes(take(b, o::FLOW_LABEL)),
                    pkey_index: u16::from_ne_bytes(take(b, o::PKEY_INDEX)),
                    reserved: take(b, o::RESERVED),
                },
            },
            mad: take(b, o::MAD),
            gid_type: u32::from_ne_bytes(take(b, o::GID_TYPE)),
        })
    }
}

/// Copies `src` into `b` at `at`.
fn put(b: &mut [u8; MSG_SIZE], at: usize, src: &[u8]) {
    b[at..at + src.len()].copy_from_slice(src);
}

/// Reads `N` bytes of `b` at `at`.
fn take<const N: usize>(b: &[u8; MSG_SIZE], at: usize) -> [u8; N] {
    let mut out = [0u8; N];
    out.copy_from_slice(&b[at..at + N]);
    out
}

impl fmt::Display for MuxMsg {
    /// One line for logs: type, op, GID, error code, a REG's GID type, and for
    /// MADs the MAD header.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.msg_type() {
            Some(MsgType::Req) => f.write_str("REQ")?,
            Some(MsgType::Resp) => f.write_str("RESP")?,
            None => write!(f, "type?{}", self.msg_type)?,
        }
        match self.op_code() {
            Some(OpCode::Reg) => f.write_str(" REG")?,
            Some(OpCode::Unreg) => f.write_str(" UNREG")?,
            Some(OpCode::Mad) => f.write_str(" MAD")?,
            None if self.op_code == OP_CODE_MAD_RESP => f.write_str(" MAD-ACK")?,
            None => write!(f, " op?{}", self.op_code)?,
        }
        write!(f, " sgid={}", GidFmt(&self.sgid))?;
        let reg = self.msg_type() == Some(MsgType::Req) && self.op_code() == Some(OpCode::Reg);
        if reg || self.gid_type != 0 {
            match self.gid_type() {
                Some(GidType::RoceV1) => f.write_str(" RoCEv1")?,
                Some(GidType::RoceV2) => f.write_str(" RoCEv2")?,
                None => write!(f, " gid_type?{}", self.gid_type)?,
            }
        }
        if self.msg_type() == Some(MsgType::Resp) {
            match self.err_code() {
                Some(e) => write!(f, " err={e:?}")?,
                None => write!(f, " err?{}", self.err_code)?,
            }
        }
        if self.op_code() == Some(OpCode::Mad) {
            write!(f, " umad_len={}", self.umad_len)?;
            match self.mad_bytes().and_then(MadHdr::parse) {
                Some(h) => write!(f, " {h}")?,
                None => f.write_str(" (no MAD header)")?,
            }
            if self.umad.addr.gid != self.sgid {
                write!(f, " addr.gid={}", GidFmt(&self.umad.addr.gid))?;
            }
        }
        Ok(())
    }
}

impl fmt::Debug for MuxMsg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "MuxMsg({self})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> MuxMsg {
        let mut sgid = [0u8; 16];
        for (i, g) in sgid.iter_mut().enumerate() {
            *g = 0x10 + i as u8;
        }
        let mut mad = [0u8; MAD_BUF_SIZE];
        for (i, b) in mad.iter_mut().enumerate() {
            *b = i as u8;
        }
        MuxMsg {
            msg_type: 0x0102_0304,
            op_code: 0x0506_0708,
            sgid,
            err_code: 0x0a0b_0c0d,
            umad_len: 0x1122_3344,
            umad: UmadHdr {
                agent_id: 0x2122_2324,
                status: 0x3132_3334,
                timeout_ms: 0x4142_4344,
                retries: 0x5152_5354,
                length: 0x6162_6364,
                addr: MadAddr {
                    qpn: 0x7172_7374,
                    qkey: 0x8182_8384,
                    lid: 0x9192,
                    sl: 0xa1,
                    path_bits: 0xa2,
                    grh_present: 0xa3,
                    gid_index: 0xa4,
                    hop_limit: 0xa5,
                    traffic_class: 0xa6,
                    gid: [0xb0; 16],
                    flow_label: 0xc1c2_c3c4,
                    pkey_index: 0xd1d2,
                    reserved: [0xe1, 0xe2, 0xe3, 0xe4, 0xe5, 0xe6],
                },
            },
            mad,
            gid_type: 0xf1f2_f3f4,
        }
    }

    #[test]
    fn round_trip() {
        let m = sample();
        let b = m.encode();
        assert_eq!(b.len(), MSG_SIZE);
        assert_eq!(MuxMsg::decode(&b), Ok(m));
    }

    #[test]
    fn offsets_match_the_c_layout() {
        // Offsets from the reference table and offsetof() on rdmacm-mux.h's
        // structures (x86-64): see the crate README.
        let b = sample().encode();
        let ne32 = |v: u32| v.to_ne_bytes();
        assert_eq!(b[0..4], ne32(0x0102_0304));
        assert_eq!(b[4..8], ne32(0x0506_0708));
        assert_eq!(b[8], 0x10);
        assert_eq!(b[23], 0x1f);
        assert_eq!(b[24..28], ne32(0x0a0b_0c0d));
        assert_eq!(b[28..32], [0; 4], "padding after err_code");
        assert_eq!(b[32..36], 0x1122_3344i32.to_ne_bytes());
        assert_eq!(b[36..40], ne32(0x2122_2324));
        assert_eq!(b[40..44], ne32(0x3132_3334));
        assert_eq!(b[44..48], ne32(0x4142_4344));
        assert_eq!(b[48..52], ne32(0x5152_5354));
        assert_eq!(b[52..56], ne32(0x6162_6364));
        assert_eq!(b[56..60], [0x71, 0x72, 0x73, 0x74], "qpn is big-endian");
        assert_eq!(b[60..64], [0x81, 0x82, 0x83, 0x84], "qkey is big-endian");
        assert_eq!(b[64..66], [0x91, 0x92], "lid is big-endian");
        assert_eq!(b[66..72], [0xa1, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6]);
        assert_eq!(b[72..88], [0xb0; 16]);
        assert_eq!(b[88..92], [0xc1, 0xc2, 0xc3, 0xc4]);
        assert_eq!(b[92..94], 0xd1d2u16.to_ne_bytes());
        assert_eq!(b[94..100], [0xe1, 0xe2, 0xe3, 0xe4, 0xe5, 0xe6]);
        assert_eq!(b[100], 0);
        assert_eq!(b[355], 255);
        assert_eq!(b[356..360], ne32(0xf1f2_f3f4), "gid_type");
    }

    #[test]
    fn offset_constants_match_the_reference_table() {
        use offset as o;
        assert_eq!(
            [
                o::MSG_TYPE,
                o::OP_CODE,
                o::SGID,
                o::ERR_CODE,
                o::UMAD_LEN,
                o::UMAD_HDR
            ],
            [0, 4, 8, 24, 32, 36]
        );
        assert_eq!(
            [o::QPN, o::GRH_PRESENT, o::GID_INDEX, o::HOP_LIMIT, o::GID],
            [56, 68, 69, 70, 72]
        );
        assert_eq!([o::MAD, o::GID_TYPE], [100, 356]);
        assert_eq!(o::MAD - o::UMAD_HDR, UMAD_HDR_SIZE);
        assert_eq!(o::GID_TYPE - o::MAD, MAD_BUF_SIZE);
        assert_eq!(o::GID_TYPE + 4, MSG_SIZE);
    }

    #[test]
    fn gid_type_of_a_reg() {
        // QEMU patch 29's REG: RDMACM_MUX_GID_TYPE_ROCE_V2 at offset 356.
        let mut m = MuxMsg::request(OpCode::Reg, [7; 16]);
        m.gid_type = GidType::RoceV2 as u32;
        let b = m.encode();
        assert_eq!(b[356..360], 1u32.to_ne_bytes());
        let d = MuxMsg::decode(&b).unwrap();
        assert_eq!(d.gid_type(), Some(GidType::RoceV2));
        assert_eq!(d, m);
        assert!(d.to_string().ends_with(" RoCEv2"), "{d}");
        // An older QEMU's REG (zeros there): RoCE v1.
        let old = MuxMsg::decode(&MuxMsg::request(OpCode::Reg, [7; 16]).encode()).unwrap();
        assert_eq!(old.gid_type(), Some(GidType::RoceV1));
        assert!(old.to_string().ends_with(" RoCEv1"), "{old}");
        // Other messages say nothing of a zero type.
        let mad = MuxMsg::mad_request([7; 16], 1, &[1, 7]);
        assert_eq!(mad.gid_type(), Some(GidType::RoceV1));
        assert!(!mad.to_string().contains("RoCE"), "{mad}");
        let mut resp = m;
        resp.msg_type = MsgType::Resp as u32;
        resp.gid_type = 0;
        assert!(!resp.to_string().contains("RoCE"), "{resp}");
    }

    #[test]
    fn unknown_gid_types_survive_decoding() {
        // Like an unknown op code: kept raw (to log and answer), not typed.
        for raw in [2u32, 0x100, u32::MAX] {
            let mut b = MuxMsg::request(OpCode::Reg, [7; 16]).encode();
            b[356..360].copy_from_slice(&raw.to_ne_bytes());
            let m = MuxMsg::decode(&b).unwrap();
            assert_eq!(m.gid_type, raw);
            assert_eq!(m.gid_type(), None);
            assert!(m.to_string().ends_with(&format!(" gid_type?{raw}")), "{m}");
            assert_eq!(m.encode(), b);
        }
        assert_eq!(GidType::from_raw(0), Some(GidType::RoceV1));
        assert_eq!(GidType::from_raw(1), Some(GidType::RoceV2));
        assert_eq!(GidType::from_raw(2), None);
    }

    #[test]
    fn qemu_style_mad_request() {
        let gid = [0xfe, 0x80, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8];
        let m = MuxMsg::mad_request(gid, 1, &[1, 7, 2, 3]);
        let b = m.encode();
        assert_eq!(b[0..4], 0u32.to_ne_bytes());
        assert_eq!(b[4..8], 2u32.to_ne_bytes());
        assert_eq!(b[32..36], 4i32.to_ne_bytes());
        assert_eq!(b[56..60], [0, 0, 0, 1], "htobe32(1)");
        assert_eq!(b[68], 1);
        assert_eq!(b[69], 1);
        assert_eq!(b[70], 0xff);
        assert_eq!(b[72..88], gid);
        assert_eq!(b[100..104], [1, 7, 2, 3]);
    }

    #[test]
    fn rejects_wrong_sizes_and_bad_lengths() {
        assert_eq!(MuxMsg::decode(&[0; 359]), Err(DecodeError::WrongSize(359)));
        assert_eq!(MuxMsg::decode(&[0; 361]), Err(DecodeError::WrongSize(361)));
        assert_eq!(MuxMsg::decode(&[]), Err(DecodeError::WrongSize(0)));
        let mut m = MuxMsg {
            umad_len: -1,
            ..MuxMsg::default()
        };
        assert_eq!(m.mad_bytes(), None);
        m.umad_len = 257;
        assert_eq!(m.mad_bytes(), None);
        m.umad_len = 256;
        assert_eq!(m.mad_bytes().map(<[u8]>::len), Some(256));
    }

    #[test]
    fn displays_unknown_values() {
        let mut m = MuxMsg::decode(&[0xff; MSG_SIZE]).unwrap();
        let line = m.to_string();
        assert!(line.starts_with("type?4294967295 op?4294967295"), "{line}");
        m.msg_type = 1;
        m.op_code = OP_CODE_MAD_RESP;
        m.err_code = 0;
        assert!(m.to_string().starts_with("RESP MAD-ACK"), "{m}");
    }
}
