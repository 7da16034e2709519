// SPDX-License-Identifier: GPL-2.0-only
//! Test helpers that drive the exported C ABI the way QEMU's
//! `rdma_backend.c` does: through the exported `ibv_*` symbols and the
//! `context->ops` pointers the inline verbs use.

#![allow(dead_code, unused_imports)]

use pvrdma_verbs::exports::{ah::*, cq::*, device::*, pd_mr::*, qp::*, srq::*};
use pvrdma_verbs::ffi::*;
use std::ptr::null_mut;
use std::sync::atomic::{AtomicU8, Ordering};

/// A GID no other test of this binary uses, added to the GID table.
pub fn fresh_gid() -> ([u8; 16], u8) {
    static NEXT: AtomicU8 = AtomicU8::new(1);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    let pid = std::process::id().to_be_bytes();
    let gid = [
        0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x02, 0x00, pid[2], pid[3], 0xfe, 0, 0x10, n,
    ];
    let index = pvrdma_verbs::add_gid(gid).expect("GID table has room");
    (gid, index as u8)
}

/// The errno of the calling thread.
pub fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

/// Opens the device as QEMU does (list, pick the first, open, free list).
pub fn open() -> *mut ibv_context {
    // SAFETY: verbs called the C way, on objects and buffers this test owns.
    unsafe {
        let mut n = 0;
        let list = ibv_get_device_list(&mut n);
        assert!(!list.is_null());
        assert_eq!(n, 1);
        let ctx = ibv_open_device(*list);
        ibv_free_device_list(list);
        assert!(!ctx.is_null());
        ctx
    }
}

/// A registered buffer.
pub struct Buf {
    pub mem: Vec<u8>,
    pub mr: *mut ibv_mr,
}

impl Buf {
    /// Registers `len` bytes filled with `fill` (iova = host address, as
    /// QEMU registers guest RAM).
    pub fn new(pd: *mut ibv_pd, len: usize, fill: u8, access: u32) -> Buf {
        let mut mem = vec![fill; len];
        let addr = mem.as_mut_ptr();
        // SAFETY: verbs called the C way, on objects and buffers this test owns.
        let mr = unsafe { ibv_reg_mr_iova2(pd, addr.cast(), len, addr as u64, access) };
        assert!(!mr.is_null(), "reg_mr errno {}", errno());
        Buf { mem, mr }
    }

    pub fn addr(&self, off: usize) -> u64 {
        self.mem.as_ptr() as u64 + off as u64
    }

    pub fn lkey(&self) -> u32 {
        // SAFETY: verbs called the C way, on objects and buffers this test owns.
        unsafe { (*self.mr).lkey }
    }

    pub fn rkey(&self) -> u32 {
        // SAFETY: verbs called the C way, on objects and buffers this test owns.
        unsafe { (*self.mr).rkey }
    }

    pub fn sge(&self, off: usize, len: u32) -> ibv_sge {
        ibv_sge {
            addr: self.addr(off),
            length: len,
            lkey: self.lkey(),
        }
    }
}

impl Drop for Buf {
    fn drop(&mut self) {
        // SAFETY: verbs called the C way, on objects and buffers this test owns.
        unsafe { ibv_dereg_mr(self.mr) };
    }
}

pub const RW: u32 = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;

pub fn create_cq(ctx: *mut ibv_context, cqe: i32, channel: *mut ibv_comp_channel) -> *mut ibv_cq {
    // SAFETY: verbs called the C way, on objects and buffers this test owns.
    let cq = unsafe { ibv_create_cq(ctx, cqe, null_mut(), channel, 0) };
    assert!(!cq.is_null(), "create_cq errno {}", errno());
    cq
}

pub fn create_qp(
    pd: *mut ibv_pd,
    qp_type: u32,
    scq: *mut ibv_cq,
    rcq: *mut ibv_cq,
    srq: *mut ibv_srq,
) -> *mut ibv_qp {
    let mut attr = ibv_qp_init_attr {
        send_cq: scq,
        recv_cq: rcq,
        srq,
        qp_type,
        cap: ibv_qp_cap {
            max_send_wr: 16,
            max_recv_wr: 16,
            max_send_sge: 4,
            max_recv_sge: 4,
            max_inline_data: 0,
        },
        ..Default::default()
    };
    // SAFETY: verbs called the C way, on objects and buffers this test owns.
    let qp = unsafe { ibv_create_qp(pd, &mut attr) };
    assert!(!qp.is_null(), "create_qp errno {}", errno());
    qp
}

pub fn qpn(qp: *mut ibv_qp) -> u32 {
    // SAFETY: verbs called the C way, on objects and buffers this test owns.
    unsafe { (*qp).qp_num }
}

pub fn modify(qp: *mut ibv_qp, attr: &mut ibv_qp_attr, mask: u32) -> i32 {
    // SAFETY: verbs called the C way, on objects and buffers this test owns.
    unsafe { ibv_modify_qp(qp, attr, mask as i32) }
}

/// QEMU's `rdma_backend_qp_state_init`.
pub fn to_init(qp: *mut ibv_qp, qp_type: u32, qkey: u32, access: u32) {
    let mut a = ibv_qp_attr {
        qp_state: IBV_QPS_INIT,
        pkey_index: 0,
        port_num: 1,
        ..Default::default()
    };
    let mut mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
    if qp_type == IBV_QPT_RC {
        a.qp_access_flags = access;
        mask |= IBV_QP_ACCESS_FLAGS;
    } else {
        a.qkey = qkey;
        mask |= IBV_QP_QKEY;
    }
    assert_eq!(modify(qp, &mut a, mask), 0);
}

/// QEMU's `rdma_backend_qp_state_rtr`.
pub fn to_rtr(qp: *mut ibv_qp, qp_type: u32, sgid_index: u8, dgid: [u8; 16], dqpn: u32) {
    let mut a = ibv_qp_attr {
        qp_state: IBV_QPS_RTR,
        ..Default::default()
    };
    let mut mask = IBV_QP_STATE;
    if qp_type == IBV_QPT_RC {
        a.path_mtu = IBV_MTU_1024;
        a.dest_qp_num = dqpn;
        a.max_dest_rd_atomic = 1;
        a.min_rnr_timer = 12;
        a.ah_attr.port_num = 1;
        a.ah_attr.is_global = 1;
        a.ah_attr.grh.hop_limit = 1;
        a.ah_attr.grh.dgid = ibv_gid { raw: dgid };
        a.ah_attr.grh.sgid_index = sgid_index;
        a.rq_psn = 0x1234;
        mask |= IBV_QP_AV
            | IBV_QP_PATH_MTU
            | IBV_QP_DEST_QPN
            | IBV_QP_RQ_PSN
            | IBV_QP_MAX_DEST_RD_ATOMIC
            | IBV_QP_MIN_RNR_TIMER;
    }
    assert_eq!(modify(qp, &mut a, mask), 0, "RTR errno");
}

/// QEMU's `rdma_backend_qp_state_rts` with ibv_rc_pingpong's ACK timeout
/// (14: 67 ms) and retry count (7).
pub fn to_rts(qp: *mut ibv_qp, qp_type: u32) {
    to_rts_with_retries(qp, qp_type, 14, 7);
}

/// QEMU's `rdma_backend_qp_state_rts` with the given RC ACK `timeout`
/// exponent and `retry_cnt`.
pub fn to_rts_with_retries(qp: *mut ibv_qp, qp_type: u32, timeout: u8, retry_cnt: u8) {
    let mut a = ibv_qp_attr {
        qp_state: IBV_QPS_RTS,
        sq_psn: 0x4321,
        ..Default::default()
    };
    let mut mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
    if qp_type == IBV_QPT_RC {
        a.timeout = timeout;
        a.retry_cnt = retry_cnt;
        a.rnr_retry = 7;
        a.max_rd_atomic = 1;
        mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
    }
    assert_eq!(modify(qp, &mut a, mask), 0);
}

/// Brings two RC QPs to RTS, connected to each other over `gid`.
pub fn connect_rc(a: *mut ibv_qp, b: *mut ibv_qp, gid: [u8; 16], index: u8, access: u32) {
    for (q, peer) in [(a, b), (b, a)] {
        to_init(q, IBV_QPT_RC, 0, access);
        to_rtr(q, IBV_QPT_RC, index, gid, qpn(peer));
        to_rts(q, IBV_QPT_RC);
    }
}

/// Brings a UD QP to RTS with `qkey`.
pub fn ud_ready(q: *mut ibv_qp, qkey: u32) {
    to_init(q, IBV_QPT_UD, qkey, 0);
    to_rtr(q, IBV_QPT_UD, 0, [0; 16], 0);
    to_rts(q, IBV_QPT_UD);
}

/// `ibv_post_send` as the inline function does it.
pub fn post_send(qp: *mut ibv_qp, wr: &mut ibv_send_wr) -> (i32, *mut ibv_send_wr) {
    let mut bad = null_mut();
    // SAFETY: verbs called the C way, on objects and buffers this test owns.
    let rc = unsafe { ((*(*qp).context).ops.post_send.unwrap())(qp, wr, &mut bad) };
    (rc, bad)
}

/// `ibv_post_recv` as the inline function does it.
pub fn post_recv(qp: *mut ibv_qp, wr: &mut ibv_recv_wr) -> (i32, *mut ibv_recv_wr) {
    let mut bad = null_mut();
    // SAFETY: verbs called the C way, on objects and buffers this test owns.
    let rc = unsafe { ((*(*qp).context).ops.post_recv.unwrap())(qp, wr, &mut bad) };
    (rc, bad)
}

/// `ibv_post_srq_recv` as the inline function does it.
pub fn post_srq_recv(srq: *mut ibv_srq, wr: &mut ibv_recv_wr) -> (i32, *mut ibv_recv_wr) {
    let mut bad = null_mut();
    // SAFETY: verbs called the C way, on objects and buffers this test owns.
    let rc = unsafe { ((*(*srq).context).ops.post_srq_recv.unwrap())(srq, wr, &mut bad) };
    (rc, bad)
}

/// `ibv_poll_cq` as the inline function does it: all available entries.
pub fn poll(cq: *mut ibv_cq) -> Vec<ibv_wc> {
    let mut out = Vec::new();
    loop {
        let mut wc = [ibv_wc::default(); 2];
        // SAFETY: verbs called the C way, on objects and buffers this test owns.
        let n = unsafe { ((*(*cq).context).ops.poll_cq.unwrap())(cq, 2, wc.as_mut_ptr()) };
        assert!(n >= 0, "poll_cq {n} errno {}", errno());
        out.extend_from_slice(&wc[..n as usize]);
        if n < 2 {
            return out;
        }
    }
}

/// Polls `cq` until it returns something or `limit` has passed.
pub fn poll_wait(cq: *mut ibv_cq, limit: std::time::Duration) -> Vec<ibv_wc> {
    let start = std::time::Instant::now();
    loop {
        let wcs = poll(cq);
        if !wcs.is_empty() || start.elapsed() > limit {
            return wcs;
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}

/// `ibv_req_notify_cq` as the inline function does it.
pub fn req_notify(cq: *mut ibv_cq, solicited_only: bool) -> i32 {
    // SAFETY: verbs called the C way, on objects and buffers this test owns.
    unsafe { ((*(*cq).context).ops.req_notify_cq.unwrap())(cq, i32::from(solicited_only)) }
}

pub fn send_wr(wr_id: u64, sges: &mut [ibv_sge], opcode: u32, flags: u32) -> ibv_send_wr {
    ibv_send_wr {
        wr_id,
        sg_list: sges.as_mut_ptr(),
        num_sge: sges.len() as i32,
        opcode,
        send_flags: flags,
        ..Default::default()
    }
}

pub fn recv_wr(wr_id: u64, sges: &mut [ibv_sge]) -> ibv_recv_wr {
    ibv_recv_wr {
        wr_id,
        next: null_mut(),
        sg_list: sges.as_mut_ptr(),
        num_sge: sges.len() as i32,
    }
}

pub fn qp_state(qp: *mut ibv_qp) -> u32 {
    let mut a = ibv_qp_attr::default();
    let mut i = ibv_qp_init_attr::default();
    assert_eq!(
        // SAFETY: verbs called the C way, on objects and buffers this test owns.
        unsafe { ibv_query_qp(qp, &mut a, IBV_QP_STATE as i32, &mut i) },
        0
    );
    // SAFETY: verbs called the C way, on objects and buffers this test owns.
    assert_eq!(a.qp_state, unsafe { (*qp).state });
    a.qp_state
}

/// Everything one side of a test needs.
pub struct Side {
    pub ctx: *mut ibv_context,
    pub pd: *mut ibv_pd,
    pub cq: *mut ibv_cq,
}

pub fn side() -> Side {
    let ctx = open();
    // SAFETY: verbs called the C way, on objects and buffers this test owns.
    let pd = unsafe { ibv_alloc_pd(ctx) };
    assert!(!pd.is_null());
    let cq = create_cq(ctx, 64, null_mut());
    Side { ctx, pd, cq }
}

pub fn destroy_all(qps: &[*mut ibv_qp], ctx: *mut ibv_context) {
    for &q in qps {
        // SAFETY: verbs called the C way, on objects and buffers this test owns.
        assert_eq!(unsafe { ibv_destroy_qp(q) }, 0);
    }
    // SAFETY: verbs called the C way, on objects and buffers this test owns.
    assert_eq!(unsafe { ibv_close_device(ctx) }, 0);
}

/// A mux of the test's own (what QEMU's mad chardev and the device's fabric
/// connection meet), its log kept in memory, on sockets in a directory of the
/// test's that is removed after the mux stops.
pub struct TestMux {
    /// The socket QEMU's rdmacm-mux messages go to.
    pub mad: std::path::PathBuf,
    /// The socket the software devices connect to.
    pub fabric: std::path::PathBuf,
    /// What the mux logged.
    pub log: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
    // Fields drop in order: the mux stops before its directory goes.
    _mux: pvrdma_mux::Mux,
    _dir: TempDir,
}

impl TestMux {
    /// Starts a mux in `$TMPDIR/pvrdma-verbs-<tag>-<pid>`.
    pub fn start(tag: &str) -> TestMux {
        let pid = std::process::id();
        let dir = std::env::temp_dir().join(format!("pvrdma-verbs-{tag}-{pid}"));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let (mad, fabric) = (dir.join("mad.sock"), dir.join("fabric.sock"));
        let log = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let mux = pvrdma_mux::Mux::start(pvrdma_mux::Config {
            mad_socket: mad.clone(),
            fabric_socket: fabric.clone(),
            ack_timeout: std::time::Duration::from_secs(2),
            log: pvrdma_mux::log::LogTarget::Memory(std::sync::Arc::clone(&log)),
            mad_burst: 1,
            mad_burst_of: None,
        })
        .unwrap();
        TestMux {
            mad,
            fabric,
            log,
            _mux: mux,
            _dir: TempDir(dir),
        }
    }
}

/// A directory removed when dropped.
struct TempDir(std::path::PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
