drivers/infiniband/hw/pvrdma/.pvrdma.o.d: drivers/infiniband/hw/pvrdma/pvrdma.rs drivers/infiniband/hw/pvrdma/abi.rs drivers/infiniband/hw/pvrdma/abi/commands.rs drivers/infiniband/hw/pvrdma/abi/dev_api.rs drivers/infiniband/hw/pvrdma/abi/ring.rs drivers/infiniband/hw/pvrdma/abi/uapi.rs drivers/infiniband/hw/pvrdma/abi/verbs.rs drivers/infiniband/hw/pvrdma/ah.rs drivers/infiniband/hw/pvrdma/cmd.rs drivers/infiniband/hw/pvrdma/context.rs drivers/infiniband/hw/pvrdma/convert.rs drivers/infiniband/hw/pvrdma/counts.rs drivers/infiniband/hw/pvrdma/cq.rs drivers/infiniband/hw/pvrdma/dead.rs drivers/infiniband/hw/pvrdma/device.rs drivers/infiniband/hw/pvrdma/hw.rs drivers/infiniband/hw/pvrdma/intr.rs drivers/infiniband/hw/pvrdma/link.rs drivers/infiniband/hw/pvrdma/mem.rs drivers/infiniband/hw/pvrdma/mr.rs drivers/infiniband/hw/pvrdma/pdir.rs drivers/infiniband/hw/pvrdma/qp.rs drivers/infiniband/hw/pvrdma/qp/post.rs drivers/infiniband/hw/pvrdma/ring.rs drivers/infiniband/hw/pvrdma/srq.rs drivers/infiniband/hw/pvrdma/stats.rs drivers/infiniband/hw/pvrdma/uar.rs drivers/infiniband/hw/pvrdma/verbs.rs drivers/infiniband/hw/pvrdma/wq.rs /root/.cache/pvrdma-rs/kernel/linux-7.3.4-9287bcd3ba4e5f1e/linux/rust/libcore.rmeta /root/.cache/pvrdma-rs/kernel/linux-7.3.4-9287bcd3ba4e5f1e/linux/rust/libkernel.rmeta /root/.cache/pvrdma-rs/kernel/linux-7.3.4-9287bcd3ba4e5f1e/linux/rust/libffi.rmeta /root/.cache/pvrdma-rs/kernel/linux-7.3.4-9287bcd3ba4e5f1e/linux/rust/libcompiler_builtins.rmeta /root/.cache/pvrdma-rs/kernel/linux-7.3.4-9287bcd3ba4e5f1e/linux/rust/libpin_init.rmeta /root/.cache/pvrdma-rs/kernel/linux-7.3.4-9287bcd3ba4e5f1e/linux/rust/libpin_init_internal.so /root/.cache/pvrdma-rs/kernel/linux-7.3.4-9287bcd3ba4e5f1e/linux/rust/libmacros.so /root/.cache/pvrdma-rs/kernel/linux-7.3.4-9287bcd3ba4e5f1e/linux/rust/libbuild_error.rmeta /root/.cache/pvrdma-rs/kernel/linux-7.3.4-9287bcd3ba4e5f1e/linux/rust/libzerocopy.rmeta /root/.cache/pvrdma-rs/kernel/linux-7.3.4-9287bcd3ba4e5f1e/linux/rust/libbindings.rmeta /root/.cache/pvrdma-rs/kernel/linux-7.3.4-9287bcd3ba4e5f1e/linux/rust/libzerocopy_derive.so /root/.cache/pvrdma-rs/kernel/linux-7.3.4-9287bcd3ba4e5f1e/linux/rust/libuapi.rmeta

drivers/infiniband/hw/pvrdma/pvrdma.o: drivers/infiniband/hw/pvrdma/pvrdma.rs drivers/infiniband/hw/pvrdma/abi.rs drivers/infiniband/hw/pvrdma/abi/commands.rs drivers/infiniband/hw/pvrdma/abi/dev_api.rs drivers/infiniband/hw/pvrdma/abi/ring.rs drivers/infiniband/hw/pvrdma/abi/uapi.rs drivers/infiniband/hw/pvrdma/abi/verbs.rs drivers/infiniband/hw/pvrdma/ah.rs drivers/infiniband/hw/pvrdma/cmd.rs drivers/infiniband/hw/pvrdma/context.rs drivers/infiniband/hw/pvrdma/convert.rs drivers/infiniband/hw/pvrdma/counts.rs drivers/infiniband/hw/pvrdma/cq.rs drivers/infiniband/hw/pvrdma/dead.rs drivers/infiniband/hw/pvrdma/device.rs drivers/infiniband/hw/pvrdma/hw.rs drivers/infiniband/hw/pvrdma/intr.rs drivers/infiniband/hw/pvrdma/link.rs drivers/infiniband/hw/pvrdma/mem.rs drivers/infiniband/hw/pvrdma/mr.rs drivers/infiniband/hw/pvrdma/pdir.rs drivers/infiniband/hw/pvrdma/qp.rs drivers/infiniband/hw/pvrdma/qp/post.rs drivers/infiniband/hw/pvrdma/ring.rs drivers/infiniband/hw/pvrdma/srq.rs drivers/infiniband/hw/pvrdma/stats.rs drivers/infiniband/hw/pvrdma/uar.rs drivers/infiniband/hw/pvrdma/verbs.rs drivers/infiniband/hw/pvrdma/wq.rs /root/.cache/pvrdma-rs/kernel/linux-7.3.4-9287bcd3ba4e5f1e/linux/rust/libcore.rmeta /root/.cache/pvrdma-rs/kernel/linux-7.3.4-9287bcd3ba4e5f1e/linux/rust/libkernel.rmeta /root/.cache/pvrdma-rs/kernel/linux-7.3.4-9287bcd3ba4e5f1e/linux/rust/libffi.rmeta /root/.cache/pvrdma-rs/kernel/linux-7.3.4-9287bcd3ba4e5f1e/linux/rust/libcompiler_builtins.rmeta /root/.cache/pvrdma-rs/kernel/linux-7.3.4-9287bcd3ba4e5f1e/linux/rust/libpin_init.rmeta /root/.cache/pvrdma-rs/kernel/linux-7.3.4-9287bcd3ba4e5f1e/linux/rust/libpin_init_internal.so /root/.cache/pvrdma-rs/kernel/linux-7.3.4-9287bcd3ba4e5f1e/linux/rust/libmacros.so /root/.cache/pvrdma-rs/kernel/linux-7.3.4-9287bcd3ba4e5f1e/linux/rust/libbuild_error.rmeta /root/.cache/pvrdma-rs/kernel/linux-7.3.4-9287bcd3ba4e5f1e/linux/rust/libzerocopy.rmeta /root/.cache/pvrdma-rs/kernel/linux-7.3.4-9287bcd3ba4e5f1e/linux/rust/libbindings.rmeta /root/.cache/pvrdma-rs/kernel/linux-7.3.4-9287bcd3ba4e5f1e/linux/rust/libzerocopy_derive.so /root/.cache/pvrdma-rs/kernel/linux-7.3.4-9287bcd3ba4e5f1e/linux/rust/libuapi.rmeta

drivers/infiniband/hw/pvrdma/pvrdma.rs:
drivers/infiniband/hw/pvrdma/abi.rs:
drivers/infiniband/hw/pvrdma/abi/commands.rs:
drivers/infiniband/hw/pvrdma/abi/dev_api.rs:
drivers/infiniband/hw/pvrdma/abi/ring.rs:
drivers/infiniband/hw/pvrdma/abi/uapi.rs:
drivers/infiniband/hw/pvrdma/abi/verbs.rs:
drivers/infiniband/hw/pvrdma/ah.rs:
drivers/infiniband/hw/pvrdma/cmd.rs:
drivers/infiniband/hw/pvrdma/context.rs:
drivers/infiniband/hw/pvrdma/convert.rs:
drivers/infiniband/hw/pvrdma/counts.rs:
drivers/infiniband/hw/pvrdma/cq.rs:
drivers/infiniband/hw/pvrdma/dead.rs:
drivers/infiniband/hw/pvrdma/device.rs:
drivers/infiniband/hw/pvrdma/hw.rs:
drivers/infiniband/hw/pvrdma/intr.rs:
drivers/infiniband/hw/pvrdma/link.rs:
drivers/infiniband/hw/pvrdma/mem.rs:
drivers/infiniband/hw/pvrdma/mr.rs:
drivers/infiniband/hw/pvrdma/pdir.rs:
drivers/infiniband/hw/pvrdma/qp.rs:
drivers/infiniband/hw/pvrdma/qp/post.rs:
drivers/infiniband/hw/pvrdma/ring.rs:
drivers/infiniband/hw/pvrdma/srq.rs:
drivers/infiniband/hw/pvrdma/stats.rs:
drivers/infiniband/hw/pvrdma/uar.rs:
drivers/infiniband/hw/pvrdma/verbs.rs:
drivers/infiniband/hw/pvrdma/wq.rs:
/root/.cache/pvrdma-rs/kernel/linux-7.3.4-9287bcd3ba4e5f1e/linux/rust/libcore.rmeta:
/root/.cache/pvrdma-rs/kernel/linux-7.3.4-9287bcd3ba4e5f1e/linux/rust/libkernel.rmeta:
/root/.cache/pvrdma-rs/kernel/linux-7.3.4-9287bcd3ba4e5f1e/linux/rust/libffi.rmeta:
/root/.cache/pvrdma-rs/kernel/linux-7.3.4-9287bcd3ba4e5f1e/linux/rust/libcompiler_builtins.rmeta:
/root/.cache/pvrdma-rs/kernel/linux-7.3.4-9287bcd3ba4e5f1e/linux/rust/libpin_init.rmeta:
/root/.cache/pvrdma-rs/kernel/linux-7.3.4-9287bcd3ba4e5f1e/linux/rust/libpin_init_internal.so:
/root/.cache/pvrdma-rs/kernel/linux-7.3.4-9287bcd3ba4e5f1e/linux/rust/libmacros.so:
/root/.cache/pvrdma-rs/kernel/linux-7.3.4-9287bcd3ba4e5f1e/linux/rust/libbuild_error.rmeta:
/root/.cache/pvrdma-rs/kernel/linux-7.3.4-9287bcd3ba4e5f1e/linux/rust/libzerocopy.rmeta:
/root/.cache/pvrdma-rs/kernel/linux-7.3.4-9287bcd3ba4e5f1e/linux/rust/libbindings.rmeta:
/root/.cache/pvrdma-rs/kernel/linux-7.3.4-9287bcd3ba4e5f1e/linux/rust/libzerocopy_derive.so:
/root/.cache/pvrdma-rs/kernel/linux-7.3.4-9287bcd3ba4e5f1e/linux/rust/libuapi.rmeta:
