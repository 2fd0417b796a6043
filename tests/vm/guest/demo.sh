#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Guest side of `make demo` (busybox sh): load twheel, drive it with
# twheelctl, load the sample consumer and show what it logs. A step that
# fails is shown and the demo goes on; the exit status is 1 only if
# twheel.ko cannot be loaded.

run() {
	echo "\$ $*"
	"$@" || echo "(exit status $?)"
}

section() {
	echo
	echo "==== $* ===="
}

section "load twheel.ko"
run insmod /twheel/twheel.ko || exit 1
grep -q '^twheel ' /proc/modules || exit 1
run ls -l /dev/twheel
dmesg | grep -i 'twheel' | tail -n 5

if [ -x /bin/twheelctl ]; then
	section "twheelctl"
	run twheelctl info
	run twheelctl schedule --in 250ms
	run twheelctl schedule --in 100ms --every 50ms --count 5
	run twheelctl run -t 250ms -t 1s -t every:200ms,count=5 --cancel 2@500ms
	run twheelctl run -t 5s --modify 1@500ms=250ms
	run twheelctl run -t 500ms --extend 1@300ms=500ms
	run twheelctl run -t 1s,copies=10000 --quiet
else
	section "twheelctl: not built yet (tools/twheelctl.c)"
fi

if [ -f /twheel/twheel_consumer.ko ]; then
	section "sample consumer"
	run insmod /twheel/twheel_consumer.ko
	i=0
	while [ $i -lt 50 ] && ! dmesg | grep -q 'twheel_consumer: ok$'; do
		sleep 0.2
		i=$((i + 1))
	done
	dmesg | grep 'twheel_consumer:'
	run rmmod twheel_consumer
fi

section "unload"
run rmmod twheel
dmesg | grep -i 'twheel' | tail -n 3
exit 0
