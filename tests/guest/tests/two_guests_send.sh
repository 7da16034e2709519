#!/bin/sh
# lab-about: two guests, one fabric, two-sided: the server guest (192.0.2.1) and the client guest (192.0.2.2), each with its own QEMU, pvrdma and driver, joined by the mux: ibv_rc_pingpong --chk (4096 and 65536 bytes), ibv_srq_pingpong --chk and ibv_ud_pingpong --chk, data checked on both sides
# lab-timeout: 400
# lab-guests: 2
. "$LAB_DIR/lib.sh"

[ -n "$LAB_ROLE" ] || lab_fail "a two-guest test run on one guest (no lab.role)"

lab_pair_pingpong ibv_rc_pingpong 4096 200 18515 --chk
lab_pair_pingpong ibv_rc_pingpong 65536 200 18516 --chk
lab_pair_pingpong ibv_srq_pingpong 4096 200 18517 --chk -q 16
lab_pair_pingpong ibv_ud_pingpong 1024 200 18518 --chk
