// SPDX-License-Identifier: GPL-2.0-only
//! pvrdma-mux: an rdmacm-mux for QEMU 7.2's pvrdma device that needs no RDMA
//! hardware. QEMU processes connect to its mad socket (their `mad-chardev`),
//! the software verbs library inside each QEMU connects to its fabric socket;
//! the mux pairs them by PID, forwards GID registrations to the library, and
//! routes rdma_cm's CM MADs between the guests. See README.md.

pub mod cm_route;
pub mod library;
pub mod log;
pub mod mad_conn;
pub mod race;
pub mod registry;
pub mod reply;
pub mod server;
pub mod sock;

pub use server::{Config, Mux};
