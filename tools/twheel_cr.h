/* SPDX-License-Identifier: GPL-2.0 */
/*
 * twheel_cr: the image of an open /dev/twheel, for checkpoint and restore:
 * made from a file by TWHEEL_IOC_DUMP and TWHEEL_IOC_RING_STATE and the
 * contents of its mappings, written and read as one file, and put into a
 * new file by TWHEEL_IOC_RESTORE. twheelctl's dump and restore and CRIU's
 * plugin (tools/criu/) use it; uapi/twheel.h says what each call does.
 *
 * The image file, all in the byte order of the machine that wrote it:
 *
 *   struct twheel_cr_header
 *   ntimers struct twheel_timer_state, in the order TWHEEL_IOC_DUMP gave
 *   map_bytes of the mapped deadline array (absent if 0)
 *   ring_bytes of the ring's mapping (absent if 0)
 *   ring.nslots __u64: the id behind each ring slot (absent without ring)
 */
#ifndef TWHEEL_CR_H
#define TWHEEL_CR_H

#include <stddef.h>
#include <stdint.h>

#include <twheel/twheel_uapi.h>

#define TWHEEL_CR_MAGIC		"TWHEELCR"
#define TWHEEL_CR_VERSION	1

/* struct twheel_cr_header::flags */
#define TWHEEL_CR_MAP		0x1u	/* the file had a deadline array */
#define TWHEEL_CR_RING		0x2u	/* the file had a submission ring */
#define TWHEEL_CR_EVENTFD	0x4u	/* the file had an eventfd */

struct twheel_cr_header {
	char			magic[8];
	uint32_t		version;
	uint32_t		flags;
	uint64_t		ntimers;
	uint64_t		map_bytes;
	uint64_t		ring_bytes;
	uint32_t		max_timers;
	/* The eventfd's number in the dumped process, and its counter. */
	int32_t			eventfd;
	uint64_t		eventfd_count;
	/* The kernel's side of the ring; ids is 0 here. */
	struct twheel_ring_state ring;
	uint64_t		reserved[4];
};

struct twheel_cr_image {
	struct twheel_cr_header		hdr;
	struct twheel_timer_state	*timers;
	void				*map;
	void				*ring;
	uint64_t			*ring_ids;
};

/*
 * Fills @img from @fd (the caller fills the eventfd fields). The file's
 * users should be stopped. Return: 0, or -errno (-ENOTTY: a kernel
 * without TWHEEL_INFO_RESTORE).
 */
int twheel_cr_dump(int fd, struct twheel_cr_image *img);
/* Recreates @img's timers, mappings and ring in @fd, a new file. */
int twheel_cr_restore(int fd, const struct twheel_cr_image *img);
int twheel_cr_write(int out, const struct twheel_cr_image *img);
int twheel_cr_read(int in, struct twheel_cr_image *img);
void twheel_cr_free(struct twheel_cr_image *img);
/* Which of @pid's fds is @fd's eventfd (-1: none); its count in *@count. */
int twheel_cr_find_eventfd(int pidfd, int pid, int fd, uint64_t *count);

#endif /* TWHEEL_CR_H */
