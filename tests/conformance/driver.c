/*
 * driver.c - see driver.h.
 *
 * Threads: the CUnit thread only.  No locks.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "driver.h"
#include "testlib.h"

const struct sipc_provider_ops *conf_prov;
void *conf_prov_state;
enum sipc_containment conf_contain = SIPC_CONTAIN_PROCESS_GROUP;
const char *conf_init_path;

static char *
xasprintf_env(const char *fmt, long v)
{
	char *s = NULL;

	if (asprintf(&s, fmt, v) < 0)
		abort();
	return s;
}

/* The launch environment: the channel convention and nothing else, plus
 * `extra` (NULL-terminated, may be NULL).  Free with env_free(). */
static char **
env_build(char *const *extra)
{
	size_t n = 0, i;
	char **e;

	while (extra != NULL && extra[n] != NULL)
		n++;
	if ((e = calloc(n + 5, sizeof(*e))) == NULL)
		abort();
	e[0] = xasprintf_env("SIPC_FD=%ld", 3);
	e[1] = xasprintf_env("SIPC_PARENT_PID=%ld", (long)getpid());
	e[2] = xasprintf_env("SIPC_WORKER_ID=%ld", 0);
	e[3] = xasprintf_env("SIPC_GENERATION=%ld", 1);
	for (i = 0; i < n; i++)
		if ((e[4 + i] = strdup(extra[i])) == NULL)
			abort();
	return e;
}

static void
env_free(char **e)
{
	for (size_t i = 0; e != NULL && e[i] != NULL; i++)
		free(e[i]);
	free(e);
}

/* Launch fixture `name` with up to two arguments.  Returns launch's
 * result; *ret_errno gets the exec errno on SIPC_E_EXEC. */
int
cw_launch_path(struct cw *w, const char *path, const char *a1,
               const char *a2, char *const *extra_env, int *ret_errno)
{
	char *argv[4] = { (char *)path, (char *)a1, (char *)a2, NULL };
	struct sipc_provider_launch l;
	char **env = env_build(extra_env);
	int rc, eno = 0;

	if (a1 == NULL)
		argv[1] = NULL;
	memset(w, 0, sizeof(*w));
	w->ch.proto_fd = w->ch.diag_fd = -1;
	sipc__decoder_init(&w->dec, CW_MAX_PAYLOAD);
	l = (struct sipc_provider_launch){ .path = path, .argv = argv, .envp = env,
	    .worker_id = 0, .generation = 1, .contain = conf_contain,
	    .init_path = conf_init_path };
	rc = conf_prov->launch(conf_prov_state, &l, &w->ch, &w->h, &eno);
	env_free(env);
	if (rc < 0) {
		w->h = NULL;
		w->ended = true;
		if (ret_errno != NULL)
			*ret_errno = eno;
	}
	return rc;
}

int
cw_launch(struct cw *w, const char *name, const char *a1, const char *a2)
{
	return cw_launch_path(w, tl_fixture(name), a1, a2, NULL, NULL);
}

static void
diag_take(struct cw *w)
{
	uint8_t buf[16384];
	ssize_t n = read(w->ch.diag_fd, buf, sizeof(buf));

	if (n <= 0) {
		if (n == 0 || (errno != EINTR && errno != EAGAIN))
			w->diag_eof = true;
		return;
	}
	if (w->diag == NULL && (w->diag = malloc(CW_DIAG_KEEP)) == NULL)
		abort();
	if ((size_t)n > CW_DIAG_KEEP - w->diag_len)
		n = (ssize_t)(CW_DIAG_KEEP - w->diag_len);
	memcpy(w->diag + w->diag_len, buf, (size_t)n);
	w->diag_len += (size_t)n;
}

/* Wait up to `ms` for input on either channel and take it.  Returns
 * false when there is nothing left to wait on. */
static bool
cw_pump(struct cw *w, int ms)
{
	struct pollfd pf[2];
	nfds_t n = 0;
	int ip = -1, id = -1;
	ssize_t r;

	if (!w->proto_eof && w->ch.proto_fd >= 0 && w->in_len == 0) {
		pf[n] = (struct pollfd){ .fd = w->ch.proto_fd,
		    .events = POLLIN };
		ip = (int)n++;
	}
	if (!w->diag_eof && w->ch.diag_fd >= 0) {
		pf[n] = (struct pollfd){ .fd = w->ch.diag_fd,
		    .events = POLLIN };
		id = (int)n++;
	}
	if (n == 0)
		return false;
	if (poll(pf, n, ms) <= 0)
		return true;
	if (id >= 0 && pf[id].revents != 0)
		diag_take(w);
	if (ip >= 0 && pf[ip].revents != 0) {
		r = read(w->ch.proto_fd, w->in, sizeof(w->in));
		if (r == 0 || (r < 0 && errno != EINTR && errno != EAGAIN))
			w->proto_eof = true;
		else if (r > 0) {
			w->in_off = 0;
			w->in_len = (size_t)r;
		}
	}
	return true;
}

/* Next frame from proto_fd: 1 (frame in *f, caller frees payload),
 * 0 timeout, -EPIPE end of stream, or the decoder's error. */
int
cw_frame(struct cw *w, int timeout_ms, struct sipc_frame *f)
{
	int64_t end = tl_now_ms() + timeout_ms;
	bool done = false;
	long used;

	for (;;) {
		if (w->in_len > 0) {
			used = sipc__decoder_feed(&w->dec, w->in + w->in_off,
			    w->in_len, f, &done);
			if (used < 0)
				return (int)used;
			w->in_off += (size_t)used;
			w->in_len -= (size_t)used;
			if (done)
				return 1;
			continue;
		}
		if (w->proto_eof)
			return -EPIPE;
		if (tl_now_ms() >= end)
			return 0;
		cw_pump(w, (int)(end - tl_now_ms()));
	}
}

/* Next frame that is not an ACCEPT or HEARTBEAT. */
int
cw_reply(struct cw *w, int timeout_ms, struct sipc_frame *f)
{
	int r;

	while ((r = cw_frame(w, timeout_ms, f)) == 1 &&
	    (f->hdr.type == SIPC_FT_ACCEPT || f->hdr.type == SIPC_FT_HEARTBEAT))
		free(f->payload);
	return r;
}

/* Read the handshake.  0 when the first frame is a valid HELLO. */
int
cw_hello(struct cw *w, struct sipc_hello *ret)
{
	struct sipc_frame f;
	int r = cw_frame(w, DEADLINE_MS, &f);

	if (r != 1)
		return r == 0 ? -ETIMEDOUT : r;
	if (f.hdr.type != SIPC_FT_HELLO || f.hdr.id != 0 ||
	    sipc__hello_decode(f.payload, f.hdr.len, ret) < 0)
		r = SIPC_E_HANDSHAKE;
	else
		r = 0;
	free(f.payload);
	return r;
}

void
cw_frame_put(uint8_t *out, uint8_t type, uint64_t id, const void *p,
             uint32_t len)
{
	struct sipc_frame_hdr h = { .type = type, .id = id, .len = len };

	sipc__frame_encode_hdr(out, &h);
	if (len > 0)
		memcpy(out + SIPC_FRAME_HDR_LEN, p, len);
}

int
cw_write_all(int fd, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	ssize_t n;

	while (len > 0) {
		if ((n = write(fd, p, len)) < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int
cw_send(struct cw *w, uint64_t id, const void *p, uint32_t len)
{
	uint8_t *buf = malloc(SIPC_FRAME_HDR_LEN + (size_t)len);
	int r;

	if (buf == NULL)
		return -ENOMEM;
	cw_frame_put(buf, SIPC_FT_REQUEST, id, p, len);
	r = cw_write_all(w->ch.proto_fd, buf, SIPC_FRAME_HDR_LEN + (size_t)len);
	free(buf);
	return r;
}

/* Send one request and return its reply payload (malloc'd) in *ret. */
int
cw_roundtrip(struct cw *w, uint64_t id, const void *p, uint32_t len,
             struct sipc_frame *ret)
{
	int r;

	if ((r = cw_send(w, id, p, len)) < 0)
		return r;
	if ((r = cw_reply(w, DEADLINE_MS, ret)) != 1)
		return r == 0 ? -ETIMEDOUT : r;
	if (ret->hdr.type != SIPC_FT_REPLY || ret->hdr.id != id) {
		free(ret->payload);
		return SIPC_E_PROTOCOL;
	}
	return 0;
}

/* Poll try_end until it reports the end (1), draining both channels
 * meanwhile so a worker blocked on a full pipe can still exit; then
 * sweep, as the reaper does. */
int
cw_wait_end(struct cw *w, int timeout_ms)
{
	int64_t end = tl_now_ms() + timeout_ms;
	int r;

	if (w->ended)
		return 1;
	for (;;) {
		if ((r = conf_prov->try_end(w->h, &w->exit)) != 0) {
			if (r == 1) {
				w->ended = true;
				if (conf_prov->sweep != NULL)
					(void)conf_prov->sweep(w->h);
			}
			return r;
		}
		if (tl_now_ms() >= end)
			return 0;
		/* Discard protocol bytes: only the end counts now. */
		w->in_len = 0;
		if (!cw_pump(w, 5))
			usleep(2000);
	}
}

/* Kill (if needed), observe the end, release, close.  Idempotent. */
void
cw_finish(struct cw *w)
{
	if (w->h != NULL) {
		if (!w->ended) {
			(void)conf_prov->stop(w->h, SIPC_STOP_FORCED);
			CU_ASSERT_EQUAL(cw_wait_end(w, DEADLINE_MS), 1);
		}
		conf_prov->release(w->h);
		w->h = NULL;
	}
	if (w->ch.proto_fd >= 0)
		close(w->ch.proto_fd);
	if (w->ch.diag_fd >= 0)
		close(w->ch.diag_fd);
	w->ch.proto_fd = w->ch.diag_fd = -1;
	sipc__decoder_free(&w->dec);
	free(w->diag);
	w->diag = NULL;
}

bool
cw_diag_has(const struct cw *w, const void *needle, size_t len)
{
	return w->diag != NULL && memmem(w->diag, w->diag_len, needle, len);
}

bool
cw_wait_diag(struct cw *w, const char *needle, int timeout_ms)
{
	int64_t end = tl_now_ms() + timeout_ms;

	while (!cw_diag_has(w, needle, strlen(needle))) {
		if (tl_now_ms() >= end || w->diag_eof)
			return cw_diag_has(w, needle, strlen(needle));
		cw_pump(w, 20);    /* protocol bytes stay buffered */
	}
	return true;
}


struct cw_base
cw_base_take(void)
{
	return (struct cw_base){ tl_count_fds(), tl_count_children() };
}

void
cw_base_check(struct cw_base b)
{
	CU_ASSERT_TRUE(tl_wait_baseline(b.fds, tl_count_threads(), b.children,
	    DEADLINE_MS));
}

/* A provider with its own pid namespace shows the worker another pid
 * than chan.pid; only without one can pids be compared directly. */
bool
cw_same_pid_view(void)
{
	return !(conf_declared(conf_prov) & SIPC_G_PID_NAMESPACE) &&
	    conf_contain == SIPC_CONTAIN_PROCESS_GROUP;
}

unsigned
conf_declared(const struct sipc_provider_ops *p)
{
	struct sipc_config cfg;

	sipc_config_init(&cfg);
	cfg.environment = SIPC_ENV_TEST;
	return p->declared != NULL ? p->declared(&cfg) : 0;
}
