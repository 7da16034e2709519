// SPDX-License-Identifier: GPL-2.0-only
//! Completion channels and completion queues.

use crate::engine::{self, cq::DestroyCq};
use crate::exports::status::status_name;
use crate::ffi;
use crate::guard::{errno_result, guard, ptr_result, set_errno};
use crate::log::vlog;
use std::ffi::c_void;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};

/// Polled completions as the debug log shows them: one `{...}` per entry.
struct WcList<'a>(&'a [ffi::ibv_wc]);

impl fmt::Display for WcList<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for wc in self.0 {
            write!(
                f,
                " {{wr_id={:#x} status={}({}) opcode={} byte_len={} qp_num={:#x} src_qp={:#x} \
                 wc_flags={:#x} vendor_err={:#x}}}",
                wc.wr_id,
                status_name(wc.status),
                wc.status,
                opcode_name(wc.opcode),
                wc.byte_len,
                wc.qp_num,
                wc.src_qp,
                wc.wc_flags,
                wc.vendor_err
            )?;
        }
        Ok(())
    }
}

/// The `IBV_WC_*` opcode names this device produces.
fn opcode_name(opcode: u32) -> &'static str {
    match opcode {
        ffi::IBV_WC_SEND => "SEND",
        ffi::IBV_WC_RDMA_WRITE => "RDMA_WRITE",
        ffi::IBV_WC_RDMA_READ => "RDMA_READ",
        ffi::IBV_WC_RECV => "RECV",
        ffi::IBV_WC_RECV_RDMA_WITH_IMM => "RECV_RDMA_WITH_IMM",
        _ => "?",
    }
}

/// `ibv_create_comp_channel`: its `fd` is an eventfd, readable while
/// events are queued.
///
/// # Safety
/// None beyond the C contract.
#[no_mangle]
pub unsafe extern "C" fn ibv_create_comp_channel(
    context: *mut ffi::ibv_context,
) -> *mut ffi::ibv_comp_channel {
    guard(std::ptr::null_mut(), || {
        let r = engine::lock().create_channel(context as usize);
        vlog!("ibv_create_comp_channel", "{context:p} -> {r:?}");
        ptr_result(r)
    })
}

/// `ibv_destroy_comp_channel`: EBUSY while CQs use it.
///
/// # Safety
/// None beyond the C contract.
#[no_mangle]
pub unsafe extern "C" fn ibv_destroy_comp_channel(channel: *mut ffi::ibv_comp_channel) -> i32 {
    guard(libc::EIO, || {
        let r = engine::lock().destroy_channel(channel as usize);
        vlog!("ibv_destroy_comp_channel", "{channel:p} -> {r:?}");
        errno_result(r)
    })
}

/// `ibv_create_cq`.
///
/// # Safety
/// None beyond the C contract.
#[no_mangle]
pub unsafe extern "C" fn ibv_create_cq(
    context: *mut ffi::ibv_context,
    cqe: i32,
    cq_context: *mut c_void,
    channel: *mut ffi::ibv_comp_channel,
    comp_vector: i32,
) -> *mut ffi::ibv_cq {
    guard(std::ptr::null_mut(), || {
        let ch = (!channel.is_null()).then_some(channel as usize);
        let r = engine::lock().create_cq(context as usize, cqe, cq_context, ch, comp_vector);
        vlog!(
            "ibv_create_cq",
            "{context:p} cqe={cqe} channel={channel:p} vector={comp_vector} -> {r:?}"
        );
        ptr_result(r)
    })
}

/// `ibv_destroy_cq`: EBUSY while QPs use it; waits (unlocked) until every
/// event returned by `ibv_get_cq_event` is acknowledged, like libibverbs.
///
/// # Safety
/// None beyond the C contract.
#[no_mangle]
pub unsafe extern "C" fn ibv_destroy_cq(cq: *mut ffi::ibv_cq) -> i32 {
    guard(libc::EIO, || {
        let mut e = engine::lock();
        let r = loop {
            match e.try_destroy_cq(cq as usize) {
                Ok(DestroyCq::WaitForAcks) => e = engine::wait_for_acks(e),
                Ok(DestroyCq::Done) => break Ok(()),
                Err(x) => break Err(x),
            }
        };
        drop(e);
        vlog!("ibv_destroy_cq", "{cq:p} -> {r:?}");
        errno_result(r)
    })
}

/// `ibv_get_cq_event`: 0 with the CQ and its context, or -1 with errno
/// (EAGAIN when the channel fd is non-blocking and no event is queued).
/// Blocks, unlocked, in poll(2) on the channel fd otherwise.
///
/// # Safety
/// `cq` and `cq_context` are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn ibv_get_cq_event(
    channel: *mut ffi::ibv_comp_channel,
    cq: *mut *mut ffi::ibv_cq,
    cq_context: *mut *mut c_void,
) -> i32 {
    guard(-1, || {
        if cq.is_null() || cq_context.is_null() {
            set_errno(libc::EINVAL);
            return -1;
        }
        loop {
            let fd = {
                let mut e = engine::lock();
                match e.take_event(channel as usize) {
                    Ok(Some((c, ctx))) => {
                        drop(e);
                        vlog!("ibv_get_cq_event", "{channel:p} -> cq={c:p}");
                        // SAFETY: non-NULL and writable per the contract.
                        unsafe {
                            *cq = c;
                            *cq_context = ctx;
                        }
                        return 0;
                    }
                    Ok(None) => e.channel_fd(channel as usize),
                    Err(x) => Err(x),
                }
            };
            let fd = match fd {
                Ok(fd) => fd,
                Err(x) => {
                    vlog!("ibv_get_cq_event", "{channel:p} -> errno {x}");
                    set_errno(x);
                    return -1;
                }
            };
            // SAFETY: fcntl/poll on an fd value; a stale fd only fails.
            let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
            if flags < 0 || flags & libc::O_NONBLOCK != 0 {
                set_errno(if flags < 0 { libc::EBADF } else { libc::EAGAIN });
                return -1;
            }
            let mut pfd = libc::pollfd {
                fd,
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one valid pollfd.
            if unsafe { libc::poll(&mut pfd, 1, -1) } < 0 {
                // errno is poll's (EINTR), as a read(2) would have set it.
                return -1;
            }
        }
    })
}

/// `ibv_ack_cq_events`.
///
/// # Safety
/// None beyond the C contract.
#[no_mangle]
pub unsafe extern "C" fn ibv_ack_cq_events(cq: *mut ffi::ibv_cq, nevents: u32) {
    guard((), || {
        let r = engine::lock().ack_cq_events(cq as usize, nevents);
        engine::acks_changed();
        vlog!("ibv_ack_cq_events", "{cq:p} n={nevents} -> {r:?}");
    })
}

/// Polls that found nothing since the last one the log shows (any CQ). QEMU's
/// backend polls its CQs in a loop: a log line (a locked, unbuffered write)
/// for each empty poll made the debug log the lab's bottleneck, millions of
/// lines per pingpong, and slowed every verb that waited for the log's lock.
static EMPTY_POLLS: AtomicU64 = AtomicU64::new(0);

/// `context->ops.poll_cq`: the number of completions written to `wc`, or
/// a negative value (-1, errno set) on error. Only polls that return
/// something are logged, with the count of empty ones before them.
///
/// # Safety
/// `wc` has room for `num_entries` `struct ibv_wc`.
pub unsafe extern "C" fn ops_poll_cq(
    cq: *mut ffi::ibv_cq,
    num_entries: i32,
    wc: *mut ffi::ibv_wc,
) -> i32 {
    guard(-1, || {
        if num_entries < 0 || (num_entries > 0 && wc.is_null()) {
            set_errno(libc::EINVAL);
            return -1;
        }
        // Returning fewer than asked is allowed; bounds the copy buffer.
        let mut buf = vec![ffi::ibv_wc::default(); (num_entries as usize).min(4096)];
        let r = engine::lock().poll_cq(cq as usize, &mut buf);
        if matches!(r, Ok(0)) {
            EMPTY_POLLS.fetch_add(1, Ordering::Relaxed);
        } else {
            vlog!(
                "poll_cq",
                "{cq:p} max={num_entries} -> {r:?}{} (after {} empty polls)",
                WcList(&buf[..*r.as_ref().unwrap_or(&0)]),
                EMPTY_POLLS.swap(0, Ordering::Relaxed)
            );
        }
        match r {
            Ok(n) => {
                // SAFETY: `wc` has room for num_entries >= n entries; `buf` is ours.
                unsafe { std::ptr::copy_nonoverlapping(buf.as_ptr(), wc, n) };
                n as i32
            }
            Err(x) => {
                set_errno(x);
                -1
            }
        }
    })
}

/// `context->ops.req_notify_cq`.
///
/// # Safety
/// None beyond the C contract.
pub unsafe extern "C" fn ops_req_notify_cq(cq: *mut ffi::ibv_cq, solicited_only: i32) -> i32 {
    guard(libc::EIO, || {
        let r = engine::lock().req_notify_cq(cq as usize, solicited_only != 0);
        vlog!(
            "req_notify_cq",
            "{cq:p} solicited_only={solicited_only} -> {r:?}"
        );
        errno_result(r)
    })
}
