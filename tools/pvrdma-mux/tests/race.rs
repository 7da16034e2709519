// SPDX-License-Identifier: GPL-2.0-only
//! The request/delivery race of QEMU's mad chardev (see src/race.rs).

mod common;

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use common::*;
use pvrdma_fabric::mad::MadHdr;
use pvrdma_fabric::mux_msg::{ErrCode, MsgType, MuxMsg, OpCode, MSG_SIZE};
use pvrdma_mux::sock;

#[test]
fn a_request_that_takes_an_unread_delivery_gets_it_again() {
    let t = TestMux::start("race-taken");
    let (_lib, _sink) = t.library();
    let mut a = t.qemu();
    let mut b = t.qemu();
    assert_eq!(a.reg(G1), ErrCode::Ok);
    assert_eq!(b.reg(G2), ErrCode::Ok);
    let mad = req(0x77, &G1);
    b.send_mad(G2, &mad);
    assert!(t.wait_log("(delivery)"), "{}", t.dump_log());
    // a's vCPU sends a request while the delivery is unread, and is slow to
    // read its answer (as if descheduled between write and read).
    a.send(&MuxMsg::request(OpCode::Reg, G3));
    assert!(
        t.wait_log("race: QEMU's synchronous read takes"),
        "{}",
        t.dump_log()
    );
    // The synchronous read gets the delivery, as it would in QEMU ...
    a.expect_delivery(G2, G1, &mad);
    // ... and the main loop then gets the MAD again, not a stray RESP.
    a.expect_delivery(G2, G1, &mad);
    a.expect_nothing();
    // The REG itself was carried out.
    assert_eq!(a.reg(G3), ErrCode::Eexist);
}

#[test]
fn a_delivery_read_before_the_request_is_no_race() {
    let t = TestMux::start("race-clean");
    let (_lib, _sink) = t.library();
    let mut a = t.qemu();
    let mut b = t.qemu();
    assert_eq!(a.reg(G1), ErrCode::Ok);
    assert_eq!(b.reg(G2), ErrCode::Ok);
    let mad = req(0x78, &G1);
    b.send_mad(G2, &mad);
    a.expect_delivery(G2, G1, &mad);
    thread::sleep(Duration::from_millis(50));
    assert_eq!(a.reg(G3), ErrCode::Ok);
    a.expect_nothing();
    let raced = t
        .log_lines()
        .iter()
        .any(|l| l.contains("race:") || l.contains("race?:"));
    assert!(!raced, "{}", t.dump_log());
}

#[test]
fn an_instant_cm_answer_proves_the_delivery_was_read() {
    let t = TestMux::start("race-causal");
    let (_lib, _sink) = t.library();
    let mut a = t.qemu();
    let mut b = t.qemu();
    assert_eq!(a.reg(G1), ErrCode::Ok);
    assert_eq!(b.reg(G2), ErrCode::Ok);
    for round in 0..20u32 {
        let (x, y) = (0x100 + round, 0x200 + round);
        // Each side answers the instant it has read (no processing delay).
        a.send_mad(G1, &req(x, &G2));
        b.expect_delivery_now(G1, G2, &req(x, &G2));
        let rep = cm_reply(pvrdma_fabric::mad::cm_attr::REP, y, x);
        b.send_mad(G2, &rep);
        a.expect_delivery_now(G2, G1, &rep);
        let rtu = cm_reply(pvrdma_fabric::mad::cm_attr::RTU, x, y);
        a.send_mad(G1, &rtu);
        b.expect_delivery_now(G1, G2, &rtu);
    }
    thread::sleep(Duration::from_millis(50));
    a.expect_nothing();
    b.expect_nothing();
    let raced = t
        .log_lines()
        .iter()
        .any(|l| l.contains("race:") || l.contains("race?:"));
    assert!(!raced, "{}", t.dump_log());
}

/// A QEMU model: a vCPU and a main loop that share the socket under one
/// big lock, as `rdmacm_mux_send` and `rdmacm_mux_read` do.
struct QemuModel {
    stream: UnixStream,
    bql: Mutex<()>,
}

impl QemuModel {
    /// rdmacm_mux_send: write, then take the next 360 bytes as the answer.
    fn vcpu_request(&self, msg: &MuxMsg) -> MuxMsg {
        let _bql = self.bql.lock().unwrap();
        (&self.stream).write_all(&msg.encode()).unwrap();
        let mut buf = [0u8; MSG_SIZE];
        (&self.stream)
            .read_exact(&mut buf)
            .expect("the vCPU always gets an answer");
        MuxMsg::decode(&buf).unwrap()
    }

    /// One main-loop iteration: poll without the lock, read under it.
    fn main_loop_read(&self) -> Option<MuxMsg> {
        let fd = std::os::fd::AsRawFd::as_raw_fd(&self.stream);
        let [ready] = sock::poll_readable([fd], Some(Duration::from_millis(2))).unwrap();
        if !ready {
            return None;
        }
        let _bql = self.bql.lock().unwrap();
        if sock::inq_len(&self.stream).unwrap() < MSG_SIZE {
            return None;
        }
        let mut buf = [0u8; MSG_SIZE];
        (&self.stream).read_exact(&mut buf).unwrap();
        Some(MuxMsg::decode(&buf).unwrap())
    }
}

fn comm_id(m: &MuxMsg) -> u32 {
    u32::from_be_bytes(m.mad[24..28].try_into().unwrap())
}

#[test]
fn stress_deliveries_against_a_busy_vcpu() {
    const DELIVERIES: u32 = 150;
    const REQUESTS: u32 = 300;
    let t = TestMux::start("race-stress");
    let (_lib, _sink) = t.library();
    let mut b = t.qemu();
    let qemu = {
        let mut a = t.qemu();
        assert_eq!(a.reg(G1), ErrCode::Ok);
        Arc::new(QemuModel {
            stream: a.stream.try_clone().unwrap(),
            bql: Mutex::new(()),
        })
    };
    assert_eq!(b.reg(G2), ErrCode::Ok);

    let done = Arc::new(AtomicBool::new(false));
    let main_loop = {
        let (qemu, done) = (Arc::clone(&qemu), Arc::clone(&done));
        thread::spawn(move || {
            let mut got = Vec::new();
            let mut quiet_since = Instant::now();
            loop {
                match qemu.main_loop_read() {
                    Some(m) => {
                        got.push(m);
                        quiet_since = Instant::now();
                    }
                    None if done.load(Ordering::SeqCst)
                        && quiet_since.elapsed() > Duration::from_millis(500) =>
                    {
                        return got
                    }
                    None => {}
                }
            }
        })
    };
    let vcpu = {
        let qemu = Arc::clone(&qemu);
        thread::spawn(move || {
            // Unroutable MADs (management class 0x03) as fast as possible.
            let mut sa = cm_reply(0x12, 0, 0);
            sa[1] = 0x03;
            let mut took = Vec::new();
            for _ in 0..REQUESTS {
                let answer = qemu.vcpu_request(&MuxMsg::mad_request(G1, 1, &sa));
                if answer.msg_type() != Some(MsgType::Resp) {
                    took.push(answer);
                }
                thread::sleep(Duration::from_micros(50));
            }
            took
        })
    };
    for id in 1..=DELIVERIES {
        b.send_mad(G2, &req(id, &G1));
    }
    let took = vcpu.join().unwrap();
    done.store(true, Ordering::SeqCst);
    let got = main_loop.join().unwrap();

    let log = t.log_lines();
    if let Ok(path) = std::env::var("RACE_LOG") {
        std::fs::write(path, log.join("\n")).unwrap();
    }
    let count = |needle: &str| log.iter().filter(|l| l.contains(needle)).count();
    let taken = count("race: QEMU's synchronous read takes our unread MAD delivery");
    let ambiguous = count("race?: our MAD delivery");
    let stray_cases = count("race?: our RESP");
    let mut seen = vec![0u32; DELIVERIES as usize + 1];
    let mut strays = 0;
    for m in &got {
        match (m.msg_type(), m.op_code()) {
            (Some(MsgType::Req), Some(OpCode::Mad)) => {
                assert_delivery(m, G2, G1, &req(comm_id(m), &G1));
                seen[comm_id(m) as usize] += 1;
            }
            (Some(MsgType::Resp), _) => {
                // QEMU's rdmacm_mux_read would hand a RESP saying MAD to the guest.
                assert_ne!(m.op_code, OpCode::Mad as u32, "stray RESP says MAD: {m}");
                strays += 1;
            }
            _ => panic!("unexpected {m}"),
        }
    }
    for m in &took {
        assert!(MadHdr::parse(&m.mad).is_some(), "vCPU took {m}");
    }
    let duplicates: u32 = seen.iter().map(|&n| n.saturating_sub(1)).sum();
    eprintln!(
        "stress: {} lost, {DELIVERIES} deliveries, {REQUESTS} vCPU requests: the vCPU took {} deliveries \
         as answers; the mux saw {taken} certain takes, {ambiguous} ambiguous deliveries, \
         {stray_cases} ambiguous RESPs; the main loop got {} messages ({duplicates} duplicate \
         MADs, {strays} stray RESPs)",
        (1..=DELIVERIES).filter(|&i| seen[i as usize] == 0).count(),
        took.len(),
        got.len()
    );
    // A MAD may only go missing after its redeliveries ran out, with a log line.
    let lost: Vec<u32> = (1..=DELIVERIES)
        .filter(|&i| seen[i as usize] == 0)
        .collect();
    assert!(
        lost.len() <= count("given up after"),
        "lost silently: {lost:?}"
    );
    assert!(taken <= took.len(), "a certain take did not happen");
    assert!(took.len() <= taken + ambiguous, "a take went unnoticed");
    assert!(
        duplicates as usize <= ambiguous,
        "duplicates only from ambiguous cases"
    );
    assert!(
        strays <= ambiguous + stray_cases,
        "stray RESPs only from ambiguous cases"
    );
}
