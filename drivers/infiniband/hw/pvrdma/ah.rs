// SPDX-License-Identifier: GPL-2.0

//! Address handles: the device takes the address vector inline in each UD work request, so an
//! AH is just the vector, built once.
//!
//! Layer: RDMA device.

use crate::{abi::Av, device::IbDev};
use kernel::{
    prelude::*,
    rdma::{self, AhAttr},
};

/// C's `IB_AH_GRH`.
const AH_GRH: u8 = 1;

/// An address handle: the address vector UD work requests carry.
pub(crate) struct Ah {
    pub(crate) av: Av,
}

impl Ah {
    /// Creates an AH (see [`rdma::Operations::create_ah`]).
    pub(crate) fn new(
        dev: &rdma::Device<IbDev>,
        pd: &rdma::Pd<IbDev>,
        attr: &AhAttr,
    ) -> Result<Self> {
        // RoCE: every path is global, and multicast is not supported.
        if attr.ah_flags & AH_GRH == 0 || !attr.roce || attr.dgid.is_multicast() {
            return Err(EINVAL);
        }
        let port = u8::try_from(attr.port_num).map_err(|_| EINVAL)?;
        let reservation = dev.counts.ahs.take(dev.caps.max_ah)?;
        let av = Av {
            port_pd: pd.handle | (u32::from(port) << 24),
            // Bit 7: the vector is global.
            src_path_bits: 0x80,
            gid_index: attr.sgid_index,
            hop_limit: attr.hop_limit,
            sl_tclass_flowlabel: (u32::from(attr.traffic_class) << 20) | attr.flow_label,
            dgid: attr.dgid.0,
            dmac: attr.dmac,
            ..Default::default()
        };
        reservation.keep();
        Ok(Self { av })
    }

    /// Destroys an AH.
    pub(crate) fn destroy(self, dev: &rdma::Device<IbDev>) {
        dev.counts.ahs.release();
    }
}
