// SPDX-License-Identifier: GPL-2.0-only
//! Generates the rdma-core `<infiniband/verbs.h>` struct layouts with bindgen,
//! so every `#[repr(C)]` type the exported verbs read or write is the one the
//! C compiler sees (bindgen also emits compile-time size/offset assertions).

use std::env;
use std::path::PathBuf;

/// The verbs types this crate reads or writes across the C ABI.
const TYPES: &[&str] = &[
    "ibv_device",
    "ibv_context",
    "ibv_context_ops",
    "ibv_device_attr",
    "ibv_port_attr",
    "ibv_gid",
    "ibv_grh",
    "ibv_pd",
    "ibv_mr",
    "ibv_comp_channel",
    "ibv_cq",
    "ibv_wc",
    "ibv_sge",
    "ibv_send_wr",
    "ibv_recv_wr",
    "ibv_qp",
    "ibv_qp_init_attr",
    "ibv_qp_attr",
    "ibv_qp_cap",
    "ibv_srq",
    "ibv_srq_attr",
    "ibv_srq_init_attr",
    "ibv_ah",
    "ibv_ah_attr",
    "ibv_global_route",
];

/// The enums whose constants the engine uses.
const ENUMS: &[&str] = &[
    "ibv_node_type",
    "ibv_transport_type",
    "ibv_port_state",
    "ibv_mtu",
    "ibv_wc_status",
    "ibv_wc_opcode",
    "ibv_wc_flags",
    "ibv_wr_opcode",
    "ibv_send_flags",
    "ibv_access_flags",
    "ibv_qp_type",
    "ibv_qp_state",
    "ibv_qp_attr_mask",
    "ibv_srq_attr_mask",
    "ibv_mig_state",
    "ibv_atomic_cap",
    "ibv_device_cap_flags",
    "ibv_port_cap_flags",
];

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=/usr/include/infiniband/verbs.h");

    let mut builder = bindgen::Builder::default()
        .header_contents("wrapper.h", "#include <infiniband/verbs.h>\n")
        .derive_default(true)
        .derive_debug(false)
        .layout_tests(true)
        .generate_comments(false)
        .prepend_enum_name(false)
        .default_enum_style(bindgen::EnumVariation::Consts)
        // Opaque pthread types: only their size and alignment matter here.
        .opaque_type("pthread_mutex_t")
        .opaque_type("pthread_cond_t")
        .allowlist_type("pthread_mutex_t")
        .allowlist_type("pthread_cond_t");
    for t in TYPES {
        builder = builder.allowlist_type(t);
    }
    for e in ENUMS {
        builder = builder.allowlist_type(e);
    }

    let bindings = match builder.generate() {
        Ok(b) => b,
        Err(e) => panic!(
            "bindgen failed on <infiniband/verbs.h> (libibverbs-dev and libclang-dev needed): {e}"
        ),
    };
    let out = PathBuf::from(env::var("OUT_DIR").expect("OUT_DIR is set by cargo"));
    bindings
        .write_to_file(out.join("verbs.rs"))
        .expect("write bindings");
}
