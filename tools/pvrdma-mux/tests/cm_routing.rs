// SPDX-License-Identifier: GPL-2.0-only
//! CM MAD routing through the mux between fake QEMU connections.

mod common;

use common::*;
use pvrdma_fabric::mad::cm_attr;
use pvrdma_fabric::mux_msg::ErrCode;

/// Two QEMU connections to `t`, `a` with G1 registered and `b` with G2, and the
/// library that acknowledges the registrations (to keep while they are used).
fn two_qemus(t: &TestMux) -> (impl Sized, FakeQemu, FakeQemu) {
    let library = t.library();
    let mut a = t.qemu();
    let mut b = t.qemu();
    assert_eq!(a.reg(G1), ErrCode::Ok);
    assert_eq!(b.reg(G2), ErrCode::Ok);
    (library, a, b)
}

/// REQ -> REP -> RTU -> DREQ -> DREP between `a`'s G1 and `b`'s G2 (`a` and
/// `b` may be the same connection).
fn connect_and_disconnect(t: &TestMux, same_conn: bool) {
    let (_lib, _sink) = t.library();
    let mut a = t.qemu();
    let mut b_conn = if same_conn { None } else { Some(t.qemu()) };
    assert_eq!(a.reg(G1), ErrCode::Ok);
    match b_conn.as_mut() {
        Some(b) => assert_eq!(b.reg(G2), ErrCode::Ok),
        None => assert_eq!(a.reg(G2), ErrCode::Ok),
    }

    let steps: [(bool, [u8; 256]); 5] = [
        (true, req(0x1111, &G2)),
        (false, cm_reply(cm_attr::REP, 0x2222, 0x1111)),
        (true, cm_reply(cm_attr::RTU, 0x1111, 0x2222)),
        (true, cm_reply(cm_attr::DREQ, 0x1111, 0x2222)),
        (false, cm_reply(cm_attr::DREP, 0x2222, 0x1111)),
    ];
    for (from_g1, mad) in steps {
        let (src, dest) = if from_g1 { (G1, G2) } else { (G2, G1) };
        // The sender's side, then the receiver's side.
        let sender_is_a = from_g1 || b_conn.is_none();
        if sender_is_a {
            a.send_mad(src, &mad);
        } else {
            b_conn.as_mut().unwrap().send_mad(src, &mad);
        }
        let receiver_is_a = !from_g1 || b_conn.is_none();
        if receiver_is_a {
            a.expect_delivery(src, dest, &mad);
        } else {
            b_conn.as_mut().unwrap().expect_delivery(src, dest, &mad);
        }
    }
    a.expect_nothing();
    if let Some(b) = b_conn.as_mut() {
        b.expect_nothing();
    }
}

#[test]
fn rc_handshake_on_one_connection() {
    let t = TestMux::start("cm-one");
    connect_and_disconnect(&t, true);
    assert!(
        t.wait_log("route: REQ id=0x00001111 by primary remote GID"),
        "{}",
        t.dump_log()
    );
}

#[test]
fn rc_handshake_between_two_connections() {
    let t = TestMux::start("cm-two");
    connect_and_disconnect(&t, false);
    assert!(
        t.wait_log("route: DREP local=0x00002222 remote=0x00001111 by comm ID"),
        "{}",
        t.dump_log()
    );
}

#[test]
fn sidr_between_two_connections() {
    let t = TestMux::start("sidr");
    let (_lib, mut a, mut b) = two_qemus(&t);
    let sreq = sidr_req(0xabcd, &G2);
    a.send_mad(G1, &sreq);
    b.expect_delivery(G1, G2, &sreq);
    let srep = sidr_rep(0xabcd);
    b.send_mad(G2, &srep);
    a.expect_delivery(G2, G1, &srep);
}

#[test]
fn unroutable_mads_are_answered_and_dropped() {
    let t = TestMux::start("cm-drop");
    let (_lib, _sink) = t.library();
    let mut a = t.qemu();
    assert_eq!(a.reg(G1), ErrCode::Ok);
    // To a GID nobody registered; an unknown comm ID; a non-CM class.
    a.send_mad(G1, &req(1, &G3));
    a.send_mad(G1, &cm_reply(cm_attr::REP, 2, 0x4444));
    let mut sa = cm_reply(0x12, 0, 0);
    sa[1] = 0x03;
    a.send_mad(G1, &sa);
    a.expect_nothing();
    assert!(t.wait_log("no registered GID matches"), "{}", t.dump_log());
    assert!(t.wait_log("unknown comm ID"));
    assert!(t.wait_log("management class 0x03"));
}

#[test]
fn mads_to_an_unregistered_gid_stop() {
    let t = TestMux::start("cm-unreg");
    let (_lib, mut a, mut b) = two_qemus(&t);
    a.send_mad(G1, &req(5, &G2));
    b.expect_delivery(G1, G2, &req(5, &G2));
    assert_eq!(a.unreg(G1), ErrCode::Ok);
    // G1 is gone: its comm IDs are forgotten, the REP goes nowhere.
    b.send_mad(G2, &cm_reply(cm_attr::REP, 6, 5));
    a.expect_nothing();
}

#[test]
fn many_deliveries_queue_in_order() {
    let t = TestMux::start("cm-burst");
    let (_lib, mut a, mut b) = two_qemus(&t);
    // b does not read while a sends: deliveries wait in b's outbox.
    for id in 1..=20u32 {
        a.send_mad(G1, &req(id, &G2));
    }
    for id in 1..=20u32 {
        b.expect_delivery(G1, G2, &req(id, &G2));
    }
    b.expect_nothing();
}

/// `--mad-burst N`: the first MAD routed reaches its destination N times, every
/// later one once.
#[test]
fn first_mad_delivered_as_a_burst() {
    let t = TestMux::with_burst("burst", 5, None);
    let (_lib, mut a, mut b) = two_qemus(&t);
    let first = req(0x1111, &G2);
    a.send_mad(G1, &first);
    for _ in 0..5 {
        b.expect_delivery(G1, G2, &first);
    }
    b.expect_nothing();
    let reply = cm_reply(cm_attr::REP, 0x2222, 0x1111);
    b.send_mad(G2, &reply);
    a.expect_delivery(G2, G1, &reply);
    a.expect_nothing();
    assert!(
        t.wait_log("route: burst: 4 of 4 more copies queued"),
        "{}",
        t.dump_log()
    );
}

/// `--mad-burst N --mad-burst-of RTU`: the MADs before the first RTU go once,
/// that RTU N times, the MADs after it once.
#[test]
fn first_mad_of_an_attribute_delivered_as_a_burst() {
    let t = TestMux::with_burst("burst-of", 4, Some(cm_attr::RTU));
    let (_lib, mut a, mut b) = two_qemus(&t);
    let first = req(0x1111, &G2);
    a.send_mad(G1, &first);
    b.expect_delivery(G1, G2, &first);
    b.expect_nothing();
    let reply = cm_reply(cm_attr::REP, 0x2222, 0x1111);
    b.send_mad(G2, &reply);
    a.expect_delivery(G2, G1, &reply);
    a.expect_nothing();
    let rtu = cm_reply(cm_attr::RTU, 0x1111, 0x2222);
    a.send_mad(G1, &rtu);
    for _ in 0..4 {
        b.expect_delivery(G1, G2, &rtu);
    }
    b.expect_nothing();
    a.send_mad(G1, &rtu);
    b.expect_delivery(G1, G2, &rtu);
    b.expect_nothing();
    assert!(
        t.wait_log("route: burst: 3 of 3 more copies queued"),
        "{}",
        t.dump_log()
    );
}
