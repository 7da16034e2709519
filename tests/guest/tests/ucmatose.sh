#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# lab-about: ucmatose (rdma_cm, RC, TCP port space) server and client in the guest on 192.0.2.1, 32 connections x 100 messages each way: connection setup over QP1 through the mux, 64 QPs at once
# lab-timeout: 300
# lab-versions: 17,18
. "$LAB_DIR/lib.sh"

lab_ucmatose 32 100 7471
lab_check_gid_types ucmatose
