// SPDX-License-Identifier: GPL-2.0-only
//! The data path through the mux: packets are relayed to the library that
//! owns their destination GID, only from a library whose process owns their
//! source GID, and only between libraries that agreed on CAP_DATA; a
//! malformed DATA frame ends the sender's session. (A library and a fake
//! QEMU of this one process stand for both ends: a packet to one of its own
//! GIDs comes back to it.)

mod common;

use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use common::*;
use pvrdma_fabric::packet::{Op, Packet};
use pvrdma_fabric::wire::{self, Frame, CAP_DATA, CAP_GID_TYPE};
use pvrdma_fabric::{FabricClient, PacketSink};

/// Records the packets relayed to it.
#[derive(Default)]
struct Packets {
    got: Mutex<Vec<Packet>>,
    changed: Condvar,
}

impl PacketSink for Packets {
    fn packet_received(&self, packet: Packet) {
        self.got.lock().unwrap().push(packet);
        self.changed.notify_all();
    }
}

impl Packets {
    fn wait_count(&self, n: usize) -> Vec<Packet> {
        let g = self.got.lock().unwrap();
        let (g, _) = self
            .changed
            .wait_timeout_while(g, Duration::from_secs(5), |v| v.len() < n)
            .unwrap();
        g.clone()
    }
}

fn data_library(t: &TestMux) -> (FabricClient, Arc<Packets>) {
    let packets = Arc::new(Packets::default());
    let client = FabricClient::connect_with_packets(
        &t.fabric,
        Arc::new(TestSink::default()),
        packets.clone(),
    )
    .unwrap();
    (client, packets)
}

fn packet(sgid: [u8; 16], dgid: [u8; 16], msg_id: u32) -> Packet {
    Packet {
        sgid,
        dgid,
        src_qpn: 0x11,
        dst_qpn: 0x12,
        msg_id,
        op: Op::Send,
        msg_len: 5,
        data: vec![1, 2, 3, 4, 5],
        ..Default::default()
    }
}

#[test]
fn relays_to_the_owner_of_the_destination_only_from_the_owner_of_the_source() {
    let t = TestMux::start("relay");
    let (client, packets) = data_library(&t);
    assert_eq!(client.caps() & CAP_DATA, CAP_DATA);
    let mut q = t.qemu();
    assert_eq!(q.reg(G1), pvrdma_fabric::mux_msg::ErrCode::Ok);
    let tx = client
        .packet_sender()
        .expect("the mux grants the data path");

    // A source GID this process does not own, and a destination nobody
    // owns: dropped, with a log line each.
    assert!(tx.send(packet(G2, G1, 1)));
    assert!(tx.send(packet(G1, G3, 2)));
    // Then a good one, in order behind them.
    assert!(tx.send(packet(G1, G1, 3)));
    let got = packets.wait_count(1);
    assert_eq!(got, vec![packet(G1, G1, 3)], "{}", t.dump_log());
    assert!(t.wait_log("is not this process's"), "{}", t.dump_log());
    assert!(t.wait_log("nobody owns"), "{}", t.dump_log());

    // Once the GID is unregistered, nothing goes to it.
    assert_eq!(q.unreg(G1), pvrdma_fabric::mux_msg::ErrCode::Ok);
    assert!(tx.send(packet(G1, G1, 4)));
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(packets.got.lock().unwrap().len(), 1);
    drop(client);
    assert!(
        t.wait_log("received, 1 relayed, 3 dropped"),
        "{}",
        t.dump_log()
    );
}

#[test]
fn a_library_without_the_data_path_gets_no_packets_and_may_send_none() {
    let t = TestMux::start("nocap");
    // A library that does not offer CAP_DATA is not granted it.
    let (client, _sink) = t.library();
    assert_eq!(client.caps(), CAP_GID_TYPE);
    assert!(client.packet_sender().is_none());
    drop(client);
    assert!(t.wait_libraries_closed(1));

    // A raw one that sends DATA anyway is disconnected.
    let mut s = raw_library(&t, "raw", 0, 0);
    wire::write_frame(&mut s, 0, &Frame::Data(packet(G1, G1, 1))).unwrap();
    assert!(matches!(
        wire::read_frame(&mut s),
        Ok(Some((_, Frame::Error(_))))
    ));
    assert!(t.wait_libraries_closed(2), "{}", t.dump_log());
}

#[test]
fn a_malformed_data_frame_ends_the_session() {
    let t = TestMux::start("baddata");
    let mut s = raw_library(&t, "raw", CAP_DATA, CAP_DATA);
    // A packet whose data runs past its message's length.
    let mut p = packet(G1, G1, 1);
    p.msg_len = 2;
    let bytes = Frame::Data(p).encode(0);
    std::io::Write::write_all(&mut s, &bytes).unwrap();
    assert!(t.wait_log("read failed"), "{}", t.dump_log());
    assert!(t.wait_libraries_closed(1), "{}", t.dump_log());
    // The mux still serves others.
    let (client, _) = data_library(&t);
    assert_eq!(client.caps(), CAP_DATA | CAP_GID_TYPE);
}

#[test]
fn a_library_that_stops_reading_costs_the_mux_a_bounded_queue() {
    use pvrdma_mux::library::MAX_QUEUED_BYTES;
    // ACK timeout 200 ms: a library that cannot take a write for 1 s is stalled.
    let t = TestMux::with_timeout("stalled", Duration::from_millis(200));
    // A raw library that offers the data path and then never reads.
    let mut s = raw_library(&t, "stalled", CAP_DATA, CAP_DATA);
    // Its QEMU registers G1: the library acknowledges the push (it reads
    // this once), then stops reading.
    let mut q = t.qemu();
    q.send(&pvrdma_fabric::mux_msg::MuxMsg::request(
        pvrdma_fabric::mux_msg::OpCode::Reg,
        G1,
    ));
    match wire::read_frame(&mut s).unwrap() {
        Some((seq, Frame::GidAdd(g, None))) if g == G1 => {
            let ack = Frame::Ack(pvrdma_fabric::wire::AckStatus::Ok);
            wire::write_frame(&mut s, seq, &ack).unwrap();
        }
        other => panic!("{other:?}"),
    }
    let r = q.read().expect("REG answered");
    assert_eq!(r.err_code(), Some(pvrdma_fabric::mux_msg::ErrCode::Ok));
    // It sends to itself: the mux queues what it cannot write to it, up to
    // MAX_QUEUED_BYTES, and drops the rest.
    let chunk = vec![7u8; pvrdma_fabric::packet::MAX_CHUNK];
    let p = Packet {
        msg_len: chunk.len() as u32,
        data: chunk,
        ..packet(G1, G1, 1)
    };
    let frame = Frame::Data(p).encode(0);
    let frames = MAX_QUEUED_BYTES / frame.len() + 200;
    let mut writer = s.try_clone().unwrap();
    let sender = std::thread::spawn(move || {
        for _ in 0..frames {
            if std::io::Write::write_all(&mut writer, &frame).is_err() {
                break;
            }
        }
    });
    assert!(
        t.wait_log("bytes queued"),
        "no drop once {MAX_QUEUED_BYTES} bytes were queued:\n{}",
        t.dump_log()
    );
    // The write that cannot finish ends the stalled session (the library's
    // last frames are cut short) instead of holding its socket for ever.
    assert!(t.wait_log("does not read; closing"), "{}", t.dump_log());
    assert!(t.wait_libraries_closed(1), "{}", t.dump_log());
    drop(s);
    sender.join().unwrap();
    // Its process's next REG is answered at once: no library.
    let mut q2 = t.qemu();
    assert_eq!(q2.reg(G3), pvrdma_fabric::mux_msg::ErrCode::Enotfound);
}
