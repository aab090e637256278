/*
 * lineread.h - a monotonic clock in ms and a line reader with a deadline.
 * Header-only so the drill, which does not link tests/lib (no CUnit),
 * uses the same code as the test binaries (testlib.h's tl_now_ms and
 * tl_read_line are these).
 */
#ifndef SIPC_LINEREAD_H
#define SIPC_LINEREAD_H

#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

static inline int64_t
lr_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* One line from `fd` into buf (NUL-terminated, newline dropped), read a
 * byte at a time so nothing after the line is consumed.  False on EOF,
 * error, a line that does not fit, or `ms` passing first. */
static inline bool
lr_read_line(int fd, char *buf, size_t len, int ms)
{
	int64_t end = lr_now_ms() + ms;
	size_t off = 0;

	while (off + 1 < len) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int64_t left = end - lr_now_ms();

		if (left <= 0 || poll(&p, 1, (int)left) <= 0)
			return false;
		if (read(fd, buf + off, 1) != 1)
			return false;
		if (buf[off] == '\n') {
			buf[off] = '\0';
			return true;
		}
		off++;
	}
	return false;
}

#endif
