// SPDX-License-Identifier: GPL-2.0

//! RDMA (InfiniBand verbs) providers.
//!
//! C header: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h)
//!
//! A provider driver implements [`Operations`] (a `#[vtable]` trait: only the callbacks it
//! implements are given to the RDMA core), allocates an [`UnregisteredDevice`] holding its
//! per-device data, configures it, and registers it, getting a [`Registration`] whose drop
//! unregisters and frees the device (unregistered earlier if the parent's unbinding comes
//! first). Callbacks receive `&Device<T>`, which dereferences to the
//! driver's data.
//!
//! Objects the RDMA core allocates on the driver's behalf (user contexts, protection domains)
//! carry driver data of the types [`Operations::UserContext`] and [`Operations::Pd`]: the driver's
//! `alloc_*` callback returns the value, its `dealloc_*` callback gets it back by value.
//!
//! Code outside callbacks that must reach the registered device (an interrupt handler posting a
//! port event, a network device notifier changing the port's network device) uses a
//! [`DeviceHandle`]: it works while the device is registered and does nothing afterwards.

mod ah;
mod attr;
mod counters;
mod cq;
mod device;
mod event;
mod mmap;
mod mr;
mod objects;
mod ops;
mod qp;
mod restrack;
mod srq;
mod sysfs;
mod table;
mod udata;
mod umem;
mod wc;
mod wr;

pub use ah::{Ah, AhAttr};
pub use attr::{device_cap, port_cap, DeviceAttr, GidAttr, PortAttr, PortImmutable};
pub use counters::CounterDesc;
pub use cq::{Cq, CqEvent, CqFlag, CqFlags, CqInitAttr, DestroyingCq};
pub use device::{
    Device, DeviceHandle, DeviceName, RegisteredDevice, Registration, UnregisteredDevice,
};
pub use mr::{Access, AccessFlags, Mr, MrKeys, MrType};
pub use objects::{NewUserContext, Pd, UserContext};
pub use ops::Operations;
pub use qp::{
    modify_qp_is_ok, Qp, QpAltPath, QpAttr, QpAttrFlag, QpAttrMask, QpCap, QpEvent, QpInitAttr,
    QpModifyAttr, QpQuery, QpState, QpType,
};
pub use restrack::ResEntry;
pub use srq::{srq_attr_mask, Srq, SrqAttr, SrqEvent, SrqModifyAttr, SrqType};
pub use sysfs::{AttributeArray, AttributeGroup, DeviceAttribute, ShowFn};
pub use table::TableIndex;
pub use udata::UData;
pub use umem::{Umem, UserCqBuffer};
pub use wc::{
    NetworkType, NotifyFlags, WcFlag, WcFlags, WcOpcode, WcSink, WcStatus, WorkCompletion,
};
pub use wr::{
    AtomicFields, RdmaFields, RecvWr, RecvWrs, RegFields, SendFlag, SendFlags, SendWr, SendWrs,
    Sge, UdFields, WrId, WrOpcode,
};

use crate::bindings;

/// Identifies a provider driver to user space (C's `enum rdma_driver_id`); rdma-core loads the
/// provider library registered for this id.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct DriverId(bindings::rdma_driver_id);

impl DriverId {
    /// No user-space provider binds by driver ID.
    pub const UNKNOWN: Self = Self(bindings::rdma_driver_id_RDMA_DRIVER_UNKNOWN);
    /// Mellanox/NVIDIA ConnectX-4 and later (`mlx5_ib`).
    pub const MLX5: Self = Self(bindings::rdma_driver_id_RDMA_DRIVER_MLX5);
    /// Mellanox ConnectX-3 (`mlx4_ib`).
    pub const MLX4: Self = Self(bindings::rdma_driver_id_RDMA_DRIVER_MLX4);
    /// Chelsio T3 (removed driver; the value stays reserved).
    pub const CXGB3: Self = Self(bindings::rdma_driver_id_RDMA_DRIVER_CXGB3);
    /// Chelsio T4 and later (`iw_cxgb4`).
    pub const CXGB4: Self = Self(bindings::rdma_driver_id_RDMA_DRIVER_CXGB4);
    /// Mellanox InfiniHost (`ib_mthca`).
    pub const MTHCA: Self = Self(bindings::rdma_driver_id_RDMA_DRIVER_MTHCA);
    /// Broadcom NetXtreme-E (`bnxt_re`).
    pub const BNXT_RE: Self = Self(bindings::rdma_driver_id_RDMA_DRIVER_BNXT_RE);
    /// Emulex OneConnect (`ocrdma`).
    pub const OCRDMA: Self = Self(bindings::rdma_driver_id_RDMA_DRIVER_OCRDMA);
    /// NetEffect (removed driver; the value stays reserved).
    pub const NES: Self = Self(bindings::rdma_driver_id_RDMA_DRIVER_NES);
    /// Intel Ethernet (`irdma`; formerly `i40iw`, same value).
    pub const IRDMA: Self = Self(bindings::rdma_driver_id_RDMA_DRIVER_I40IW);
    /// VMware's paravirtual RDMA device (`vmw_pvrdma`).
    pub const VMW_PVRDMA: Self = Self(bindings::rdma_driver_id_RDMA_DRIVER_VMW_PVRDMA);
    /// Marvell FastLinQ (`qedr`).
    pub const QEDR: Self = Self(bindings::rdma_driver_id_RDMA_DRIVER_QEDR);
    /// HiSilicon (`hns_roce`).
    pub const HNS: Self = Self(bindings::rdma_driver_id_RDMA_DRIVER_HNS);
    /// Cisco usNIC (`usnic_verbs`).
    pub const USNIC: Self = Self(bindings::rdma_driver_id_RDMA_DRIVER_USNIC);
    /// Soft RoCE (`rdma_rxe`).
    pub const RXE: Self = Self(bindings::rdma_driver_id_RDMA_DRIVER_RXE);
    /// Cornelis Omni-Path (`hfi1`).
    pub const HFI1: Self = Self(bindings::rdma_driver_id_RDMA_DRIVER_HFI1);
    /// QLogic InfiniPath (`ib_qib`).
    pub const QIB: Self = Self(bindings::rdma_driver_id_RDMA_DRIVER_QIB);
    /// Amazon Elastic Fabric Adapter (`efa`).
    pub const EFA: Self = Self(bindings::rdma_driver_id_RDMA_DRIVER_EFA);
    /// Soft iWARP (`siw`).
    pub const SIW: Self = Self(bindings::rdma_driver_id_RDMA_DRIVER_SIW);
    /// Alibaba Elastic RDMA (`erdma`).
    pub const ERDMA: Self = Self(bindings::rdma_driver_id_RDMA_DRIVER_ERDMA);
    /// Microsoft Azure Network Adapter (`mana_ib`).
    pub const MANA: Self = Self(bindings::rdma_driver_id_RDMA_DRIVER_MANA);
    /// AMD Pensando (`ionic_rdma`).
    pub const IONIC: Self = Self(bindings::rdma_driver_id_RDMA_DRIVER_IONIC);

    /// The C value.
    pub const fn as_raw(self) -> bindings::rdma_driver_id {
        self.0
    }
}

/// A 128-bit global identifier (C's `union ib_gid`), in network byte order.
#[derive(Clone, Copy, PartialEq, Eq, Default, Debug)]
#[repr(transparent)]
pub struct Gid(pub [u8; 16]);

impl Gid {
    /// The all-zero GID (an empty table entry).
    pub const ZERO: Self = Self([0; 16]);

    /// Whether this is the all-zero GID.
    pub fn is_zero(&self) -> bool {
        self.0 == [0; 16]
    }

    /// Whether the GID is a multicast address, as C's `rdma_is_multicast_addr()` says: an IPv6
    /// multicast address (`ff00::/8`), or an IPv4 multicast address (`224.0.0.0/4`) in RoCE's
    /// IPv4-mapped form (`::ffff:a.b.c.d`).
    ///
    /// # Examples
    ///
    /// ```
    /// use kernel::rdma::Gid;
    ///
    /// let mut ipv6 = [0u8; 16];
    /// ipv6[0] = 0xff;
    /// ipv6[1] = 0x02;
    /// ipv6[15] = 1;
    /// assert!(Gid(ipv6).is_multicast());
    ///
    /// let ipv4_mapped = |a: u8| {
    ///     let mut g = [0u8; 16];
    ///     g[10] = 0xff;
    ///     g[11] = 0xff;
    ///     g[12..].copy_from_slice(&[a, 0, 0, 1]);
    ///     Gid(g)
    /// };
    /// assert!(ipv4_mapped(224).is_multicast());
    /// assert!(ipv4_mapped(239).is_multicast());
    /// assert!(!ipv4_mapped(192).is_multicast());
    /// assert!(!ipv4_mapped(240).is_multicast());
    /// assert!(!Gid::ZERO.is_multicast());
    /// ```
    pub fn is_multicast(&self) -> bool {
        let g = &self.0;
        let v4_mapped = g[..10] == [0; 10] && g[10] == 0xff && g[11] == 0xff;
        g[0] == 0xff || (v4_mapped && g[12] & 0xf0 == 0xe0)
    }
}

/// The kind of a GID (C's `enum ib_gid_type`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum GidType {
    /// InfiniBand.
    Ib,
    /// RoCE v1 (RoCE over Ethernet).
    RoceV1,
    /// RoCE v2 (RoCE over UDP/IP).
    RoceV2,
}

/// The link layer of a port (C's `enum rdma_link_layer`).
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum LinkLayer {
    /// InfiniBand.
    InfiniBand,
    /// Ethernet (RoCE).
    Ethernet,
}

impl LinkLayer {
    fn as_raw(self) -> bindings::rdma_link_layer {
        match self {
            Self::InfiniBand => bindings::rdma_link_layer_IB_LINK_LAYER_INFINIBAND,
            Self::Ethernet => bindings::rdma_link_layer_IB_LINK_LAYER_ETHERNET,
        }
    }
}

/// An asynchronous event about a port or the whole device (a subset of C's
/// `enum ib_event_type`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum PortEvent {
    /// The port became active.
    Active,
    /// The port went down.
    Error,
    /// The LID changed (InfiniBand ports only).
    LidChange,
    /// The P_Key table changed.
    PkeyChange,
    /// The subnet manager changed (InfiniBand ports only).
    SmChange,
    /// Clients must re-register with the subnet manager (InfiniBand ports only).
    ClientReregister,
    /// The GID table changed.
    GidChange,
    /// The device failed.
    DeviceFatal,
}

impl PortEvent {
    /// Whether the event is about InfiniBand's subnet management (LIDs, the subnet manager),
    /// which ports of other protocols (RoCE, iWARP) do not have.
    pub(crate) fn is_ib_only(self) -> bool {
        matches!(
            self,
            Self::LidChange | Self::SmChange | Self::ClientReregister
        )
    }

    pub(crate) fn as_raw(self) -> bindings::ib_event_type {
        match self {
            Self::Active => bindings::ib_event_type_IB_EVENT_PORT_ACTIVE,
            Self::Error => bindings::ib_event_type_IB_EVENT_PORT_ERR,
            Self::LidChange => bindings::ib_event_type_IB_EVENT_LID_CHANGE,
            Self::PkeyChange => bindings::ib_event_type_IB_EVENT_PKEY_CHANGE,
            Self::SmChange => bindings::ib_event_type_IB_EVENT_SM_CHANGE,
            Self::ClientReregister => bindings::ib_event_type_IB_EVENT_CLIENT_REREGISTER,
            Self::GidChange => bindings::ib_event_type_IB_EVENT_GID_CHANGE,
            Self::DeviceFatal => bindings::ib_event_type_IB_EVENT_DEVICE_FATAL,
        }
    }
}

/// Capability bits of a port, for [`PortImmutable::set_core_cap_flags`] (C's
/// `RDMA_CORE_PORT_*`).
pub mod core_cap {
    use crate::bindings;

    /// A RoCE v1 port (C's `RDMA_CORE_PORT_IBA_ROCE`).
    pub const IBA_ROCE: u32 = bindings::RDMA_CORE_CAP_PROT_ROCE
        | bindings::RDMA_CORE_CAP_IB_MAD
        | bindings::RDMA_CORE_CAP_IB_CM
        | bindings::RDMA_CORE_CAP_AF_IB
        | bindings::RDMA_CORE_CAP_ETH_AH;

    /// A RoCE v2 port (C's `RDMA_CORE_PORT_IBA_ROCE_UDP_ENCAP`).
    pub const IBA_ROCE_UDP_ENCAP: u32 = bindings::RDMA_CORE_CAP_PROT_ROCE_UDP_ENCAP
        | bindings::RDMA_CORE_CAP_IB_MAD
        | bindings::RDMA_CORE_CAP_IB_CM
        | bindings::RDMA_CORE_CAP_AF_IB
        | bindings::RDMA_CORE_CAP_ETH_AH;
}

/// The size of a management datagram (C's `IB_MGMT_MAD_SIZE`).
pub const MGMT_MAD_SIZE: u32 = bindings::IB_MGMT_MAD_SIZE;
