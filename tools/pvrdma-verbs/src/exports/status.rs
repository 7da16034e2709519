// SPDX-License-Identifier: GPL-2.0-only
//! `ibv_wc_status_str`.

use crate::ffi;
use std::ffi::{c_char, CStr};

/// rdma-core's strings for `enum ibv_wc_status`.
fn status_str(status: u32) -> &'static CStr {
    match status {
        ffi::IBV_WC_SUCCESS => c"success",
        ffi::IBV_WC_LOC_LEN_ERR => c"local length error",
        ffi::IBV_WC_LOC_QP_OP_ERR => c"local QP operation error",
        ffi::IBV_WC_LOC_EEC_OP_ERR => c"local EE context operation error",
        ffi::IBV_WC_LOC_PROT_ERR => c"local protection error",
        ffi::IBV_WC_WR_FLUSH_ERR => c"Work Request Flushed Error",
        ffi::IBV_WC_MW_BIND_ERR => c"memory management operation error",
        ffi::IBV_WC_BAD_RESP_ERR => c"bad response error",
        ffi::IBV_WC_LOC_ACCESS_ERR => c"local access error",
        ffi::IBV_WC_REM_INV_REQ_ERR => c"remote invalid request error",
        ffi::IBV_WC_REM_ACCESS_ERR => c"remote access error",
        ffi::IBV_WC_REM_OP_ERR => c"remote operation error",
        ffi::IBV_WC_RETRY_EXC_ERR => c"transport retry counter exceeded",
        ffi::IBV_WC_RNR_RETRY_EXC_ERR => c"RNR retry counter exceeded",
        ffi::IBV_WC_LOC_RDD_VIOL_ERR => c"local RDD violation error",
        ffi::IBV_WC_REM_INV_RD_REQ_ERR => c"remote invalid RD request",
        ffi::IBV_WC_REM_ABORT_ERR => c"aborted error",
        ffi::IBV_WC_INV_EECN_ERR => c"invalid EE context number",
        ffi::IBV_WC_INV_EEC_STATE_ERR => c"invalid EE context state",
        ffi::IBV_WC_FATAL_ERR => c"fatal error",
        ffi::IBV_WC_RESP_TIMEOUT_ERR => c"response timeout error",
        ffi::IBV_WC_GENERAL_ERR => c"general error",
        ffi::IBV_WC_TM_ERR => c"TM error",
        ffi::IBV_WC_TM_RNDV_INCOMPLETE => c"TM software rendezvous",
        _ => c"unknown",
    }
}

/// The `IBV_WC_*` name of a completion status, for the debug log.
pub(crate) fn status_name(status: u32) -> &'static str {
    match status {
        ffi::IBV_WC_SUCCESS => "SUCCESS",
        ffi::IBV_WC_LOC_LEN_ERR => "LOC_LEN_ERR",
        ffi::IBV_WC_LOC_QP_OP_ERR => "LOC_QP_OP_ERR",
        ffi::IBV_WC_LOC_PROT_ERR => "LOC_PROT_ERR",
        ffi::IBV_WC_WR_FLUSH_ERR => "WR_FLUSH_ERR",
        ffi::IBV_WC_REM_INV_REQ_ERR => "REM_INV_REQ_ERR",
        ffi::IBV_WC_REM_ACCESS_ERR => "REM_ACCESS_ERR",
        ffi::IBV_WC_REM_OP_ERR => "REM_OP_ERR",
        ffi::IBV_WC_RETRY_EXC_ERR => "RETRY_EXC_ERR",
        ffi::IBV_WC_RNR_RETRY_EXC_ERR => "RNR_RETRY_EXC_ERR",
        ffi::IBV_WC_GENERAL_ERR => "GENERAL_ERR",
        _ => "OTHER",
    }
}

/// `ibv_wc_status_str`: a static description of a completion status.
#[no_mangle]
pub extern "C" fn ibv_wc_status_str(status: ffi::ibv_wc_status) -> *const c_char {
    status_str(status).as_ptr()
}
