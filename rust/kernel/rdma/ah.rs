// SPDX-License-Identifier: GPL-2.0

//! Address handles and address vectors.

use super::{objects::core_object, Gid};
use crate::bindings;

core_object!(
    /// A live address handle of driver `T`; dereferences to its data.
    Ah, AhStorage, ib_ah, Ah, take
);

/// An address vector (C's `struct rdma_ah_attr`, RoCE flavour: global route plus MAC).
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct AhAttr {
    /// Destination GID.
    pub dgid: Gid,
    /// Flow label.
    pub flow_label: u32,
    /// Source GID index.
    pub sgid_index: u8,
    /// Hop limit.
    pub hop_limit: u8,
    /// Traffic class.
    pub traffic_class: u8,
    /// Service level.
    pub sl: u8,
    /// Static rate.
    pub static_rate: u8,
    /// Port.
    pub port_num: u32,
    /// C's `IB_AH_GRH` and friends.
    pub ah_flags: u8,
    /// Destination MAC.
    pub dmac: [u8; 6],
    /// Whether the vector is a RoCE one (C's `RDMA_AH_ATTR_TYPE_ROCE`), which carries the MAC.
    pub roce: bool,
}

impl AhAttr {
    /// Reads an address vector. Only RoCE address vectors carry a MAC.
    pub(super) fn from_raw(a: &bindings::rdma_ah_attr) -> Self {
        let roce = a.type_ == bindings::rdma_ah_attr_type_RDMA_AH_ATTR_TYPE_ROCE;
        let dmac = if roce {
            // SAFETY: The type says the union holds the RoCE member.
            unsafe { a.__bindgen_anon_1.roce.dmac }
        } else {
            [0; 6]
        };
        Self {
            // SAFETY: Any 16 bytes are a valid `raw` view of the GID union.
            dgid: Gid(unsafe { a.grh.dgid.raw }),
            flow_label: a.grh.flow_label,
            sgid_index: a.grh.sgid_index,
            hop_limit: a.grh.hop_limit,
            traffic_class: a.grh.traffic_class,
            sl: a.sl,
            static_rate: a.static_rate,
            port_num: a.port_num,
            ah_flags: a.ah_flags,
            dmac,
            roce,
        }
    }

    /// Writes a RoCE address vector (no GID attribute reference: queries do not take one).
    pub(super) fn write_raw(&self, a: &mut bindings::rdma_ah_attr) {
        a.grh.sgid_attr = core::ptr::null();
        a.grh.dgid.raw = self.dgid.0;
        a.grh.flow_label = self.flow_label;
        a.grh.sgid_index = self.sgid_index;
        a.grh.hop_limit = self.hop_limit;
        a.grh.traffic_class = self.traffic_class;
        a.sl = self.sl;
        a.static_rate = self.static_rate;
        a.port_num = self.port_num;
        a.ah_flags = self.ah_flags;
        a.type_ = bindings::rdma_ah_attr_type_RDMA_AH_ATTR_TYPE_ROCE;
        a.__bindgen_anon_1.roce = bindings::roce_ah_attr { dmac: self.dmac };
    }
}
