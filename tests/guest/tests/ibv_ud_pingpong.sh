#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# lab-about: ibv_ud_pingpong server and client in the guest, -g <GID of 192.0.2.1> --chk, sizes 1 and the port's active MTU
# lab-timeout: 300
# lab-versions: 18
. "$LAB_DIR/lib.sh"

# A UD message must fit the path MTU (the tool refuses larger sizes).
mtu=$(ibv_devinfo -d "$LAB_DEV" | sed -n 's/^[[:space:]]*active_mtu:[[:space:]]*\([0-9]*\).*/\1/p' | head -n 1)
[ -n "$mtu" ] || lab_fail "cannot read active_mtu of $LAB_DEV from ibv_devinfo"
lab_note "active MTU $mtu"
port=18515
for size in 1 "$mtu"; do
	lab_pingpong ibv_ud_pingpong "$size" "${LAB_ITERS:-500}" "$port" --chk
	port=$((port + 1))
done
