// SPDX-License-Identifier: GPL-2.0
/*
 * twheel_cr: dump an open /dev/twheel into an image and restore it into a
 * new one (twheel_cr.h says what the image holds).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "twheel_cr.h"

/* Entries per TWHEEL_IOC_DUMP and TWHEEL_IOC_RESTORE. */
#define CR_CHUNK	TWHEEL_BATCH_MAX
/* A dump that keeps meeting a reader is tried this often. */
#define CR_DUMP_TRIES	100

static size_t cr_page_round(uint64_t n)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	return (n + page - 1) / page * page;
}

/* "KEY:\tVALUE" of /proc/PID/fdinfo/@fd in @base, or -1 without it. */
static long long cr_fdinfo(int pid, int fd, const char *key, int base)
{
	char path[64], line[256];
	size_t klen = strlen(key);
	long long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/fdinfo/%d", pid, fd);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, klen) && line[klen] == ':') {
			v = strtoll(line + klen + 1, NULL, base);
			break;
		}
	fclose(f);
	return v;
}

static int cr_dump_timers(int fd, struct twheel_cr_image *img)
{
	struct twheel_timer_state *all = NULL, *grown;
	size_t n = 0, cap = 0;
	struct twheel_dump d;
	int tries = 0;
	long got;

	memset(&d, 0, sizeof(d));
	for (;;) {
		if (cap - n < CR_CHUNK) {
			cap += CR_CHUNK;
			grown = realloc(all, cap * sizeof(*all));
			if (!grown) {
				free(all);
				return -ENOMEM;
			}
			all = grown;
		}
		d.timers = (uintptr_t)(all + n);
		d.count = CR_CHUNK;
		got = ioctl(fd, TWHEEL_IOC_DUMP, &d);
		if (got < 0 && errno == EAGAIN && ++tries < CR_DUMP_TRIES) {
			/* A reader was halfway through: start again. */
			n = 0;
			d.pos = 0;
			usleep(1000);
			continue;
		}
		if (got < 0) {
			int err = -errno;

			free(all);
			return err;
		}
		n += (size_t)got;
		if ((unsigned long)got < d.count)
			break;
	}
	img->timers = all;
	img->hdr.ntimers = n;
	return 0;
}

static int cr_copy_mapping(int fd, off_t off, uint64_t bytes, void **out)
{
	size_t len = cr_page_round(bytes);
	void *p, *copy;

	p = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, off);
	if (p == MAP_FAILED)
		return -errno;
	copy = malloc(len);
	if (copy)
		memcpy(copy, p, len);
	munmap(p, len);
	if (!copy)
		return -ENOMEM;
	*out = copy;
	return 0;
}

/*
 * A pending one-shot monotonic timer whose slot of the array says later
 * than its deadline was pushed back by the program and not yet re-filed:
 * the kernel does that when the old deadline comes (the array is read at
 * expiry). The restore's arming stores its deadline in the slot, as every
 * arming does, so it must arm for the pushed one; else the push is lost
 * and the timer fires early by it. The array is copied after the timers,
 * and the kernel never writes a slot but at an arming: a timer re-filed
 * for its push in between is pending at it already.
 */
static void cr_take_pushes(struct twheel_cr_image *img)
{
	const uint64_t *slots = img->map;
	uint64_t nslots = img->hdr.map_bytes / sizeof(*slots), i;

	for (i = 0; i < img->hdr.ntimers; i++) {
		struct twheel_timer_state *st = &img->timers[i];
		uint32_t slot = TWHEEL_ID_SLOT(st->id);

		if (!(st->state & TWHEEL_STATE_PENDING) ||
		    (st->flags & TWHEEL_TIMER_PERIODIC) ||
		    st->clockid != TWHEEL_CLOCK_MONOTONIC || slot >= nslots)
			continue;
		if (slots[slot] > st->deadline)
			st->deadline = slots[slot];
	}
}

int twheel_cr_dump(int fd, struct twheel_cr_image *img)
{
	struct twheel_info info;
	int ret;

	memset(img, 0, sizeof(*img));
	memcpy(img->hdr.magic, TWHEEL_CR_MAGIC, sizeof(img->hdr.magic));
	img->hdr.version = TWHEEL_CR_VERSION;
	img->hdr.eventfd = -1;
	if (ioctl(fd, TWHEEL_IOC_INFO, &info))
		return -errno;
	if (!(info.flags & TWHEEL_INFO_RESTORE))
		return -ENOTTY;
	img->hdr.max_timers = info.max_timers;

	/* The ring's first, as the dump drains it: both see the same ops. */
	img->hdr.ring.nslots = info.max_timers;
	img->ring_ids = calloc(info.max_timers ? info.max_timers : 1,
			       sizeof(*img->ring_ids));
	if (!img->ring_ids)
		return -ENOMEM;
	img->hdr.ring.ids = (uintptr_t)img->ring_ids;
	if (ioctl(fd, TWHEEL_IOC_RING_STATE, &img->hdr.ring) == 0) {
		img->hdr.flags |= TWHEEL_CR_RING;
		img->hdr.ring_bytes = cr_page_round(TWHEEL_RING_MAP_BYTES);
	} else if (errno != ENXIO) {
		ret = -errno;
		goto err_free;
	} else {
		free(img->ring_ids);
		img->ring_ids = NULL;
		memset(&img->hdr.ring, 0, sizeof(img->hdr.ring));
	}
	img->hdr.ring.ids = 0;

	ret = cr_dump_timers(fd, img);
	if (ret)
		goto err_free;
	if (cr_fdinfo(getpid(), fd, "twheel-mapped", 10) == 1) {
		img->hdr.flags |= TWHEEL_CR_MAP;
		img->hdr.map_bytes = cr_page_round(TWHEEL_MAP_SIZE(info.max_timers));
		ret = cr_copy_mapping(fd, 0, img->hdr.map_bytes, &img->map);
		if (ret)
			goto err_free;
		cr_take_pushes(img);
	}
	if (img->hdr.flags & TWHEEL_CR_RING) {
		ret = cr_copy_mapping(fd, TWHEEL_RING_OFFSET,
				      img->hdr.ring_bytes, &img->ring);
		if (ret)
			goto err_free;
	}
	return 0;

err_free:
	twheel_cr_free(img);
	return ret;
}

/* Events first, in the order read() had them; the rest after. */
static int cr_by_queue(const void *a, const void *b)
{
	const struct twheel_timer_state *x = a, *y = b;
	uint64_t kx = x->ev_count ? x->ev_seq : UINT64_MAX;
	uint64_t ky = y->ev_count ? y->ev_seq : UINT64_MAX;

	return kx < ky ? -1 : kx > ky;
}

static int cr_put_mapping(int fd, off_t off, uint64_t bytes, const void *src)
{
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, off);

	if (p == MAP_FAILED)
		return -errno;
	memcpy(p, src, bytes);
	/* The pages stay the file's until it is closed. */
	munmap(p, bytes);
	return 0;
}

static int cr_restore(int fd, const struct twheel_timer_state *t, uint32_t n,
		      uint32_t flags)
{
	struct twheel_restore r = {
		.timers = (uintptr_t)t, .count = n, .flags = flags,
	};
	long got = ioctl(fd, TWHEEL_IOC_RESTORE, &r);

	if (got < 0)
		return -errno;
	if ((uint32_t)got != n) {
		const struct twheel_timer_state *bad = t + got;

		/* Again from the entry that failed, for its errno. */
		got = ioctl(fd, TWHEEL_IOC_RESTORE, &(struct twheel_restore) {
			.timers = (uintptr_t)bad, .count = 1 });
		got = got < 0 ? -errno : -EIO;
		fprintf(stderr, "twheel_cr: entry id %#" PRIx64 " state %#x clock %u flags %#x"
			" events %" PRIu64 ": %s\n", (uint64_t)bad->id, bad->state,
			bad->clockid, bad->flags, (uint64_t)bad->ev_count,
			strerror((int)-got));
		return (int)got;
	}
	return 0;
}

int twheel_cr_restore(int fd, const struct twheel_cr_image *img)
{
	struct twheel_timer_state *sorted;
	struct twheel_ring_state rs;
	uint64_t i;
	int ret;

	/* The array before the timers: an expiry may read its slot at once. */
	if (img->hdr.flags & TWHEEL_CR_MAP) {
		ret = cr_put_mapping(fd, 0, img->hdr.map_bytes, img->map);
		if (ret)
			return ret;
	}
	/*
	 * Restore mode before the ring's pages: the ops they hold were
	 * consumed by the dumped file, and restore mode keeps any drain from
	 * running them again until RING_STATE has set the head past them.
	 */
	ret = cr_restore(fd, NULL, 0, 0);
	if (ret)
		return ret;
	if (img->hdr.flags & TWHEEL_CR_RING) {
		ret = cr_put_mapping(fd, TWHEEL_RING_OFFSET, img->hdr.ring_bytes,
				     img->ring);
		if (ret)
			return ret;
	}
	sorted = malloc((img->hdr.ntimers ? img->hdr.ntimers : 1) *
			sizeof(*sorted));
	if (!sorted)
		return -ENOMEM;
	memcpy(sorted, img->timers, img->hdr.ntimers * sizeof(*sorted));
	qsort(sorted, img->hdr.ntimers, sizeof(*sorted), cr_by_queue);
	for (i = 0; !ret && i < img->hdr.ntimers; ) {
		uint32_t n = img->hdr.ntimers - i > CR_CHUNK ?
			     CR_CHUNK : (uint32_t)(img->hdr.ntimers - i);

		ret = cr_restore(fd, sorted + i, n, 0);
		i += n;
	}
	free(sorted);
	if (ret)
		return ret;
	if (img->hdr.flags & TWHEEL_CR_RING) {
		rs = img->hdr.ring;
		rs.ids = (uintptr_t)img->ring_ids;
		rs.flags = TWHEEL_RING_STATE_SET;
		if (ioctl(fd, TWHEEL_IOC_RING_STATE, &rs))
			return -errno;
	}
	return cr_restore(fd, NULL, 0, TWHEEL_RESTORE_DONE);
}

static int cr_io(int fd, void *buf, size_t len, int writing)
{
	char *p = buf;

	while (len) {
		ssize_t n = writing ? write(fd, p, len) : read(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (!n)
			return -EIO;	/* a short image */
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int twheel_cr_write(int out, const struct twheel_cr_image *img)
{
	const struct twheel_cr_header *h = &img->hdr;
	int ret;

	ret = cr_io(out, (void *)h, sizeof(*h), 1);
	if (!ret)
		ret = cr_io(out, img->timers, h->ntimers * sizeof(*img->timers), 1);
	if (!ret && h->map_bytes)
		ret = cr_io(out, img->map, h->map_bytes, 1);
	if (!ret && h->ring_bytes)
		ret = cr_io(out, img->ring, h->ring_bytes, 1);
	if (!ret && (h->flags & TWHEEL_CR_RING))
		ret = cr_io(out, img->ring_ids,
			    h->ring.nslots * sizeof(*img->ring_ids), 1);
	return ret;
}

/* An image's sizes, checked before anything is allocated for them. */
static int cr_check(const struct twheel_cr_header *h)
{
	if (memcmp(h->magic, TWHEEL_CR_MAGIC, sizeof(h->magic)) ||
	    h->version != TWHEEL_CR_VERSION)
		return -EINVAL;
	/* At most every slot and as many orphans: 2 * max_timers. */
	if (h->ntimers > 2ULL * h->max_timers ||
	    h->map_bytes > cr_page_round(TWHEEL_MAP_SIZE(h->max_timers)) ||
	    h->ring_bytes > cr_page_round(TWHEEL_RING_MAP_BYTES) ||
	    h->ring.nslots > h->max_timers ||
	    !!(h->flags & TWHEEL_CR_MAP) != !!h->map_bytes ||
	    !!(h->flags & TWHEEL_CR_RING) != !!h->ring_bytes)
		return -EINVAL;
	return 0;
}

int twheel_cr_read(int in, struct twheel_cr_image *img)
{
	struct twheel_cr_header *h = &img->hdr;
	int ret;

	memset(img, 0, sizeof(*img));
	ret = cr_io(in, h, sizeof(*h), 0);
	if (ret)
		return ret;
	ret = cr_check(h);
	if (ret)
		return ret;
	img->timers = calloc(h->ntimers ? h->ntimers : 1, sizeof(*img->timers));
	img->map = h->map_bytes ? malloc(h->map_bytes) : NULL;
	img->ring = h->ring_bytes ? malloc(h->ring_bytes) : NULL;
	img->ring_ids = h->ring_bytes ? calloc(h->ring.nslots + 1,
					       sizeof(*img->ring_ids)) : NULL;
	if (!img->timers || (h->map_bytes && !img->map) ||
	    (h->ring_bytes && (!img->ring || !img->ring_ids))) {
		twheel_cr_free(img);
		return -ENOMEM;
	}
	ret = cr_io(in, img->timers, h->ntimers * sizeof(*img->timers), 0);
	if (!ret && h->map_bytes)
		ret = cr_io(in, img->map, h->map_bytes, 0);
	if (!ret && h->ring_bytes)
		ret = cr_io(in, img->ring, h->ring_bytes, 0);
	if (!ret && h->ring_bytes)
		ret = cr_io(in, img->ring_ids,
			    h->ring.nslots * sizeof(*img->ring_ids), 0);
	if (ret)
		twheel_cr_free(img);
	return ret;
}

void twheel_cr_free(struct twheel_cr_image *img)
{
	free(img->timers);
	free(img->map);
	free(img->ring);
	free(img->ring_ids);
	img->timers = NULL;
	img->map = NULL;
	img->ring = NULL;
	img->ring_ids = NULL;
}

#ifndef SYS_pidfd_getfd
#define SYS_pidfd_getfd 438
#endif

int twheel_cr_find_eventfd(int pidfd, int pid, int fd, uint64_t *count)
{
	struct twheel_eventfd q = { .fd = -1, .flags = TWHEEL_EVENTFD_QUERY };
	char path[64], link[64];
	struct dirent *de;
	int found = -1;
	DIR *dir;

	*count = 0;
	if (ioctl(fd, TWHEEL_IOC_SET_EVENTFD, &q) <= 0)
		return -1;
	snprintf(path, sizeof(path), "/proc/%d/fd", pid);
	dir = opendir(path);
	if (!dir)
		return -1;
	while (found < 0 && (de = readdir(dir))) {
		ssize_t n;
		int theirs, ours;

		if (de->d_name[0] == '.')
			continue;
		theirs = atoi(de->d_name);
		snprintf(path, sizeof(path), "/proc/%d/fd/%d", pid, theirs);
		n = readlink(path, link, sizeof(link) - 1);
		if (n < 0)
			continue;
		link[n] = '\0';
		if (strcmp(link, "anon_inode:[eventfd]"))
			continue;
		ours = (int)syscall(SYS_pidfd_getfd, pidfd, theirs, 0);
		if (ours < 0)
			continue;
		q.fd = ours;
		if (ioctl(fd, TWHEEL_IOC_SET_EVENTFD, &q) == 1) {
			found = theirs;
			/* fs/eventfd.c prints it in hex. */
			*count = (uint64_t)cr_fdinfo(getpid(), ours,
						     "eventfd-count", 16);
		}
		close(ours);
	}
	closedir(dir);
	return found;
}
