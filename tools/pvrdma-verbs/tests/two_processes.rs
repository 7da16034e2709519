// SPDX-License-Identifier: GPL-2.0-only
//! Two processes, one fabric: this test process and a child (this same test
//! binary, run as `peer`) each hold one software verbs device, joined by a
//! real pvrdma-mux, as two QEMU processes are in the lab. Each registers its
//! GID over the mux's mad socket as QEMU does; the parent then drives RC
//! SEND (with immediate, several packets long), RDMA WRITE (also a burst in
//! flight together), RDMA READ, an RNR wait, a fast registration at the
//! child invalidated by a SEND_WITH_INV, a remote access error and UD
//! between the two, checks every
//! byte on both sides, and finally kills the child: a request to it fails
//! with retry exceeded instead of hanging.
//!
//! The child takes commands on stdin and answers on stdout, one line each,
//! prefixed `peer:` (the test harness prints its own lines there too).

#![warn(clippy::undocumented_unsafe_blocks)]

mod common;

use common::*;
use pvrdma_fabric::mux_msg::{ErrCode, MsgType, MuxMsg, OpCode, MSG_SIZE};
use pvrdma_fabric::FABRIC_SOCKET_ENV;
use pvrdma_verbs::engine::fast_reg::WR_REG_MR;
use pvrdma_verbs::exports::ah::*;
use pvrdma_verbs::exports::pd_mr::pvrdma_sw_alloc_fast_reg_mr;
use pvrdma_verbs::ffi::*;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::ptr::null_mut;
use std::sync::Arc;
use std::time::{Duration, Instant};

const ROLE_ENV: &str = "PVRDMA_TEST_PEER_MAD";
const GID_A: [u8; 16] = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 192, 0, 2, 1];
const GID_B: [u8; 16] = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 192, 0, 2, 2];
/// The child's RDMA buffer: byte i is `peer_byte(i)`.
const PEER_BUF: usize = 256 * 1024;
const RECV_LEN: usize = 128 * 1024;
const QKEY: u32 = 0x1111_1111;

fn peer_byte(i: usize) -> u8 {
    (i as u8).wrapping_mul(7).wrapping_add(3)
}

fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    })
}

/// Registers `gid` for this process the way QEMU does (REG on a mad
/// connection, which must stay open: closing it releases the GID).
fn register(mad: &Path, gid: [u8; 16]) -> UnixStream {
    let mut s = UnixStream::connect(mad).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(&MuxMsg::request(OpCode::Reg, gid).encode())
        .unwrap();
    let mut buf = [0u8; MSG_SIZE];
    s.read_exact(&mut buf).unwrap();
    let r = MuxMsg::decode(&buf).unwrap();
    assert_eq!(
        (r.msg_type(), r.err_code()),
        (Some(MsgType::Resp), Some(ErrCode::Ok)),
        "{r}"
    );
    s
}

fn gid_index(ctx: *mut ibv_context, gid: [u8; 16]) -> u8 {
    for i in 0..128 {
        let mut g = ibv_gid::default();
        // SAFETY: verbs called the C way, on objects this test owns.
        if unsafe { pvrdma_verbs::exports::device::ibv_query_gid(ctx, 1, i, &mut g) } == 0
            // SAFETY: both union variants are plain bytes.
            && unsafe { g.raw } == gid
        {
            return i as u8;
        }
    }
    panic!("GID not in the table");
}

fn rc_connect(qp: *mut ibv_qp, index: u8, dgid: [u8; 16], dqpn: u32) {
    to_init(qp, IBV_QPT_RC, 0, RW);
    to_rtr(qp, IBV_QPT_RC, index, dgid, dqpn);
    to_rts(qp, IBV_QPT_RC);
}

/// The child: one device, one RC and one UD QP, commands from stdin.
#[test]
fn peer() {
    let Some(mad) = std::env::var_os(ROLE_ENV) else {
        return; // run by the parent only
    };
    let s = side();
    let _reg = register(Path::new(&mad), GID_B);
    let index = gid_index(s.ctx, GID_B);
    let mut buf = Buf::new(s.pd, PEER_BUF, 0, RW);
    for (i, b) in buf.mem.iter_mut().enumerate() {
        *b = peer_byte(i);
    }
    let recv = Buf::new(s.pd, 4 * RECV_LEN, 0, IBV_ACCESS_LOCAL_WRITE);
    let rc = create_qp(s.pd, IBV_QPT_RC, s.cq, s.cq, null_mut());
    let ud = create_qp(s.pd, IBV_QPT_UD, s.cq, s.cq, null_mut());
    ud_ready(ud, QKEY);
    let say = |line: String| {
        println!("peer: {line}");
        std::io::stdout().flush().unwrap();
    };
    say(format!(
        "ready {} {} {} {}",
        qpn(rc),
        qpn(ud),
        buf.addr(0),
        buf.rkey()
    ));
    let mut next_recv = 0usize;
    // A fast-registration MR, registered on command (`fastreg`).
    let mut fast_mem = vec![0u8; 4096];
    let mut fast_key = 0u32;
    for line in std::io::stdin().lock().lines() {
        let line = line.unwrap();
        let w: Vec<&str> = line.split_whitespace().collect();
        match w.as_slice() {
            ["connect", dqpn] => {
                rc_connect(rc, index, GID_A, dqpn.parse().unwrap());
                say("ok".into());
            }
            ["recv", kind, n] => {
                let qp = if *kind == "rc" { rc } else { ud };
                for _ in 0..n.parse::<usize>().unwrap() {
                    let slot = next_recv % 4;
                    next_recv += 1;
                    let mut sge = [recv.sge(slot * RECV_LEN, RECV_LEN as u32)];
                    let mut wr = recv_wr(slot as u64, &mut sge);
                    assert_eq!(post_recv(qp, &mut wr).0, 0);
                }
                say("ok".into());
            }
            ["poll", n] => {
                let got = poll_up_to(s.cq, n.parse().unwrap());
                for wc in &got {
                    let at = wc.wr_id as usize * RECV_LEN;
                    let sum = fnv(&recv.mem[at..at + wc.byte_len as usize]);
                    // SAFETY: imm_data is the union's only integer view.
                    let imm = unsafe { wc.__bindgen_anon_1.imm_data };
                    say(format!(
                        "wc {} {} {} {} {} {} {sum}",
                        wc.status, wc.opcode, wc.byte_len, imm, wc.wc_flags, wc.src_qp
                    ));
                }
                say(format!("polled {}", got.len()));
            }
            ["fastreg"] => {
                // SAFETY: `fast_mem` outlives the MR (the device is closed
                // with the process).
                let mr = unsafe {
                    pvrdma_sw_alloc_fast_reg_mr(s.pd, fast_mem.as_mut_ptr().cast(), 4096)
                };
                assert!(!mr.is_null());
                // SAFETY: a live MR of this process.
                fast_key = (unsafe { (*mr).rkey } & !0xff) | 0x17;
                let mut wr = send_wr(900, &mut [], WR_REG_MR, IBV_SEND_SIGNALED);
                wr.sg_list = null_mut();
                wr.__bindgen_anon_2.bind_mw.rkey = fast_key;
                wr.__bindgen_anon_2.bind_mw.bind_info = ibv_mw_bind_info {
                    mr,
                    addr: 0x5000,
                    length: 4096,
                    mw_access_flags: RW,
                };
                assert_eq!(post_send(rc, &mut wr).0, 0);
                let wc = wait_one(s.cq);
                assert_eq!((wc.wr_id, wc.status), (900, IBV_WC_SUCCESS));
                say(format!("fastreg {fast_key}"));
            }
            ["fastsum"] => say(format!("sum {}", fnv(&fast_mem[..64]))),
            ["sum", off, len] => {
                let (off, len): (usize, usize) = (off.parse().unwrap(), len.parse().unwrap());
                say(format!("sum {}", fnv(&buf.mem[off..off + len])));
            }
            ["exit"] => break,
            other => panic!("peer: unknown command {other:?}"),
        }
    }
    buf.mem[0] = 0; // keep `buf` (and its MR) alive until here
    assert!(fast_key == 0 || fast_mem.len() == 4096);
}

/// The parent's handle on the child.
struct Peer {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Peer {
    fn start(mad: &Path, fabric: &Path) -> Peer {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "peer", "--nocapture", "--test-threads=1"])
            .env(ROLE_ENV, mad)
            .env(FABRIC_SOCKET_ENV, fabric)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        Peer {
            child,
            stdin,
            stdout,
        }
    }

    /// The next `peer:` line's text.
    fn line(&mut self) -> String {
        loop {
            let mut l = String::new();
            assert!(self.stdout.read_line(&mut l).unwrap() > 0, "the peer ended");
            // The harness's "test peer ... " may precede the first line.
            if let Some(at) = l.find("peer: ") {
                return l[at + 6..].trim_end().to_string();
            }
        }
    }

    fn ask(&mut self, cmd: &str) -> String {
        writeln!(self.stdin, "{cmd}").unwrap();
        self.line()
    }

    /// Polls `n` completions at the peer: (status, opcode, byte_len, imm,
    /// wc_flags, src_qp, checksum of the received bytes).
    fn poll(&mut self, n: usize) -> Vec<[u64; 7]> {
        writeln!(self.stdin, "poll {n}").unwrap();
        let mut out = Vec::new();
        loop {
            let l = self.line();
            if l.starts_with("polled") {
                return out;
            }
            let v: Vec<u64> = l
                .split_whitespace()
                .skip(1)
                .map(|x| x.parse().unwrap())
                .collect();
            out.push(v.try_into().unwrap());
        }
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Polls until `n` completions have come or 10 s have passed; what came.
fn poll_up_to(cq: *mut ibv_cq, n: usize) -> Vec<ibv_wc> {
    let mut got = Vec::new();
    let start = Instant::now();
    while got.len() < n && start.elapsed() < Duration::from_secs(10) {
        got.extend(poll_wait(cq, Duration::from_millis(100)));
    }
    got
}

/// Polls until `n` completions have come (10 s at most).
fn wait_n(cq: *mut ibv_cq, n: usize) -> Vec<ibv_wc> {
    let got = poll_up_to(cq, n);
    assert_eq!(got.len(), n, "completions");
    got
}

fn wait_one(cq: *mut ibv_cq) -> ibv_wc {
    wait_n(cq, 1)[0]
}

#[test]
fn rc_and_ud_between_two_processes() {
    if std::env::var_os(ROLE_ENV).is_some() {
        return;
    }
    let mux = TestMux::start("2p");
    let (mad, fabric, log) = (mux.mad.clone(), mux.fabric.clone(), Arc::clone(&mux.log));
    // This process's device connects to the mux on its first open.
    std::env::set_var(FABRIC_SOCKET_ENV, &fabric);
    let s = side();
    let _reg = register(&mad, GID_A);
    let index = gid_index(s.ctx, GID_A);

    let mut peer = Peer::start(&mad, &fabric);
    let ready = peer.line();
    let v: Vec<u64> = ready
        .split_whitespace()
        .skip(1)
        .map(|x| x.parse().unwrap())
        .collect();
    let (b_rc, b_ud, b_addr, b_rkey) = (v[0] as u32, v[1] as u32, v[2], v[3] as u32);

    let rc = create_qp(s.pd, IBV_QPT_RC, s.cq, s.cq, null_mut());
    rc_connect(rc, index, GID_B, b_rc);
    assert_eq!(peer.ask(&format!("connect {}", qpn(rc))), "ok");
    let mut src = Buf::new(s.pd, RECV_LEN, 0, RW);
    for (i, b) in src.mem.iter_mut().enumerate() {
        *b = (i as u8).wrapping_mul(13).wrapping_add(1);
    }

    // SEND, then SEND with immediate, each 100,000 bytes (4 packets).
    let len = 100_000u32;
    assert_eq!(peer.ask("recv rc 2"), "ok");
    for (wr_id, opcode) in [(1u64, IBV_WR_SEND), (2, IBV_WR_SEND_WITH_IMM)] {
        let mut sge = [src.sge(0, len)];
        let mut wr = send_wr(wr_id, &mut sge, opcode, IBV_SEND_SIGNALED);
        wr.__bindgen_anon_1.imm_data = 0x0a0b_0c0d;
        assert_eq!(post_send(rc, &mut wr).0, 0);
    }
    for (wc, wr_id) in wait_n(s.cq, 2).into_iter().zip([1, 2]) {
        assert_eq!(
            (wc.wr_id, wc.status, wc.opcode, wc.byte_len),
            (wr_id, IBV_WC_SUCCESS, IBV_WC_SEND, len)
        );
    }
    let sum = fnv(&src.mem[..len as usize]);
    let got = peer.poll(2);
    assert_eq!(got.len(), 2);
    let recv = u64::from(IBV_WC_RECV);
    assert_eq!(
        got[0],
        [0, recv, u64::from(len), 0, 0, u64::from(qpn(rc)), sum]
    );
    assert_eq!(
        got[1],
        [
            0,
            recv,
            u64::from(len),
            0x0a0b_0c0d,
            u64::from(IBV_WC_WITH_IMM),
            u64::from(qpn(rc)),
            sum
        ]
    );

    // RDMA WRITE of 70,000 bytes into the peer's buffer at 1000.
    let mut sge = [src.sge(5, 70_000)];
    let mut wr = send_wr(3, &mut sge, IBV_WR_RDMA_WRITE, IBV_SEND_SIGNALED);
    wr.wr.rdma.remote_addr = b_addr + 1000;
    wr.wr.rdma.rkey = b_rkey;
    assert_eq!(post_send(rc, &mut wr).0, 0);
    let wc = wait_one(s.cq);
    assert_eq!(
        (wc.wr_id, wc.status, wc.opcode),
        (3, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE)
    );
    assert_eq!(
        peer.ask("sum 1000 70000"),
        format!("sum {}", fnv(&src.mem[5..70_005]))
    );

    // A burst: six 20,000-byte WRITEs posted at once (in flight together),
    // into 72,000..192,000; the last one signaled (completions in order).
    for k in 0..6usize {
        let mut sge = [src.sge(k * 1000, 20_000)];
        let flags = if k == 5 { IBV_SEND_SIGNALED } else { 0 };
        let mut wr = send_wr(30 + k as u64, &mut sge, IBV_WR_RDMA_WRITE, flags);
        wr.wr.rdma.remote_addr = b_addr + 72_000 + (k * 20_000) as u64;
        wr.wr.rdma.rkey = b_rkey;
        assert_eq!(post_send(rc, &mut wr).0, 0);
    }
    let wc = wait_one(s.cq);
    assert_eq!((wc.wr_id, wc.status), (35, IBV_WC_SUCCESS));
    let burst: Vec<u8> = (0..6)
        .flat_map(|k| src.mem[k * 1000..k * 1000 + 20_000].to_vec())
        .collect();
    assert_eq!(peer.ask("sum 72000 120000"), format!("sum {}", fnv(&burst)));

    // RDMA READ of 50,000 bytes from the peer's buffer at 200,000.
    let dst = Buf::new(s.pd, RECV_LEN, 0xee, RW);
    let mut sge = [dst.sge(0, 50_000)];
    let mut wr = send_wr(4, &mut sge, IBV_WR_RDMA_READ, IBV_SEND_SIGNALED);
    wr.wr.rdma.remote_addr = b_addr + 200_000;
    wr.wr.rdma.rkey = b_rkey;
    assert_eq!(post_send(rc, &mut wr).0, 0);
    let wc = wait_one(s.cq);
    assert_eq!(
        (wc.wr_id, wc.status, wc.opcode, wc.byte_len),
        (4, IBV_WC_SUCCESS, IBV_WC_RDMA_READ, 50_000)
    );
    assert!(
        (0..50_000).all(|i| dst.mem[i] == peer_byte(200_000 + i)),
        "READ data"
    );
    assert!(dst.mem[50_000..].iter().all(|&b| b == 0xee));

    // RNR: a SEND with no receive posted waits until one is.
    let mut sge = [src.sge(0, 64)];
    let mut wr = send_wr(5, &mut sge, IBV_WR_SEND, IBV_SEND_SIGNALED);
    assert_eq!(post_send(rc, &mut wr).0, 0);
    assert!(
        poll_wait(s.cq, Duration::from_millis(300)).is_empty(),
        "completed with no receive posted"
    );
    assert_eq!(peer.ask("recv rc 1"), "ok");
    let wc = wait_one(s.cq);
    assert_eq!((wc.wr_id, wc.status), (5, IBV_WC_SUCCESS));
    assert_eq!(peer.poll(1)[0][6], fnv(&src.mem[..64]));

    // UD with immediate: the receive holds a GRH then the data.
    let ud = create_qp(s.pd, IBV_QPT_UD, s.cq, s.cq, null_mut());
    ud_ready(ud, QKEY);
    let mut ah_attr = ibv_ah_attr {
        is_global: 1,
        port_num: 1,
        grh: ibv_global_route {
            dgid: ibv_gid { raw: GID_B },
            sgid_index: index,
            hop_limit: 64,
            ..Default::default()
        },
        ..Default::default()
    };
    // SAFETY: verbs called the C way, on objects this test owns.
    let ah = unsafe { ibv_create_ah(s.pd, &mut ah_attr) };
    assert!(!ah.is_null());
    assert_eq!(peer.ask("recv ud 1"), "ok");
    let mut sge = [src.sge(0, 1000)];
    let mut wr = send_wr(6, &mut sge, IBV_WR_SEND_WITH_IMM, IBV_SEND_SIGNALED);
    wr.__bindgen_anon_1.imm_data = 77;
    wr.wr.ud.ah = ah;
    wr.wr.ud.remote_qpn = b_ud;
    wr.wr.ud.remote_qkey = QKEY;
    assert_eq!(post_send(ud, &mut wr).0, 0);
    assert_eq!(wait_one(s.cq).status, IBV_WC_SUCCESS);
    let got = peer.poll(1);
    assert_eq!(got.len(), 1);
    let flags = u64::from(IBV_WC_GRH | IBV_WC_WITH_IMM);
    assert_eq!(got[0][..6], [0, recv, 1040, 77, flags, u64::from(qpn(ud))]);

    // Fast registration at the peer: a WRITE reaches its new key; then a
    // SEND_WITH_INV of that key invalidates it as the peer receives.
    let fast_key: u32 = peer.ask("fastreg")["fastreg ".len()..].parse().unwrap();
    let mut sge = [src.sge(100, 64)];
    let mut wr = send_wr(60, &mut sge, IBV_WR_RDMA_WRITE, IBV_SEND_SIGNALED);
    wr.wr.rdma.remote_addr = 0x5000;
    wr.wr.rdma.rkey = fast_key;
    assert_eq!(post_send(rc, &mut wr).0, 0);
    assert_eq!(wait_one(s.cq).status, IBV_WC_SUCCESS);
    assert_eq!(
        peer.ask("fastsum"),
        format!("sum {}", fnv(&src.mem[100..164]))
    );
    assert_eq!(peer.ask("recv rc 1"), "ok");
    let mut sge = [src.sge(0, 32)];
    let mut wr = send_wr(61, &mut sge, IBV_WR_SEND_WITH_INV, IBV_SEND_SIGNALED);
    wr.__bindgen_anon_1.invalidate_rkey = fast_key;
    assert_eq!(post_send(rc, &mut wr).0, 0);
    let wc = wait_one(s.cq);
    assert_eq!((wc.wr_id, wc.status), (61, IBV_WC_SUCCESS));
    let got = peer.poll(1);
    assert_eq!(got.len(), 1);
    let flags = u64::from(IBV_WC_WITH_INV);
    let from = u64::from(qpn(rc));
    let expect = [
        0,
        recv,
        32,
        u64::from(fast_key),
        flags,
        from,
        fnv(&src.mem[..32]),
    ];
    assert_eq!(got[0], expect, "the receive names the key it invalidated");

    // A WRITE with a key the peer does not have (any more: invalidated just
    // above): remote access error.
    let mut sge = [src.sge(0, 16)];
    let mut wr = send_wr(7, &mut sge, IBV_WR_RDMA_WRITE, IBV_SEND_SIGNALED);
    wr.wr.rdma.remote_addr = 0x5000;
    wr.wr.rdma.rkey = fast_key;
    assert_eq!(post_send(rc, &mut wr).0, 0);
    let wc = wait_one(s.cq);
    assert_eq!((wc.wr_id, wc.status), (7, IBV_WC_REM_ACCESS_ERR));
    assert_eq!(qp_state(rc), IBV_QPS_ERR);
    assert_eq!(peer.ask(&format!("sum 0 {PEER_BUF}")), {
        let mut expect: Vec<u8> = (0..PEER_BUF).map(peer_byte).collect();
        expect[1000..71_000].copy_from_slice(&src.mem[5..70_005]);
        expect[72_000..192_000].copy_from_slice(&burst);
        format!("sum {}", fnv(&expect))
    });

    // The peer dies: a request to it ends in retry exceeded, not a hang.
    let rc2 = create_qp(s.pd, IBV_QPT_RC, s.cq, s.cq, null_mut());
    rc_connect(rc2, index, GID_B, b_rc);
    drop(peer);
    let mut sge = [src.sge(0, 64)];
    let mut wr = send_wr(8, &mut sge, IBV_WR_SEND, IBV_SEND_SIGNALED);
    let started = Instant::now();
    assert_eq!(post_send(rc2, &mut wr).0, 0);
    let wc = wait_one(s.cq);
    assert_eq!((wc.wr_id, wc.status), (8, IBV_WC_RETRY_EXC_ERR));
    assert!(started.elapsed() < Duration::from_secs(5));

    // SAFETY: verbs called the C way, on objects this test owns.
    unsafe { ibv_destroy_ah(ah) };
    drop((src, dst));
    destroy_all(&[rc, rc2, ud], s.ctx);
    let log = log.lock().unwrap().join("\n");
    assert!(log.contains("relayed"), "{log}");
}
