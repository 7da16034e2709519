// SPDX-License-Identifier: GPL-2.0-only
//! Device, port and GID queries, as QEMU's realize and the guest's
//! `ibv_devinfo` (through QEMU) drive them.

#![warn(clippy::undocumented_unsafe_blocks)]

mod common;

use common::*;
use pvrdma_verbs::exports::{device::*, pd_mr::*, status::ibv_wc_status_str};
use pvrdma_verbs::ffi::*;
use std::ffi::CStr;
use std::ptr::null_mut;

#[test]
fn device_list_name_and_open() {
    // SAFETY: verbs called the C way, on objects and buffers this test owns.
    unsafe {
        let mut n = -1;
        let list = ibv_get_device_list(&mut n);
        assert_eq!(n, 1);
        let dev = *list;
        assert!((*list.add(1)).is_null());
        ibv_free_device_list(list);
        // QEMU reads the names after freeing the list.
        assert_eq!(
            CStr::from_ptr(ibv_get_device_name(dev)).to_str().unwrap(),
            "pvrdma_sw0"
        );
        assert_eq!(
            CStr::from_ptr((*dev).dev_name.as_ptr()).to_str().unwrap(),
            "uverbs_sw0"
        );
        assert_eq!((*dev).node_type, IBV_NODE_CA);
        let ctx = ibv_open_device(dev);
        assert!(!ctx.is_null());
        assert_eq!((*ctx).device, dev);
        // A plain (non-extended) context: the inline verbs take the exported paths.
        assert!((*ctx).abi_compat.is_null());
        assert!((*ctx).ops.post_send.is_some() && (*ctx).ops.poll_cq.is_some());
        assert_eq!(ibv_close_device(ctx), 0);
        // Bad pointers are refused, not dereferenced.
        assert!(ibv_open_device(0x1000 as *mut _).is_null());
        assert_eq!(errno(), libc::ENODEV);
        assert!(ibv_get_device_name(null_mut()).is_null());
        assert_eq!(ibv_close_device(ctx), libc::EINVAL);
        assert!(ibv_alloc_pd(ctx).is_null());
        assert_eq!(errno(), libc::EINVAL);
        ibv_free_device_list(0x1234 as *mut _);
    }
}

#[test]
fn query_device_meets_qemu_defaults() {
    let ctx = open();
    let mut a = ibv_device_attr::default();
    // SAFETY: verbs called the C way, on objects and buffers this test owns.
    assert_eq!(unsafe { ibv_query_device(ctx, &mut a) }, 0);
    // rdma_rm_defs.h defaults that init_device_caps clamps against.
    assert!(a.max_mr_size >= 1 << 27);
    assert!(a.max_qp >= 1024);
    assert!(a.max_sge >= 4);
    assert!(a.max_cq >= 2048);
    assert!(a.max_mr >= 1024);
    assert!(a.max_pd >= 1024);
    assert!(a.max_qp_rd_atom >= 16);
    assert!(a.max_qp_init_rd_atom >= 16);
    assert!(a.max_ah >= 64);
    assert!(a.max_srq >= 512);
    assert!(a.max_cqe > 32768);
    assert_eq!(a.phys_port_cnt, 1);
    assert_eq!(a.max_pkeys, 1);
    assert_eq!(
        // SAFETY: verbs called the C way, on objects and buffers this test owns.
        unsafe { ibv_query_device(0x10 as *mut _, &mut a) },
        libc::EINVAL
    );
    // SAFETY: verbs called the C way, on objects and buffers this test owns.
    assert_eq!(unsafe { ibv_close_device(ctx) }, 0);
}

#[test]
fn query_port_writes_the_compat_prefix_only() {
    let ctx = open();
    // QEMU passes a 48-byte struct pvrdma_port_attr; the bytes after it
    // must stay untouched.
    let mut raw = [0xaau8; 64];
    // SAFETY: verbs called the C way, on objects and buffers this test owns.
    let rc = unsafe { ibv_query_port(ctx, 1, raw.as_mut_ptr().cast()) };
    assert_eq!(rc, 0);
    assert!(raw[48..].iter().all(|&b| b == 0xaa));
    let mut full = ibv_port_attr::default();
    // SAFETY: verbs called the C way, on objects and buffers this test owns.
    unsafe {
        std::ptr::copy_nonoverlapping(raw.as_ptr(), (&mut full as *mut ibv_port_attr).cast(), 48)
    };
    assert_eq!(full.state, IBV_PORT_ACTIVE);
    assert!(full.active_mtu >= IBV_MTU_1024 && full.max_mtu >= full.active_mtu);
    assert_eq!(full.phys_state, 5);
    assert!(full.gid_tbl_len >= 2);
    assert_eq!(full.pkey_tbl_len, 1);
    assert_eq!(full.link_layer, IBV_LINK_LAYER_ETHERNET);
    assert_eq!(
        // SAFETY: verbs called the C way, on objects and buffers this test owns.
        unsafe { ibv_query_port(ctx, 2, raw.as_mut_ptr().cast()) },
        libc::EINVAL
    );
    let mut pkey = 0u16;
    // SAFETY: verbs called the C way, on objects and buffers this test owns.
    assert_eq!(unsafe { ibv_query_pkey(ctx, 1, 0, &mut pkey) }, 0);
    assert_eq!(u16::from_be(pkey), 0xffff);
    // SAFETY: verbs called the C way, on objects and buffers this test owns.
    assert_eq!(unsafe { ibv_query_pkey(ctx, 1, 1, &mut pkey) }, -1);
    // SAFETY: verbs called the C way, on objects and buffers this test owns.
    assert_eq!(unsafe { ibv_close_device(ctx) }, 0);
}

/// QEMU's rdma_backend_get_gid_index: scan from 0 until a match or an error.
fn qemu_gid_index(ctx: *mut ibv_context, gid: &[u8; 16]) -> i32 {
    let mut i = 0;
    loop {
        let mut g = ibv_gid::default();
        // SAFETY: verbs called the C way, on objects and buffers this test owns.
        let ret = unsafe { ibv_query_gid(ctx, 1, i, &mut g) };
        if ret != 0 {
            return ret;
        }
        // SAFETY: verbs called the C way, on objects and buffers this test owns.
        if unsafe { g.raw } == *gid {
            return i;
        }
        i += 1;
    }
}

#[test]
fn gid_table_scan_like_qemu() {
    let ctx = open();
    let mut g = ibv_gid::default();
    // SAFETY: verbs called the C way, on objects and buffers this test owns.
    assert_eq!(unsafe { ibv_query_gid(ctx, 1, 0, &mut g) }, 0);
    // SAFETY: verbs called the C way, on objects and buffers this test owns.
    let default = unsafe { g.raw };
    assert_eq!(&default[..2], &[0xfe, 0x80]);
    let (gid, index) = fresh_gid();
    assert!(index >= 1);
    assert_eq!(qemu_gid_index(ctx, &gid), i32::from(index));
    // Not present: the scan ends at the end of the table with an error.
    assert_eq!(
        qemu_gid_index(
            ctx,
            &[0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x99]
        ),
        -1
    );
    assert_eq!(errno(), libc::EINVAL);
    // SAFETY: verbs called the C way, on objects and buffers this test owns.
    assert_eq!(unsafe { ibv_query_gid(ctx, 1, -1, &mut g) }, -1);
    // SAFETY: verbs called the C way, on objects and buffers this test owns.
    assert_eq!(unsafe { ibv_query_gid(ctx, 2, 0, &mut g) }, -1);
    // The fabric's sink adds and removes (the mux's REG/UNREG).
    let sink = pvrdma_verbs::gid_sink();
    let other = [
        0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0xaa, 0xbb, 0xcc, 0xff, 0xfe, 0xdd, 0xee, 0x01,
    ];
    sink.gid_added(other).unwrap();
    let at = qemu_gid_index(ctx, &other);
    assert!(at >= 1);
    sink.gid_removed(other);
    assert_eq!(qemu_gid_index(ctx, &other), -1);
    pvrdma_verbs::remove_gid(&gid);
    // SAFETY: verbs called the C way, on objects and buffers this test owns.
    assert_eq!(unsafe { ibv_close_device(ctx) }, 0);
}

#[test]
fn pd_and_mr_rules() {
    let ctx = open();
    // SAFETY: verbs called the C way, on objects and buffers this test owns.
    unsafe {
        let pd = ibv_alloc_pd(ctx);
        assert!(!pd.is_null());
        let mut mem = vec![0u8; 4096];
        let p = mem.as_mut_ptr();
        let a = ibv_reg_mr(pd, p.cast(), 4096, IBV_ACCESS_LOCAL_WRITE as i32);
        let b = ibv_reg_mr_iova2(pd, p.cast(), 4096, p as u64, RW);
        assert!(!a.is_null() && !b.is_null());
        assert_ne!((*a).lkey, 0);
        assert_ne!((*a).lkey, (*b).lkey);
        assert_eq!((*b).addr, p.cast());
        assert_eq!((*b).length, 4096);
        assert_eq!((*b).pd, pd);
        // Remote write without local write, zero length, unknown flags.
        assert!(ibv_reg_mr(pd, p.cast(), 4096, IBV_ACCESS_REMOTE_WRITE as i32).is_null());
        assert_eq!(errno(), libc::EINVAL);
        assert!(ibv_reg_mr(pd, p.cast(), 0, 0).is_null());
        assert!(ibv_reg_mr(pd, p.cast(), 16, IBV_ACCESS_ON_DEMAND as i32).is_null());
        // Optional-range hints are accepted and dropped.
        let c = ibv_reg_mr_iova2(pd, p.cast(), 16, p as u64, IBV_ACCESS_RELAXED_ORDERING);
        assert!(!c.is_null());
        assert_eq!(ibv_dereg_mr(c), 0);
        // A PD with MRs cannot go.
        assert_eq!(ibv_dealloc_pd(pd), libc::EBUSY);
        assert_eq!(ibv_dereg_mr(a), 0);
        assert_eq!(ibv_dereg_mr(a), libc::EINVAL);
        assert_eq!(ibv_dereg_mr(b), 0);
        assert_eq!(ibv_dealloc_pd(pd), 0);
        assert_eq!(ibv_dealloc_pd(pd), libc::EINVAL);
        assert_eq!(ibv_close_device(ctx), 0);
    }
}

#[test]
fn wc_status_strings() {
    let s = |st| {
        // SAFETY: verbs called the C way, on objects and buffers this test owns.
        unsafe { CStr::from_ptr(ibv_wc_status_str(st)) }
            .to_str()
            .unwrap()
            .to_owned()
    };
    assert_eq!(s(IBV_WC_SUCCESS), "success");
    assert_eq!(s(IBV_WC_WR_FLUSH_ERR), "Work Request Flushed Error");
    assert_eq!(s(IBV_WC_RETRY_EXC_ERR), "transport retry counter exceeded");
    assert_eq!(s(999), "unknown");
}

#[test]
fn debug_log_is_off_without_env() {
    assert!(std::env::var_os("PVRDMA_VERBS_LOG").is_some() || !pvrdma_verbs::log::enabled());
}
