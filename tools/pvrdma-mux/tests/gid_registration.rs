// SPDX-License-Identifier: GPL-2.0-only
//! REG / UNREG against a fake verbs library: ACK wait, refusal, timeout,
//! ownership, GID types, replay and cleanup.

mod common;

use std::os::unix::net::UnixStream;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use common::*;
use pvrdma_fabric::gid::GidFmt;
use pvrdma_fabric::mux_msg::ErrCode;
use pvrdma_fabric::wire::{self, kind, AckStatus, Frame, CAP_GID_TYPE};
use pvrdma_fabric::{Gid, GidType};

const ROCE_V1: u32 = GidType::RoceV1 as u32;
const ROCE_V2: u32 = GidType::RoceV2 as u32;

#[test]
fn reg_waits_for_the_library_ack() {
    let t = TestMux::start("reg-ack");
    let (_lib, sink) = t.library();
    let mut q = t.qemu();
    sink.delay_ms.store(150, Ordering::SeqCst);
    let start = Instant::now();
    assert_eq!(q.reg(G1), ErrCode::Ok);
    assert!(
        start.elapsed() >= Duration::from_millis(150),
        "RESP came before the ACK"
    );
    // The library had the GID before QEMU got its answer.
    assert_eq!(sink.events(), vec![Event::Added(G1)]);
    assert_eq!(t.mux.shared().registry.gid_count(), 1);
}

#[test]
fn reg_passes_the_gid_type_on() {
    let t = TestMux::start("reg-type");
    let (lib, sink) = t.library();
    assert_eq!(lib.caps() & CAP_GID_TYPE, CAP_GID_TYPE, "granted");
    let mut q = t.qemu();
    assert_eq!(q.reg_typed(G1, ROCE_V2), ErrCode::Ok);
    assert_eq!(q.reg_typed(G2, ROCE_V1), ErrCode::Ok);
    assert_eq!(sink.type_of(&G1), Some(GidType::RoceV2));
    assert_eq!(sink.type_of(&G2), Some(GidType::RoceV1));
    let line = format!("GID_ADD {} RoCEv2", GidFmt(&G1));
    assert!(t.wait_log(&line), "{}", t.dump_log());
}

/// Answers the GID_ADD of `gid` a raw library reads, checking its bytes:
/// `type_byte` after the GID, or nothing.
fn ack_raw_gid_add(s: &mut UnixStream, gid: Gid, type_byte: Option<u8>) {
    let (seq, k, payload) = read_raw_frame(s);
    assert_eq!(k, kind::GID_ADD);
    assert_eq!(payload[..16], gid);
    assert_eq!(payload.get(16).copied(), type_byte, "{payload:?}");
    assert_eq!(payload.len(), 16 + usize::from(type_byte.is_some()));
    wire::write_frame(s, seq, &Frame::Ack(AckStatus::Ok)).unwrap();
}

#[test]
fn an_older_library_gets_16_byte_gid_adds() {
    let t = TestMux::start("reg-type-old");
    // A library of before CAP_GID_TYPE offers no capability, and reads
    // 16-byte GID_ADDs only: its GIDs are RoCE v1, REG still succeeds.
    let mut s = raw_library(&t, "old", 0, 0);
    let mut q = t.qemu();
    let reg = std::thread::spawn(move || (q.reg_typed(G1, ROCE_V2), q));
    ack_raw_gid_add(&mut s, G1, None);
    let (err, mut q) = reg.join().unwrap();
    assert_eq!(err, ErrCode::Ok);
    assert!(
        t.wait_log("registered (as RoCE v1: the library takes no GID types)"),
        "{}",
        t.dump_log()
    );
    // Reconnecting, it gets the GID again, still in 16 bytes.
    drop(s);
    assert!(t.wait_libraries_closed(1), "{}", t.dump_log());
    let mut s = raw_library(&t, "old", 0, 0);
    ack_raw_gid_add(&mut s, G1, None);
    drop(s);
    assert!(t.wait_libraries_closed(2), "{}", t.dump_log());
    // One that offers the capability gets the 17th byte, on the re-push
    // and on a REG.
    let mut s = raw_library(&t, "new", CAP_GID_TYPE, CAP_GID_TYPE);
    ack_raw_gid_add(&mut s, G1, Some(1));
    let reg = std::thread::spawn(move || q.reg_typed(G2, ROCE_V1));
    ack_raw_gid_add(&mut s, G2, Some(0));
    assert_eq!(reg.join().unwrap(), ErrCode::Ok);
}

#[test]
fn reg_without_a_library_is_not_found() {
    let t = TestMux::start("reg-nolib");
    let mut q = t.qemu();
    assert_eq!(q.reg(G1), ErrCode::Enotfound);
    assert_eq!(t.mux.shared().registry.gid_count(), 0);
}

#[test]
fn reg_refused_by_the_library() {
    let t = TestMux::start("reg-refused");
    let (_lib, sink) = t.library();
    let mut q = t.qemu();
    sink.refuse.store(true, Ordering::SeqCst);
    assert_eq!(q.reg(G1), ErrCode::Eacces);
    assert!(
        t.wait_log("library refused: GID table full"),
        "{}",
        t.dump_log()
    );
    // Not registered: a later REG may succeed.
    sink.refuse.store(false, Ordering::SeqCst);
    assert_eq!(q.reg(G1), ErrCode::Ok);
}

#[test]
fn reg_ack_timeout_withdraws_the_gid() {
    let t = TestMux::with_timeout("reg-timeout", Duration::from_millis(200));
    let (_lib, sink) = t.library();
    let mut q = t.qemu();
    sink.delay_ms.store(600, Ordering::SeqCst);
    let start = Instant::now();
    assert_eq!(q.reg(G1), ErrCode::Eacces);
    let waited = start.elapsed();
    assert!(waited >= Duration::from_millis(200), "{waited:?}");
    assert!(
        waited < Duration::from_millis(550),
        "did not time out: {waited:?}"
    );
    // The late add is undone by the GID_DEL the mux sent after the timeout.
    assert!(sink.wait_for(Event::Added(G1)));
    assert!(sink.wait_for(Event::Removed(G1)));
    assert!(t.wait_log("ACK seq=1 has no waiter"), "{}", t.dump_log());
    assert_eq!(t.mux.shared().registry.gid_count(), 0);
}

#[test]
fn reg_twice_and_reg_of_a_gid_owned_elsewhere() {
    let t = TestMux::start("reg-owned");
    let (_lib, _sink) = t.library();
    let mut a = t.qemu();
    let mut b = t.qemu();
    assert_eq!(a.reg(G1), ErrCode::Ok);
    assert_eq!(a.reg(G1), ErrCode::Eexist);
    assert_eq!(b.reg(G1), ErrCode::Eacces);
    assert_eq!(b.unreg(G1), ErrCode::Eacces);
    assert_eq!(b.reg(G2), ErrCode::Ok);
    assert_eq!(b.reg([0; 16]), ErrCode::Einval);
}

#[test]
fn unreg_tells_the_library() {
    let t = TestMux::start("unreg");
    let (_lib, sink) = t.library();
    let mut q = t.qemu();
    assert_eq!(q.unreg(G1), ErrCode::Enotfound);
    assert_eq!(q.reg(G1), ErrCode::Ok);
    assert_eq!(q.unreg(G1), ErrCode::Ok);
    assert_eq!(sink.events(), vec![Event::Added(G1), Event::Removed(G1)]);
    assert_eq!(q.unreg(G1), ErrCode::Enotfound);
}

#[test]
fn unreg_after_the_library_left_still_releases() {
    let t = TestMux::start("unreg-nolib");
    let (lib, _sink) = t.library();
    let mut q = t.qemu();
    assert_eq!(q.reg(G1), ErrCode::Ok);
    drop(lib);
    assert!(t.wait_libraries_closed(1), "{}", t.dump_log());
    assert_eq!(q.unreg(G1), ErrCode::Ok);
    assert_eq!(t.mux.shared().registry.gid_count(), 0);
}

#[test]
fn a_reconnecting_library_gets_the_gids_replayed() {
    let t = TestMux::start("replay");
    let (lib, first_sink) = t.library();
    let mut q = t.qemu();
    assert_eq!(q.reg_typed(G1, ROCE_V2), ErrCode::Ok);
    assert_eq!(q.reg(G2), ErrCode::Ok);
    drop(lib);
    assert!(t.wait_libraries_closed(1), "{}", t.dump_log());
    let (_lib, sink) = t.library();
    assert!(sink.wait_for(Event::Added(G1)));
    assert!(sink.wait_for(Event::Added(G2)));
    assert_eq!(first_sink.events().len(), 2);
    // With the types their REGs gave.
    assert_eq!(sink.type_of(&G1), Some(GidType::RoceV2));
    assert_eq!(sink.type_of(&G2), Some(GidType::RoceV1));
}

#[test]
fn a_second_library_for_the_same_pid_is_refused() {
    let t = TestMux::start("dup-lib");
    let (_lib, _sink) = t.library();
    let err =
        pvrdma_fabric::FabricClient::connect(&t.fabric, std::sync::Arc::new(TestSink::default()))
            .err()
            .expect("refused");
    assert_eq!(err.kind(), std::io::ErrorKind::ConnectionRefused);
    assert!(err.to_string().contains("already connected"), "{err}");
}

#[test]
fn qemu_leaving_releases_its_gids() {
    let t = TestMux::start("qemu-leaves");
    let (_lib, sink) = t.library();
    let mut a = t.qemu();
    assert_eq!(a.reg(G1), ErrCode::Ok);
    drop(a);
    assert!(sink.wait_for(Event::Removed(G1)));
    let mut b = t.qemu();
    assert_eq!(b.reg(G1), ErrCode::Ok, "free again");
}

#[test]
fn qemu_may_connect_before_its_library() {
    let t = TestMux::start("qemu-first");
    let mut q = t.qemu();
    assert_eq!(q.reg(G1), ErrCode::Enotfound);
    let (_lib, sink) = t.library();
    assert_eq!(q.reg(G1), ErrCode::Ok);
    assert_eq!(sink.events(), vec![Event::Added(G1)]);
}
