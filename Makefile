# SPDX-License-Identifier: GPL-2.0
#
# pvrdma-rs: top-level entry points.
#
#   make lab      the main job: build what is missing, boot the lab, insmod each driver,
#                 run rping and ibv_rc_pingpong on each device model, print a summary
#   make check    every lab test on every device model and driver (and the host-side
#                 unit tests), ending "N passed, N failed"
#   make lab-tests TESTS=rping  the fast loop: only the lab tests named (MODELS, DRIVERS as
#                 for check), no host unit tests, no series review; the test kernel and
#                 QEMU as they are (built only when missing), the module, runner and guest
#                 programs rebuilt if they changed
#   make shell    one interactive guest (MODEL=patched DRIVER=rust): the driver loaded, port 1
#                 ACTIVE, a shell on its serial console in this terminal (`exit` powers it
#                 off, Ctrl-A x kills QEMU); GDB=1 adds QEMU's gdb stub on 127.0.0.1:1234
#   make qemu     the patched QEMU (tools/qemu/build-qemu; cached)
#   make stock-qemu  Debian's QEMU 7.2, unpacked into the cache (tools/qemu/fetch-stock-qemu)
#   make soak     on demand: 1,000 rmmod/insmod cycles with traffic (SOAK_CYCLES=N)
#   make series   rust/patches against rust/ and the driver: the series creates exactly those
#                 files, and its driver patches are what drivers/infiniband/hw/pvrdma/ makes
#   make series-build-each  every step of the series builds the kernel crate (slow)
#   make series-review  checkpatch --strict, rustfmtcheck, clippy and rustdoc on the series
#   make module KDIR=<kernel build dir>  the Rust driver against that tree, as it is: no apt,
#                 no kernel build (toolchain: tools/lab/kernel-env's, or KERNEL_MAKE_VARS="...");
#                 make lab-tests KDIR=... and make shell KDIR=... boot that tree too
#
# Selection: make check MODELS=patched DRIVERS=c TESTS=ibv_rc_pingpong,ibv_devinfo
#   MODELS   patched (QEMU 7.2 + tools/qemu/patches, device version 20), patched-v18,
#            patched-v17 (the same QEMU at an older device version: the tests whose header
#            lists it, every test named by TESTS; patched-v19 on request) and/or stock
#            (Debian's QEMU 7.2, version 17)
#   DRIVERS  c (vmw_pvrdma) and/or rust (pvrdma)
#   TESTS    names from `tools/target/release/pvrdma-lab list`; empty: all
#   KERNEL_DEBUG=1  on the debug kernel (KASAN, KFENCE, UBSAN, ...) instead of the lab's
#   KERNEL_LEAN=1   on the lean kernel (no lockdep, kmemleak, ...): `make bench`'s default
#   JOBS=N   guests at once (default: one per CPU; `make bench` runs one at a time)
#   ACCEL=kvm|tcg  the guests' accelerator (default: KVM where a probe finds /dev/kvm
#            works, else TCG; the run's header says which)
# PVRDMA_JOBS=N: jobs of each build (test kernel, patched QEMU, the series' steps; default:
# one per CPU, `nproc`)
# The test kernel is trixie-backports' Linux 7.3 with rust/ overlaid (the
# abstractions the driver in drivers/ is built on). Everything slow (test
# kernel, patched QEMU) is cached outside the checkout in $(PVRDMA_CACHE).
#
# When invoked by Kbuild (make -C $KDIR M=$PWD), only the Kbuild file matters.

ifneq ($(KERNELRELEASE),)
include $(src)/Kbuild
else

SHELL := /bin/bash
TOP := $(abspath $(dir $(lastword $(MAKEFILE_LIST))))
PVRDMA_CACHE ?= $(HOME)/.cache/pvrdma-rs
export PVRDMA_CACHE
# Jobs of each build: tools/lab/build-kernel, tools/qemu/build-qemu (under nice) and
# tools/lab/series read it, tools/lab/review and kernel-clippy are given it. One per CPU
# unless told (build-kernel's own default, for a run without make, is 2).
NPROC := $(shell nproc 2>/dev/null || echo 2)
PVRDMA_JOBS ?= $(NPROC)
export PVRDMA_JOBS

# KERNEL= chose between 6.12 and 7.3 while the project moved; only 7.3 is left.
ifneq ($(filter-out 7.3,$(KERNEL)),)
$(error KERNEL=$(KERNEL): the lab builds Linux 7.3 only (its 6.12 build was removed))
endif

MODELS ?= patched,patched-v18,patched-v17,stock
DRIVERS ?= c,rust
MODULE_DIR := $(TOP)
# KERNEL_DEBUG=1: the debug kernel (tools/lab/kernel/debug.config: KASAN, KFENCE, UBSAN,
# slub_debug, DMA-API and object debugging, lockup detectors), a tree of its own in the
# cache (kernel/current-debug). The Rust driver is built for it from a copy of its sources
# in the cache, so that the lab kernel's build of it in the checkout stays (Kbuild's MO=
# refuses a module source tree that holds a build).
# KERNEL_LEAN=1: the lean kernel (tools/lab/kernel/lean.config: the lab kernel without
# lockdep, kmemleak and the other checkers), kernel/current-lean, the module likewise
# built from a copy; what `make bench` runs on unless told KERNEL_LEAN=0.
KERNEL_DEBUG ?= 0
ifneq ($(filter bench,$(MAKECMDGOALS)),)
KERNEL_LEAN ?= $(if $(filter 1,$(KERNEL_DEBUG)),0,1)
endif
KERNEL_LEAN ?= 0
ifneq ($(filter-out 0 1,$(KERNEL_DEBUG)),)
$(error KERNEL_DEBUG=$(KERNEL_DEBUG): 0 (the lab kernel) or 1 (the debug kernel))
endif
ifneq ($(filter-out 0 1,$(KERNEL_LEAN)),)
$(error KERNEL_LEAN=$(KERNEL_LEAN): 0 (the lab kernel) or 1 (the lean kernel))
endif
ifeq ($(KERNEL_DEBUG)$(KERNEL_LEAN),11)
$(error KERNEL_DEBUG=1 and KERNEL_LEAN=1: one or the other)
endif
export PVRDMA_KERNEL_DEBUG := $(KERNEL_DEBUG)
export PVRDMA_KERNEL_LEAN := $(KERNEL_LEAN)
# debug, lean, or empty for the lab kernel: the suffix of the flavour's tree and module copy.
KERNEL_FLAVOUR := $(if $(filter 1,$(KERNEL_DEBUG)),debug)$(if $(filter 1,$(KERNEL_LEAN)),lean)
ifeq ($(KERNEL_FLAVOUR),)
KDIR_FILE := $(PVRDMA_CACHE)/kernel/current
RUST_MODULE := $(TOP)/drivers/infiniband/hw/pvrdma/pvrdma.ko
MODULE_COPY :=
else
KDIR_FILE := $(PVRDMA_CACHE)/kernel/current-$(KERNEL_FLAVOUR)
MODULE_DIR := $(PVRDMA_CACHE)/module-$(KERNEL_FLAVOUR)
RUST_MODULE := $(MODULE_DIR)/drivers/infiniband/hw/pvrdma/pvrdma.ko
# (Sources only, with their times, so that make rebuilds what changed.)
MODULE_COPY := mkdir -p $(MODULE_DIR) && (cd $(TOP) && find Kbuild drivers include -type f \
	\( -name '*.rs' -o -name '*.c' -o -name '*.h' -o -name Kbuild -o -name Makefile \) | \
	tar -cf - -T -) | tar -C $(MODULE_DIR) -xf - &&
endif
# KDIR=<kernel build dir>: `make module` builds the driver against that tree as it is, with
# neither tools/lab/install-deps (apt) nor tools/lab/build-kernel, and `make lab-tests` and
# `make shell` boot it; the lab's kernel otherwise. KERNEL_MAKE_VARS: the toolchain
# variables of that kernel's build (default: the lab's, tools/lab/kernel-env), e.g.
# KERNEL_MAKE_VARS="LLVM=1".
KDIR ?=
FAST_GOALS := module lab-tests shell
ifneq ($(KDIR),)
ifneq ($(filter-out $(FAST_GOALS),$(or $(MAKECMDGOALS),all)),)
$(error KDIR=$(KDIR) is for `make $(FAST_GOALS)`; the other targets build and use the lab's kernel)
endif
endif
# The fast loop (KDIR given, make lab-tests, make shell): what is built is used as it is.
# The module is built against the kernel there is (the lab's kernel is built only when
# missing), and no step runs tools/lab/install-deps unless it builds what is missing.
FAST := $(if $(KDIR)$(filter-out module,$(filter $(FAST_GOALS),$(MAKECMDGOALS))),1)
MODULE_KDIR := $(if $(KDIR),$(abspath $(KDIR)),$(KDIR_FILE))
KERNEL_MAKE_VARS ?= $$($(TOP)/tools/lab/kernel-env)
# Every test's time limit is multiplied by TIME_FACTOR (the debug kernel runs the tests
# about four times slower under TCG; limits of most tests have room for that: Documentation/reliability.md).
TIME_FACTOR ?= $(if $(filter 1,$(KERNEL_DEBUG)),3,1)
# LAB_ENV="LAB_FUZZ_ROUNDS=200 LAB_FUZZ_SEED=7": variables the guest's tests read, for an
# on-demand run with a larger budget (each test's header says which it reads); the run's own
# (LAB_DRIVER, LAB_MODEL, LAB_MODULE*, LAB_DEV, LAB_IP, LAB_DIR, LAB_RESULTS, LAB_KDIR,
# LAB_TESTS) are refused.
LAB_ENV ?=
# JOBS=N: guests run at once (default: the runner's, one per CPU as memory allows).
JOBS ?=
# TESTS_PER_GUEST=N: tests one guest runs one after the other (default: the runner's, 4; 1: a
# guest per test).
TESTS_PER_GUEST ?=
# REFERENCE_PAIRS=1: also the two-guest tests with the C driver on both guests (skipped when
# the Rust driver is tested too: its mixed pairs have the C driver's server and client).
REFERENCE_PAIRS ?=
# ACCEL=kvm|tcg: the guests' accelerator (default, auto: KVM where /dev/kvm works, else TCG).
ACCEL ?=
RUN_SETTINGS = --guest-env "$(LAB_ENV)" --time-factor $(TIME_FACTOR) $(if $(JOBS),--jobs $(JOBS)) $(if $(ACCEL),--accel $(ACCEL)) \
	$(if $(TESTS_PER_GUEST),--tests-per-guest $(TESTS_PER_GUEST)) \
	$(if $(filter 1,$(REFERENCE_PAIRS)),--reference-pairs)
TESTS ?=
LAB_TESTS ?= ibv_rc_pingpong,rping,two_guests
LAB_MODELS ?= patched,stock
RESULTS ?= $(TOP)/results

CARGO ?= cargo
LAB := $(TOP)/tools/target/release/pvrdma-lab

# Each model's QEMU is prepared only when a run uses it (an empty MODELS means
# every model): the patched one built, the stock one unpacked.
uses_patched = $(if $(strip $(1)),$(filter patched%,$(subst $(comma), ,$(1))),patched)
uses_stock = $(if $(strip $(1)),$(filter stock,$(subst $(comma), ,$(1))),stock)
comma := ,
QEMU_FOR_LAB := $(if $(call uses_patched,$(LAB_MODELS)),qemu) $(if $(call uses_stock,$(LAB_MODELS)),stock-qemu)
QEMU_FOR_CHECK := $(if $(call uses_patched,$(MODELS)),qemu) $(if $(call uses_stock,$(MODELS)),stock-qemu)
STOCK_QEMU := $(PVRDMA_CACHE)/qemu/stock/current/bin/qemu-system-x86_64

.PHONY: all deps kernel have-kernel kernel-clippy qemu have-qemu stock-qemu tools module module-clippy unit lab lab-tests shell check bench soak fmt clean series series-build-each series-review guest-programs

all: kernel qemu stock-qemu tools module

deps:
	@$(TOP)/tools/lab/install-deps

kernel: deps
	@$(TOP)/tools/lab/build-kernel

# QEMU 7.2 from Debian's source with tools/qemu/patches: the `patched` device
# model. Cached by a key of its inputs; a rebuild takes about 4 minutes (Documentation/host.md).
qemu: deps
	@echo "== patched QEMU (tools/qemu/build-qemu)"
	@set -o pipefail; $(TOP)/tools/qemu/build-qemu | tail -n 1

stock-qemu: deps
	@echo "== stock QEMU (tools/qemu/fetch-stock-qemu)"
	@set -o pipefail; $(TOP)/tools/qemu/fetch-stock-qemu | tail -n 1

tools: $(if $(FAST),,deps) guest-programs
	@echo "== host tools (verbs backend, mux, runner)"
	@cd $(TOP)/tools && $(CARGO) build --release --quiet

# The guest tests' C programs, built on the host with the flags the guest would
# use (tests/guest/lib.sh takes them when newer than their sources, and builds
# them in the guest otherwise): a compile under TCG takes 10-30 s a guest.
GUEST_PROGRAMS_DIR := $(TOP)/tools/target/guest-programs
GUEST_TEST_PROGRAMS := $(patsubst $(TOP)/tests/guest/tests/%.c,$(GUEST_PROGRAMS_DIR)/%,$(wildcard $(TOP)/tests/guest/tests/*.c))
guest-programs: $(if $(FAST),,deps) $(GUEST_TEST_PROGRAMS) $(GUEST_PROGRAMS_DIR)/wc_audit.so

$(GUEST_TEST_PROGRAMS): $(GUEST_PROGRAMS_DIR)/%: $(TOP)/tests/guest/tests/%.c
	@mkdir -p $(@D)
	cc -O2 -Wall -Wextra -Werror -o $@ $< -libverbs

$(GUEST_PROGRAMS_DIR)/wc_audit.so: $(TOP)/tests/guest/wc_audit.c
	@mkdir -p $(@D)
	cc -shared -fPIC -O2 -Wall -Wextra -Werror -o $@ $< -ldl

# The Rust driver module, built against the cached test kernel, or against KDIR
# when given. A Rust module must be rebuilt whenever the kernel (its `kernel`
# crate) was: Kbuild does not track that for external modules, so a stamp of the
# kernel build forces it. Runs that test only the C driver do not build it.
MODULE_STAMP := $(dir $(RUST_MODULE)).kernel-stamp
RUST_DRIVER_USED = $(filter rust,$(subst $(comma), ,$(DRIVERS)))
module: $(if $(FAST),have-kernel,kernel)
	@if [ -z "$(RUST_DRIVER_USED)" ]; then \
		echo "== driver module: not built (DRIVERS=$(DRIVERS))"; \
	else \
		echo "== driver module (against $(MODULE_KDIR))"; \
		stamp="$$(readlink -f $(MODULE_KDIR)) $$(stat -c %Y $(MODULE_KDIR)/vmlinux)"; \
		if [ "$$(cat $(MODULE_STAMP) 2>/dev/null)" != "$$stamp" ]; then \
			$(MODULE_COPY) $(MAKE) -s -C $(MODULE_KDIR)/ M=$(MODULE_DIR) $(KERNEL_MAKE_VARS) clean; \
		fi; \
		$(MODULE_COPY) $(MAKE) -C $(MODULE_KDIR)/ M=$(MODULE_DIR) $(KERNEL_MAKE_VARS) modules && \
		echo "$$stamp" > $(MODULE_STAMP); \
	fi

# The kernel of the fast loop: KDIR= taken as it is, a tree already built (nothing is
# installed or built there); else the lab's as last built, built (make kernel) only if missing.
have-kernel:
ifneq ($(KDIR),)
	@[ -f "$(MODULE_KDIR)/Makefile" ] && [ -f "$(MODULE_KDIR)/Module.symvers" ] || \
		{ echo "KDIR=$(KDIR): not a built kernel tree (no Makefile or Module.symvers)" >&2; exit 2; }
else
	@if [ -f $(KDIR_FILE)/arch/x86/boot/bzImage ]; then \
		echo "== test kernel: $$(readlink -f $(KDIR_FILE)) as built (make kernel rebuilds it after a change to rust/)"; \
	else \
		$(MAKE) --no-print-directory kernel; \
	fi
endif

# The device models' QEMUs of the fast loop, as built; each built only if missing
# (make qemu rebuilds the patched one after a change to tools/qemu/).
PATCHED_QEMU := $(PVRDMA_CACHE)/qemu/current/bin/qemu-system-x86_64
FAST_MODELS = $(MODELS)
have-qemu:
	@$(if $(call uses_patched,$(FAST_MODELS)),[ -x $(PATCHED_QEMU) ] || $(MAKE) --no-print-directory qemu;) \
		$(if $(call uses_stock,$(FAST_MODELS)),[ -x $(STOCK_QEMU) ] || $(MAKE) --no-print-directory stock-qemu;) true

module-clippy: kernel
	$(MAKE) -C $(KDIR_FILE)/ M=$(MODULE_DIR) $$($(TOP)/tools/lab/kernel-env) CLIPPY=1 modules

# Clippy over the kernel crate (rust/ of the test kernel). A CLIPPY=1 build
# leaves a kernel.o whose exported symbols differ from a normal build's, so the
# crate is rebuilt normally afterwards.
kernel-clippy: kernel
	@cd $(KDIR_FILE) && touch rust/kernel/lib.rs && \
		$(MAKE) -s $$($(TOP)/tools/lab/kernel-env) CLIPPY=1 -j$(PVRDMA_JOBS) rust/ && \
		touch rust/kernel/lib.rs && \
		$(MAKE) -s $$($(TOP)/tools/lab/kernel-env) -j$(PVRDMA_JOBS) bzImage modules

# The Rust-for-Linux series (tools/lab/series): rust/patches creates exactly the
# rust/ files (build-kernel checks that too) and the driver's files, whose patches are
# what the checkout's driver makes, and every step of it builds.
series: deps
	@$(TOP)/tools/lab/series check

# The series as its reviewers check it, with the kernel's own tools: checkpatch.pl --strict
# on every patch (tools/lab/series lint), make rustfmtcheck, CLIPPY=1 over the kernel crate and
# the driver (CONFIG_WERROR turns a lint into an error) and make rustdoc with no warning.
# `make check` runs it first and counts each of the four checks (REVIEW=0 leaves it out).
series-review: kernel
	@echo "== the series as reviewers check it (tools/lab/review)"
	@$(TOP)/tools/lab/review $(MODULE_DIR)

series-build-each: kernel
	@$(TOP)/tools/lab/series build-each

unit: tools
	@echo "== host unit tests"
	@cd $(TOP)/tools && $(CARGO) test --release --quiet 2>&1 | tail -n 40

# The main job: boot, insmod, rping and ibv_rc_pingpong on each device model,
# then rping and ibv_rc_pingpong between two guests for every pair of drivers
# (two_guests: Rust on one side and C on the other among them; C with C when
# REFERENCE_PAIRS=1), a summary.
# (rping and two_guests are not applicable to the stock model: they show as SKIP.)
lab: kernel tools module $(QEMU_FOR_LAB)
	@$(LAB) run --keep-going --kernel $(KDIR_FILE)/ --models "$(LAB_MODELS)" --drivers "$(DRIVERS)" --tests "$(LAB_TESTS)" --results $(RESULTS) --rust-module $(RUST_MODULE) --qemu-stock $(STOCK_QEMU) $(RUN_SETTINGS)

# All tests: host unit tests, then every lab test on every device model and driver.
# REVIEW=0 leaves the series review (tools/lab/review) out, for a quick run of a few tests.
REVIEW ?= 1
check: kernel tools module $(QEMU_FOR_CHECK)
	@PVRDMA_REVIEW=$(REVIEW) PVRDMA_MODULE_DIR=$(MODULE_DIR) $(TOP)/tools/lab/check --kernel $(KDIR_FILE)/ --models "$(MODELS)" --drivers "$(DRIVERS)" --tests "$(TESTS)" --results $(RESULTS) --rust-module $(RUST_MODULE) --qemu-stock $(STOCK_QEMU) $(RUN_SETTINGS)

# Lab tests only, the fast loop: `make lab-tests TESTS=rping MODELS=patched DRIVERS=rust`
# runs what `make check` would of them, without the series review, the host unit tests and
# the run from a copy under /tmp; nothing is rebuilt that exists but the module, the runner
# and the guest programs (each as far as it changed). TESTS empty: every lab test.
lab-tests: tools module have-qemu
	@$(LAB) run --keep-going --kernel $(MODULE_KDIR)/ --models "$(MODELS)" --drivers "$(DRIVERS)" --tests "$(TESTS)" --results $(RESULTS) --rust-module $(RUST_MODULE) --qemu-stock $(STOCK_QEMU) $(RUN_SETTINGS)

# One interactive guest: `make shell MODEL=patched DRIVER=rust` boots the model's QEMU with
# the driver loaded and port 1 ACTIVE, as for a test, and gives a shell on the guest's serial
# console, which QEMU puts on this terminal (pvrdma-lab shell). `exit` removes the driver,
# writes the guest's report into $(RESULTS)/shell and powers it off; Ctrl-A x ends QEMU at
# once. GDB=1: QEMU's gdb stub (its -s, on 127.0.0.1 only) at port 1234, the kernel booted
# with nokaslr. What it needs is built as for lab-tests: only when missing, but the module.
MODEL ?= patched
DRIVER ?= rust
GDB ?= 0
shell: DRIVERS = $(DRIVER)
shell: FAST_MODELS = $(MODEL)
shell: tools module have-qemu
	@$(LAB) shell --kernel $(MODULE_KDIR)/ --model "$(MODEL)" --driver "$(DRIVER)" --results $(RESULTS)/shell --rust-module $(RUST_MODULE) --qemu-stock $(STOCK_QEMU) --guest-env "$(LAB_ENV)" $(if $(filter 1,$(GDB)),--gdb) $(if $(ACCEL),--accel $(ACCEL))

# The Rust driver against the C driver, same run, same device model: perftest
# and the control path of verbs_resources over BENCH_REPS repetitions after a
# discarded warm-up; medians, Rust/C ratios with bootstrap intervals
# (pvrdma-lab bench-report), in $(RESULTS)/bench/bench.md and bench.svg. On the
# lean kernel (KERNEL_LEAN=1) unless KERNEL_LEAN=0 or KERNEL_DEBUG=1 is given.
BENCH_REPS ?= 10
BENCH_MODEL ?= patched
# BENCH_TESTS: a subset of the benchmark's tests (tools/lab/bench --tests); empty: all.
BENCH_TESTS ?=
bench: DRIVERS = c,rust
bench: kernel tools module $(if $(filter patched,$(BENCH_MODEL)),qemu,stock-qemu)
	@$(TOP)/tools/lab/bench --reps $(BENCH_REPS) --model $(BENCH_MODEL) $(if $(BENCH_TESTS),--tests $(BENCH_TESTS)) --results $(RESULTS)/bench --kernel $(KDIR_FILE)/ --rust-module $(RUST_MODULE) --qemu-stock $(STOCK_QEMU)

# The reload soak (Documentation/reliability.md), on demand: driver_cycles with
# SOAK_CYCLES rmmod/insmod cycles and an ibv_rc_pingpong --chk after each, on the
# patched model (SOAK_MODELS) for DRIVERS, one guest per driver at once. Its time limit
# grows with the cycles (TIME_FACTOR: 900 s per 60 cycles, at most the runner's 20).
SOAK_CYCLES ?= 1000
SOAK_MODELS ?= patched
soak: kernel tools module $(if $(call uses_patched,$(SOAK_MODELS)),qemu) $(if $(call uses_stock,$(SOAK_MODELS)),stock-qemu)
	@[[ "$(SOAK_CYCLES)" =~ ^[1-9][0-9]*$$ ]] || { echo "SOAK_CYCLES=$(SOAK_CYCLES): a number of cycles" >&2; exit 2; }
	@$(LAB) run --keep-going --kernel $(KDIR_FILE)/ --models "$(SOAK_MODELS)" --drivers "$(DRIVERS)" --tests driver_cycles --results $(RESULTS)/soak --rust-module $(RUST_MODULE) --qemu-stock $(STOCK_QEMU) \
		--guest-env "LAB_CYCLES=$(SOAK_CYCLES) LAB_CYCLE_TRAFFIC_EVERY=1 $(LAB_ENV)" \
		--time-factor $$(( $(SOAK_CYCLES) / 60 + 1 > 20 ? 20 : $(SOAK_CYCLES) / 60 + 1 )) $(if $(JOBS),--jobs $(JOBS)) $(if $(ACCEL),--accel $(ACCEL))

fmt:
	cd $(TOP)/tools && $(CARGO) fmt --all

clean:
	rm -rf $(RESULTS)
	cd $(TOP)/tools && $(CARGO) clean

endif
