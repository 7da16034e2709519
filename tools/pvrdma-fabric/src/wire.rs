// SPDX-License-Identifier: GPL-2.0-only
//! The fabric control protocol between `pvrdma-mux` and each QEMU's verbs
//! library, spoken over the unix stream socket named by
//! [`FABRIC_SOCKET_ENV`](crate::FABRIC_SOCKET_ENV).
//!
//! Every frame is a 12-byte header followed by `len` payload bytes, all
//! integers little-endian:
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 4 | `len`: payload length, at most [`MAX_PAYLOAD`] |
//! | 4 | 2 | `kind` (see [`kind`]) |
//! | 6 | 2 | `flags` (see [`FLAG_IGNORABLE`]) |
//! | 8 | 4 | `seq`: request number; an ACK carries the `seq` of what it acknowledges |
//!
//! The session: the library sends HELLO, the mux answers WELCOME (or ERROR and
//! closes). Then the mux sends GID_ADD / GID_DEL and the library answers each
//! with an ACK carrying the same `seq` (a GID_ADD carries the GID's type too
//! when both offered [`CAP_GID_TYPE`]). Either side may send ERROR before
//! closing. When both offered [`CAP_DATA`], either side may also send DATA
//! frames ([`Packet`]s of the data path between two QEMU processes): a
//! library sends them to the mux, which relays each to the library that owns
//! its destination GID; they are not acknowledged (`seq` 0).

use std::io::{self, Read, Write};

use crate::packet::Packet;
use crate::{Gid, GidType};

/// Protocol version spoken by this crate.
pub const PROTOCOL_VERSION: u32 = 1;
/// First bytes of the HELLO and WELCOME payloads, to catch a peer that
/// connected to the wrong socket.
pub const MAGIC: [u8; 8] = *b"PVRDMAFB";
/// Size of the frame header.
pub const HEADER_SIZE: usize = 12;
/// Largest payload accepted (room for a data-path frame carrying a 4 KiB
/// message later; control frames are tiny).
pub const MAX_PAYLOAD: usize = 64 * 1024;
/// Longest name or reason text sent in a frame.
pub const MAX_TEXT: usize = 1024;
/// Header flag: a receiver that does not know this frame's kind may skip it
/// instead of closing the session.
pub const FLAG_IGNORABLE: u16 = 1;

/// Frame kinds.
pub mod kind {
    /// Library -> mux: protocol magic, version, PID, capabilities, name.
    pub const HELLO: u16 = 1;
    /// Mux -> library: magic, agreed version, agreed capabilities, name.
    pub const WELCOME: u16 = 2;
    /// Either way: a reason; the sender closes the session after it.
    pub const ERROR: u16 = 3;
    /// Mux -> library: add a GID to the device's GID table (16 bytes, then its
    /// type's byte if both agreed on [`CAP_GID_TYPE`](super::CAP_GID_TYPE)).
    pub const GID_ADD: u16 = 0x10;
    /// Mux -> library: remove a GID.
    pub const GID_DEL: u16 = 0x11;
    /// Library -> mux: the outcome of the request with the same `seq`.
    pub const ACK: u16 = 0x12;
    /// Either way: a data-path [`Packet`](crate::packet::Packet), relayed by
    /// the mux (only once both sides agreed on [`CAP_DATA`](super::CAP_DATA)).
    pub const DATA: u16 = 0x100;
    /// First kind reserved for the data path (see the README).
    pub const DATA_FIRST: u16 = 0x100;
    /// Last kind reserved for the data path.
    pub const DATA_LAST: u16 = 0x1ff;
}

/// Capability bits negotiated in HELLO/WELCOME.
pub type Caps = u32;
/// Capability: DATA frames. A library offers it when it can take packets;
/// the mux grants it when it relays them.
pub const CAP_DATA: Caps = 1;
/// Capability: GID_ADD carries the GID's [`GidType`] in a 17th payload byte.
/// A library offers it when it reads that byte; the mux grants it when it
/// sends it. A library without it (an older one refuses a GID_ADD that is
/// not 16 bytes) gets 16 bytes, and its GIDs are RoCE v1.
pub const CAP_GID_TYPE: Caps = 2;

/// Outcome carried by an ACK.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AckStatus {
    /// Done.
    Ok,
    /// Refused, with a reason (e.g. the GID table is full).
    Refused(String),
}

/// A decoded frame (without its `seq`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Frame {
    /// Library -> mux greeting.
    Hello {
        /// Highest protocol version the library speaks.
        version: u32,
        /// The library's process ID (`getpid()`), checked against SO_PEERCRED.
        pid: u32,
        /// Capabilities the library offers.
        caps: Caps,
        /// Free-form name for logs.
        name: String,
    },
    /// Mux -> library acceptance.
    Welcome {
        /// Version both will speak.
        version: u32,
        /// Capabilities both will use.
        caps: Caps,
        /// Free-form name for logs.
        name: String,
    },
    /// Fatal error; the sender closes.
    Error(String),
    /// Add a GID, with its type in a 17th byte (`Some`, only once both sides
    /// agreed on [`CAP_GID_TYPE`]) or without (`None`: RoCE v1).
    GidAdd(Gid, Option<GidType>),
    /// Remove a GID.
    GidDel(Gid),
    /// Acknowledge the request with the same `seq`.
    Ack(AckStatus),
    /// A data-path packet.
    Data(Packet),
    /// A frame of a kind this crate does not know (kept for logging/skipping).
    Unknown {
        /// Its kind.
        kind: u16,
        /// Its flags.
        flags: u16,
        /// Its payload.
        payload: Vec<u8>,
    },
}

impl Frame {
    /// The frame's kind.
    pub fn kind(&self) -> u16 {
        match self {
            Frame::Hello { .. } => kind::HELLO,
            Frame::Welcome { .. } => kind::WELCOME,
            Frame::Error(_) => kind::ERROR,
            Frame::GidAdd(..) => kind::GID_ADD,
            Frame::GidDel(_) => kind::GID_DEL,
            Frame::Ack(_) => kind::ACK,
            Frame::Data(_) => kind::DATA,
            Frame::Unknown { kind, .. } => *kind,
        }
    }

    /// Encodes header and payload into one buffer (so a frame goes out in a
    /// single write).
    pub fn encode(&self, seq: u32) -> Vec<u8> {
        let mut payload = Vec::new();
        let mut flags = 0;
        match self {
            Frame::Hello {
                version,
                pid,
                caps,
                name,
            } => {
                payload.extend_from_slice(&MAGIC);
                payload.extend_from_slice(&version.to_le_bytes());
                payload.extend_from_slice(&pid.to_le_bytes());
                payload.extend_from_slice(&caps.to_le_bytes());
                payload.extend_from_slice(clip(name));
            }
            Frame::Welcome {
                version,
                caps,
                name,
            } => {
                payload.extend_from_slice(&MAGIC);
                payload.extend_from_slice(&version.to_le_bytes());
                payload.extend_from_slice(&caps.to_le_bytes());
                payload.extend_from_slice(clip(name));
            }
            Frame::Error(reason) => payload.extend_from_slice(clip(reason)),
            Frame::GidAdd(gid, ty) => {
                payload.extend_from_slice(gid);
                payload.extend(ty.map(|t| t as u8));
            }
            Frame::GidDel(gid) => payload.extend_from_slice(gid),
            Frame::Ack(AckStatus::Ok) => payload.extend_from_slice(&0u32.to_le_bytes()),
            Frame::Ack(AckStatus::Refused(reason)) => {
                payload.extend_from_slice(&1u32.to_le_bytes());
                payload.extend_from_slice(clip(reason));
            }
            Frame::Data(p) => payload = p.encode(),
            Frame::Unknown {
                flags: f,
                payload: p,
                ..
            } => {
                flags = *f;
                payload.extend_from_slice(&p[..p.len().min(MAX_PAYLOAD)]);
            }
        }
        let len = u32::try_from(payload.len()).expect("payload is at most MAX_PAYLOAD");
        let mut out = Vec::with_capacity(HEADER_SIZE + payload.len());
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(&self.kind().to_le_bytes());
        out.extend_from_slice(&flags.to_le_bytes());
        out.extend_from_slice(&seq.to_le_bytes());
        out.extend_from_slice(&payload);
        out
    }

    /// Decodes a payload of the given kind. Unknown kinds decode to
    /// [`Frame::Unknown`]; malformed payloads of known kinds are errors.
    pub fn decode(kind: u16, flags: u16, payload: &[u8]) -> io::Result<Frame> {
        let frame = match kind {
            kind::HELLO => {
                let rest = strip_magic(payload)?;
                let (version, rest) = le32(rest)?;
                let (pid, rest) = le32(rest)?;
                let (caps, rest) = le32(rest)?;
                Frame::Hello {
                    version,
                    pid,
                    caps,
                    name: text(rest)?,
                }
            }
            kind::WELCOME => {
                let rest = strip_magic(payload)?;
                let (version, rest) = le32(rest)?;
                let (caps, rest) = le32(rest)?;
                Frame::Welcome {
                    version,
                    caps,
                    name: text(rest)?,
                }
            }
            kind::ERROR => Frame::Error(text(payload)?),
            kind::GID_ADD => match payload {
                [g @ .., t] if g.len() == 16 => Frame::GidAdd(gid(g)?, Some(gid_type(*t)?)),
                _ => Frame::GidAdd(gid(payload)?, None),
            },
            kind::GID_DEL => Frame::GidDel(gid(payload)?),
            kind::ACK => {
                let (status, rest) = le32(payload)?;
                match status {
                    0 if rest.is_empty() => Frame::Ack(AckStatus::Ok),
                    1 => Frame::Ack(AckStatus::Refused(text(rest)?)),
                    _ => return Err(invalid(format!("bad ACK status {status}"))),
                }
            }
            kind::DATA => Frame::Data(Packet::decode(payload)?),
            0 => return Err(invalid("frame kind 0 (wrong socket?)".into())),
            _ => Frame::Unknown {
                kind,
                flags,
                payload: payload.to_vec(),
            },
        };
        Ok(frame)
    }
}

/// Writes one frame with a single `write_all`.
pub fn write_frame(w: &mut impl Write, seq: u32, frame: &Frame) -> io::Result<()> {
    w.write_all(&frame.encode(seq))?;
    w.flush()
}

/// Reads one frame. Returns `Ok(None)` on a clean end of stream before a
/// header; a stream that ends inside a frame is an `UnexpectedEof` error.
pub fn read_frame(r: &mut impl Read) -> io::Result<Option<(u32, Frame)>> {
    let mut hdr = [0u8; HEADER_SIZE];
    let mut got = 0;
    while got < HEADER_SIZE {
        match r.read(&mut hdr[got..]) {
            Ok(0) if got == 0 => return Ok(None),
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    let len = u32::from_le_bytes([hdr[0], hdr[1], hdr[2], hdr[3]]) as usize;
    let kind = u16::from_le_bytes([hdr[4], hdr[5]]);
    let flags = u16::from_le_bytes([hdr[6], hdr[7]]);
    let seq = u32::from_le_bytes([hdr[8], hdr[9], hdr[10], hdr[11]]);
    if len > MAX_PAYLOAD {
        return Err(invalid(format!("frame payload of {len} bytes is too long")));
    }
    let mut payload = vec![0u8; len];
    r.read_exact(&mut payload)?;
    Ok(Some((seq, Frame::decode(kind, flags, &payload)?)))
}

/// Cuts text to [`MAX_TEXT`] bytes at a character boundary.
fn clip(s: &str) -> &[u8] {
    let mut end = s.len().min(MAX_TEXT);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s.as_bytes()[..end]
}

fn invalid(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg)
}

fn strip_magic(p: &[u8]) -> io::Result<&[u8]> {
    p.strip_prefix(&MAGIC[..])
        .ok_or_else(|| invalid("bad magic (not a pvrdma fabric peer?)".into()))
}

fn le32(p: &[u8]) -> io::Result<(u32, &[u8])> {
    match p.split_first_chunk::<4>() {
        Some((v, rest)) => Ok((u32::from_le_bytes(*v), rest)),
        None => Err(invalid("truncated frame payload".into())),
    }
}

fn text(p: &[u8]) -> io::Result<String> {
    if p.len() > MAX_TEXT {
        return Err(invalid("text too long".into()));
    }
    String::from_utf8(p.to_vec()).map_err(|_| invalid("text is not UTF-8".into()))
}

fn gid_type(raw: u8) -> io::Result<GidType> {
    GidType::from_raw(u32::from(raw)).ok_or_else(|| invalid(format!("bad GID type {raw}")))
}

fn gid(p: &[u8]) -> io::Result<Gid> {
    p.try_into()
        .map_err(|_| invalid(format!("GID payload of {} bytes", p.len())))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(frame: Frame, seq: u32) {
        let bytes = frame.encode(seq);
        let mut r = &bytes[..];
        let (s, f) = read_frame(&mut r).unwrap().unwrap();
        assert_eq!((s, f), (seq, frame));
        assert!(r.is_empty());
    }

    #[test]
    fn round_trips() {
        round_trip(
            Frame::Hello {
                version: 1,
                pid: 4242,
                caps: 0,
                name: "pvrdma-verbs".into(),
            },
            0,
        );
        round_trip(
            Frame::Welcome {
                version: 1,
                caps: 0,
                name: "pvrdma-mux".into(),
            },
            0,
        );
        round_trip(Frame::Error("nope".into()), 7);
        round_trip(Frame::GidAdd([3; 16], None), 1);
        round_trip(Frame::GidAdd([3; 16], Some(GidType::RoceV1)), 1);
        round_trip(Frame::GidAdd([3; 16], Some(GidType::RoceV2)), 1);
        round_trip(Frame::GidDel([4; 16]), 2);
        round_trip(Frame::Ack(AckStatus::Ok), 1);
        round_trip(Frame::Ack(AckStatus::Refused("table full".into())), 2);
        round_trip(
            Frame::Unknown {
                kind: 0x1ff,
                flags: FLAG_IGNORABLE,
                payload: vec![1, 2, 3],
            },
            9,
        );
        round_trip(
            Frame::Data(Packet {
                sgid: [5; 16],
                op: crate::packet::Op::Send,
                msg_len: 3,
                data: vec![1, 2, 3],
                ..Default::default()
            }),
            0,
        );
    }

    #[test]
    fn header_layout() {
        let b = Frame::GidAdd([0xaa; 16], None).encode(0x0102_0304);
        assert_eq!(b.len(), HEADER_SIZE + 16);
        assert_eq!(b[0..4], [16, 0, 0, 0]);
        assert_eq!(b[4..6], [0x10, 0]);
        assert_eq!(b[6..8], [0, 0]);
        assert_eq!(b[8..12], [4, 3, 2, 1]);
        let h = Frame::Hello {
            version: 1,
            pid: 2,
            caps: 3,
            name: "x".into(),
        }
        .encode(0);
        assert_eq!(&h[12..20], b"PVRDMAFB");
        assert_eq!(h[20..32], [1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0]);
        assert_eq!(&h[32..], b"x");
    }

    #[test]
    fn gid_add_type_byte() {
        // Without the capability: the 16 bytes a library of before takes.
        let b = Frame::GidAdd([0xaa; 16], None).encode(1);
        assert_eq!(b[0..4], [16, 0, 0, 0]);
        // With it: a 17th byte, 0 RoCE v1, 1 RoCE v2.
        for (ty, byte) in [(GidType::RoceV1, 0), (GidType::RoceV2, 1)] {
            let b = Frame::GidAdd([0xaa; 16], Some(ty)).encode(1);
            assert_eq!(b[0..4], [17, 0, 0, 0]);
            assert_eq!(b[HEADER_SIZE..HEADER_SIZE + 16], [0xaa; 16]);
            assert_eq!(b[HEADER_SIZE + 16], byte);
        }
        let mut p = [0xaa; 17];
        p[16] = 1;
        assert_eq!(
            Frame::decode(kind::GID_ADD, 0, &p).unwrap(),
            Frame::GidAdd([0xaa; 16], Some(GidType::RoceV2))
        );
        // Any other type byte, or more bytes, is malformed.
        for t in [2, 0xff] {
            p[16] = t;
            let e = Frame::decode(kind::GID_ADD, 0, &p).unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::InvalidData);
            assert!(e.to_string().contains("bad GID type"), "{e}");
        }
        assert!(Frame::decode(kind::GID_ADD, 0, &[0; 18]).is_err());
    }

    #[test]
    fn rejects_garbage() {
        // A QEMU rdmacm-mux REQ/REG (all zero header) on the wrong socket.
        assert!(read_frame(&mut &[0u8; 360][..]).is_err());
        // Oversized length.
        let mut b = Frame::GidAdd([0; 16], None).encode(0);
        b[0..4].copy_from_slice(&(MAX_PAYLOAD as u32 + 1).to_le_bytes());
        assert!(read_frame(&mut &b[..]).is_err());
        // Truncated payload / header.
        let b = Frame::GidAdd([0; 16], None).encode(0);
        assert!(read_frame(&mut &b[..20]).is_err());
        assert!(read_frame(&mut &b[..5]).is_err());
        // Bad magic, short GID, bad ACK status, bad UTF-8.
        assert!(Frame::decode(kind::HELLO, 0, b"PVRDMAFX\x01\0\0\0\0\0\0\0\0\0\0\0").is_err());
        assert!(Frame::decode(kind::GID_ADD, 0, &[0; 15]).is_err());
        assert!(Frame::decode(kind::GID_DEL, 0, &[0; 17]).is_err());
        assert!(Frame::decode(kind::ACK, 0, &[2, 0, 0, 0]).is_err());
        assert!(Frame::decode(kind::ACK, 0, &[0, 0, 0, 0, 1]).is_err());
        assert!(Frame::decode(kind::ERROR, 0, &[0xff, 0xfe]).is_err());
        // A DATA frame too short for a packet header.
        assert!(Frame::decode(kind::DATA, 0, &[0; 10]).is_err());
        // Clean EOF.
        assert!(read_frame(&mut &[][..]).unwrap().is_none());
    }

    #[test]
    fn clips_long_text() {
        let long = "é".repeat(MAX_TEXT);
        let b = Frame::Error(long).encode(0);
        let (_, f) = read_frame(&mut &b[..]).unwrap().unwrap();
        match f {
            Frame::Error(s) => assert!(s.len() <= MAX_TEXT && s.chars().all(|c| c == 'é')),
            other => panic!("{other:?}"),
        }
    }
}
