#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# lab-about: ucmatose -P ib (rdma_cm, RC, IB port space, IP addresses) server and client in the guest on 192.0.2.1, 4 connections x 10 messages: connection setup over QP1 through the mux
# lab-timeout: 300
. "$LAB_DIR/lib.sh"

# The same exchange as ucmatose.sh in the IB port space, where librdmacm does
# not check the connection's RDMA read resources against the device's limits
# (QEMU 7.2's pvrdma reports 0 for them; see the known failure of ucmatose).
lab_ucmatose 4 10 7472 -P ib
