// SPDX-License-Identifier: GPL-2.0

//! The pvrdma device ABI, by the C header it mirrors: the control interface (`dev_api.rs`, and
//! `commands.rs` for the verbs objects' commands: `pvrdma_dev_api.h`), the shared rings
//! (`ring.rs`, `pvrdma_ring.h`), the verbs types the device shares with the RDMA core
//! (`verbs.rs`, `pvrdma_verbs.h`) and the user ABI (`uapi.rs`, `uapi/rdma/vmw_pvrdma-abi.h`).
//! Only what the driver uses is transcribed.
//!
//! Layer: device.

mod commands;
mod dev_api;
mod ring;
mod uapi;
mod verbs;

pub(crate) use commands::*;
pub(crate) use dev_api::*;
pub(crate) use ring::*;
pub(crate) use uapi::*;
pub(crate) use verbs::*;
