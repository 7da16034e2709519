#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# lab-about: the kernel's KUnit suites, run at boot (kunit.enable=1): the `kernel` crate's doctests (rust/'s included) and the suites of the series (rust_rdma_object_table, rust_rdma_device_name, rust_rdma_port_event, rust_rdma_cq, rust_rdma_umem, rust_rdma_mmap, rust_rdma_wr_id, rust_rdma_modify_srq_attr, rust_rdma_modify_qp_attr, rust_rdma_fw_str, rust_rdma_sysfs, rust_net_device, rust_pci_irq_flags) all pass, none skipped, read from the KTAP report in dmesg
# lab-timeout: 120
# lab-kernel-args: kunit.enable=1
. "$LAB_DIR/lib.sh"

# Built-in suites run before init starts, so their whole report is in dmesg
# by now. Top-level KTAP lines are the suites' results ("ok 1 suite",
# "not ok 2 suite", "ok 3 suite # SKIP reason"); each suite's own
# "# Totals: pass:P fail:F skip:S total:T" line follows its case results.
ktap=$LAB_RESULTS/kunit-ktap.txt
dmesg | sed -E 's/^\[[ 0-9.]+\] ?//' >"$ktap"

grep -q '^KTAP version' "$ktap" || lab_fail "no KTAP report in dmesg: the kernel did not run KUnit (kunit.enable=1 on its command line: $(cat /proc/cmdline))"

suites=$(grep -cE '^(not )?ok [0-9]+ ' "$ktap")
failed=$(grep -E '^not ok [0-9]+ ' "$ktap" | sed -E 's/^not ok [0-9]+ //' | tr '\n' ' ')
skipped=$(grep -E '^ok [0-9]+ [^ ]+ # SKIP' "$ktap" | sed -E 's/^ok [0-9]+ //' | tr '\n' ' ')
[ "$suites" -gt 0 ] || lab_fail "KTAP report lists no suite results"
[ -z "$failed" ] || lab_fail "KUnit suites failed: $failed(see kunit-ktap.txt: $(grep -m 3 -E '^ +not ok ' "$ktap" | tr -s ' ' | tr '\n' ';'))"
[ -z "$skipped" ] || lab_fail "KUnit suites skipped: $skipped"

# The suites this project relies on must have run and passed.
for suite in rust_doctests_kernel rust_rdma_object_table rust_rdma_registration rust_rdma_device_name rust_rdma_port_event rust_rdma_cq rust_rdma_umem rust_rdma_mmap rust_rdma_wr_id rust_rdma_modify_srq_attr rust_rdma_modify_qp_attr rust_rdma_fw_str rust_rdma_sysfs rust_net_device rust_pci_irq_flags; do
	grep -qE "^ok [0-9]+ $suite\$" "$ktap" || lab_fail "KUnit suite $suite did not run (or did not pass): is its config option on?"
done

# Per-suite totals, summed.
totals=$(grep -E '^ *# Totals: ' "$ktap" | sed -E 's/.*pass:([0-9]+) fail:([0-9]+) skip:([0-9]+) total:([0-9]+).*/\1 \2 \3 \4/' |
	awk '{p += $1; f += $2; s += $3; t += $4} END {printf "%d %d %d %d", p, f, s, t}')
set -- $totals
[ "$2" -eq 0 ] || lab_fail "KUnit: $2 test cases failed"
[ "$1" -gt 0 ] || lab_fail "KUnit: no test case passed"
rdma_cases=$(sed -n '/# Subtest: rust_rdma_object_table/,/^ok [0-9]* rust_rdma_object_table/p' "$ktap" | grep -cE '^ +ok [0-9]+ ')
[ "$rdma_cases" -ge 7 ] || lab_fail "rust_rdma_object_table ran $rdma_cases test cases, expected 7"
lab_note "KUnit: $suites suites ok; test cases: $1 passed, $2 failed, $3 skipped of $4; rust_rdma_object_table: $rdma_cases cases ok"
