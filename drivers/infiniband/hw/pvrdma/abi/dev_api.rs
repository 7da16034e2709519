// SPDX-License-Identifier: GPL-2.0

//! The device's control interface (Linux's `pvrdma_dev_api.h`): PCI identity, BARs and
//! registers, the device shared region (DSR) with the capabilities, the commands and their
//! responses, and the elements of the async event and CQ notification rings. Byte for byte what
//! the device expects; every struct's size (and the offsets where C leaves implicit padding) is
//! checked at build time against the C layout (x86-64).

use core::mem::size_of;
use kernel::pod;

/// PCI device ID of the pvrdma function.
pub(crate) const PCI_DEVICE_ID_VMWARE_PVRDMA: u16 = 0x0820;
/// PCI device ID of the vmxnet3 function it pairs with.
pub(crate) const PCI_DEVICE_ID_VMWARE_VMXNET3: u16 = 0x07b0;

/// BAR 1: registers.
pub(crate) const BAR_REGS: u32 = 1;
/// BAR 2: UAR (doorbell) pages, one per user context; page 0 is the kernel's.
pub(crate) const BAR_UAR: u32 = 2;

/// The register window's size: up to and including `MACH`.
pub(crate) const REGS_SIZE: usize = 0x28;
/// R: device version.
pub(crate) const REG_VERSION: usize = 0x00;
/// W: device shared region address, low 32 bits.
pub(crate) const REG_DSRLOW: usize = 0x04;
/// W: device shared region address, high 32 bits (writing it makes the device load the DSR).
pub(crate) const REG_DSRHIGH: usize = 0x08;
/// W: device control, one of the `CTL_*` values.
pub(crate) const REG_CTL: usize = 0x0c;
/// W: a command is in the command slot.
pub(crate) const REG_REQUEST: usize = 0x10;
/// R: error of the last control write or command (0: none).
pub(crate) const REG_ERR: usize = 0x14;
/// R: interrupt cause (with a single, shared vector).
pub(crate) const REG_ICR: usize = 0x18;
/// R/W: interrupt mask (0 enables all).
pub(crate) const REG_IMR: usize = 0x1c;

/// `CTL`: activate the device.
pub(crate) const CTL_ACTIVATE: u32 = 0;
/// `CTL`: resume after a link change.
pub(crate) const CTL_UNQUIESCE: u32 = 1;
/// `CTL`: reset the device (it forgets the DSR).
pub(crate) const CTL_RESET: u32 = 2;

/// `ICR` bit: a command response is ready.
pub(crate) const INTR_CAUSE_RESPONSE: u32 = 1 << 0;

/// The most interrupt vectors the device uses: response, async events, CQ notifications.
pub(crate) const MAX_INTERRUPTS: u32 = 3;

/// Device version: RoCE v1.
pub(crate) const VERSION_ROCEV1: u32 = 17;
/// Device version: RoCE v2.
pub(crate) const VERSION_ROCEV2: u32 = 18;
/// Device version: 64-bit page frame numbers in the DSR and `CREATE_UC`.
pub(crate) const VERSION_PPN64: u32 = 19;
/// The version of the device API this driver implements (told to the device).
pub(crate) const DRIVER_VERSION: u32 = 20;

/// `caps.mode`: RoCE.
pub(crate) const DEVICE_MODE_ROCE: u8 = 0;
/// `caps.gid_types` bit: RoCE v1 GIDs.
pub(crate) const GID_TYPE_FLAG_ROCE_V1: u8 = 1 << 0;
/// `caps.gid_types` bit: RoCE v2 GIDs.
pub(crate) const GID_TYPE_FLAG_ROCE_V2: u8 = 1 << 1;

/// `caps.atomic_ops`: compare and swap.
pub(crate) const ATOMIC_OP_COMP_SWAP: u8 = 1 << 0;
/// `caps.atomic_ops`: fetch and add.
pub(crate) const ATOMIC_OP_FETCH_ADD: u8 = 1 << 1;
/// `caps.bmme_flags`: local invalidate, remote invalidate and fast-register WRs.
pub(crate) const BMME_ALL: u8 = 0b111;
/// Fast-register page list length of devices older than version 18.
pub(crate) const MAX_FAST_REG_PAGES: u32 = 128;

/// `gos_info` word: 64-bit guest, Linux, version 1 (bits: 2, type: 4, ver: 16, misc: 10).
pub(crate) const GOS_INFO_LINUX_64: u32 = 2 | (1 << 2) | (1 << 6);

/// Pages of each device ring (async events, CQ notifications), the first holding the ring state.
pub(crate) const NUM_RING_PAGES: u32 = 4;

/// Most pages a page directory can describe (one directory of 512 tables of 512 pages).
pub(crate) const PAGE_DIR_MAX_PAGES: usize = 512 * 512;

/// Port 1, the only one: the paired network device's port.
pub(crate) const PORT: u32 = 1;

pod! {
    /// Device capabilities, filled in by the device when it loads the DSR.
    #[repr(C, packed)]
    pub(crate) struct Caps {
        pub(crate) fw_ver: u64,
        pub(crate) node_guid: u64,
        pub(crate) sys_image_guid: u64,
        pub(crate) max_mr_size: u64,
        pub(crate) page_size_cap: u64,
        pub(crate) atomic_arg_sizes: u64,
        pub(crate) ex_comp_mask: u32,
        pub(crate) device_cap_flags2: u32,
        pub(crate) max_fa_bit_boundary: u32,
        pub(crate) log_max_atomic_inline_arg: u32,
        pub(crate) vendor_id: u32,
        pub(crate) vendor_part_id: u32,
        pub(crate) hw_ver: u32,
        pub(crate) max_qp: u32,
        pub(crate) max_qp_wr: u32,
        pub(crate) device_cap_flags: u32,
        pub(crate) max_sge: u32,
        pub(crate) max_sge_rd: u32,
        pub(crate) max_cq: u32,
        pub(crate) max_cqe: u32,
        pub(crate) max_mr: u32,
        pub(crate) max_pd: u32,
        pub(crate) max_qp_rd_atom: u32,
        pub(crate) max_ee_rd_atom: u32,
        pub(crate) max_res_rd_atom: u32,
        pub(crate) max_qp_init_rd_atom: u32,
        pub(crate) max_ee_init_rd_atom: u32,
        pub(crate) max_ee: u32,
        pub(crate) max_rdd: u32,
        pub(crate) max_mw: u32,
        pub(crate) max_raw_ipv6_qp: u32,
        pub(crate) max_raw_ethy_qp: u32,
        pub(crate) max_mcast_grp: u32,
        pub(crate) max_mcast_qp_attach: u32,
        pub(crate) max_total_mcast_qp_attach: u32,
        pub(crate) max_ah: u32,
        pub(crate) max_fmr: u32,
        pub(crate) max_map_per_fmr: u32,
        pub(crate) max_srq: u32,
        pub(crate) max_srq_wr: u32,
        pub(crate) max_srq_sge: u32,
        pub(crate) max_uar: u32,
        pub(crate) gid_tbl_len: u32,
        pub(crate) max_pkeys: u16,
        pub(crate) local_ca_ack_delay: u8,
        pub(crate) phys_port_cnt: u8,
        pub(crate) mode: u8,
        pub(crate) atomic_ops: u8,
        pub(crate) bmme_flags: u8,
        pub(crate) gid_types: u8,
        pub(crate) max_fast_reg_page_list_len: u32,
    }

    /// Where a device ring lives: its page count (including the state page) and directory.
    #[repr(C, packed)]
    pub(crate) struct RingPageInfo {
        pub(crate) num_pages: u32,
        pub(crate) reserved: u32,
        pub(crate) pdir_dma: u64,
    }

    /// The device shared region (DSR): the driver's half is written before the device loads it.
    #[repr(C, packed)]
    pub(crate) struct Dsr {
        pub(crate) driver_version: u32,
        pub(crate) pad: u32,
        pub(crate) gos_info: u32,
        pub(crate) gos_pad: u32,
        pub(crate) cmd_slot_dma: u64,
        pub(crate) resp_slot_dma: u64,
        pub(crate) async_ring_pages: RingPageInfo,
        pub(crate) cq_ring_pages: RingPageInfo,
        /// `uar_pfn` (32 bits) before version 19, `uar_pfn64` from it on.
        pub(crate) uar_pfn: u64,
        pub(crate) caps: Caps,
    }

    /// The header of every command.
    #[repr(C)]
    pub(crate) struct CmdHdr {
        /// Echoed in the response's header: the driver's sequence number.
        pub(crate) response: u64,
        pub(crate) cmd: u32,
        pub(crate) reserved: u32,
    }

    /// The header of every response.
    #[repr(C)]
    pub(crate) struct RespHdr {
        pub(crate) response: u64,
        /// The command's response code (`*_RESP`).
        pub(crate) ack: u32,
        /// The device's error for the command (0: none).
        pub(crate) err: u8,
        pub(crate) reserved: [u8; 3],
    }

    /// `QUERY_PORT`.
    #[repr(C)]
    pub(crate) struct CmdQueryPort {
        pub(crate) hdr: CmdHdr,
        pub(crate) port_num: u8,
        pub(crate) reserved: [u8; 7],
    }

    /// The port attributes in a `QUERY_PORT` response.
    #[repr(C)]
    pub(crate) struct PortAttrs {
        pub(crate) state: u32,
        pub(crate) max_mtu: u32,
        pub(crate) active_mtu: u32,
        pub(crate) gid_tbl_len: u32,
        pub(crate) port_cap_flags: u32,
        pub(crate) max_msg_sz: u32,
        pub(crate) bad_pkey_cntr: u32,
        pub(crate) qkey_viol_cntr: u32,
        pub(crate) pkey_tbl_len: u16,
        pub(crate) lid: u16,
        pub(crate) sm_lid: u16,
        pub(crate) lmc: u8,
        pub(crate) max_vl_num: u8,
        pub(crate) sm_sl: u8,
        pub(crate) subnet_timeout: u8,
        pub(crate) init_type_reply: u8,
        pub(crate) active_width: u8,
        pub(crate) active_speed: u8,
        pub(crate) phys_state: u8,
        pub(crate) reserved: [u8; 2],
    }

    /// `QUERY_PORT_RESP`.
    #[repr(C)]
    pub(crate) struct RespQueryPort {
        pub(crate) hdr: RespHdr,
        pub(crate) attrs: PortAttrs,
    }

    /// `QUERY_PKEY`.
    #[repr(C)]
    pub(crate) struct CmdQueryPkey {
        pub(crate) hdr: CmdHdr,
        pub(crate) port_num: u8,
        pub(crate) index: u8,
        pub(crate) reserved: [u8; 6],
    }

    /// `QUERY_PKEY_RESP`.
    #[repr(C)]
    pub(crate) struct RespQueryPkey {
        pub(crate) hdr: RespHdr,
        pub(crate) pkey: u16,
        pub(crate) reserved: [u8; 6],
    }

    /// `CREATE_UC`: `pfn` is 32 bits before version 19 (the low half of this field).
    #[repr(C)]
    pub(crate) struct CmdCreateUc {
        pub(crate) hdr: CmdHdr,
        pub(crate) pfn: u64,
    }

    /// `CREATE_UC_RESP`.
    #[repr(C)]
    pub(crate) struct RespCreateUc {
        pub(crate) hdr: RespHdr,
        pub(crate) ctx_handle: u32,
        pub(crate) reserved: [u8; 4],
    }

    /// `DESTROY_UC`.
    #[repr(C)]
    pub(crate) struct CmdDestroyUc {
        pub(crate) hdr: CmdHdr,
        pub(crate) ctx_handle: u32,
        pub(crate) reserved: [u8; 4],
    }

    /// `CREATE_PD`.
    #[repr(C)]
    pub(crate) struct CmdCreatePd {
        pub(crate) hdr: CmdHdr,
        pub(crate) ctx_handle: u32,
        pub(crate) reserved: [u8; 4],
    }

    /// `CREATE_PD_RESP`.
    #[repr(C)]
    pub(crate) struct RespCreatePd {
        pub(crate) hdr: RespHdr,
        pub(crate) pd_handle: u32,
        pub(crate) reserved: [u8; 4],
    }

    /// `DESTROY_PD`.
    #[repr(C)]
    pub(crate) struct CmdDestroyPd {
        pub(crate) hdr: CmdHdr,
        pub(crate) pd_handle: u32,
        pub(crate) reserved: [u8; 4],
    }

    /// `CREATE_BIND`: binds a GID to a table index.
    #[repr(C)]
    pub(crate) struct CmdCreateBind {
        pub(crate) hdr: CmdHdr,
        pub(crate) mtu: u32,
        pub(crate) vlan: u32,
        pub(crate) index: u32,
        pub(crate) new_gid: [u8; 16],
        pub(crate) gid_type: u8,
        pub(crate) reserved: [u8; 3],
    }

    /// `DESTROY_BIND`.
    #[repr(C)]
    pub(crate) struct CmdDestroyBind {
        pub(crate) hdr: CmdHdr,
        pub(crate) index: u32,
        pub(crate) dest_gid: [u8; 16],
        pub(crate) reserved: [u8; 4],
    }

    /// A response without payload (the `*_RESP_NOOP` codes).
    #[repr(C)]
    pub(crate) struct RespNoop {
        pub(crate) hdr: RespHdr,
    }

    /// An async event queue element.
    #[repr(C)]
    pub(crate) struct Eqe {
        pub(crate) kind: u32,
        pub(crate) info: u32,
    }

    /// A CQ notification element: the handle of a CQ with a new completion.
    #[repr(C)]
    pub(crate) struct Cqne {
        pub(crate) info: u32,
    }
}

/// Command codes, each with its response code.
pub(crate) mod opcode {
    /// Response codes are the command code with the top bit set.
    const RESP: u32 = 1 << 31;

    pub(crate) const QUERY_PORT: (u32, u32) = (0, RESP);
    pub(crate) const QUERY_PKEY: (u32, u32) = (1, RESP | 1);
    pub(crate) const CREATE_PD: (u32, u32) = (2, RESP | 2);
    pub(crate) const DESTROY_PD: (u32, u32) = (3, RESP | 3);
    pub(crate) const CREATE_UC: (u32, u32) = (13, RESP | 13);
    pub(crate) const DESTROY_UC: (u32, u32) = (14, RESP | 14);
    pub(crate) const CREATE_BIND: (u32, u32) = (15, RESP | 15);
    pub(crate) const DESTROY_BIND: (u32, u32) = (16, RESP | 16);
}

/// Async event types that concern a port or the device (1:1 with the RDMA core's).
pub(crate) mod event {
    pub(crate) const DEVICE_FATAL: u32 = 8;
    pub(crate) const PORT_ACTIVE: u32 = 9;
    pub(crate) const PORT_ERR: u32 = 10;
    pub(crate) const LID_CHANGE: u32 = 11;
    pub(crate) const PKEY_CHANGE: u32 = 12;
    pub(crate) const SM_CHANGE: u32 = 13;
    pub(crate) const CLIENT_REREGISTER: u32 = 17;
    pub(crate) const GID_CHANGE: u32 = 18;
}

/// The size of the request union: the device reads this many bytes of the command slot.
pub(crate) const CMD_REQ_SIZE: usize = 184;
/// The size of the response union.
pub(crate) const CMD_RESP_SIZE: usize = 176;

/// Device version from which `CREATE_QP` is answered by [`RespCreateQpV2`] (a QP handle apart
/// from the QP number) instead of [`RespCreateQp`]; QEMU 7.2's device is version 17.
pub(crate) const VERSION_QPHANDLE: u32 = 20;

/// Pages at the start of every QP's page directory that hold its rings' state (send ring's,
/// then receive ring's); the rings' pages follow, send ring first.
pub(crate) const QP_NUM_HEADER_PAGES: u32 = 1;

/// `CmdCreateMr::flags`: a DMA region (all of memory, no page list).
pub(crate) const MR_FLAG_DMA: u32 = 1 << 0;
/// `CmdCreateMr::flags`: a fast-register memory region (pages given later by a `FAST_REG_MR` WR).
pub(crate) const MR_FLAG_FRMR: u32 = 1 << 1;

/// Async event types that concern a QP, CQ or SRQ (`Eqe::info` is its handle; 1:1 with the RDMA
/// core's `ib_event_type`).
pub(crate) mod event_verbs {
    /// CQ error (overrun).
    pub(crate) const CQ_ERR: u32 = 0;
    /// QP fatal error.
    pub(crate) const QP_FATAL: u32 = 1;
    /// QP invalid request error.
    pub(crate) const QP_REQ_ERR: u32 = 2;
    /// QP access error.
    pub(crate) const QP_ACCESS_ERR: u32 = 3;
    /// QP communication established.
    pub(crate) const COMM_EST: u32 = 4;
    /// QP send queue drained.
    pub(crate) const SQ_DRAINED: u32 = 5;
    /// QP path migrated.
    pub(crate) const PATH_MIG: u32 = 6;
    /// QP path migration failed.
    pub(crate) const PATH_MIG_ERR: u32 = 7;
    /// SRQ error.
    pub(crate) const SRQ_ERR: u32 = 14;
    /// SRQ limit reached.
    pub(crate) const SRQ_LIMIT_REACHED: u32 = 15;
    /// QP (attached to an SRQ) reached its last WQE.
    pub(crate) const QP_LAST_WQE_REACHED: u32 = 16;
}

const _: () = {
    assert!(size_of::<Caps>() == 208);
    assert!(size_of::<Dsr>() == 280);
    assert!(size_of::<CmdHdr>() == 16);
    assert!(size_of::<RespHdr>() == 16);
    assert!(size_of::<PortAttrs>() == 48);
    assert!(size_of::<CmdCreateBind>() == 48);
    assert!(size_of::<CmdDestroyBind>() == 40);
    assert!(size_of::<CmdCreateUc>() <= CMD_REQ_SIZE);
    assert!(size_of::<RespQueryPort>() <= CMD_RESP_SIZE);
    assert!(size_of::<Eqe>() == 8);
    assert!(size_of::<Cqne>() == 4);
};
