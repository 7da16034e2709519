// SPDX-License-Identifier: GPL-2.0

//! The user ABI that rdma-core's `vmw_pvrdma` provider speaks (Linux's
//! `uapi/rdma/vmw_pvrdma-abi.h`): the UAR doorbells, the `udata` of the create verbs, and the
//! work queue entries and completions as laid out in the rings (which kernel QPs and CQs use
//! too). Byte for byte the C layout (x86-64), checked at build time.
//!
//! The send WQE's `wr` union is 48 raw bytes ([`SqWr`]) built from one of its variants
//! ([`SqWrRdma`], [`SqWrAtomic`], ...), each a struct padded to the union's size; the two-member
//! `u32` unions (`ex` of the send WQE) are plain `u32`s.

use core::mem::{offset_of, size_of};
use kernel::pod;

/// Offset of the QP doorbell in a UAR page.
pub(crate) const UAR_QP_OFFSET: usize = 0;
/// QP doorbell bit: new send WQEs.
pub(crate) const UAR_QP_SEND: u32 = 1 << 30;
/// QP doorbell bit: new receive WQEs.
pub(crate) const UAR_QP_RECV: u32 = 1 << 31;
/// Offset of the CQ doorbell in a UAR page.
pub(crate) const UAR_CQ_OFFSET: usize = 4;
/// CQ doorbell bit: arm for solicited completions.
pub(crate) const UAR_CQ_ARM_SOL: u32 = 1 << 29;
/// CQ doorbell bit: arm for any completion.
pub(crate) const UAR_CQ_ARM: u32 = 1 << 30;
/// CQ doorbell bit: poll (make the device move completions into the CQ ring).
pub(crate) const UAR_CQ_POLL: u32 = 1 << 31;

/// Send work request opcodes (`SqWqeHdr::opcode`; NOT 1:1 with `ib_wr_opcode`: C maps them in
/// `ib_wr_opcode_to_pvrdma`).
pub(crate) mod wr_opcode {
    /// RDMA write.
    pub(crate) const RDMA_WRITE: u32 = 0;
    /// RDMA write with immediate.
    pub(crate) const RDMA_WRITE_WITH_IMM: u32 = 1;
    /// Send.
    pub(crate) const SEND: u32 = 2;
    /// Send with immediate.
    pub(crate) const SEND_WITH_IMM: u32 = 3;
    /// RDMA read.
    pub(crate) const RDMA_READ: u32 = 4;
    /// Atomic compare and swap.
    pub(crate) const ATOMIC_CMP_AND_SWP: u32 = 5;
    /// Atomic fetch and add.
    pub(crate) const ATOMIC_FETCH_AND_ADD: u32 = 6;
    /// Send with invalidate.
    pub(crate) const SEND_WITH_INV: u32 = 8;
    /// Local invalidate.
    pub(crate) const LOCAL_INV: u32 = 10;
    /// Fast-register an MR (`IB_WR_REG_MR`).
    pub(crate) const FAST_REG_MR: u32 = 11;
}
/// Completion opcodes (`Cqe::opcode`; NOT 1:1 with `ib_wc_opcode`: C maps them in
/// `pvrdma_wc_opcode_to_ib`).
pub(crate) mod wc_opcode {
    /// Send.
    pub(crate) const SEND: u32 = 0;
    /// RDMA write.
    pub(crate) const RDMA_WRITE: u32 = 1;
    /// RDMA read.
    pub(crate) const RDMA_READ: u32 = 2;
    /// Compare and swap.
    pub(crate) const COMP_SWAP: u32 = 3;
    /// Fetch and add.
    pub(crate) const FETCH_ADD: u32 = 4;
    /// Local invalidate.
    pub(crate) const LOCAL_INV: u32 = 7;
    /// Fast-register MR.
    pub(crate) const FAST_REG_MR: u32 = 8;
    /// Receive.
    pub(crate) const RECV: u32 = 1 << 7;
    /// Receive of an RDMA write with immediate.
    pub(crate) const RECV_RDMA_WITH_IMM: u32 = (1 << 7) + 1;
}
/// Completion flags (`Cqe::wc_flags`; 1:1 with `ib_wc_flags`).
pub(crate) mod wc_flags {
    /// A GRH is in the first 40 bytes of the receive buffer.
    pub(crate) const GRH: u32 = 1 << 0;
    /// `imm_data` is valid.
    pub(crate) const WITH_IMM: u32 = 1 << 1;
    /// The send invalidated an rkey.
    pub(crate) const WITH_INVALIDATE: u32 = 1 << 2;
    /// The IP checksum was verified.
    pub(crate) const IP_CSUM_OK: u32 = 1 << 3;
    /// `smac` is valid.
    pub(crate) const WITH_SMAC: u32 = 1 << 4;
    /// The packet had a VLAN tag.
    pub(crate) const WITH_VLAN: u32 = 1 << 5;
    /// `network_hdr_type` is valid.
    pub(crate) const WITH_NETWORK_HDR_TYPE: u32 = 1 << 6;
}
/// Network header types (`Cqe::network_hdr_type`; NOT 1:1 with `rdma_network_type`: C maps
/// them in `pvrdma_network_type_to_ib`).
pub(crate) mod network_type {
    /// InfiniBand / RoCE v1 (same value).
    pub(crate) const IB: u8 = 0;
    /// RoCE v1 (same value as [`IB`]).
    pub(crate) const ROCE_V1: u8 = IB;
    /// RoCE v2 over IPv4.
    pub(crate) const IPV4: u8 = 1;
}

pod! {
    /// User ABI: the response to allocating a user context.
    #[repr(C)]
    pub(crate) struct UctxResp {
        pub(crate) qp_tab_size: u32,
        pub(crate) reserved: u32,
    }

    /// User ABI: the response to allocating a PD.
    #[repr(C)]
    pub(crate) struct PdResp {
        pub(crate) pdn: u32,
        pub(crate) reserved: u32,
    }
}

pod! {
    /// User ABI `pvrdma_create_cq`: the user's CQ ring buffer.
    #[repr(C)]
    pub(crate) struct UserCreateCq {
        pub(crate) buf_addr: u64,
        pub(crate) buf_size: u32,
        pub(crate) reserved: u32,
    }

    /// User ABI `pvrdma_create_cq_resp`.
    #[repr(C)]
    pub(crate) struct UserCreateCqResp {
        /// The CQ's handle.
        pub(crate) cqn: u32,
        pub(crate) reserved: u32,
    }

    /// User ABI `pvrdma_create_srq`: the user's SRQ ring buffer.
    #[repr(C)]
    pub(crate) struct UserCreateSrq {
        pub(crate) buf_addr: u64,
        pub(crate) buf_size: u32,
        pub(crate) reserved: u32,
    }

    /// User ABI `pvrdma_create_srq_resp`.
    #[repr(C)]
    pub(crate) struct UserCreateSrqResp {
        /// The SRQ's handle.
        pub(crate) srqn: u32,
        pub(crate) reserved: u32,
    }

    /// User ABI `pvrdma_create_qp`: the user's receive and send ring buffers.
    #[repr(C)]
    pub(crate) struct UserCreateQp {
        pub(crate) rbuf_addr: u64,
        pub(crate) sbuf_addr: u64,
        pub(crate) rbuf_size: u32,
        pub(crate) sbuf_size: u32,
        pub(crate) qp_addr: u64,
    }

    /// User ABI `pvrdma_create_qp_resp`: C copies `min(outlen, 8)` bytes, and refuses
    /// (`EOPNOTSUPP`) a provider with a shorter `outlen` on devices from [`VERSION_QPHANDLE`] on.
    #[repr(C)]
    pub(crate) struct UserCreateQpResp {
        pub(crate) qpn: u32,
        /// The handle for the QP doorbell (`qpn` on devices before [`VERSION_QPHANDLE`]).
        pub(crate) qp_handle: u32,
    }
}

/// Writing a plain value's bytes in memory order, to build a union from one of its members.
trait Encode {
    /// Writes `self` into `out`, which is `size_of::<Self>()` bytes long.
    fn encode(&self, out: &mut [u8]);
}

/// Implements [`Encode`] for integer types: their bytes in native order, as in memory.
///
/// Byte by byte rather than `copy_from_slice`, whose length check can only fail if the caller
/// broke `encode`'s contract: its panic path calls a function of Rust 1.96's `core`
/// (`copy_from_slice_impl::len_mismatch_fail`) that Linux 7.3's objtool does not know cannot
/// return, and the kernel without debug assertions warned that these functions fall through.
macro_rules! encode_int {
    ($($int:ty),*) => {$(
        impl Encode for $int {
            fn encode(&self, out: &mut [u8]) {
                for (to, byte) in out.iter_mut().zip(self.to_ne_bytes()) {
                    *to = byte;
                }
            }
        }
    )*};
}

encode_int!(u8, u16, u32, u64);

impl<const N: usize> Encode for [u8; N] {
    fn encode(&self, out: &mut [u8]) {
        out.copy_from_slice(self);
    }
}

/// [`pod!`] structs that also implement [`Encode`], field by field at each field's offset (the
/// field list is `pod!`'s, so none can be left out).
macro_rules! pod_encoded {
    ($(
        $(#[$attr:meta])*
        $vis:vis struct $name:ident {
            $($(#[$fattr:meta])* $fvis:vis $field:ident : $ty:ty),* $(,)?
        }
    )*) => {
        pod! {$(
            $(#[$attr])*
            $vis struct $name {
                $($(#[$fattr])* $fvis $field : $ty),*
            }
        )*}

        $(impl Encode for $name {
            fn encode(&self, out: &mut [u8]) {
                $(self.$field.encode(&mut out[offset_of!($name, $field)..][..size_of::<$ty>()]);)*
            }
        })*
    };
}

pod_encoded! {
    /// `struct pvrdma_av`: the address vector of a UD send.
    #[repr(C)]
    pub(crate) struct Av {
        /// Port number in bits 24..32, PD handle in bits 0..24.
        pub(crate) port_pd: u32,
        /// Traffic class in bits 20..28, flow label in bits 0..20 (as C's `create_ah` fills it).
        pub(crate) sl_tclass_flowlabel: u32,
        pub(crate) dgid: [u8; 16],
        /// C's `create_ah` also sets bit 7.
        pub(crate) src_path_bits: u8,
        pub(crate) gid_index: u8,
        pub(crate) stat_rate: u8,
        pub(crate) hop_limit: u8,
        pub(crate) dmac: [u8; 6],
        pub(crate) reserved: [u8; 6],
    }

    /// `wr.rdma` of a send WQE (RDMA read and write), padded to the union's 48 bytes.
    #[repr(C)]
    pub(crate) struct SqWrRdma {
        pub(crate) remote_addr: u64,
        pub(crate) rkey: u32,
        pub(crate) reserved: [u8; 4],
        /// Past the C member: the rest of the union.
        pub(crate) pad: [u8; 32],
    }

    /// `wr.atomic` of a send WQE (compare and swap, fetch and add), padded to 48 bytes.
    #[repr(C)]
    pub(crate) struct SqWrAtomic {
        pub(crate) remote_addr: u64,
        pub(crate) compare_add: u64,
        pub(crate) swap: u64,
        pub(crate) rkey: u32,
        pub(crate) reserved: u32,
        /// Past the C member: the rest of the union.
        pub(crate) pad: [u8; 16],
    }

    /// `wr.fast_reg` of a fast-register send WQE, padded to 48 bytes.
    #[repr(C)]
    pub(crate) struct SqWrFastReg {
        pub(crate) iova_start: u64,
        /// Bus address of the page list's page directory.
        pub(crate) pl_pdir_dma: u64,
        pub(crate) page_shift: u32,
        pub(crate) page_list_len: u32,
        pub(crate) length: u32,
        /// [`access`] bits.
        pub(crate) access_flags: u32,
        pub(crate) rkey: u32,
        pub(crate) reserved: u32,
        /// Past the C member: the rest of the union.
        pub(crate) pad: [u8; 8],
    }

    /// `wr.ud` of a send WQE on a UD (or GSI) QP (exactly the union's 48 bytes).
    #[repr(C)]
    pub(crate) struct SqWrUd {
        pub(crate) remote_qpn: u32,
        pub(crate) remote_qkey: u32,
        pub(crate) av: Av,
    }
}

pod! {
    /// The `wr` union of a send WQE, as raw bytes: build it from a variant with `From`
    /// ([`SqWrRdma`], [`SqWrAtomic`], [`SqWrFastReg`], [`SqWrUd`]); all zeroes (`Default`) for
    /// sends that use none.
    #[repr(C, align(8))]
    pub(crate) struct SqWr {
        pub(crate) raw: [u8; 48],
    }

    /// `struct pvrdma_sq_wqe_hdr`: a send WQE, followed in the ring by `num_sge` [`Sge`]s.
    #[repr(C)]
    pub(crate) struct SqWqeHdr {
        pub(crate) wr_id: u64,
        pub(crate) num_sge: u32,
        pub(crate) total_len: u32,
        /// A [`wr_opcode`].
        pub(crate) opcode: u32,
        /// [`send_flags`] bits.
        pub(crate) send_flags: u32,
        /// Union `ex`: `imm_data` (big-endian, as the verbs layer holds it) or
        /// `invalidate_rkey`.
        pub(crate) ex: u32,
        pub(crate) reserved: u32,
        pub(crate) wr: SqWr,
    }

    /// `struct pvrdma_sge`: a scatter/gather element.
    #[repr(C)]
    pub(crate) struct Sge {
        pub(crate) addr: u64,
        pub(crate) length: u32,
        pub(crate) lkey: u32,
    }

    /// `struct pvrdma_rq_wqe_hdr`: a receive WQE, followed in the ring by `num_sge` [`Sge`]s.
    #[repr(C)]
    pub(crate) struct RqWqeHdr {
        pub(crate) wr_id: u64,
        pub(crate) num_sge: u32,
        pub(crate) total_len: u32,
    }

    /// `struct pvrdma_cqe`: a completion queue element.
    #[repr(C)]
    pub(crate) struct Cqe {
        pub(crate) wr_id: u64,
        /// The QP's handle.
        pub(crate) qp: u64,
        /// A [`wc_opcode`].
        pub(crate) opcode: u32,
        /// A [`wc_status`].
        pub(crate) status: u32,
        pub(crate) byte_len: u32,
        /// Big-endian.
        pub(crate) imm_data: u32,
        pub(crate) src_qp: u32,
        /// [`wc_flags`] bits.
        pub(crate) wc_flags: u32,
        pub(crate) vendor_err: u32,
        pub(crate) pkey_index: u16,
        pub(crate) slid: u16,
        pub(crate) sl: u8,
        pub(crate) dlid_path_bits: u8,
        pub(crate) port_num: u8,
        pub(crate) smac: [u8; 6],
        /// A [`network_type`].
        pub(crate) network_hdr_type: u8,
        pub(crate) reserved2: [u8; 6],
    }
}

/// Offset of the `wr` union in a send WQE.
pub(crate) const SQ_WQE_WR_OFFSET: usize = offset_of!(SqWqeHdr, wr);

impl SqWr {
    /// The union holding `member`, which must be exactly the union's size.
    fn from_member<T: Encode>(member: &T) -> Self {
        const { assert!(size_of::<T>() == size_of::<SqWr>()) };
        let mut wr = Self::default();
        member.encode(&mut wr.raw);
        wr
    }
}

/// Implements `From<$variant> for SqWr` for each variant.
macro_rules! sq_wr_from {
    ($($variant:ty),*) => {$(
        impl From<$variant> for SqWr {
            fn from(member: $variant) -> Self {
                Self::from_member(&member)
            }
        }
    )*};
}

sq_wr_from!(SqWrRdma, SqWrAtomic, SqWrFastReg, SqWrUd);

const _: () = {
    use core::mem::align_of;

    assert!(size_of::<UserCreateCq>() == 16);
    assert!(size_of::<UserCreateCqResp>() == 8);
    assert!(size_of::<UserCreateSrq>() == 16);
    assert!(size_of::<UserCreateSrqResp>() == 8);
    assert!(size_of::<UserCreateQp>() == 32);
    assert!(size_of::<UserCreateQpResp>() == 8);
    assert!(size_of::<Av>() == 40);
    assert!(size_of::<Sge>() == 16);
    assert!(size_of::<RqWqeHdr>() == 16);
    assert!(size_of::<SqWqeHdr>() == 80);
    assert!(SQ_WQE_WR_OFFSET == 32);
    assert!(size_of::<SqWr>() == 48 && align_of::<SqWr>() == 8);
    assert!(size_of::<SqWrRdma>() == size_of::<SqWr>());
    assert!(size_of::<SqWrAtomic>() == size_of::<SqWr>());
    assert!(size_of::<SqWrFastReg>() == size_of::<SqWr>());
    assert!(size_of::<SqWrUd>() == size_of::<SqWr>());
    assert!(offset_of!(SqWrUd, av) == 8);
    assert!(size_of::<Cqe>() == 64);
    assert!(offset_of!(Cqe, smac) == 51);
    assert!(offset_of!(Cqe, network_hdr_type) == 57);
};
