// SPDX-License-Identifier: GPL-2.0

//! Conversions between the RDMA core's values and the device's.
//!
//! Most of the device's enums are the core's, value for value (QP states, MTUs, migration
//! states, access flags, attribute masks); what differs is converted here, and what the device
//! hands back is checked on the way in.
//!
//! Layer: RDMA device.

use crate::abi::{self, wc_opcode as dev_wc, wr_opcode as dev_wr};
use kernel::rdma::{
    AccessFlags, AhAttr, Gid, NetworkType, QpAttr, QpCap, QpModifyAttr, QpState, WcFlags, WcOpcode,
    WcStatus, WrOpcode,
};

/// The core's completion status for the device's: the same values; an unknown one is a general
/// error.
pub(crate) fn wc_status_to_ib(status: u32) -> WcStatus {
    WcStatus::from_raw(status).unwrap_or(WcStatus::GeneralErr)
}

/// The core's completion opcode for the device's (C's `pvrdma_wc_opcode_to_ib`, which takes an
/// unknown one for a send).
pub(crate) fn wc_opcode_to_ib(op: u32) -> WcOpcode {
    match op {
        dev_wc::SEND => WcOpcode::Send,
        dev_wc::RDMA_WRITE => WcOpcode::RdmaWrite,
        dev_wc::RDMA_READ => WcOpcode::RdmaRead,
        dev_wc::COMP_SWAP => WcOpcode::CompSwap,
        dev_wc::FETCH_ADD => WcOpcode::FetchAdd,
        dev_wc::LOCAL_INV => WcOpcode::LocalInv,
        dev_wc::FAST_REG_MR => WcOpcode::RegMr,
        dev_wc::RECV => WcOpcode::Recv,
        dev_wc::RECV_RDMA_WITH_IMM => WcOpcode::RecvRdmaWithImm,
        _ => WcOpcode::Send,
    }
}

/// The core's completion flags for the device's: the same bits, unknown ones dropped.
pub(crate) fn wc_flags_to_ib(flags: u32) -> WcFlags {
    const _: () = {
        use abi::wc_flags as dev;
        use kernel::rdma::WcFlag;
        assert!(dev::GRH == WcFlag::Grh as u32);
        assert!(dev::WITH_IMM == WcFlag::WithImm as u32);
        assert!(dev::WITH_INVALIDATE == WcFlag::WithInvalidate as u32);
        assert!(dev::IP_CSUM_OK == WcFlag::IpCsumOk as u32);
        assert!(dev::WITH_SMAC == WcFlag::WithSmac as u32);
        assert!(dev::WITH_VLAN == WcFlag::WithVlan as u32);
        assert!(dev::WITH_NETWORK_HDR_TYPE == WcFlag::WithNetworkHdrType as u32);
    };
    WcFlags::from_raw_truncate(flags)
}

/// The core's network header type for the device's (C's `pvrdma_network_type_to_ib`).
///
/// The values differ: the device numbers RoCE v1 (which it shares with IB), IPv4 and IPv6 from
/// 0, the core has IB at 0 and RoCE v1, IPv4, IPv6 from 1. The device is RoCE only, so its 0 is
/// RoCE v1; anything unknown is taken for IPv6, as C does.
pub(crate) fn network_type_to_ib(t: u8) -> NetworkType {
    use abi::network_type as dev;
    match t {
        dev::ROCE_V1 => NetworkType::RoceV1,
        dev::IPV4 => NetworkType::Ipv4,
        _ => NetworkType::Ipv6,
    }
}

/// The device's work request opcode for the core's (every opcode of the IB spec has one).
pub(crate) fn wr_opcode_to_pvrdma(op: WrOpcode) -> u32 {
    match op {
        WrOpcode::RdmaWrite => dev_wr::RDMA_WRITE,
        WrOpcode::RdmaWriteWithImm => dev_wr::RDMA_WRITE_WITH_IMM,
        WrOpcode::Send => dev_wr::SEND,
        WrOpcode::SendWithImm => dev_wr::SEND_WITH_IMM,
        WrOpcode::RdmaRead => dev_wr::RDMA_READ,
        WrOpcode::AtomicCmpAndSwp => dev_wr::ATOMIC_CMP_AND_SWP,
        WrOpcode::AtomicFetchAndAdd => dev_wr::ATOMIC_FETCH_AND_ADD,
        WrOpcode::SendWithInv => dev_wr::SEND_WITH_INV,
        WrOpcode::LocalInv => dev_wr::LOCAL_INV,
        WrOpcode::RegMr => dev_wr::FAST_REG_MR,
    }
}

/// The device's address vector for the core's (C's `rdma_ah_attr_to_pvrdma`).
pub(crate) fn ah_attr_to_pvrdma(a: &AhAttr) -> abi::AhAttr {
    abi::AhAttr {
        grh: abi::GlobalRoute {
            dgid: abi::Gid { raw: a.dgid.0 },
            flow_label: a.flow_label,
            sgid_index: a.sgid_index,
            hop_limit: a.hop_limit,
            traffic_class: a.traffic_class,
            reserved: 0,
        },
        sl: a.sl,
        static_rate: a.static_rate,
        ah_flags: a.ah_flags,
        port_num: a.port_num.min(u8::MAX.into()) as u8,
        dmac: a.dmac,
        ..Default::default()
    }
}

/// The core's address vector for the device's (C's `pvrdma_ah_attr_to_rdma`).
pub(crate) fn ah_attr_from_pvrdma(a: &abi::AhAttr) -> AhAttr {
    AhAttr {
        dgid: Gid(a.grh.dgid.raw),
        flow_label: a.grh.flow_label,
        sgid_index: a.grh.sgid_index,
        hop_limit: a.grh.hop_limit,
        traffic_class: a.grh.traffic_class,
        sl: a.sl,
        static_rate: a.static_rate,
        port_num: a.port_num.into(),
        ah_flags: a.ah_flags,
        dmac: a.dmac,
        roce: true,
    }
}

fn cap_to_pvrdma(c: &QpCap) -> abi::QpCap {
    abi::QpCap {
        max_send_wr: c.max_send_wr,
        max_recv_wr: c.max_recv_wr,
        max_send_sge: c.max_send_sge,
        max_recv_sge: c.max_recv_sge,
        max_inline_data: c.max_inline_data,
        reserved: 0,
    }
}

/// The core's queue sizes for the device's.
pub(crate) fn cap_from_pvrdma(c: &abi::QpCap) -> QpCap {
    QpCap {
        max_send_wr: c.max_send_wr,
        max_recv_wr: c.max_recv_wr,
        max_send_sge: c.max_send_sge,
        max_recv_sge: c.max_recv_sge,
        max_inline_data: c.max_inline_data,
    }
}

/// Narrows a port number to the device's byte (ports beyond 255 do not exist).
fn port_u8(port: u32) -> u8 {
    port.min(u8::MAX.into()) as u8
}

/// The device's QP attributes for those a modify sets (C's `pvrdma_modify_qp` body); the device
/// reads only those the command's mask names, the others are zero.
pub(crate) fn qp_attr_to_pvrdma(a: &QpModifyAttr) -> abi::QpAttr {
    let alt = a.alt_path.unwrap_or_default();
    abi::QpAttr {
        qp_state: a.qp_state.unwrap_or_default().as_raw(),
        cur_qp_state: a.cur_qp_state.unwrap_or_default().as_raw(),
        path_mtu: a.path_mtu.unwrap_or_default(),
        path_mig_state: a.path_mig_state.unwrap_or_default(),
        qkey: a.qkey.unwrap_or_default(),
        rq_psn: a.rq_psn.unwrap_or_default(),
        sq_psn: a.sq_psn.unwrap_or_default(),
        dest_qp_num: a.dest_qp_num.unwrap_or_default(),
        qp_access_flags: a.qp_access_flags.unwrap_or_default().as_raw(),
        pkey_index: a.pkey_index.unwrap_or_default(),
        alt_pkey_index: alt.pkey_index,
        en_sqd_async_notify: a.en_sqd_async_notify.unwrap_or_default(),
        sq_draining: 0,
        max_rd_atomic: a.max_rd_atomic.unwrap_or_default(),
        max_dest_rd_atomic: a.max_dest_rd_atomic.unwrap_or_default(),
        min_rnr_timer: a.min_rnr_timer.unwrap_or_default(),
        port_num: port_u8(a.port_num.unwrap_or_default()),
        timeout: a.timeout.unwrap_or_default(),
        retry_cnt: a.retry_cnt.unwrap_or_default(),
        rnr_retry: a.rnr_retry.unwrap_or_default(),
        alt_port_num: port_u8(alt.port_num),
        alt_timeout: alt.timeout,
        reserved: [0; 5],
        cap: cap_to_pvrdma(&a.cap.unwrap_or_default()),
        ah_attr: ah_attr_to_pvrdma(&a.ah_attr.unwrap_or_default()),
        alt_ah_attr: ah_attr_to_pvrdma(&alt.ah_attr),
    }
}

/// The core's QP attributes for what the device reports; an unknown state is reported as the
/// error state.
pub(crate) fn qp_attr_from_pvrdma(a: &abi::QpAttr) -> QpAttr {
    let state = |s: u32| QpState::from_raw(s).unwrap_or(QpState::Err);
    QpAttr {
        qp_state: state(a.qp_state),
        cur_qp_state: state(a.cur_qp_state),
        path_mtu: a.path_mtu,
        path_mig_state: a.path_mig_state,
        qkey: a.qkey,
        rq_psn: a.rq_psn,
        sq_psn: a.sq_psn,
        dest_qp_num: a.dest_qp_num,
        qp_access_flags: AccessFlags::from_raw_truncate(a.qp_access_flags),
        cap: cap_from_pvrdma(&a.cap),
        ah_attr: ah_attr_from_pvrdma(&a.ah_attr),
        alt_ah_attr: ah_attr_from_pvrdma(&a.alt_ah_attr),
        pkey_index: a.pkey_index,
        alt_pkey_index: a.alt_pkey_index,
        en_sqd_async_notify: a.en_sqd_async_notify,
        sq_draining: a.sq_draining,
        max_rd_atomic: a.max_rd_atomic,
        max_dest_rd_atomic: a.max_dest_rd_atomic,
        min_rnr_timer: a.min_rnr_timer,
        port_num: a.port_num.into(),
        timeout: a.timeout,
        retry_cnt: a.retry_cnt,
        rnr_retry: a.rnr_retry,
        alt_port_num: a.alt_port_num.into(),
        alt_timeout: a.alt_timeout,
        rate_limit: 0,
    }
}
