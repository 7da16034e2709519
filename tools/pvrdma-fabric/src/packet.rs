// SPDX-License-Identifier: GPL-2.0-only
//! Data-path packets between the verbs libraries of two QEMU processes,
//! carried in DATA frames ([`crate::wire::kind::DATA`]) that the mux relays
//! by destination GID.
//!
//! A packet is one segment of a message, like a packet on an RDMA wire: a
//! message longer than [`MAX_CHUNK`] goes out as several packets with the
//! same `msg_id`, in order, each naming its `offset` in the message and the
//! whole message's length. Requests (SEND, RDMA WRITE, RDMA READ request, UD
//! SEND) go from requester to responder; answers (ACK, NAK, RNR NAK, RDMA
//! READ response) come back with the request's `msg_id`, addressed to the
//! requester's GID and QP.
//!
//! The payload of a DATA frame, all integers little-endian:
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 16 | `sgid`: the sender's GID |
//! | 16 | 16 | `dgid`: the receiver's GID (what the mux routes by) |
//! | 32 | 4 | `src_qpn` (24 bits) |
//! | 36 | 4 | `dst_qpn` (24 bits) |
//! | 40 | 4 | `msg_id`: the requester's message number |
//! | 44 | 1 | `op` ([`Op`]) |
//! | 45 | 1 | `flags` ([`flag`]) |
//! | 46 | 1 | `syndrome`: a NAK's reason ([`Syndrome`]), else 0 |
//! | 47 | 1 | `detail`: a NAK's vendor error code, else 0 |
//! | 48 | 1 | `sl` |
//! | 49 | 1 | `hop_limit` (UD) |
//! | 50 | 1 | `traffic_class` (UD) |
//! | 51 | 1 | reserved, 0 |
//! | 52 | 4 | `flow_label` (UD, 20 bits) |
//! | 56 | 4 | `imm`: immediate data, as posted (network order); with [`flag::INV`] the key to invalidate |
//! | 60 | 4 | `qkey` (UD) |
//! | 64 | 4 | `rkey` (RDMA WRITE, RDMA READ request) |
//! | 68 | 4 | reserved, 0 |
//! | 72 | 8 | `remote_addr` of this packet's first byte (RDMA WRITE, READ request) |
//! | 80 | 4 | `msg_len`: the whole message's length (READ request: bytes asked for) |
//! | 84 | 4 | `offset` of this packet's data in the message |
//! | 88 | .. | data, at most [`MAX_CHUNK`] bytes |
//!
//! [`Packet::decode`] refuses every packet whose fields do not fit
//! together, so a receiver can rely on them: a known op, QP numbers of 24
//! bits, `offset + data.len() <= msg_len <= MAX_MESSAGE`, data only where
//! the op carries data, a UD datagram in one packet of at most
//! [`MAX_UD_PAYLOAD`] bytes, reserved fields zero.

use std::io;

use crate::Gid;

/// Bytes before the data.
pub const HEADER_LEN: usize = 88;
/// Most data bytes in one packet (half the frame limit).
pub const MAX_CHUNK: usize = 32 * 1024;
/// Longest message the fabric carries (the responder reassembles a SEND or
/// RDMA WRITE message before executing it, so this bounds its buffer).
pub const MAX_MESSAGE: u32 = 64 << 20;
/// Longest UD payload (the port MTU).
pub const MAX_UD_PAYLOAD: u32 = 4096;
/// QP numbers are 24 bits.
pub const QPN_MASK: u32 = 0x00ff_ffff;

/// What a packet is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[repr(u8)]
pub enum Op {
    /// RC SEND (with [`flag::IMM`]: SEND with immediate).
    Send = 1,
    /// RC RDMA WRITE (with [`flag::IMM`]: with immediate).
    Write = 2,
    /// RC RDMA READ request: `rkey`, `remote_addr`, `msg_len`; no data.
    ReadRequest = 3,
    /// UD SEND (with [`flag::IMM`]: with immediate), one packet.
    UdSend = 4,
    /// The responder executed the message.
    #[default]
    Ack = 0x10,
    /// The responder refused the message ([`Syndrome`], `detail`).
    Nak = 0x11,
    /// No receive was posted: try again later.
    RnrNak = 0x12,
    /// Data of an RDMA READ response.
    ReadResponse = 0x13,
}

impl Op {
    fn from_u8(v: u8) -> Option<Op> {
        Some(match v {
            1 => Op::Send,
            2 => Op::Write,
            3 => Op::ReadRequest,
            4 => Op::UdSend,
            0x10 => Op::Ack,
            0x11 => Op::Nak,
            0x12 => Op::RnrNak,
            0x13 => Op::ReadResponse,
            _ => return None,
        })
    }

    /// Whether packets of this op carry message data.
    pub fn carries_data(self) -> bool {
        matches!(self, Op::Send | Op::Write | Op::UdSend | Op::ReadResponse)
    }

    /// Whether this op answers a request (travels responder -> requester).
    pub fn is_answer(self) -> bool {
        matches!(self, Op::Ack | Op::Nak | Op::RnrNak | Op::ReadResponse)
    }
}

/// Why a responder refused a message (the requester's completion status).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Syndrome {
    /// Remote access error: rkey, bounds or access rights.
    RemoteAccess = 1,
    /// Invalid request: e.g. the receive buffer is too small.
    InvalidRequest = 2,
    /// Remote operational error: the responder could not write its buffers.
    RemoteOperation = 3,
}

impl Syndrome {
    fn from_u8(v: u8) -> Option<Syndrome> {
        Some(match v {
            1 => Syndrome::RemoteAccess,
            2 => Syndrome::InvalidRequest,
            3 => Syndrome::RemoteOperation,
            _ => return None,
        })
    }
}

/// Packet flags.
pub mod flag {
    /// Carries immediate data (`imm`).
    pub const IMM: u8 = 1;
    /// The sender asked for a solicited event.
    pub const SOLICITED: u8 = 2;
    /// SEND with invalidate: `imm` holds the responder's key to invalidate
    /// (only on [`Op::Send`](super::Op::Send), never with [`IMM`]).
    pub const INV: u8 = 4;
    /// Every defined flag.
    pub const ALL: u8 = IMM | SOLICITED | INV;
}

/// One packet (see the module documentation for the fields).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Packet {
    /// Sender's GID.
    pub sgid: Gid,
    /// Receiver's GID.
    pub dgid: Gid,
    /// Sender's QP.
    pub src_qpn: u32,
    /// Receiver's QP.
    pub dst_qpn: u32,
    /// The requester's message number.
    pub msg_id: u32,
    /// What it is.
    pub op: Op,
    /// [`flag`] bits.
    pub flags: u8,
    /// A NAK's reason.
    pub syndrome: Option<Syndrome>,
    /// A NAK's vendor error code.
    pub detail: u8,
    /// Service level.
    pub sl: u8,
    /// UD: GRH hop limit.
    pub hop_limit: u8,
    /// UD: GRH traffic class.
    pub traffic_class: u8,
    /// UD: GRH flow label (20 bits).
    pub flow_label: u32,
    /// Immediate data, as posted.
    pub imm: u32,
    /// UD Q_Key.
    pub qkey: u32,
    /// RDMA key.
    pub rkey: u32,
    /// RDMA address of this packet's first byte.
    pub remote_addr: u64,
    /// The whole message's length.
    pub msg_len: u32,
    /// This packet's offset in the message.
    pub offset: u32,
    /// The data.
    pub data: Vec<u8>,
}

fn invalid(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg)
}

fn le32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

impl Packet {
    /// Whether this packet ends its message.
    pub fn is_last(&self) -> bool {
        self.offset as usize + self.data.len() == self.msg_len as usize
    }

    /// The frame payload.
    pub fn encode(&self) -> Vec<u8> {
        let mut b = Vec::with_capacity(HEADER_LEN + self.data.len());
        b.extend_from_slice(&self.sgid);
        b.extend_from_slice(&self.dgid);
        b.extend_from_slice(&self.src_qpn.to_le_bytes());
        b.extend_from_slice(&self.dst_qpn.to_le_bytes());
        b.extend_from_slice(&self.msg_id.to_le_bytes());
        b.push(self.op as u8);
        b.push(self.flags);
        b.push(self.syndrome.map_or(0, |s| s as u8));
        b.push(self.detail);
        b.push(self.sl);
        b.push(self.hop_limit);
        b.push(self.traffic_class);
        b.push(0);
        b.extend_from_slice(&self.flow_label.to_le_bytes());
        b.extend_from_slice(&self.imm.to_le_bytes());
        b.extend_from_slice(&self.qkey.to_le_bytes());
        b.extend_from_slice(&self.rkey.to_le_bytes());
        b.extend_from_slice(&0u32.to_le_bytes());
        b.extend_from_slice(&self.remote_addr.to_le_bytes());
        b.extend_from_slice(&self.msg_len.to_le_bytes());
        b.extend_from_slice(&self.offset.to_le_bytes());
        b.extend_from_slice(&self.data);
        b
    }

    /// Decodes and validates a frame payload.
    pub fn decode(b: &[u8]) -> io::Result<Packet> {
        if b.len() < HEADER_LEN {
            return Err(invalid(format!("data packet of {} bytes", b.len())));
        }
        let data = &b[HEADER_LEN..];
        if data.len() > MAX_CHUNK {
            return Err(invalid(format!("packet data of {} bytes", data.len())));
        }
        let mut sgid = [0; 16];
        sgid.copy_from_slice(&b[0..16]);
        let mut dgid = [0; 16];
        dgid.copy_from_slice(&b[16..32]);
        let op = Op::from_u8(b[44]).ok_or_else(|| invalid(format!("packet op {:#x}", b[44])))?;
        let syndrome = match (op, b[46]) {
            (Op::Nak, s) => {
                Some(Syndrome::from_u8(s).ok_or_else(|| invalid(format!("NAK syndrome {s}")))?)
            }
            (_, 0) => None,
            (_, s) => return Err(invalid(format!("syndrome {s} on a {op:?}"))),
        };
        let p = Packet {
            sgid,
            dgid,
            src_qpn: le32(b, 32),
            dst_qpn: le32(b, 36),
            msg_id: le32(b, 40),
            op,
            flags: b[45],
            syndrome,
            detail: b[47],
            sl: b[48],
            hop_limit: b[49],
            traffic_class: b[50],
            flow_label: le32(b, 52),
            imm: le32(b, 56),
            qkey: le32(b, 60),
            rkey: le32(b, 64),
            remote_addr: u64::from_le_bytes(b[72..80].try_into().expect("8 bytes")),
            msg_len: le32(b, 80),
            offset: le32(b, 84),
            data: data.to_vec(),
        };
        if b[51] != 0 || le32(b, 68) != 0 {
            return Err(invalid("reserved packet fields are not zero".into()));
        }
        p.check(op)?;
        Ok(p)
    }

    /// The cross-field rules of the module documentation.
    fn check(&self, op: Op) -> io::Result<()> {
        if self.src_qpn > QPN_MASK || self.dst_qpn > QPN_MASK {
            return Err(invalid("QP number over 24 bits".into()));
        }
        if self.flags & !flag::ALL != 0 || self.flow_label > 0xf_ffff {
            return Err(invalid(format!("flags {:#x}", self.flags)));
        }
        if self.flags & flag::INV != 0 && (op != Op::Send || self.flags & flag::IMM != 0) {
            return Err(invalid(format!(
                "invalidate on {op:?} (flags {:#x})",
                self.flags
            )));
        }
        if self.msg_len > MAX_MESSAGE {
            return Err(invalid(format!("message of {} bytes", self.msg_len)));
        }
        let end = u64::from(self.offset) + self.data.len() as u64;
        if end > u64::from(self.msg_len) {
            return Err(invalid(format!(
                "packet at {} + {} bytes past the message's {}",
                self.offset,
                self.data.len(),
                self.msg_len
            )));
        }
        if !op.carries_data() && !self.data.is_empty() {
            return Err(invalid(format!("{op:?} with data")));
        }
        // A message of data is never cut into an empty packet, except a
        // zero-length message's only one.
        if op.carries_data() && self.data.is_empty() && self.msg_len != 0 {
            return Err(invalid(format!("empty {op:?} packet")));
        }
        match op {
            Op::UdSend if self.offset != 0 || self.msg_len > MAX_UD_PAYLOAD || !self.is_last() => {
                Err(invalid("UD datagram not in one packet of the MTU".into()))
            }
            Op::ReadRequest | Op::Ack | Op::Nak | Op::RnrNak if self.offset != 0 => {
                Err(invalid(format!("{op:?} with an offset")))
            }
            _ => Ok(()),
        }
    }

    /// Cuts a message into packets: `template` gives every field but the
    /// data, `offset` and `msg_len`; `remote_addr` advances with the offset.
    pub fn segments(template: &Packet, message: &[u8]) -> Vec<Packet> {
        let msg_len = message.len() as u32;
        let mut out = Vec::with_capacity(message.len().div_ceil(MAX_CHUNK).max(1));
        let mut offset = 0usize;
        loop {
            let end = (offset + MAX_CHUNK).min(message.len());
            out.push(Packet {
                msg_len,
                offset: offset as u32,
                remote_addr: template.remote_addr.wrapping_add(offset as u64),
                data: message[offset..end].to_vec(),
                ..template.clone()
            });
            offset = end;
            if offset >= message.len() {
                return out;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Packet {
        Packet {
            sgid: [1; 16],
            dgid: [2; 16],
            src_qpn: 0x11,
            dst_qpn: 0xff_fffe,
            msg_id: 7,
            op: Op::Write,
            flags: flag::IMM,
            rkey: 0x1234,
            remote_addr: 0x7f00_0000_1000,
            imm: 0xdead_beef,
            msg_len: 10,
            offset: 4,
            data: vec![9; 6],
            ..Default::default()
        }
    }

    #[test]
    fn round_trip_and_layout() {
        let p = sample();
        let b = p.encode();
        assert_eq!(b.len(), HEADER_LEN + 6);
        assert_eq!(b[44], 2);
        assert_eq!(&b[72..80], &0x7f00_0000_1000u64.to_le_bytes());
        assert_eq!(Packet::decode(&b).unwrap(), p);
        assert!(p.is_last());
    }

    #[test]
    fn send_with_invalidate_round_trips() {
        let p = Packet {
            op: Op::Send,
            flags: flag::INV,
            imm: 0x0001_2305,
            rkey: 0,
            remote_addr: 0,
            ..sample()
        };
        let back = Packet::decode(&p.encode()).unwrap();
        assert_eq!(back, p);
        assert_eq!(back.flags & flag::INV, flag::INV);
        assert_eq!(back.imm, 0x0001_2305);
    }

    #[test]
    fn refuses_what_does_not_fit() {
        let bad = |f: &dyn Fn(&mut Packet)| {
            let mut p = sample();
            f(&mut p);
            Packet::decode(&p.encode()).unwrap_err()
        };
        bad(&|p| p.offset = 5); // past the message
        bad(&|p| p.msg_len = MAX_MESSAGE + 1);
        bad(&|p| p.src_qpn = 1 << 24);
        bad(&|p| p.flags = 0x80);
        bad(&|p| p.flags = flag::INV); // invalidate on a WRITE
        bad(&|p| {
            p.op = Op::Send;
            p.flags = flag::INV | flag::IMM; // invalidate and immediate at once
        });
        bad(&|p| p.op = Op::Ack); // an ACK with data
        bad(&|p| p.syndrome = Some(Syndrome::RemoteAccess)); // syndrome on a WRITE
        bad(&|p| {
            p.op = Op::UdSend;
            p.offset = 0;
            p.msg_len = 6;
            p.data = vec![0; 6];
            p.msg_len = 7; // a datagram cut in two
        });
        bad(&|p| p.data.clear()); // an empty packet of a 10-byte message
        let mut b = sample().encode();
        b[44] = 0x99;
        assert!(Packet::decode(&b).is_err());
        let mut b = sample().encode();
        b[51] = 1;
        assert!(Packet::decode(&b).is_err());
        assert!(Packet::decode(&b[..HEADER_LEN - 1]).is_err());
        let mut p = sample();
        p.msg_len = (MAX_CHUNK + 1) as u32;
        p.offset = 0;
        p.data = vec![0; MAX_CHUNK + 1];
        assert!(Packet::decode(&p.encode()).is_err());
        let mut nak = Packet {
            op: Op::Nak,
            syndrome: Some(Syndrome::InvalidRequest),
            ..Default::default()
        };
        assert!(Packet::decode(&nak.encode()).is_ok());
        nak.syndrome = None;
        assert!(Packet::decode(&nak.encode()).is_err());
    }

    #[test]
    fn segments_cover_the_message_in_order() {
        let msg: Vec<u8> = (0..(2 * MAX_CHUNK + 5)).map(|i| i as u8).collect();
        let t = Packet {
            op: Op::Write,
            remote_addr: 1000,
            ..Default::default()
        };
        let segs = Packet::segments(&t, &msg);
        assert_eq!(segs.len(), 3);
        let mut joined = Vec::new();
        for s in &segs {
            assert_eq!(s.offset as usize, joined.len());
            assert_eq!(s.remote_addr, 1000 + u64::from(s.offset));
            assert_eq!(s.msg_len as usize, msg.len());
            joined.extend_from_slice(&s.data);
            assert!(Packet::decode(&s.encode()).is_ok());
        }
        assert!(segs[2].is_last() && !segs[1].is_last());
        assert_eq!(joined, msg);
        let empty = Packet::segments(&t, &[]);
        assert_eq!(empty.len(), 1);
        assert!(empty[0].is_last() && Packet::decode(&empty[0].encode()).is_ok());
    }
}
