#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# lab-about: verbs_limits.c (built by the host's make guest-programs, else in the guest): CQs, QPs (RC, UD) and an SRQ at the device's reported max_cqe, max_qp_wr and max_srq_wr (and half of them) through libibverbs must be granted and their receive queues take every granted receive; one past each maximum must be refused with EINVAL; a UD QP of 0xffffffff send WRs through ibv_create_qp_ex must not be accepted (rdma-core's provider turning it into 1 is reported as that library's defect); dmesg free of oops/WARN
# lab-timeout: 240
. "$LAB_DIR/lib.sh"

name=verbs_limits
bin=/tmp/$name
log=$LAB_RESULTS/$name.log
limit=${LAB_LIMITS_TIMEOUT:-150}

lab_build_test "$name"

lab_run_program "$name" "$limit" "$log" "$bin" "$LAB_DEV" "${LAB_DRIVER:-unknown}"
summary=$LAB_PROGRAM_SUMMARY
status=$LAB_STATUS
# A failure of any other kind than a depth within the maximum refused is
# reported first, with its own words; then a refusal of a depth whose rings fit
# in the pages QEMU 7.2's pvrdma takes; only then the refusals of depths whose
# rings do not (the stock model's known failure, and that alone).
lab_reject "$log" "^FAIL [^ ]* \[wrong\]" "$name"
refused=$(grep -E '^FAIL [^ ]* \[refused-within-max\]' "$log" | cut -d' ' -f2 | tr '\n' ' ')
[ -z "$refused" ] || lab_fail "$name: depths within the device's reported maximum, rings within its pages, refused: ${refused% } ($(grep -m 1 -E '^FAIL [^ ]* \[refused-within-max\]' "$log" | cut -d: -f2- | cut -c 2-200))"
beyond=$(grep -E '^FAIL [^ ]* \[beyond-ring-pages\]' "$log" | cut -d' ' -f2 | tr '\n' ' ')
[ -z "$beyond" ] || lab_fail "$name: depths within the device's reported maximum whose rings need more than 128 pages refused: ${beyond% } ($(grep -m 1 -E '^FAIL [^ ]* \[beyond-ring-pages\]' "$log" | cut -d: -f2- | cut -c 2-240))"
echo "$summary" | grep -qE ', 0 FAIL$' || lab_fail "$name: $summary"
lab_check_exit "$name" "$status" "$log" "$limit"
lab_summary "$name: $(grep '^device: ' "$log" | cut -d' ' -f2-)"
lab_note "$name: $summary"
defects=$(grep -E '^provider-defect ' "$log" | cut -d: -f1 | cut -d' ' -f2 | tr '\n' ' ')
[ -z "$defects" ] || lab_summary "$name: rdma-core's vmw_pvrdma provider accepts (its defect, the kernel never sees the value): ${defects% }"
c_errno=$(grep -E '^C-driver-errno ' "$log" | cut -d: -f1 | cut -d' ' -f2 | tr '\n' ' ')
[ -z "$c_errno" ] || lab_note "$name: the C driver returns EFAULT for depths over the maximum that the device refuses: ${c_errno% }"
