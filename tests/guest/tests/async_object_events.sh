#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# lab-about: async_object_events.c (built by the host's make guest-programs, else in the guest): affiliated async events read with ibv_get_async_event: an SRQ's armed limit gives exactly one IBV_EVENT_SRQ_LIMIT_REACHED when fewer receives are left than the limit (none before, none after, the limit then reads 0); its QP moved to ERR gives IBV_EVENT_QP_LAST_WQE_REACHED; a CQ sent one completion more than it holds gives IBV_EVENT_CQ_ERR for it and IBV_EVENT_QP_FATAL for the QP, which reads ERR, while the CQ keeps the completions it held; every event names the right object; dmesg free of oops/WARN
# lab-timeout: 240
. "$LAB_DIR/lib.sh"

name=async_object_events
log=$LAB_RESULTS/$name.log

lab_build_test "$name"
timeout -k 5 150 stdbuf -oL "/tmp/$name" "$LAB_DEV" "$LAB_GID_INDEX" >"$log" 2>&1
status=$?
cat "$log"
[ "$status" -eq 0 ] || lab_fail "$name exited with status $status: $(grep -m 1 '^FAIL' "$log" || lab_tail "$log")"
lab_expect "$log" "^all checks passed\$" "$name"
lab_summary "$name: $(grep -c '^ok: ' "$log") checks passed ($(grep '^ok: ' "$log" | cut -c 5- | cut -d: -f1 | tr '\n' ';' | sed 's/;$//; s/;/; /g'))"
