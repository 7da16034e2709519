// SPDX-License-Identifier: GPL-2.0-only
//! Test support: a mux on temporary sockets, a fake QEMU mad connection, a
//! fake verbs library (a real FabricClient with a recording sink, or a raw
//! one on the wire), and CM MAD builders.

#![allow(dead_code)]

use std::collections::HashMap;
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use pvrdma_fabric::mad::{cm_attr, cm_mad};
use pvrdma_fabric::mux_msg::{ErrCode, MsgType, MuxMsg, OpCode, MSG_SIZE};
use pvrdma_fabric::wire::{self, Frame, HEADER_SIZE, PROTOCOL_VERSION};
use pvrdma_fabric::{FabricClient, Gid, GidSink, GidType};
use pvrdma_mux::log::LogTarget;
use pvrdma_mux::{Config, Mux};

pub const G1: Gid = [
    0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x02, 0x50, 0x56, 0xff, 0xfe, 0, 0, 1,
];
pub const G2: Gid = [
    0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x02, 0x50, 0x56, 0xff, 0xfe, 0, 0, 2,
];
pub const G3: Gid = [
    0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x02, 0x50, 0x56, 0xff, 0xfe, 0, 0, 3,
];

/// A temporary directory removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("pvrdma-mux-{tag}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A mux running in this process, logging to memory.
pub struct TestMux {
    pub mux: Mux,
    pub log: Arc<Mutex<Vec<String>>>,
    pub mad: PathBuf,
    pub fabric: PathBuf,
    pub dir: TempDir,
}

impl TestMux {
    pub fn start(tag: &str) -> TestMux {
        TestMux::with_timeout(tag, Duration::from_secs(2))
    }

    pub fn with_timeout(tag: &str, ack_timeout: Duration) -> TestMux {
        TestMux::with_config(tag, ack_timeout, 1, None)
    }

    /// A mux whose first routed MAD (of CM attribute `of`, if given) is
    /// delivered `mad_burst` times.
    pub fn with_burst(tag: &str, mad_burst: usize, of: Option<u16>) -> TestMux {
        TestMux::with_config(tag, Duration::from_secs(2), mad_burst, of)
    }

    fn with_config(
        tag: &str,
        ack_timeout: Duration,
        mad_burst: usize,
        mad_burst_of: Option<u16>,
    ) -> TestMux {
        let dir = TempDir::new(tag);
        let log = Arc::new(Mutex::new(Vec::new()));
        let mad = dir.path("mad.sock");
        let fabric = dir.path("fabric.sock");
        let mux = Mux::start(Config {
            mad_socket: mad.clone(),
            fabric_socket: fabric.clone(),
            ack_timeout,
            log: LogTarget::Memory(Arc::clone(&log)),
            mad_burst,
            mad_burst_of,
        })
        .unwrap();
        TestMux {
            mux,
            log,
            mad,
            fabric,
            dir,
        }
    }

    pub fn qemu(&self) -> FakeQemu {
        FakeQemu::connect(&self.mad)
    }

    pub fn library(&self) -> (FabricClient, Arc<TestSink>) {
        let sink = Arc::new(TestSink::default());
        let client = FabricClient::connect(&self.fabric, sink.clone()).unwrap();
        (client, sink)
    }

    pub fn log_lines(&self) -> Vec<String> {
        self.log.lock().unwrap().clone()
    }

    /// Waits until a log line contains `needle`.
    pub fn wait_log(&self, needle: &str) -> bool {
        wait_until(Duration::from_secs(5), || {
            self.log.lock().unwrap().iter().any(|l| l.contains(needle))
        })
    }

    /// Waits until the mux has logged that `n` library sessions closed.
    pub fn wait_libraries_closed(&self, n: usize) -> bool {
        wait_until(Duration::from_secs(5), || {
            self.log
                .lock()
                .unwrap()
                .iter()
                .filter(|l| l.contains(" fabric#") && l.ends_with(": closed"))
                .count()
                >= n
        })
    }

    pub fn dump_log(&self) -> String {
        self.log_lines().join("\n")
    }
}

pub fn wait_until(timeout: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + timeout;
    while Instant::now() < end {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    cond()
}

/// What the fake library saw.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    Added(Gid),
    Removed(Gid),
}

/// A GidSink that records calls; can refuse or stall.
#[derive(Default)]
pub struct TestSink {
    pub events: Mutex<Vec<Event>>,
    /// The type each GID was last added with.
    pub types: Mutex<HashMap<Gid, GidType>>,
    changed: Condvar,
    pub refuse: AtomicBool,
    pub delay_ms: AtomicU64,
}

impl TestSink {
    pub fn events(&self) -> Vec<Event> {
        self.events.lock().unwrap().clone()
    }

    pub fn type_of(&self, gid: &Gid) -> Option<GidType> {
        self.types.lock().unwrap().get(gid).copied()
    }

    pub fn wait_for(&self, ev: Event) -> bool {
        let guard = self.events.lock().unwrap();
        let (guard, _) = self
            .changed
            .wait_timeout_while(guard, Duration::from_secs(5), |evs| !evs.contains(&ev))
            .unwrap();
        guard.contains(&ev)
    }

    fn record(&self, ev: Event) {
        self.events.lock().unwrap().push(ev);
        self.changed.notify_all();
    }
}

impl GidSink for TestSink {
    fn gid_added(&self, gid: Gid) -> Result<(), String> {
        self.gid_added_typed(gid, GidType::RoceV1)
    }

    fn gid_added_typed(&self, gid: Gid, ty: GidType) -> Result<(), String> {
        let delay = self.delay_ms.load(Ordering::SeqCst);
        if delay > 0 {
            std::thread::sleep(Duration::from_millis(delay));
        }
        if self.refuse.load(Ordering::SeqCst) {
            return Err("GID table full".into());
        }
        self.types.lock().unwrap().insert(gid, ty);
        self.record(Event::Added(gid));
        Ok(())
    }

    fn gid_removed(&self, gid: Gid) {
        self.record(Event::Removed(gid));
    }
}

/// The QEMU end of a mad chardev connection.
pub struct FakeQemu {
    pub stream: UnixStream,
}

impl FakeQemu {
    pub fn connect(path: &Path) -> FakeQemu {
        let stream = UnixStream::connect(path).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        FakeQemu { stream }
    }

    pub fn send(&mut self, msg: &MuxMsg) {
        self.stream.write_all(&msg.encode()).unwrap();
    }

    /// Like `rdmacm_mux_send`: write, then read the next message as the answer.
    pub fn request(&mut self, msg: &MuxMsg) -> MuxMsg {
        self.send(msg);
        self.read().expect("an answer")
    }

    /// Reads one message (5 s timeout).
    pub fn read(&mut self) -> Option<MuxMsg> {
        let mut buf = [0u8; MSG_SIZE];
        self.stream.read_exact(&mut buf).ok()?;
        Some(MuxMsg::decode(&buf).unwrap())
    }

    /// Reads one message if one arrives within `timeout`.
    pub fn read_within(&mut self, timeout: Duration) -> Option<MuxMsg> {
        self.stream.set_read_timeout(Some(timeout)).unwrap();
        let m = self.read();
        self.stream
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        m
    }

    pub fn reg(&mut self, gid: Gid) -> ErrCode {
        self.reg_typed(gid, GidType::RoceV1 as u32)
    }

    /// A REG with a raw `gid_type` (QEMU patch 29).
    pub fn reg_typed(&mut self, gid: Gid, gid_type: u32) -> ErrCode {
        let mut m = MuxMsg::request(OpCode::Reg, gid);
        m.gid_type = gid_type;
        let r = self.request(&m);
        assert_eq!(r.msg_type(), Some(MsgType::Resp), "{r}");
        assert_eq!(r.op_code(), Some(OpCode::Reg), "{r}");
        r.err_code().unwrap()
    }

    pub fn unreg(&mut self, gid: Gid) -> ErrCode {
        let r = self.request(&MuxMsg::request(OpCode::Unreg, gid));
        assert_eq!(r.msg_type(), Some(MsgType::Resp), "{r}");
        assert_eq!(r.op_code(), Some(OpCode::Unreg), "{r}");
        r.err_code().unwrap()
    }

    /// Sends a MAD from `src` as QEMU's mad_send does; checks the RESP.
    pub fn send_mad(&mut self, src: Gid, mad: &[u8]) {
        let r = self.request(&MuxMsg::mad_request(src, 1, mad));
        assert_resp_ok_for_mad(&r);
    }

    /// Reads an unsolicited delivery and checks its addressing, then waits
    /// 20 ms like a guest processing it. (Sending an unrelated request
    /// within microseconds of reading a delivery is indistinguishable from
    /// the race; see src/race.rs.)
    pub fn expect_delivery(&mut self, src: Gid, dest: Gid, mad: &[u8]) {
        self.expect_delivery_now(src, dest, mad);
        std::thread::sleep(Duration::from_millis(20));
    }

    /// Reads an unsolicited delivery and checks its addressing.
    pub fn expect_delivery_now(&mut self, src: Gid, dest: Gid, mad: &[u8]) {
        let d = self.read().expect("a delivery");
        assert_delivery(&d, src, dest, mad);
    }

    pub fn expect_nothing(&mut self) {
        if let Some(m) = self.read_within(Duration::from_millis(200)) {
            panic!("unexpected message {m}");
        }
    }
}

pub fn assert_resp_ok_for_mad(r: &MuxMsg) {
    assert_eq!(r.msg_type(), Some(MsgType::Resp), "{r}");
    assert_ne!(
        r.op_code,
        OpCode::Mad as u32,
        "a MAD RESP must not say MAD: {r}"
    );
    assert_eq!(r.err_code(), Some(ErrCode::Ok), "{r}");
    assert_eq!(r.umad_len, 0, "{r}");
}

pub fn assert_delivery(d: &MuxMsg, src: Gid, dest: Gid, mad: &[u8]) {
    assert_eq!(d.msg_type(), Some(MsgType::Req), "{d}");
    assert_eq!(d.op_code(), Some(OpCode::Mad), "{d}");
    assert_eq!(d.sgid, dest, "hdr.sgid is the destination: {d}");
    assert_eq!(d.umad.addr.gid, src, "addr.gid is the source: {d}");
    assert_eq!(d.umad.addr.qpn, 1);
    assert_eq!(d.umad.addr.grh_present, 1);
    assert_eq!(d.umad_len as usize, mad.len());
    assert_eq!(&d.mad[..mad.len()], mad);
}

/// A library spoken to on the raw wire, offering `caps`: its socket, after
/// the mux's welcome (which must grant `granted`).
pub fn raw_library(t: &TestMux, name: &str, caps: u32, granted: u32) -> UnixStream {
    let mut s = UnixStream::connect(&t.fabric).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let hello = Frame::Hello {
        version: PROTOCOL_VERSION,
        pid: std::process::id(),
        caps,
        name: name.into(),
    };
    wire::write_frame(&mut s, 0, &hello).unwrap();
    match wire::read_frame(&mut s).unwrap() {
        Some((_, Frame::Welcome { caps, .. })) => assert_eq!(caps, granted),
        other => panic!("{other:?}"),
    }
    s
}

/// Reads one frame's bytes as they came: (seq, kind, payload).
pub fn read_raw_frame(s: &mut UnixStream) -> (u32, u16, Vec<u8>) {
    let mut hdr = [0u8; HEADER_SIZE];
    s.read_exact(&mut hdr).unwrap();
    let len = u32::from_le_bytes(hdr[0..4].try_into().unwrap()) as usize;
    let mut payload = vec![0u8; len];
    s.read_exact(&mut payload).unwrap();
    let kind = u16::from_le_bytes([hdr[4], hdr[5]]);
    (
        u32::from_le_bytes(hdr[8..12].try_into().unwrap()),
        kind,
        payload,
    )
}

/// CM data offset of REQ's primary remote port GID.
pub const REQ_DGID: usize = 72;

pub fn req(local: u32, dgid: &Gid) -> [u8; 256] {
    cm_mad(
        cm_attr::REQ,
        0x1000 + local as u64,
        &[(0, &local.to_be_bytes()), (REQ_DGID, dgid)],
    )
}

pub fn cm_reply(attr: u16, local: u32, remote: u32) -> [u8; 256] {
    cm_mad(
        attr,
        0x2000,
        &[(0, &local.to_be_bytes()), (4, &remote.to_be_bytes())],
    )
}

/// SIDR_REQ as rdma_cm sends it over IPv6 (cma_hdr at private data byte 0).
pub fn sidr_req(request_id: u32, dgid: &Gid) -> [u8; 256] {
    cm_mad(
        cm_attr::SIDR_REQ,
        0x3000,
        &[
            (0, &request_id.to_be_bytes()),
            (16 + 1, &[0x60]),
            (16 + 20, dgid),
        ],
    )
}

pub fn sidr_rep(request_id: u32) -> [u8; 256] {
    cm_mad(cm_attr::SIDR_REP, 0x3000, &[(0, &request_id.to_be_bytes())])
}
