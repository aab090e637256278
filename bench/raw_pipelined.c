/*
 * raw_pipelined.c - baseline: the physical limit of pipelined transfer.
 *
 * Parent and a forked child joined by socketpair(AF_UNIX, SOCK_STREAM).
 * A writer thread in the parent keeps WINDOW (64) requests in flight,
 * issuing one write() per frame (4-byte length prefix + payload in the
 * same buffer); the child reads in large chunks, and echoes every
 * complete frame with one write() per frame; the parent's main thread
 * reads echoes in large chunks and frees a window slot per frame.
 *
 * Prints, for 64 B, 4 KiB, 1 MiB (payload bytes, one direction, 1 MB =
 * 10^6 bytes):
 *   metric raw_pipelined_<S>_msgs <msgs/s> msg/s
 *   metric raw_pipelined_<S>_mbps <MB/s> MB/s
 *
 * Threads: parent = main (reader, timing) + one writer thread; the window
 * semaphore and the atomics below are the only shared state.
 */
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include "bench.h"

#define WINDOW 64
#define MAXSZ 1048576
#define CHUNK (256 * 1024)

static const size_t sizes[] = { 64, 4096, 1048576 };
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

struct run {
	int fd;
	size_t size;
	uint8_t *frame;         /* prefix + payload, written as one */
	sem_t window;
	atomic_bool stop;
	atomic_bool writer_done;
	atomic_uint_fast64_t sent;
};

/* Child: parse frames out of big reads, echo each with one write(). */
static void
child_echo(int fd)
{
	size_t cap = 2 * (4 + MAXSZ) + CHUNK, have = 0, off, flen;
	uint8_t *buf = malloc(cap);
	uint32_t len;
	ssize_t n;

	if (buf == NULL)
		_exit(2);
	for (;;) {
		n = read(fd, buf + have, cap - have);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			_exit(0);
		have += (size_t)n;
		off = 0;
		while (have - off >= 4) {
			memcpy(&len, buf + off, 4);
			flen = 4 + (size_t)len;
			if (len > MAXSZ)
				_exit(3);
			if (have - off < flen)
				break;
			if (bench_write_all(fd, buf + off, flen) < 0)
				_exit(4);
			off += flen;
		}
		memmove(buf, buf + off, have - off);
		have -= off;
	}
}

static void *
writer_main(void *arg)
{
	struct run *r = arg;

	for (;;) {
		while (sem_wait(&r->window) < 0 && errno == EINTR)
			;
		if (atomic_load(&r->stop))
			break;
		if (bench_write_all(r->fd, r->frame, 4 + r->size) < 0)
			break;
		atomic_fetch_add(&r->sent, 1);
	}
	atomic_store(&r->writer_done, true);
	return NULL;
}

/*
 * Read echoes until the writer has stopped and every sent frame came
 * back.  Counts completed frames; marks the measurement window.
 */
static int
reader_loop(struct run *r, double warm, double dur, uint64_t *ret_n,
    double *ret_secs)
{
	uint64_t t_start = bench_now_ns(), t_mark = 0, t_end = 0, now;
	uint64_t done = 0, done_mark = 0, done_end = 0;
	size_t need = 0, hdr = 0;   /* payload bytes left; header bytes seen */
	uint8_t *buf = malloc(CHUNK), hb[4];
	struct pollfd pfd = { .fd = r->fd, .events = POLLIN };
	uint32_t len;
	ssize_t n, i;

	if (buf == NULL)
		return -ENOMEM;
	while (!atomic_load(&r->writer_done) || done < atomic_load(&r->sent)) {
		/* After stop the writer may finish between our check and a
		 * read that would then never return: poll briefly instead. */
		if (atomic_load(&r->stop) && poll(&pfd, 1, 10) == 0)
			continue;
		n = read(r->fd, buf, CHUNK);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			free(buf);
			return -EPIPE;
		}
		for (i = 0; i < n;) {
			if (need == 0 && hdr < 4) {
				hb[hdr++] = buf[i++];
				if (hdr == 4) {
					memcpy(&len, hb, 4);
					need = len;
				}
			} else {
				size_t take = (size_t)(n - i) < need ?
				    (size_t)(n - i) : need;
				need -= take;
				i += (ssize_t)take;
			}
			if (hdr == 4 && need == 0) {
				hdr = 0;
				done++;
				sem_post(&r->window);
			}
		}
		now = bench_now_ns();
		if (t_mark == 0 && now - t_start >= (uint64_t)(warm * 1e9)) {
			t_mark = now;
			done_mark = done;
		}
		if (t_mark != 0 && t_end == 0 &&
		    now - t_mark >= (uint64_t)(dur * 1e9)) {
			t_end = now;
			done_end = done;
			atomic_store(&r->stop, true);
			sem_post(&r->window);
		}
	}
	free(buf);
	*ret_n = done_end - done_mark;
	*ret_secs = bench_secs(t_mark, t_end);
	return 0;
}

static int
measure(int fd, size_t size, double dur)
{
	struct run r = { .fd = fd, .size = size };
	double secs, warm = size >= MAXSZ ? 0.3 : 0.2;
	pthread_t th;
	uint64_t n;
	char name[64];
	uint32_t len = (uint32_t)size;
	int rc;

	r.frame = malloc(4 + size);
	if (r.frame == NULL)
		return -ENOMEM;
	memcpy(r.frame, &len, 4);
	bench_fill(r.frame + 4, size, len);
	sem_init(&r.window, 0, WINDOW);
	atomic_init(&r.stop, false);
	atomic_init(&r.writer_done, false);
	atomic_init(&r.sent, 0);
	if ((rc = pthread_create(&th, NULL, writer_main, &r)) != 0)
		return -rc;
	rc = reader_loop(&r, warm, dur, &n, &secs);
	pthread_join(th, NULL);
	sem_destroy(&r.window);
	free(r.frame);
	if (rc < 0)
		return rc;
	snprintf(name, sizeof(name), "raw_pipelined_%zu_msgs", size);
	bench_metric(name, (double)n / secs, "msg/s");
	snprintf(name, sizeof(name), "raw_pipelined_%zu_mbps", size);
	bench_metric(name, (double)n * (double)size / secs / 1e6, "MB/s");
	return 0;
}

int
main(int argc, char **argv)
{
	double dur = bench_quick(argc, argv) ? 0.4 : 2.0;
	int sv[2], status, rc = 0;
	size_t i;
	pid_t pid;

	bench_ignore_sigpipe();
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
		perror("raw_pipelined: socketpair");
		return 1;
	}
	pid = fork();
	if (pid < 0) {
		perror("raw_pipelined: fork");
		return 1;
	}
	if (pid == 0) {
		close(sv[0]);
		child_echo(sv[1]);
	}
	close(sv[1]);
	for (i = 0; i < NSIZES && rc == 0; i++)
		rc = measure(sv[0], sizes[i], dur);
	close(sv[0]);
	waitpid(pid, &status, 0);
	if (rc < 0)
		fprintf(stderr, "raw_pipelined: %s\n", strerror(-rc));
	return rc < 0;
}
