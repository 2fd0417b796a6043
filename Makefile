# SPDX-License-Identifier: GPL-2.0
#
# twheel: out-of-tree build, userspace programs and the VM test pipeline.
# Kbuild reads ./Kbuild (not this file) for the modules themselves.
#
#   make [modules]          twheel.ko, samples/twheel_consumer.ko and, if the
#                           kernel has CONFIG_KUNIT, tests/twheel_kunit.ko,
#                           plus the static userspace programs
#   make userspace          lib, then tools/twheelctl, tools/twheel_bench,
#                           tests/userspace/* and examples/*, all linked
#                           with lib/libtwheel.a
#                           (twheel_test on the kernel's kselftest_harness.h,
#                           extracted from linux-source-6.12 into
#                           build/kselftest)
#   make lib                lib/libtwheel.so.1, lib/libtwheel.a (lib/Makefile)
#   make lib-check          host-only: install into a temporary DESTDIR, build
#                           the README example against it shared and static,
#                           check the exports and render the man pages
#   make check              everything, in QEMU on the distro and the debug
#                           kernel; ends with "N passed, N failed"
#     KERNELS=distro        ... a subset (default: "distro distro61 rt v72 debug")
#     T=name                ... filter given to the tests (see tests/vm/check.sh)
#     KUNIT_GLOB=suite.test ... KUnit's filter_glob
#     STYLE=0               ... without checkpatch
#   make style              checkpatch --strict on the kernel sources
#   make demo               boot the distro kernel, show twheelctl at work
#   make torture [DURATION=10m]  in-kernel + /dev/twheel torture with CPU
#                           hotplug on the debug kernel
#   make fuzz [DURATION=10m]     full fail-nth walks, twheel_fuzz and trinity
#   make kcsan [DURATION=3m]     the torture on a KCSAN kernel, races listed
#   make install            libtwheel: library, headers, pkg-config file and
#                           man pages under PREFIX (/usr/local), DESTDIR honoured
#   make modules_install    the modules (INSTALL_MOD_DIR=extra) + depmod
#   make dkms               dkms add + build against every installed header
#                           set (6.1 and 6.12 on Debian 12), then remove
#   make deb                Debian packages into build/deb/: twheel-dkms,
#                           libtwheel1, libtwheel-dev, twheel-tools
#                           (debian/, debhelper + dh-dkms; version from VERSION)
#   make clean
#
# VERSION holds the one version number: MODULE_VERSION, the DKMS tree,
# libtwheel's pkg-config file and the Debian packages all take it from there.
#
# KDIR defaults to the running kernel's build tree, or the newest installed
# one when the running kernel has no headers.

KDIR ?= $(shell d=/lib/modules/$$(uname -r)/build; \
	if [ -f "$$d/Makefile" ]; then echo "$$d"; \
	else ls -d /lib/modules/*/build 2>/dev/null | sort -V | tail -n1; fi)

CC ?= gcc
LIBTWHEEL_A := lib/libtwheel.a
USER_CFLAGS := -static -O2 -g -Wall -Wextra -Werror -I. -pthread
# twheel_test may use io_uring: link liburing (static) when it includes it.
uring = $(if $(shell grep -l 'liburing.h' $(1) 2>/dev/null),-luring)

USER_PROGS := $(patsubst %.c,%,$(wildcard tools/twheelctl.c tools/twheel_bench.c tests/userspace/twheel_test.c))
RELIABILITY_PROGS := $(patsubst %.c,%,$(wildcard tests/userspace/twheel_torture.c \
	tests/userspace/twheel_failnth.c tests/userspace/twheel_fuzz.c \
	tests/userspace/twheel_abuse.c))
USER_PROGS += $(RELIABILITY_PROGS)
# examples/: twheel_httpd (an HTTP server's timeouts on three timer
# backends) and httpd_idle, its idle-close client; see examples/README.md
EXAMPLE_PROGS := $(patsubst %.c,%,$(wildcard examples/twheel_httpd.c examples/httpd_idle.c))
USER_PROGS += $(EXAMPLE_PROGS)

KERNELS ?= distro distro61 rt v72 debug
T ?=
KUNIT_GLOB ?=
STYLE ?= 1
export KERNELS T KUNIT_GLOB STYLE

SETUP_HOST := tests/vm/setup-host.sh
# Every program here uses libtwheel, linked statically. <libtwheel.h>
# includes <twheel/twheel_uapi.h>, lib/Makefile's copy of uapi/twheel.h.
LIBTWHEEL := -Ilib -Ilib/include
LIBTWHEEL_DEPS := uapi/twheel.h lib/libtwheel.h $(LIBTWHEEL_A)
# the helpers every tests/userspace program includes (with <libtwheel.h>)
TW_UTIL := tests/userspace/tw_util.h $(LIBTWHEEL_DEPS)

.PHONY: all modules userspace lib lib-check check style demo install \
	modules_install dkms deb clean bench torture fuzz kcsan setup-host FORCE

all: modules userspace

modules:
	@test -n "$(KDIR)" -a -f "$(KDIR)/Makefile" || \
		{ echo "twheel: no kernel build tree (KDIR=$(KDIR)); run $(SETUP_HOST)" >&2; exit 1; }
	$(MAKE) -C $(KDIR) M=$(CURDIR) modules

# CRIU's plugin, where criu's <criu/criu-plugin.h> is (the criu package).
CRIU_PLUGIN := $(if $(wildcard /usr/include/criu/criu-plugin.h),tools/criu/twheel_criu.so)
USER_PROGS += $(CRIU_PLUGIN)

tools/criu/twheel_criu.so: tools/criu/twheel_criu.c tools/twheel_cr.c tools/twheel_cr.h $(LIBTWHEEL_DEPS)
	$(CC) $(CPPFLAGS) -shared -fPIC $(filter-out -static,$(USER_CFLAGS)) $(CFLAGS) $(LIBTWHEEL) \
		-o $@ tools/criu/twheel_criu.c tools/twheel_cr.c $(LDFLAGS)

userspace: lib $(USER_PROGS)
	@test -n "$(USER_PROGS)" || echo "twheel: no userspace sources yet"

tools/twheel_bench: %: %.c $(LIBTWHEEL_DEPS)
	$(CC) $(USER_CFLAGS) $(LIBTWHEEL) -o $@ $< $(LIBTWHEEL_A) $(call uring,$<)

# TWHEELCTL_LINK=shared: twheelctl linked with lib/libtwheel.so, as the
# twheel-tools package ships it beside libtwheel1, and with the CPPFLAGS,
# CFLAGS and LDFLAGS of the environment (debian/rules: dpkg-buildflags'
# hardening). The VM's initramfs has no libtwheel.so: static by default.
TWHEELCTL_LINK ?= static
# tools/twheel_cr.c: the checkpoint image, for dump and restore (and the
# CRIU plugin, tools/criu/).
TWHEELCTL_SRCS := tools/twheelctl.c tools/twheel_cr.c
ifeq ($(TWHEELCTL_LINK),shared)
tools/twheelctl: $(TWHEELCTL_SRCS) tools/twheel_cr.h $(LIBTWHEEL_DEPS)
	$(CC) $(CPPFLAGS) $(filter-out -static,$(USER_CFLAGS)) $(CFLAGS) $(LIBTWHEEL) \
		-o $@ $(TWHEELCTL_SRCS) $(LDFLAGS) -Llib -ltwheel
else
tools/twheelctl: $(TWHEELCTL_SRCS) tools/twheel_cr.h $(LIBTWHEEL_DEPS)
	$(CC) $(USER_CFLAGS) $(LIBTWHEEL) -o $@ $(TWHEELCTL_SRCS) $(LIBTWHEEL_A)
endif

# The kernel's kselftest harness, for twheel_test: copied at build time (not
# kept in git) from the linux-source-6.12 package's tarball, which
# tests/vm/setup-host.sh installs; extracted once, the stamp says it is done.
# A kernel tree that tests/vm/build-kernel.sh unpacked from the same package
# version serves instead, without 10 s or more of xz.
KSFT_TARBALL ?= /usr/src/linux-source-6.12.tar.xz
KSFT_DIR := build/kselftest
KSFT_MEMBERS := kselftest_harness.h kselftest.h
KSFT_STAMP := $(KSFT_DIR)/.stamp
KSFT_SRCVER := $(shell dpkg-query -W -f='$${Version}' linux-source-6.12 2>/dev/null)
KSFT_TREE := $(firstword $(patsubst %/.twheel-ok,%,$(wildcard \
	$(or $(XDG_CACHE_HOME),$(HOME)/.cache)/twheel/kernel-*-$(KSFT_SRCVER)-*/.twheel-ok)))

$(KSFT_STAMP):
	@rm -rf $(KSFT_DIR).tmp && mkdir -p $(KSFT_DIR).tmp
ifneq ($(KSFT_TREE),)
	cp $(addprefix $(KSFT_TREE)/tools/testing/selftests/,$(KSFT_MEMBERS)) $(KSFT_DIR).tmp/
else
	@test -f $(KSFT_TARBALL) || \
		{ echo "twheel: no $(KSFT_TARBALL); run $(SETUP_HOST)" >&2; exit 1; }
	tar -xJf $(KSFT_TARBALL) -C $(KSFT_DIR).tmp --strip-components=4 \
		$(addprefix linux-source-6.12/tools/testing/selftests/,$(KSFT_MEMBERS))
endif
	@rm -rf $(KSFT_DIR) && mv $(KSFT_DIR).tmp $(KSFT_DIR) && touch $@

tests/userspace/twheel_test: tests/userspace/twheel_test.c $(TW_UTIL) $(KSFT_STAMP)
	$(CC) $(USER_CFLAGS) $(LIBTWHEEL) -isystem $(KSFT_DIR) -o $@ $< $(LIBTWHEEL_A) \
		$(call uring,$<)

$(RELIABILITY_PROGS): %: %.c $(TW_UTIL)
	$(CC) $(USER_CFLAGS) $(LIBTWHEEL) -o $@ $< $(LIBTWHEEL_A)

$(EXAMPLE_PROGS): %: %.c $(LIBTWHEEL_DEPS)
	$(CC) $(USER_CFLAGS) $(LIBTWHEEL) -o $@ $< $(LIBTWHEEL_A)

# libtwheel: built, installed and cleaned by lib/Makefile (PREFIX, DESTDIR,
# LIBDIR, ... are passed down with the command line). lib/Makefile always
# runs (FORCE) and decides what is out of date; what links libtwheel.a is
# relinked only if that changed the archive. "lib" and the programs share
# this one rule, so a parallel make runs lib/Makefile once.
lib: $(LIBTWHEEL_A)

$(LIBTWHEEL_A): FORCE
	$(MAKE) -C lib

lib-check:
	@tests/lib/check-install.sh

setup-host:
	@$(SETUP_HOST)

check: setup-host
	@tests/vm/check.sh

style: setup-host
	@tests/vm/style.sh

# Every VM run goes through tests/vm/vm.sh MODE KERNEL.
VM_RUN = tests/vm/vm.sh

demo: setup-host
	@$(VM_RUN) demo distro --live

install: lib
	$(MAKE) -C lib install

modules_install: modules
	$(MAKE) -C $(KDIR) M=$(CURDIR) INSTALL_MOD_DIR=extra modules_install
	depmod -a $(if $(INSTALL_MOD_PATH),-b $(INSTALL_MOD_PATH)) \
		$(shell cat $(KDIR)/include/config/kernel.release)

bench: setup-host
	@tests/vm/bench.sh

torture: setup-host
	@$(VM_RUN) torture debug --duration $(or $(DURATION),10m)

fuzz: setup-host
	@$(VM_RUN) fuzz debug --duration $(or $(DURATION),10m)

kcsan: setup-host
	@tests/vm/kcsan.sh $(or $(DURATION),3m)

dkms: setup-host
	@tests/vm/dkms.sh

# Built in a copy of the tree under build/deb/ (dpkg-buildpackage writes
# its packages into the parent of the source directory); no root needed.
deb:
	@debian/build-deb.sh

clean:
	@if [ -n "$(KDIR)" ] && [ -f "$(KDIR)/Makefile" ]; then \
		$(MAKE) -C $(KDIR) M=$(CURDIR) clean; fi
	rm -rf build tools/twheelctl tools/twheel_bench tests/userspace/twheel_test
	rm -f $(RELIABILITY_PROGS) $(EXAMPLE_PROGS)
	$(MAKE) -C lib clean
