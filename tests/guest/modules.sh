# SPDX-License-Identifier: GPL-2.0
# Loading kernel modules in a lab guest, sourced by init.sh.
#
# The guest has no /lib/modules for the test kernel (its root is the host's),
# so modprobe cannot be used: modules are insmod-ed from the kernel build dir
# ($LAB_KDIR), dependencies first, found through its modules.order.
# Needs: LAB_KDIR, log() from init.sh. Sets LAB_INSMOD_ERROR when insmod fails.
# Simple text steps use busybox's applets, which start faster than the host's
# dynamically linked tools under TCG (init.sh).

# lab_module_loaded NAME: true if module NAME is loaded.
lab_module_loaded() {
	busybox grep -q "^$(echo "$1" | busybox tr - _) " /proc/modules
}

# lab_module_path NAME: prints the path of the module NAME built in $LAB_KDIR.
lab_module_path() {
	[ -r "$LAB_KDIR/modules.order" ] || return 1
	# Module names treat '-' and '_' alike; modules.order lists .o (6.2+) or .ko paths.
	pattern=$(echo "$1" | busybox sed 's/[-_]/[-_]/g')
	entry=$(busybox grep -E "(^|/)$pattern\.k?o$" "$LAB_KDIR/modules.order" | busybox head -n 1)
	[ -n "$entry" ] || return 1
	echo "$LAB_KDIR/${entry%.o}.ko" | busybox sed 's/\.ko\.ko$/.ko/'
}

# lab_load_module PATH: insmods the module at PATH after its dependencies.
lab_load_module() {
	# The host's /bin/sh (dash) has `local`; the recursion needs it.
	# shellcheck disable=SC3043
	local path name deps dep dep_path
	path=$1
	name=$(modinfo -F name "$path" 2>>"$R/init.log") || {
		log "modinfo $path failed"
		return 1
	}
	lab_module_loaded "$name" && return 0
	deps=$(modinfo -F depends "$path" 2>>"$R/init.log")
	for dep in $(echo "$deps" | busybox tr , ' '); do
		lab_module_loaded "$dep" && continue
		dep_path=$(lab_module_path "$dep") || {
			log "$name needs $dep, which is neither loaded nor in $LAB_KDIR/modules.order"
			return 1
		}
		lab_load_module "$dep_path" || return 1
	done
	log "insmod $path"
	if ! insmod "$path" >/tmp/insmod.out 2>&1; then
		cat /tmp/insmod.out >>"$R/init.log"
		# What insmod and the kernel said, for the runner's one-line cause.
		LAB_INSMOD_ERROR="$(tr '\n' ' ' </tmp/insmod.out)/ kernel: $(dmesg | tail -n 1 | sed 's/^\[[^]]*\] //')"
		log "insmod $path failed: $LAB_INSMOD_ERROR"
		return 1
	fi
}
