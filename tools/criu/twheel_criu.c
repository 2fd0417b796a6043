// SPDX-License-Identifier: GPL-2.0
/*
 * twheel_criu.so: CRIU's plugin for /dev/twheel (criu 3.17's plugin API,
 * <criu/criu-plugin.h>), installed in /usr/lib/criu/ by twheel-tools.
 *
 * Dump (in criu, with the tasks frozen):
 *   DUMP_EXT_FILE      an open /dev/twheel (criu knows no such device):
 *                      its image, tools/twheel_cr.c's, in the image
 *                      directory as twheel-ID.img, with the pid and fd it
 *                      had and the fd of the eventfd it signals
 *   HANDLE_DEVICE_VMA  its mappings (deadline array, ring): claimed, their
 *                      pages are in that image, not criu's
 * Restore:
 *   RESTORE_EXT_FILE   (in the restored task) a new /dev/twheel made from
 *                      the image: the same ids, array and ring
 *   UPDATE_VMA_MAP     (same task) the mappings are made of that file
 *   RESUME_DEVICES_LATE (in criu, the tasks restored) the eventfd, which
 *                      criu restored as its own file, linked again
 *
 * A task whose mappings of /dev/twheel belong to more than one twheel
 * file cannot be told apart (they share one inode): its dump fails.
 * TWHEEL_CRIU_TRACE=FILE: see trace().
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <linux/kcmp.h>

#include <criu/criu-plugin.h>

#include "../twheel_cr.h"

#define TW_IMG		"twheel-%08x.img"

/* struct twheel_cr_header::reserved[] as this plugin uses them. */
#define HDR_PID		0	/* the task that had the file */
#define HDR_FD		1	/* its fd there */

/*
 * The number the restored task's file had (and gets back), for
 * UPDATE_VMA_MAP; -2 once there are two. Not the fd RESTORE_EXT_FILE
 * returns: criu moves the file to its number and closes that one, which
 * may then name another file (seen: an image, read-only, and EACCES).
 */
static int restored_fd = -1;

/*
 * TWHEEL_CRIU_TRACE=FILE: a line per timer as dumped (with its slot of
 * the array) and as restored, appended to FILE, for diagnosis.
 */
static void trace(const char *what, const struct twheel_cr_image *img)
{
	const char *path = getenv("TWHEEL_CRIU_TRACE");
	const uint64_t *slots = img->map;
	uint64_t nslots = img->hdr.map_bytes / sizeof(*slots);
	struct timespec ts;
	FILE *f;

	if (!path || !(f = fopen(path, "a")))
		return;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	fprintf(f, "%s at %llu: %llu timers\n", what,
		(unsigned long long)ts.tv_sec * 1000000000ULL + (unsigned long long)ts.tv_nsec,
		(unsigned long long)img->hdr.ntimers);
	for (uint64_t i = 0; i < img->hdr.ntimers; i++) {
		const struct twheel_timer_state *st = &img->timers[i];
		uint32_t slot = TWHEEL_ID_SLOT(st->id);

		fprintf(f, "%s id=%llx state=%#x clock=%u flags=%#x deadline=%llu ev_count=%llu ev_deadline=%llu slot=%llu\n",
			what, (unsigned long long)st->id, st->state, st->clockid,
			st->flags, (unsigned long long)st->deadline,
			(unsigned long long)st->ev_count,
			(unsigned long long)st->ev_deadline,
			slots && slot < nslots ? (unsigned long long)slots[slot] : 0ULL);
	}
	fclose(f);
}

static bool is_twheel_dev(const struct stat *st)
{
	struct stat dev;

	return S_ISCHR(st->st_mode) && !stat(TWHEEL_DEVICE, &dev) &&
	       st->st_rdev == dev.st_rdev;
}

/* Which task has @fd open, and as which fd: kcmp() of each /dev/twheel. */
static int find_owner(int fd, int *owner_fd)
{
	char path[300], link[64];
	struct dirent *p, *f;
	DIR *procs, *fds;
	int pid = -1;

	procs = opendir("/proc");
	if (!procs)
		return -1;
	while (pid < 0 && (p = readdir(procs))) {
		int cand = atoi(p->d_name);

		if (cand <= 0 || cand == getpid())
			continue;
		snprintf(path, sizeof(path), "/proc/%d/fd", cand);
		fds = opendir(path);
		if (!fds)
			continue;
		while ((f = readdir(fds))) {
			ssize_t n;

			snprintf(path, sizeof(path), "/proc/%d/fd/%s", cand, f->d_name);
			n = readlink(path, link, sizeof(link) - 1);
			if (n <= 0)
				continue;
			link[n] = '\0';
			if (strcmp(link, TWHEEL_DEVICE))
				continue;
			if (syscall(SYS_kcmp, getpid(), cand, KCMP_FILE, fd,
				    atoi(f->d_name)) == 0) {
				pid = cand;
				*owner_fd = atoi(f->d_name);
				break;
			}
		}
		closedir(fds);
	}
	closedir(procs);
	return pid;
}

static int twheel_dump_file(int fd, int id)
{
	struct twheel_cr_image img;
	struct stat st;
	char name[32];
	int ret, out, pid, pidfd, owner_fd = -1;

	if (fstat(fd, &st) || !is_twheel_dev(&st))
		return -ENOTSUP;
	ret = twheel_cr_dump(fd, &img);
	if (ret) {
		fprintf(stderr, "twheel_criu: dump of file %#x: %s\n", id, strerror(-ret));
		return -1;
	}
	trace("dump", &img);
	pid = find_owner(fd, &owner_fd);
	img.hdr.reserved[HDR_PID] = pid > 0 ? (uint64_t)pid : 0;
	img.hdr.reserved[HDR_FD] = owner_fd >= 0 ? (uint64_t)owner_fd : 0;
	pidfd = pid > 0 ? (int)syscall(SYS_pidfd_open, pid, 0) : -1;
	if (pidfd >= 0) {
		img.hdr.eventfd = twheel_cr_find_eventfd(pidfd, pid, fd,
							 &img.hdr.eventfd_count);
		if (img.hdr.eventfd >= 0)
			img.hdr.flags |= TWHEEL_CR_EVENTFD;
		close(pidfd);
	}
	snprintf(name, sizeof(name), TW_IMG, (unsigned int)id);
	out = openat(criu_get_image_dir(), name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	ret = out < 0 ? -errno : twheel_cr_write(out, &img);
	if (out >= 0 && close(out) && !ret)
		ret = -errno;
	twheel_cr_free(&img);
	if (ret) {
		fprintf(stderr, "twheel_criu: %s: %s\n", name, strerror(-ret));
		return -1;
	}
	return 0;
}
CR_PLUGIN_REGISTER_HOOK(CR_PLUGIN_HOOK__DUMP_EXT_FILE, twheel_dump_file)

static int twheel_handle_vma(int fd, const struct stat *st)
{
	(void)fd;
	return is_twheel_dev(st) ? 0 : -ENOTSUP;
}
CR_PLUGIN_REGISTER_HOOK(CR_PLUGIN_HOOK__HANDLE_DEVICE_VMA, twheel_handle_vma)

static int read_image(const char *name, struct twheel_cr_image *img)
{
	int in = openat(criu_get_image_dir(), name, O_RDONLY | O_CLOEXEC), ret;

	if (in < 0)
		return -errno;
	ret = twheel_cr_read(in, img);
	close(in);
	return ret;
}

static int twheel_restore_file(int id)
{
	struct twheel_cr_image img;
	char name[32];
	int fd, ret;

	snprintf(name, sizeof(name), TW_IMG, (unsigned int)id);
	ret = read_image(name, &img);
	if (ret == -ENOENT)
		return -ENOTSUP;	/* not one of ours */
	if (ret) {
		fprintf(stderr, "twheel_criu: %s: %s\n", name, strerror(-ret));
		return -1;
	}
	fd = open(TWHEEL_DEVICE, O_RDWR);
	if (fd < 0) {
		fprintf(stderr, "twheel_criu: %s: %s (is the twheel module loaded?)\n",
			TWHEEL_DEVICE, strerror(errno));
		twheel_cr_free(&img);
		return -1;
	}
	ret = twheel_cr_restore(fd, &img);
	if (!ret && getenv("TWHEEL_CRIU_TRACE")) {
		struct twheel_cr_image now;

		if (!twheel_cr_dump(fd, &now)) {
			trace("restored", &now);
			twheel_cr_free(&now);
		}
	}
	restored_fd = restored_fd == -1 ? (int)img.hdr.reserved[HDR_FD] : -2;
	twheel_cr_free(&img);
	if (ret) {
		fprintf(stderr, "twheel_criu: restore of %s: %s\n", name, strerror(-ret));
		close(fd);
		return -1;
	}
	return fd;
}
CR_PLUGIN_REGISTER_HOOK(CR_PLUGIN_HOOK__RESTORE_EXT_FILE, twheel_restore_file)

static int twheel_update_vma(const char *path, const uint64_t addr, const uint64_t old_pgoff,
			     uint64_t *new_pgoff, int *plugin_fd)
{
	struct stat st;

	(void)addr;
	if (strcmp(path, TWHEEL_DEVICE))
		return 0;
	if (restored_fd < 0) {
		fprintf(stderr, "twheel_criu: a mapping of %s without %s file restored\n",
			path, restored_fd == -1 ? "its" : "a single");
		return -1;
	}
	if (fstat(restored_fd, &st) || !is_twheel_dev(&st)) {
		fprintf(stderr, "twheel_criu: fd %d is not the restored %s yet\n",
			restored_fd, path);
		return -1;
	}
	*new_pgoff = old_pgoff;
	*plugin_fd = dup(restored_fd);
	return *plugin_fd < 0 ? -1 : 1;
}
CR_PLUGIN_REGISTER_HOOK(CR_PLUGIN_HOOK__UPDATE_VMA_MAP, twheel_update_vma)

/* The eventfd links of @pid's files: both ends are restored by now. */
static int twheel_resume_late(int pid)
{
	DIR *dir = fdopendir(dup(criu_get_image_dir()));
	struct twheel_cr_image img;
	struct dirent *d;
	int found = 0;

	if (!dir)
		return -1;
	rewinddir(dir);
	while ((d = readdir(dir))) {
		struct twheel_eventfd e = { 0 };
		int pidfd, tfd, efd, ok;

		if (strncmp(d->d_name, "twheel-", 7) || read_image(d->d_name, &img))
			continue;
		if (img.hdr.reserved[HDR_PID] != (uint64_t)pid ||
		    !(img.hdr.flags & TWHEEL_CR_EVENTFD)) {
			twheel_cr_free(&img);
			continue;
		}
		pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
		tfd = pidfd < 0 ? -1 : (int)syscall(SYS_pidfd_getfd, pidfd,
						    (int)img.hdr.reserved[HDR_FD], 0);
		efd = pidfd < 0 ? -1 : (int)syscall(SYS_pidfd_getfd, pidfd,
						    img.hdr.eventfd, 0);
		e.fd = efd;
		ok = tfd >= 0 && efd >= 0 && !ioctl(tfd, TWHEEL_IOC_SET_EVENTFD, &e);
		if (!ok)
			fprintf(stderr, "twheel_criu: eventfd %d of task %d: %s\n",
				img.hdr.eventfd, pid, strerror(errno));
		found += ok ? 1 : 0;
		if (tfd >= 0)
			close(tfd);
		if (efd >= 0)
			close(efd);
		if (pidfd >= 0)
			close(pidfd);
		twheel_cr_free(&img);
		if (!ok) {
			closedir(dir);
			return -1;
		}
	}
	closedir(dir);
	return found ? 0 : -ENOTSUP;
}
CR_PLUGIN_REGISTER_HOOK(CR_PLUGIN_HOOK__RESUME_DEVICES_LATE, twheel_resume_late)

CR_PLUGIN_REGISTER("twheel", NULL, NULL)
