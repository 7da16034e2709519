// SPDX-License-Identifier: GPL-2.0-only
//! The messages the mux writes to QEMU: RESPs and MAD deliveries.

use pvrdma_fabric::mux_msg::{
    ErrCode, MadAddr, MsgType, MuxMsg, OpCode, UmadHdr, OP_CODE_MAD_RESP, UMAD_HDR_SIZE,
};
use pvrdma_fabric::Gid;

/// The RESP to `req`.
///
/// Only `msg_type` and `err_code` matter to QEMU's synchronous reader. The
/// rest is chosen for the case where the RESP reaches QEMU's asynchronous
/// reader instead (see `race.rs`): the op code is never MAD (so QEMU skips it
/// instead of handing it to the guest), and the MAD part is empty
/// (`umad_len` 0) in case some other reader does process it.
pub fn response(req: &MuxMsg, err: ErrCode) -> MuxMsg {
    let op_code = if req.op_code == OpCode::Mad as u32 {
        OP_CODE_MAD_RESP
    } else {
        req.op_code
    };
    MuxMsg {
        msg_type: MsgType::Resp as u32,
        op_code,
        sgid: req.sgid,
        err_code: err as u32,
        ..MuxMsg::default()
    }
}

/// The unsolicited REQ/MAD that hands `req`'s MAD (sent from `src`) to the
/// guest owning `dest`.
///
/// QEMU's `process_incoming_mad_req` builds the guest's GRH from it: source
/// GID = `umad.hdr.addr.gid`, destination GID = `hdr.sgid`, payload length =
/// `umad_len`. The address fields are what the kernel's umad layer reports
/// for a MAD received on QP1 with a GRH (what the original mux forwarded):
/// sender QPN 1, the sender's hop limit, traffic class and flow label.
/// `mad_len` must be the validated length of `req`'s MAD.
pub fn delivery(req: &MuxMsg, mad_len: usize, src: Gid, dest: Gid) -> MuxMsg {
    let sent = &req.umad.addr;
    let mut mad = [0u8; pvrdma_fabric::mux_msg::MAD_BUF_SIZE];
    mad[..mad_len].copy_from_slice(&req.mad[..mad_len]);
    MuxMsg {
        msg_type: MsgType::Req as u32,
        op_code: OpCode::Mad as u32,
        sgid: dest,
        err_code: ErrCode::Ok as u32,
        umad_len: mad_len as i32,
        umad: UmadHdr {
            length: (UMAD_HDR_SIZE + mad_len) as u32,
            addr: MadAddr {
                qpn: 1,
                grh_present: 1,
                hop_limit: sent.hop_limit,
                traffic_class: sent.traffic_class,
                gid: src,
                flow_label: sent.flow_label,
                ..MadAddr::default()
            },
            ..UmadHdr::default()
        },
        mad,
        gid_type: 0, // a REG's only
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mad_resp_never_says_mad() {
        let req = MuxMsg::mad_request([1; 16], 1, &[1, 7, 2, 3]);
        let r = response(&req, ErrCode::Ok);
        assert_eq!(r.msg_type(), Some(MsgType::Resp));
        assert_ne!(r.op_code, OpCode::Mad as u32);
        assert_eq!(r.umad_len, 0);
        assert_eq!(r.mad, [0; 256]);
        assert_eq!(r.err_code(), Some(ErrCode::Ok));
    }

    #[test]
    fn reg_resp_echoes_op_and_gid() {
        let req = MuxMsg::request(OpCode::Reg, [9; 16]);
        let r = response(&req, ErrCode::Eacces);
        assert_eq!(r.op_code(), Some(OpCode::Reg));
        assert_eq!(r.sgid, [9; 16]);
        assert_eq!(r.err_code(), Some(ErrCode::Eacces));
    }

    #[test]
    fn delivery_addresses_for_qemu() {
        let req = MuxMsg::mad_request([1; 16], 3, &[1, 7, 2, 3, 4]);
        let d = delivery(&req, 5, [1; 16], [2; 16]);
        assert_eq!(d.msg_type(), Some(MsgType::Req));
        assert_eq!(d.op_code(), Some(OpCode::Mad));
        assert_eq!(d.sgid, [2; 16], "hdr.sgid = destination");
        assert_eq!(d.umad.addr.gid, [1; 16], "addr.gid = source");
        assert_eq!(d.umad.addr.qpn, 1);
        assert_eq!(d.umad.addr.grh_present, 1);
        assert_eq!(d.umad.addr.gid_index, 0);
        assert_eq!(d.umad.addr.hop_limit, 0xff);
        assert_eq!(d.umad_len, 5);
        assert_eq!(d.umad.length, 69);
        assert_eq!(&d.mad[..6], &[1, 7, 2, 3, 4, 0]);
    }
}
