#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# `make demo`: build twheel for the distro kernel, boot it in QEMU and run
# tests/vm/guest/demo.sh there, showing the whole console as it goes.
# Compiler warnings are shown but do not stop the demo.
set -euo pipefail

# shellcheck source=tests/vm/lib.sh
. "$(dirname "$0")/lib.sh"

main() {
	local k=distro f
	local -a args=()
	TWHEEL_WARNINGS_OK=1 "$TWHEEL_ROOT/tests/vm/build-modules.sh" "$k" "$(distro_kdir)"
	make -s -C "$TWHEEL_ROOT" userspace
	args+=(--add "$TWHEEL_BUILD/$k/twheel.ko:/twheel/twheel.ko")
	f=$TWHEEL_BUILD/$k/samples/twheel_consumer.ko
	[ ! -f "$f" ] || args+=(--add "$f:/twheel/twheel_consumer.ko")
	for f in tools/twheelctl tests/userspace/twheel_test; do
		[ ! -x "$TWHEEL_ROOT/$f" ] || args+=(--add "$TWHEEL_ROOT/$f:/bin/${f##*/}")
	done
	exec "$TWHEEL_ROOT/tests/vm/run-vm.sh" --kernel "$(distro_bzimage)" \
		--name "$k-demo" --script "$TWHEEL_ROOT/tests/vm/guest/demo.sh" \
		--env "TWHEEL_KERNEL=$k" --live "${args[@]}" "$@"
}

main "$@"
