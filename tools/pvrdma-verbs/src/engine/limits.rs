// SPDX-License-Identifier: GPL-2.0-only
//! The device's fixed identity and limits (what `ibv_query_device` and
//! `ibv_query_port` report, and what the verbs enforce).
//!
//! Every limit QEMU 7.2 clamps its own defaults with (`init_device_caps` in
//! `hw/rdma/rdma_backend.c`) is at least QEMU's default (`rdma_rm_defs.h`),
//! so QEMU keeps its defaults.

use crate::ffi;

/// The device name (`ibv_get_device_name`, QEMU's `ibdev=`).
pub const DEVICE_NAME: &str = "pvrdma_sw0";
/// The uverbs-style name QEMU prints as "uverb device".
pub const DEVICE_DEV_NAME: &str = "uverbs_sw0";

/// Node GUID: EUI-64 of the documentation MAC 00:00:5e:00:53:00 (RFC 7042).
pub const NODE_GUID: [u8; 8] = [0x02, 0x00, 0x5e, 0xff, 0xfe, 0x00, 0x53, 0x00];

/// GID table length of port 1 (index 0 is the fixed default GID).
pub const GID_TABLE_LEN: usize = 128;
/// The only port.
pub const PORT_NUM: u8 = 1;
/// One P_Key (0xffff) at index 0.
pub const PKEY_TABLE_LEN: u16 = 1;
/// The default P_Key.
pub const DEFAULT_PKEY: u16 = 0xffff;

/// Port MTU (max and active): 4096, so a guest `ibv_ud_pingpong` with its
/// default 2048-byte messages fits; QEMU itself uses path MTU 1024 for RC.
pub const PORT_MTU: u32 = ffi::IBV_MTU_4096;
/// Largest message (RC); UD messages are limited to the port MTU.
pub const MAX_MSG_SZ: u32 = 1 << 31;

/// Largest MR.
pub const MAX_MR_SIZE: u64 = 1 << 40;
/// Most QPs.
pub const MAX_QP: u32 = 16384;
/// Most work requests per send/receive queue.
pub const MAX_QP_WR: u32 = 32768;
/// Most SGEs per work request (QEMU uses 4).
pub const MAX_SGE: u32 = 32;
/// Most CQs.
pub const MAX_CQ: u32 = 16384;
/// Most entries per CQ (QEMU asks for the guest ring size + 1).
pub const MAX_CQE: u32 = 1 << 20;
/// Most MRs.
pub const MAX_MR: u32 = 65536;
/// Most PDs.
pub const MAX_PD: u32 = 16384;
/// Outstanding RDMA reads/atomics as responder, per QP.
pub const MAX_QP_RD_ATOM: u32 = 16;
/// Outstanding RDMA reads/atomics as requester, per QP.
pub const MAX_QP_INIT_RD_ATOM: u32 = 16;
/// Most AHs.
pub const MAX_AH: u32 = 65536;
/// Most SRQs.
pub const MAX_SRQ: u32 = 4096;
/// Most work requests per SRQ.
pub const MAX_SRQ_WR: u32 = 32768;
/// Most SGEs per SRQ work request.
pub const MAX_SRQ_SGE: u32 = 32;
/// Most inline bytes per send.
pub const MAX_INLINE_DATA: u32 = 512;

/// Bytes of an MTU enum value (`IBV_MTU_256` = 1 ... `IBV_MTU_4096` = 5).
pub fn mtu_bytes(mtu: u32) -> Option<u32> {
    match mtu {
        1..=5 => Some(128 << mtu),
        _ => None,
    }
}

fn c_str_into(dst: &mut [libc::c_char], s: &str) {
    let room = dst.len().saturating_sub(1);
    for (d, b) in dst.iter_mut().zip(s.bytes().take(room)) {
        *d = b as libc::c_char;
    }
}

/// The `struct ibv_device` of the single device.
pub fn device_struct() -> ffi::ibv_device {
    let mut dev = ffi::ibv_device {
        node_type: ffi::IBV_NODE_CA,
        transport_type: ffi::IBV_TRANSPORT_IB,
        ..Default::default()
    };
    c_str_into(&mut dev.name, DEVICE_NAME);
    c_str_into(&mut dev.dev_name, DEVICE_DEV_NAME);
    c_str_into(&mut dev.dev_path, "/sys/class/infiniband_verbs/uverbs_sw0");
    c_str_into(&mut dev.ibdev_path, "/sys/class/infiniband/pvrdma_sw0");
    dev
}

/// `ibv_query_device`'s answer.
pub fn device_attr() -> ffi::ibv_device_attr {
    let mut a = ffi::ibv_device_attr::default();
    c_str_into(&mut a.fw_ver, "pvrdma-verbs 0.1");
    a.node_guid = u64::from_ne_bytes(NODE_GUID);
    a.sys_image_guid = a.node_guid;
    a.max_mr_size = MAX_MR_SIZE;
    a.page_size_cap = 0xffff_f000;
    a.max_qp = MAX_QP as i32;
    a.max_qp_wr = MAX_QP_WR as i32;
    a.device_cap_flags = ffi::IBV_DEVICE_RC_RNR_NAK_GEN
        | ffi::IBV_DEVICE_CURR_QP_STATE_MOD
        | ffi::IBV_DEVICE_SRQ_RESIZE
        | ffi::IBV_DEVICE_PORT_ACTIVE_EVENT;
    a.max_sge = MAX_SGE as i32;
    a.max_sge_rd = MAX_SGE as i32;
    a.max_cq = MAX_CQ as i32;
    a.max_cqe = MAX_CQE as i32;
    a.max_mr = MAX_MR as i32;
    a.max_pd = MAX_PD as i32;
    a.max_qp_rd_atom = MAX_QP_RD_ATOM as i32;
    a.max_res_rd_atom = (MAX_QP_RD_ATOM * MAX_QP) as i32;
    a.max_qp_init_rd_atom = MAX_QP_INIT_RD_ATOM as i32;
    a.atomic_cap = ffi::IBV_ATOMIC_NONE;
    a.max_ah = MAX_AH as i32;
    a.max_srq = MAX_SRQ as i32;
    a.max_srq_wr = MAX_SRQ_WR as i32;
    a.max_srq_sge = MAX_SRQ_SGE as i32;
    a.max_pkeys = PKEY_TABLE_LEN;
    a.local_ca_ack_delay = 15;
    a.phys_port_cnt = 1;
    a
}

/// `ibv_query_port`'s answer for port 1.
pub fn port_attr(qkey_viol_cntr: u32) -> ffi::ibv_port_attr {
    ffi::ibv_port_attr {
        state: ffi::IBV_PORT_ACTIVE,
        max_mtu: PORT_MTU,
        active_mtu: PORT_MTU,
        gid_tbl_len: GID_TABLE_LEN as i32,
        port_cap_flags: ffi::IBV_PORT_CM_SUP,
        max_msg_sz: MAX_MSG_SZ,
        qkey_viol_cntr,
        pkey_tbl_len: PKEY_TABLE_LEN,
        max_vl_num: 1,
        active_width: 1,  // 1X
        active_speed: 32, // 10 Gb/s (FDR10)
        phys_state: 5,    // LinkUp
        link_layer: ffi::IBV_LINK_LAYER_ETHERNET,
        ..Default::default()
    }
}
