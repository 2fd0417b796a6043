#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# make fuzz: on the debug kernel, the full fail-nth walks (every fault
# point of every /dev/twheel path and of twheel's init), then twheel_fuzz
# and trinity (taught the ioctls by tests/userspace/trinity_twheel.c) for
# DURATION in all, half each; kmemleak at the end.
#
#   tests/vm/fuzz.sh [--duration 10m]
#
# See tests/vm/torture.sh, which does the work.
set -euo pipefail

exec "$(dirname "$0")/torture.sh" --mode fuzz "$@"
