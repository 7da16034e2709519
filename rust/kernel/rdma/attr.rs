// SPDX-License-Identifier: GPL-2.0

//! Attributes a provider reports: of the device, of ports, of GID table entries.

use super::{Gid, GidType};
use crate::{bindings, net, str::Formatter, types::Opaque};

/// Generates setters that write one field of the wrapped C struct each.
macro_rules! setters {
    ($($(#[$m:meta])* $name:ident($field:ident): $t:ty => |$v:ident| $conv:expr;)*) => {
        $(
            $(#[$m])*
            pub fn $name(&mut self, $v: $t) -> &mut Self {
                // SAFETY: The wrapped struct is valid for writes for as long as `self` is
                // borrowed (type invariant).
                unsafe { (*self.0.get()).$field = $conv };
                self
            }
        )*
    };
}

/// The device attributes a provider reports (C's `struct ib_device_attr`), written through
/// setters. Fields not set stay zero.
///
/// # Invariants
///
/// Wraps a `struct ib_device_attr` that the caller of the callback lets us write.
#[repr(transparent)]
pub struct DeviceAttr(Opaque<bindings::ib_device_attr>);

impl DeviceAttr {
    /// # Safety
    ///
    /// `ptr` must be valid for reads and writes, and not otherwise accessed, for `'a`.
    pub(super) unsafe fn from_raw<'a>(ptr: *mut bindings::ib_device_attr) -> &'a mut Self {
        // SAFETY: Transparent wrapper; validity guaranteed by the caller.
        unsafe { &mut *ptr.cast() }
    }

    setters! {
        /// Firmware version.
        set_fw_ver(fw_ver): u64 => |v| v;
        /// System image GUID, in network byte order.
        set_sys_image_guid(sys_image_guid): u64 => |v| v;
        /// Largest memory region, in bytes.
        set_max_mr_size(max_mr_size): u64 => |v| v;
        /// Supported page sizes (a bit per size).
        set_page_size_cap(page_size_cap): u64 => |v| v;
        /// Vendor ID.
        set_vendor_id(vendor_id): u32 => |v| v;
        /// Vendor part ID.
        set_vendor_part_id(vendor_part_id): u32 => |v| v;
        /// Hardware version.
        set_hw_ver(hw_ver): u32 => |v| v;
        /// Maximum number of QPs.
        set_max_qp(max_qp): u32 => |v| v;
        /// Maximum work requests per QP.
        set_max_qp_wr(max_qp_wr): u32 => |v| v;
        /// Device capability flags (C's `IB_DEVICE_*`).
        set_device_cap_flags(device_cap_flags): u64 => |v| v;
        /// Maximum scatter/gather entries per send work request.
        set_max_send_sge(max_send_sge): u32 => |v| v;
        /// Maximum scatter/gather entries per receive work request.
        set_max_recv_sge(max_recv_sge): u32 => |v| v;
        /// Maximum scatter/gather entries per RDMA read.
        set_max_sge_rd(max_sge_rd): u32 => |v| v;
        /// Maximum number of CQs.
        set_max_cq(max_cq): u32 => |v| v;
        /// Maximum entries per CQ.
        set_max_cqe(max_cqe): u32 => |v| v;
        /// Maximum number of memory regions.
        set_max_mr(max_mr): u32 => |v| v;
        /// Maximum number of protection domains.
        set_max_pd(max_pd): u32 => |v| v;
        /// Maximum outstanding RDMA reads/atomics per QP, as target.
        set_max_qp_rd_atom(max_qp_rd_atom): u32 => |v| v;
        /// Maximum outstanding RDMA reads/atomics per QP, as initiator.
        set_max_qp_init_rd_atom(max_qp_init_rd_atom): u32 => |v| v;
        /// Maximum number of address handles.
        set_max_ah(max_ah): u32 => |v| v;
        /// Maximum number of SRQs.
        set_max_srq(max_srq): u32 => |v| v;
        /// Maximum work requests per SRQ.
        set_max_srq_wr(max_srq_wr): u32 => |v| v;
        /// Maximum scatter/gather entries per SRQ work request.
        set_max_srq_sge(max_srq_sge): u32 => |v| v;
        /// Maximum pages in a fast-registration page list.
        set_max_fast_reg_page_list_len(max_fast_reg_page_list_len): u32 => |v| v;
        /// Number of P_Keys.
        set_max_pkeys(max_pkeys): u16 => |v| v;
        /// Local CA ACK delay.
        set_local_ca_ack_delay(local_ca_ack_delay): u8 => |v| v;
        /// Whether atomic operations are supported (device-wide, C's `IB_ATOMIC_HCA`) or not.
        set_atomic_hca(atomic_cap): bool => |v| if v {
            bindings::ib_atomic_cap_IB_ATOMIC_HCA
        } else {
            bindings::ib_atomic_cap_IB_ATOMIC_NONE
        };
        /// Whether masked atomic operations are supported device-wide, or not.
        set_masked_atomic_hca(masked_atomic_cap): bool => |v| if v {
            bindings::ib_atomic_cap_IB_ATOMIC_HCA
        } else {
            bindings::ib_atomic_cap_IB_ATOMIC_NONE
        };
    }

    /// Device capability flags set so far.
    pub fn device_cap_flags(&self) -> u64 {
        // SAFETY: The wrapped struct is valid for reads (type invariant).
        unsafe { (*self.0.get()).device_cap_flags }
    }
}

/// Device capability flags (C's `enum ib_device_cap_flags`).
pub mod device_cap {
    use crate::bindings;

    /// The device reports port-active events.
    pub const PORT_ACTIVE_EVENT: u64 =
        bindings::ib_device_cap_flags_IB_DEVICE_PORT_ACTIVE_EVENT as u64;
    /// RC QPs generate RNR NAKs.
    pub const RC_RNR_NAK_GEN: u64 = bindings::ib_device_cap_flags_IB_DEVICE_RC_RNR_NAK_GEN as u64;
    /// Memory management extensions (fast registration, local invalidate).
    pub const MEM_MGT_EXTENSIONS: u64 =
        bindings::ib_device_cap_flags_IB_DEVICE_MEM_MGT_EXTENSIONS as u64;
}

/// The attributes of a port (C's `struct ib_port_attr`), written through setters. Fields not
/// set stay zero.
///
/// # Invariants
///
/// Wraps a `struct ib_port_attr` that the caller of the callback lets us write.
#[repr(transparent)]
pub struct PortAttr(Opaque<bindings::ib_port_attr>);

impl PortAttr {
    /// # Safety
    ///
    /// `ptr` must be valid for reads and writes, and not otherwise accessed, for `'a`.
    pub(super) unsafe fn from_raw<'a>(ptr: *mut bindings::ib_port_attr) -> &'a mut Self {
        // SAFETY: Transparent wrapper; validity guaranteed by the caller.
        unsafe { &mut *ptr.cast() }
    }

    setters! {
        /// Port state (C's `enum ib_port_state`: 1 down, 2 init, 3 armed, 4 active).
        set_state(state): u32 => |v| v;
        /// Largest MTU (C's `enum ib_mtu`: 1 = 256 ... 5 = 4096).
        set_max_mtu(max_mtu): u32 => |v| v;
        /// Active MTU (C's `enum ib_mtu`).
        set_active_mtu(active_mtu): u32 => |v| v;
        /// GID table length.
        set_gid_tbl_len(gid_tbl_len): u32 => |v| i32::try_from(v).unwrap_or(i32::MAX);
        /// Port capability flags (C's `IB_PORT_*`).
        set_port_cap_flags(port_cap_flags): u32 => |v| v;
        /// Largest message, in bytes.
        set_max_msg_sz(max_msg_sz): u32 => |v| v;
        /// Bad P_Key counter.
        set_bad_pkey_cntr(bad_pkey_cntr): u32 => |v| v;
        /// Q_Key violation counter.
        set_qkey_viol_cntr(qkey_viol_cntr): u32 => |v| v;
        /// P_Key table length.
        set_pkey_tbl_len(pkey_tbl_len): u16 => |v| v;
        /// LID.
        set_lid(lid): u32 => |v| v;
        /// Subnet manager's LID.
        set_sm_lid(sm_lid): u32 => |v| v;
        /// LID mask control.
        set_lmc(lmc): u8 => |v| v;
        /// Number of virtual lanes.
        set_max_vl_num(max_vl_num): u8 => |v| v;
        /// Subnet manager's service level.
        set_sm_sl(sm_sl): u8 => |v| v;
        /// Subnet timeout.
        set_subnet_timeout(subnet_timeout): u8 => |v| v;
        /// Init type reply.
        set_init_type_reply(init_type_reply): u8 => |v| v;
        /// Active link width (C's `enum ib_port_width`).
        set_active_width(active_width): u8 => |v| v;
        /// Active link speed (C's `enum ib_port_speed`).
        set_active_speed(active_speed): u16 => |v| v;
        /// Physical port state (C's `enum ib_port_phys_state`, 5 = link up).
        set_phys_state(phys_state): u8 => |v| v;
    }

    /// Whether the GIDs come from IP addresses (RoCE).
    pub fn set_ip_gids(&mut self, v: bool) -> &mut Self {
        // SAFETY: The wrapped struct is valid for writes (type invariant).
        unsafe { (*self.0.get()).set_ip_gids(v.into()) };
        self
    }

    /// Port capability flags set so far.
    pub fn port_cap_flags(&self) -> u32 {
        // SAFETY: The wrapped struct is valid for reads (type invariant).
        unsafe { (*self.0.get()).port_cap_flags }
    }
}

/// Port capability flags (C's `enum ib_port_capability_mask_bits`).
pub mod port_cap {
    use crate::bindings;

    /// The port supports the communication manager.
    pub const CM_SUP: u32 = bindings::ib_port_capability_mask_bits_IB_PORT_CM_SUP;
}

/// The attributes of a port that never change (C's `struct ib_port_immutable`).
///
/// # Invariants
///
/// Wraps a `struct ib_port_immutable` that the caller of the callback lets us write.
#[repr(transparent)]
pub struct PortImmutable(Opaque<bindings::ib_port_immutable>);

impl PortImmutable {
    /// # Safety
    ///
    /// `ptr` must be valid for reads and writes, and not otherwise accessed, for `'a`.
    pub(super) unsafe fn from_raw<'a>(ptr: *mut bindings::ib_port_immutable) -> &'a mut Self {
        // SAFETY: Transparent wrapper; validity guaranteed by the caller.
        unsafe { &mut *ptr.cast() }
    }

    setters! {
        /// P_Key table length.
        set_pkey_tbl_len(pkey_tbl_len): u32 => |v| i32::try_from(v).unwrap_or(i32::MAX);
        /// GID table length.
        set_gid_tbl_len(gid_tbl_len): u32 => |v| i32::try_from(v).unwrap_or(i32::MAX);
        /// Protocol capabilities (see [`super::core_cap`]).
        set_core_cap_flags(core_cap_flags): u32 => |v| v;
        /// Largest management datagram (see [`super::MGMT_MAD_SIZE`]).
        set_max_mad_size(max_mad_size): u32 => |v| v;
    }
}

/// A GID table entry being added or removed (C's `struct ib_gid_attr`).
///
/// # Invariants
///
/// Wraps a valid `struct ib_gid_attr`.
#[repr(transparent)]
pub struct GidAttr(Opaque<bindings::ib_gid_attr>);

impl GidAttr {
    /// # Safety
    ///
    /// `ptr` must be valid for reads for `'a`.
    pub(super) unsafe fn from_raw<'a>(ptr: *const bindings::ib_gid_attr) -> &'a Self {
        // SAFETY: Transparent wrapper; validity guaranteed by the caller.
        unsafe { &*ptr.cast() }
    }

    fn raw(&self) -> &bindings::ib_gid_attr {
        // SAFETY: By the type invariant the attribute is valid; the core does not change it
        // during the callback.
        unsafe { &*self.0.get() }
    }

    /// The GID.
    pub fn gid(&self) -> Gid {
        // SAFETY: Every bit pattern of the union is a valid `raw` array.
        Gid(unsafe { self.raw().gid.raw })
    }

    /// The index in the port's GID table.
    pub fn index(&self) -> u32 {
        self.raw().index.into()
    }

    /// The port number.
    pub fn port(&self) -> u32 {
        self.raw().port_num
    }

    /// The kind of GID.
    pub fn gid_type(&self) -> GidType {
        match self.raw().gid_type {
            bindings::ib_gid_type_IB_GID_TYPE_ROCE_UDP_ENCAP => GidType::RoceV2,
            bindings::ib_gid_type_IB_GID_TYPE_ROCE => GidType::RoceV1,
            _ => GidType::Ib,
        }
    }

    /// Whether the entry belongs to network device `ndev`.
    pub fn is_for_netdev(&self, ndev: &net::device::Device) -> bool {
        core::ptr::eq(self.raw().ndev, ndev.as_raw())
    }
}

/// Formats a C string into `buf` with `write`, the way C's `snprintf()` does: what does not fit
/// before the last byte is cut, and a NUL follows what was written.
///
/// [`Formatter`] fails a write that does not fit, after copying what fits of it: a caller that
/// goes on regardless gets the cut string.
pub(super) fn format_c_str(buf: &mut [u8], write: impl FnOnce(&mut Formatter<'_>)) {
    let Some(cap) = buf.len().checked_sub(1) else {
        return;
    };
    let mut out = Formatter::new(&mut buf[..cap]);
    write(&mut out);
    // `bytes_written()` counts what did not fit too, and `write` may have swapped in a formatter
    // of its own: the NUL goes where it stays in `buf` whatever the count.
    let end = out.bytes_written().min(cap);
    buf[end] = 0;
}

#[cfg(CONFIG_RUST_INFINIBAND_KUNIT_TEST)]
#[macros::kunit_tests(rust_rdma_fw_str)]
mod tests {
    use super::*;
    use core::fmt::Write;

    /// The size of the core's firmware version buffers.
    const SIZE: usize = bindings::IB_FW_VERSION_NAME_MAX as usize;

    /// A string that fits is followed by a NUL; the bytes after it are not touched.
    #[test]
    fn fw_str_fits() {
        let mut buf = [0xffu8; SIZE];
        format_c_str(&mut buf, |out| {
            assert!(write!(out, "{}.{}.{}", 3, 0, 1).is_ok());
        });
        assert_eq!(&buf[..6], b"3.0.1\0");
        assert!(buf[6..].iter().all(|&b| b == 0xff));
    }

    /// A string that does not fit is cut before the last byte, which is a NUL; the write that did
    /// not fit fails.
    #[test]
    fn fw_str_cut() {
        let mut buf = [0xffu8; SIZE];
        format_c_str(&mut buf, |out| {
            assert!(out.write_str("1.2.").is_ok());
            assert!(write!(out, "{:0>100}", 7).is_err());
        });
        assert_eq!(&buf[..4], b"1.2.");
        assert!(buf[4..SIZE - 1].iter().all(|&b| b == b'0'));
        assert_eq!(buf[SIZE - 1], 0);
    }

    /// Nothing written is the empty string.
    #[test]
    fn fw_str_empty() {
        let mut buf = [0xffu8; SIZE];
        format_c_str(&mut buf, |_| {});
        assert_eq!(buf[0], 0);
    }
}
