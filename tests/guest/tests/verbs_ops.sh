#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# lab-about: verbs_ops.c (built by the host's make guest-programs, else in the guest): two RC QPs connected to each other, their capabilities as ibv_query_qp reports them in RTS (at least what they were created with, within the device's maxima), SEND_WITH_IMM, RDMA_WRITE, RDMA_WRITE_WITH_IMM, RDMA_READ with data and immediates checked, no CQE for an unsignaled WR, ARM and ARM_SOL completion events, unaligned MRs, REM_ACCESS_ERR for a bad rkey, WR_FLUSH_ERR for a QP moved to ERR
# lab-timeout: 300
. "$LAB_DIR/lib.sh"

bin=/tmp/verbs_ops
lab_build_test verbs_ops
log=$LAB_RESULTS/verbs_ops.log
timeout 120 "$bin" "$LAB_DEV" "$LAB_GID_INDEX" >"$log" 2>&1
status=$?
cat "$log"
[ "$status" -eq 0 ] || lab_fail "verbs_ops exited with status $status: $(grep -m 1 '^FAIL' "$log")"
lab_expect "$log" "^all checks passed\$" verbs_ops
lab_summary "verbs_ops: $(grep -c '^ok: ' "$log") checks passed ($(grep '^ok: ' "$log" | cut -c 5- | cut -d: -f1 | tr '\n' ';' | sed 's/;$//; s/;/; /g'))"
