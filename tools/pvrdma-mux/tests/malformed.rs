// SPDX-License-Identifier: GPL-2.0-only
//! Malformed, short and hostile input on both sockets: answered with an
//! error or the connection dropped, never a crash.

mod common;

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::time::Duration;

use common::*;
use pvrdma_fabric::mux_msg::{ErrCode, MsgType, MuxMsg, OpCode, MSG_SIZE};
use pvrdma_fabric::wire::{self, Frame, FLAG_IGNORABLE};

/// The mux still serves a fresh connection (with or without a library).
fn still_alive(t: &TestMux) {
    let mut q = t.qemu();
    match q.reg(G3) {
        ErrCode::Ok => assert_eq!(q.unreg(G3), ErrCode::Ok),
        e => assert_eq!(e, ErrCode::Enotfound),
    }
}

#[test]
fn bad_requests_get_einval() {
    let t = TestMux::start("bad-req");
    let mut q = t.qemu();

    let mut not_req = MuxMsg::request(OpCode::Reg, G1);
    not_req.msg_type = MsgType::Resp as u32;
    let r = q.request(&not_req);
    assert_eq!(
        (r.msg_type(), r.err_code()),
        (Some(MsgType::Resp), Some(ErrCode::Einval))
    );

    let mut bad_op = MuxMsg::request(OpCode::Reg, G1);
    bad_op.op_code = 7;
    let r = q.request(&bad_op);
    assert_eq!((r.op_code, r.err_code()), (7, Some(ErrCode::Einval)));

    for len in [-5, 257, i32::MAX, i32::MIN] {
        let mut m = MuxMsg::mad_request(G1, 1, &req(1, &G2));
        m.umad_len = len;
        let r = q.request(&m);
        assert_eq!(r.err_code(), Some(ErrCode::Einval), "umad_len {len}");
        assert_ne!(r.op_code, OpCode::Mad as u32);
    }
    // A REG of a GID type QEMU does not define (patch 29: 0 and 1), checked
    // before anything else (with no library, a good REG is ENOTFOUND).
    for ty in [2, u32::MAX] {
        assert_eq!(q.reg_typed(G1, ty), ErrCode::Einval, "gid_type {ty}");
    }
    assert!(t.wait_log("unknown GID type 2"), "{}", t.dump_log());
    assert_eq!(t.mux.shared().registry.gid_count(), 0);

    // A MAD too short to route is still a MAD: answered OK, dropped.
    q.send_mad(G1, &[1, 7]);
    q.send_mad(G1, &[]);
    q.expect_nothing();
    still_alive(&t);
}

#[test]
fn short_message_then_close() {
    let t = TestMux::start("short-close");
    let mut s = UnixStream::connect(&t.mad).unwrap();
    s.write_all(&[0u8; 100]).unwrap();
    drop(s);
    assert!(
        t.wait_log("short message: 100 of 360 bytes"),
        "{}",
        t.dump_log()
    );
    still_alive(&t);
}

#[test]
fn short_message_then_silence_is_dropped() {
    let t = TestMux::start("short-silence");
    let mut s = UnixStream::connect(&t.mad).unwrap();
    s.write_all(&[0u8; 10]).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut buf = [0u8; MSG_SIZE];
    // The mux gives up on the message and closes: EOF, no answer.
    assert_eq!(s.read(&mut buf).unwrap(), 0);
    assert!(t.wait_log("then silence"), "{}", t.dump_log());
    still_alive(&t);
}

#[test]
fn random_messages_never_crash_the_mux() {
    let t = TestMux::start("fuzz");
    let (_lib, _sink) = t.library();
    let mut q = t.qemu();
    assert_eq!(q.reg(G1), ErrCode::Ok);
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for i in 0..300 {
        let mut bytes = [0u8; MSG_SIZE];
        for b in bytes.iter_mut() {
            *b = next() as u8;
        }
        // Mostly well-formed MAD requests with random contents, some garbage.
        if i % 3 != 0 {
            bytes[0..4].copy_from_slice(&0u32.to_ne_bytes());
            bytes[4..8].copy_from_slice(&2u32.to_ne_bytes());
            bytes[8..24].copy_from_slice(&G1);
            bytes[32..36].copy_from_slice(&((next() % 257) as i32).to_ne_bytes());
            bytes[101] = 0x07;
        }
        q.stream.write_all(&bytes).unwrap();
        let r = q.read().expect("every request is answered");
        assert_eq!(r.msg_type(), Some(MsgType::Resp), "{r}");
        assert_ne!(r.op_code, OpCode::Mad as u32);
    }
    still_alive(&t);
}

#[test]
fn garbage_on_the_fabric_socket_is_refused() {
    let t = TestMux::start("fabric-garbage");
    // A QEMU chardev pointed at the wrong socket.
    let mut s = UnixStream::connect(&t.fabric).unwrap();
    s.write_all(&MuxMsg::request(OpCode::Reg, G1).encode())
        .unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    match wire::read_frame(&mut s).unwrap() {
        Some((_, Frame::Error(reason))) => assert!(reason.contains("bad HELLO"), "{reason}"),
        other => panic!("{other:?}"),
    }
    // A HELLO whose PID is not the peer's.
    let mut s = UnixStream::connect(&t.fabric).unwrap();
    let hello = Frame::Hello {
        version: 1,
        pid: std::process::id() + 1,
        caps: 0,
        name: "liar".into(),
    };
    wire::write_frame(&mut s, 0, &hello).unwrap();
    match wire::read_frame(&mut s).unwrap() {
        Some((_, Frame::Error(reason))) => assert!(reason.contains("SO_PEERCRED"), "{reason}"),
        other => panic!("{other:?}"),
    }
    // Not a HELLO first.
    let mut s = UnixStream::connect(&t.fabric).unwrap();
    wire::write_frame(&mut s, 0, &Frame::GidAdd(G1, None)).unwrap();
    assert!(matches!(
        wire::read_frame(&mut s).unwrap(),
        Some((_, Frame::Error(_)))
    ));
    // Closed without a word.
    drop(UnixStream::connect(&t.fabric).unwrap());
    assert!(t.wait_log("closed before HELLO"));
    still_alive(&t);
}

#[test]
fn library_protocol_violations_end_the_session() {
    let t = TestMux::start("fabric-violation");
    let mut s = UnixStream::connect(&t.fabric).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let hello = Frame::Hello {
        version: 7,
        pid: std::process::id(),
        caps: 0,
        name: "raw".into(),
    };
    wire::write_frame(&mut s, 0, &hello).unwrap();
    match wire::read_frame(&mut s).unwrap() {
        Some((0, Frame::Welcome { version, .. })) => {
            assert_eq!(version, 1, "lowest common version")
        }
        other => panic!("{other:?}"),
    }
    // An ignorable unknown frame is skipped; a stray ACK is only logged.
    let unknown = Frame::Unknown {
        kind: 0x180,
        flags: FLAG_IGNORABLE,
        payload: vec![1, 2, 3],
    };
    wire::write_frame(&mut s, 5, &unknown).unwrap();
    wire::write_frame(&mut s, 99, &Frame::Ack(wire::AckStatus::Ok)).unwrap();
    assert!(t.wait_log("ACK seq=99 has no waiter"), "{}", t.dump_log());
    // A REG from this PID's QEMU is pushed to us.
    let mut q = t.qemu();
    let reg = std::thread::spawn(move || (q.reg(G1), q));
    let (seq, frame) = wire::read_frame(&mut s).unwrap().unwrap();
    assert_eq!(frame, Frame::GidAdd(G1, None));
    wire::write_frame(&mut s, seq, &Frame::Ack(wire::AckStatus::Ok)).unwrap();
    let (err, _q) = reg.join().unwrap();
    assert_eq!(err, ErrCode::Ok);
    // A frame the mux does not accept from a library ends the session.
    wire::write_frame(&mut s, 1, &Frame::GidDel(G1)).unwrap();
    match wire::read_frame(&mut s).unwrap() {
        Some((_, Frame::Error(reason))) => assert!(reason.contains("unexpected"), "{reason}"),
        other => panic!("{other:?}"),
    }
    assert!(t.wait_libraries_closed(1));
    // Oversized frame header on a new session: closed.
    let mut s = UnixStream::connect(&t.fabric).unwrap();
    s.write_all(&[0xff, 0xff, 0xff, 0xff, 1, 0, 0, 0, 0, 0, 0, 0])
        .unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    assert!(matches!(
        wire::read_frame(&mut s),
        Ok(Some((_, Frame::Error(_)))) | Ok(None) | Err(_)
    ));
    still_alive(&t);
}
