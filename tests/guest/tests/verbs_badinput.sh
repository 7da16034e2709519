#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# lab-about: verbs_badinput.c (built by the host's make guest-programs, else in the guest): raw uverbs commands with bad udata lengths, requests longer than the provider's struct (a set byte past it EOPNOTSUPP, zeros accepted, by both drivers), bogus/unaligned ring buffers, zero and huge sizes, unknown handles and handles of another context, bad QP attributes, destroying objects in use, mmaps of the uverbs file at another offset or length than the doorbell page's (or private); each must get an errno (C-driver-accepts lines list what the C driver lets through; the Rust driver is excused nothing), the device must still work, dmesg free of oops/WARN
# lab-timeout: 300
. "$LAB_DIR/lib.sh"

name=verbs_badinput
bin=/tmp/$name
log=$LAB_RESULTS/$name.log
limit=${LAB_BADINPUT_TIMEOUT:-180}

lab_build_test "$name"

lab_run_program "$name" "$limit" "$log" "$bin" "$LAB_DEV" "$LAB_GID_INDEX" "${LAB_DRIVER:-unknown}"
summary=$LAB_PROGRAM_SUMMARY
status=$LAB_STATUS
lab_reject "$log" "^FAIL" "$name"
echo "$summary" | grep -qE ', 0 FAIL$' || lab_fail "$name: $summary"
lab_check_exit "$name" "$status" "$log" "$limit"
lab_note "$name: $summary"
c_accepts=$(grep -E '^C-driver-accepts ' "$log" | cut -d: -f1 | cut -d' ' -f2 | tr '\n' ' ')
[ -z "$c_accepts" ] || lab_note "$name: the C driver accepts: $c_accepts"
