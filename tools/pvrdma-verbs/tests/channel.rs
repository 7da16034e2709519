// SPDX-License-Identifier: GPL-2.0-only
//! Completion channels: a pollable fd, arm/ack semantics, destroy with
//! outstanding events, and QEMU's completion thread against vCPU posters.

#![warn(clippy::undocumented_unsafe_blocks)]

mod common;

use common::*;
use pvrdma_verbs::exports::cq::*;
use pvrdma_verbs::ffi::*;
use std::ptr::null_mut;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn readable(fd: i32, timeout_ms: i32) -> bool {
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: verbs called the C way, on objects and buffers this test owns.
    unsafe { libc::poll(&mut p, 1, timeout_ms) == 1 && p.revents & libc::POLLIN != 0 }
}

fn get_event(ch: *mut ibv_comp_channel) -> Result<(*mut ibv_cq, *mut libc::c_void), i32> {
    let mut cq = null_mut();
    let mut ctx = null_mut();
    // SAFETY: verbs called the C way, on objects and buffers this test owns.
    match unsafe { ibv_get_cq_event(ch, &mut cq, &mut ctx) } {
        0 => Ok((cq, ctx)),
        _ => Err(errno()),
    }
}

fn set_nonblocking(fd: i32) {
    // SAFETY: verbs called the C way, on objects and buffers this test owns.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        assert_eq!(libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK), 0);
    }
}

/// A UD loopback QP on `cq` that completes one signaled send per call.
struct Loop {
    s: Side,
    qp: *mut ibv_qp,
    ah: *mut ibv_ah,
    buf: Buf,
}

impl Loop {
    fn new(channel: bool, cqe: i32) -> (Loop, *mut ibv_comp_channel) {
        let ctx = open();
        // SAFETY: verbs called the C way, on objects and buffers this test owns.
        let pd = unsafe { pvrdma_verbs::exports::pd_mr::ibv_alloc_pd(ctx) };
        let ch = if channel {
            // SAFETY: verbs called the C way, on objects and buffers this test owns.
            unsafe { ibv_create_comp_channel(ctx) }
        } else {
            null_mut()
        };
        let cq_ctx = 0xc0ffee as *mut libc::c_void;
        // SAFETY: verbs called the C way, on objects and buffers this test owns.
        let cq = unsafe { ibv_create_cq(ctx, cqe, cq_ctx, ch, 0) };
        assert!(!cq.is_null());
        let qp = create_qp(pd, IBV_QPT_UD, cq, cq, null_mut());
        ud_ready(qp, 1);
        let (gid, index) = fresh_gid();
        let mut a = ibv_ah_attr {
            is_global: 1,
            port_num: 1,
            ..Default::default()
        };
        a.grh.dgid = ibv_gid { raw: gid };
        a.grh.sgid_index = index;
        // SAFETY: verbs called the C way, on objects and buffers this test owns.
        let ah = unsafe { pvrdma_verbs::exports::ah::ibv_create_ah(pd, &mut a) };
        let buf = Buf::new(pd, 64, 0, IBV_ACCESS_LOCAL_WRITE);
        (
            Loop {
                s: Side { ctx, pd, cq },
                qp,
                ah,
                buf,
            },
            ch,
        )
    }

    /// One signaled send (a send completion) and, if a receive is posted,
    /// a receive completion marked solicited or not.
    fn send(&self, solicited: bool) {
        let mut none: [ibv_sge; 0] = [];
        let flags = IBV_SEND_SIGNALED | if solicited { IBV_SEND_SOLICITED } else { 0 };
        let mut w = send_wr(1, &mut none, IBV_WR_SEND, flags);
        w.wr.ud.ah = self.ah;
        w.wr.ud.remote_qpn = qpn(self.qp);
        w.wr.ud.remote_qkey = 1;
        assert_eq!(post_send(self.qp, &mut w).0, 0);
    }

    fn post_recv(&self) {
        let mut rs = [self.buf.sge(0, 64)];
        let mut r = recv_wr(2, &mut rs);
        assert_eq!(post_recv(self.qp, &mut r).0, 0);
    }
}

#[test]
fn arm_fires_once_for_the_next_completion() {
    let (l, ch) = Loop::new(true, 64);
    // SAFETY: verbs called the C way, on objects and buffers this test owns.
    let fd = unsafe { (*ch).fd };
    assert!(!readable(fd, 0));
    // Not armed: no event.
    l.send(false);
    assert!(!readable(fd, 0));
    assert_eq!(poll(l.s.cq).len(), 1);
    // Armed: the next completion raises exactly one event.
    assert_eq!(req_notify(l.s.cq, false), 0);
    l.send(false);
    l.send(false);
    assert!(readable(fd, 0));
    let (cq, ctx) = get_event(ch).unwrap();
    assert_eq!((cq, ctx as usize), (l.s.cq, 0xc0ffee));
    assert!(!readable(fd, 0), "one event per arm");
    set_nonblocking(fd);
    assert_eq!(get_event(ch), Err(libc::EAGAIN));
    // QEMU's order: re-arm, poll until empty, ack.
    assert_eq!(req_notify(l.s.cq, false), 0);
    assert_eq!(poll(l.s.cq).len(), 2);
    // SAFETY: verbs called the C way, on objects and buffers this test owns.
    unsafe { ibv_ack_cq_events(l.s.cq, 1) };
    assert!(
        !readable(fd, 0),
        "completions polled before the arm do not fire"
    );
    l.send(false);
    assert!(readable(fd, 0));
    get_event(ch).unwrap();
    // SAFETY: verbs called the C way, on objects and buffers this test owns.
    unsafe { ibv_ack_cq_events(l.s.cq, 1) };
    assert_eq!(poll(l.s.cq).len(), 1);
    teardown(l, ch);
}

#[test]
fn solicited_only_fires_for_solicited_or_error_completions() {
    let (l, ch) = Loop::new(true, 64);
    // SAFETY: verbs called the C way, on objects and buffers this test owns.
    let fd = unsafe { (*ch).fd };
    assert_eq!(req_notify(l.s.cq, true), 0);
    l.post_recv();
    l.send(false); // send completion + unsolicited receive
    assert!(!readable(fd, 0));
    l.post_recv();
    l.send(true); // solicited receive
    assert!(readable(fd, 0));
    get_event(ch).unwrap();
    // SAFETY: verbs called the C way, on objects and buffers this test owns.
    unsafe { ibv_ack_cq_events(l.s.cq, 1) };
    assert_eq!(poll(l.s.cq).len(), 4);
    // An error completion (a flush) also fires a solicited arm.
    assert_eq!(req_notify(l.s.cq, true), 0);
    l.post_recv();
    let mut attr = ibv_qp_attr {
        qp_state: IBV_QPS_ERR,
        ..Default::default()
    };
    assert_eq!(modify(l.qp, &mut attr, IBV_QP_STATE), 0);
    assert!(readable(fd, 0));
    get_event(ch).unwrap();
    // SAFETY: verbs called the C way, on objects and buffers this test owns.
    unsafe { ibv_ack_cq_events(l.s.cq, 1) };
    assert_eq!(poll(l.s.cq)[0].status, IBV_WC_WR_FLUSH_ERR);
    teardown(l, ch);
}

fn teardown(l: Loop, ch: *mut ibv_comp_channel) {
    let Loop { s, qp, ah, buf } = l;
    drop(buf);
    // SAFETY: verbs called the C way, on objects and buffers this test owns.
    unsafe {
        assert_eq!(pvrdma_verbs::exports::ah::ibv_destroy_ah(ah), 0);
        assert_eq!(pvrdma_verbs::exports::qp::ibv_destroy_qp(qp), 0);
        assert_eq!(ibv_destroy_cq(s.cq), 0);
        if !ch.is_null() {
            assert_eq!(ibv_destroy_comp_channel(ch), 0);
        }
        assert_eq!(pvrdma_verbs::exports::pd_mr::ibv_dealloc_pd(s.pd), 0);
        assert_eq!(pvrdma_verbs::exports::device::ibv_close_device(s.ctx), 0);
    }
}

#[test]
fn destroy_waits_for_acks_and_drops_unread_events() {
    let (l, ch) = Loop::new(true, 64);
    // SAFETY: verbs called the C way, on objects and buffers this test owns.
    let fd = unsafe { (*ch).fd };
    // The channel is busy while the CQ uses it; the CQ while the QP does.
    // SAFETY: verbs called the C way, on objects and buffers this test owns.
    assert_eq!(unsafe { ibv_destroy_comp_channel(ch) }, libc::EBUSY);
    // SAFETY: verbs called the C way, on objects and buffers this test owns.
    assert_eq!(unsafe { ibv_destroy_cq(l.s.cq) }, libc::EBUSY);
    assert_eq!(req_notify(l.s.cq, false), 0);
    l.send(false);
    let (cq, _) = get_event(ch).unwrap();
    // A second event, never read.
    assert_eq!(req_notify(l.s.cq, false), 0);
    l.send(false);
    assert!(readable(fd, 0));
    let Loop { s, qp, ah, buf } = l;
    drop(buf);
    // SAFETY: verbs called the C way, on objects and buffers this test owns.
    unsafe {
        pvrdma_verbs::exports::ah::ibv_destroy_ah(ah);
        pvrdma_verbs::exports::qp::ibv_destroy_qp(qp);
    }
    // One event was handed out and not acked: destroy blocks until the ack.
    let done = Arc::new(AtomicBool::new(false));
    let (done2, cq_addr) = (done.clone(), cq as usize);
    let t = std::thread::spawn(move || {
        // SAFETY: verbs called the C way, on objects and buffers this test owns.
        let rc = unsafe { ibv_destroy_cq(cq_addr as *mut ibv_cq) };
        done2.store(true, Ordering::SeqCst);
        rc
    });
    std::thread::sleep(Duration::from_millis(100));
    assert!(
        !done.load(Ordering::SeqCst),
        "destroy must wait for the ack"
    );
    // The unread event was dropped from the channel.
    assert!(!readable(fd, 0));
    // SAFETY: verbs called the C way, on objects and buffers this test owns.
    unsafe { ibv_ack_cq_events(cq, 1) };
    assert_eq!(t.join().unwrap(), 0);
    assert!(done.load(Ordering::SeqCst));
    // SAFETY: verbs called the C way, on objects and buffers this test owns.
    unsafe {
        assert_eq!(ibv_destroy_comp_channel(ch), 0);
        assert_eq!(pvrdma_verbs::exports::pd_mr::ibv_dealloc_pd(s.pd), 0);
        assert_eq!(pvrdma_verbs::exports::device::ibv_close_device(s.ctx), 0);
    }
}

#[test]
fn blocking_get_cq_event_wakes_on_completion() {
    let (l, ch) = Loop::new(true, 64);
    assert_eq!(req_notify(l.s.cq, false), 0);
    let ch_addr = ch as usize;
    let t = std::thread::spawn(move || {
        get_event(ch_addr as *mut ibv_comp_channel).map(|(c, _)| c as usize)
    });
    std::thread::sleep(Duration::from_millis(50));
    l.send(false);
    assert_eq!(t.join().unwrap(), Ok(l.s.cq as usize));
    // SAFETY: verbs called the C way, on objects and buffers this test owns.
    unsafe { ibv_ack_cq_events(l.s.cq, 1) };
    poll(l.s.cq);
    teardown(l, ch);
}

#[test]
fn qemu_completion_thread_against_vcpu_posters() {
    // comp_handler_thread: O_NONBLOCK fd, ppoll, get_cq_event,
    // req_notify_cq(cq, 0), poll until empty, ack. Two "vCPU" threads post
    // sends meanwhile; every completion must be seen exactly once. (The CQ
    // holds them all: the posters do not wait for completions.)
    const PER_THREAD: usize = 300;
    let (l, ch) = Loop::new(true, 2 * PER_THREAD as i32);
    // SAFETY: verbs called the C way, on objects and buffers this test owns.
    let fd = unsafe { (*ch).fd };
    set_nonblocking(fd);
    assert_eq!(req_notify(l.s.cq, false), 0); // rdma_backend_create_cq arms
    let stop = Arc::new(AtomicBool::new(false));
    let (stop2, cq_addr, ch_addr) = (stop.clone(), l.s.cq as usize, ch as usize);
    let comp = std::thread::spawn(move || {
        let (cq, ch) = (cq_addr as *mut ibv_cq, ch_addr as *mut ibv_comp_channel);
        let mut seen = 0;
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if !readable(fd, 20) {
                if stop2.load(Ordering::SeqCst) {
                    break;
                }
                continue;
            }
            let Ok((ev_cq, _)) = get_event(ch) else {
                continue;
            };
            assert_eq!(ev_cq, cq);
            assert_eq!(req_notify(cq, false), 0);
            seen += poll(cq).len();
            // SAFETY: verbs called the C way, on objects and buffers this test owns.
            unsafe { ibv_ack_cq_events(cq, 1) };
        }
        seen
    });
    let (qp, ah) = (l.qp as usize, l.ah as usize);
    let posters: Vec<_> = (0..2)
        .map(|_| {
            std::thread::spawn(move || {
                for _ in 0..PER_THREAD {
                    let mut none: [ibv_sge; 0] = [];
                    let mut w = send_wr(1, &mut none, IBV_WR_SEND, IBV_SEND_SIGNALED);
                    w.wr.ud.ah = ah as *mut ibv_ah;
                    w.wr.ud.remote_qpn = 0xabcdef;
                    w.wr.ud.remote_qkey = 1;
                    loop {
                        match post_send(qp as *mut ibv_qp, &mut w).0 {
                            0 => break,
                            libc::ENOMEM => std::thread::yield_now(),
                            e => panic!("post_send {e}"),
                        }
                    }
                }
            })
        })
        .collect();
    for p in posters {
        p.join().unwrap();
    }
    // Give the completion thread a moment to drain, then stop it.
    std::thread::sleep(Duration::from_millis(200));
    stop.store(true, Ordering::SeqCst);
    let seen = comp.join().unwrap() + poll(l.s.cq).len();
    assert_eq!(seen, 2 * PER_THREAD);
    teardown(l, ch);
}

#[test]
fn cq_without_channel_and_bad_arguments() {
    let (l, ch) = Loop::new(false, 64);
    assert!(ch.is_null());
    assert_eq!(req_notify(l.s.cq, false), 0);
    l.send(false);
    assert_eq!(poll(l.s.cq).len(), 1);
    // SAFETY: verbs called the C way, on objects and buffers this test owns.
    unsafe {
        assert!(ibv_create_cq(l.s.ctx, 0, null_mut(), null_mut(), 0).is_null());
        assert_eq!(errno(), libc::EINVAL);
        assert!(ibv_create_cq(l.s.ctx, 4, null_mut(), null_mut(), 1).is_null());
        assert!(ibv_create_cq(l.s.ctx, 4, null_mut(), 0x3000 as *mut _, 0).is_null());
        let mut cq = null_mut();
        let mut ctx = null_mut();
        assert_eq!(ibv_get_cq_event(0x3000 as *mut _, &mut cq, &mut ctx), -1);
        assert_eq!(errno(), libc::EINVAL);
        assert_eq!(ibv_destroy_comp_channel(0x3000 as *mut _), libc::EINVAL);
        let mut wc = [ibv_wc::default(); 1];
        assert_eq!(ops_poll_cq(0x3000 as *mut _, 1, wc.as_mut_ptr()), -1);
        assert_eq!(ops_req_notify_cq(0x3000 as *mut _, 0), libc::EINVAL);
    }
    teardown(l, ch);
}
