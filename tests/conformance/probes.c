/*
 * probes.c - the isolation probes that run the probe fixture inside a
 * worker: host files, host sockets, inherited descriptors, resource
 * limits; and the table of guarantees per provider.
 *
 * Each probe sets up something of the host's (a file, a listening
 * socket, an open descriptor), asks a worker launched through the
 * provider under test to reach it, and judges the reply on the host
 * side.  Everything the host set up is torn down before returning.
 *
 * Threads: the CUnit thread only.  No locks.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "conformance.h"
#include "driver.h"
#include "testlib.h"

/* What a probe leaves on the host: a directory holding a token file. */
struct host_bait {
	char dir[256];
	char file[300];
	char token[48];
};

static void
bait_drop(struct host_bait *b)
{
	char sock[300];

	snprintf(sock, sizeof(sock), "%s/sock", b->dir);
	(void)unlink(sock);
	(void)unlink(b->file);
	(void)rmdir(b->dir);
}

/*
 * A fresh directory (0755) under $TMPDIR or /tmp with a file "secret"
 * (0644) holding a random token: readable to anyone who can see it, so
 * only the worker's view of the filesystem can keep it out.
 */
static int
bait_make(struct host_bait *b)
{
	const char *tmp = getenv("TMPDIR");
	unsigned char rnd[12];
	int fd, r = 0;

	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
		return -EIO;
	snprintf(b->token, sizeof(b->token), "sipc-probe-");
	for (size_t i = 0; i < sizeof(rnd); i++)
		snprintf(b->token + strlen(b->token), 3, "%02x", rnd[i]);
	snprintf(b->dir, sizeof(b->dir), "%s/sipc-probe-XXXXXX",
	    tmp != NULL && *tmp ? tmp : "/tmp");
	if (mkdtemp(b->dir) == NULL)
		return -errno;
	snprintf(b->file, sizeof(b->file), "%s/secret", b->dir);
	if (chmod(b->dir, 0755) < 0 ||
	    (fd = open(b->file, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
	    0644)) < 0) {
		r = -errno;
		bait_drop(b);
		return r;
	}
	if (fchmod(fd, 0644) < 0 ||
	    cw_write_all(fd, b->token, strlen(b->token)) < 0)
		r = -EIO;
	close(fd);
	if (r < 0)
		bait_drop(b);
	return r;
}

int
conf_ask(const struct sipc_provider_ops *p, void *st, const char *fixture,
         const char *req, char *text, size_t len)
{
	const struct sipc_provider_ops *saved = conf_prov;
	void *saved_st = conf_prov_state;
	struct sipc_hello hello;
	struct sipc_frame f;
	struct cw w;
	int r;

	conf_prov = p;
	conf_prov_state = st;
	if ((r = cw_launch(&w, fixture, NULL, NULL)) == 0 &&
	    (r = cw_hello(&w, &hello)) == 0 &&
	    (r = cw_roundtrip(&w, 1, req, (uint32_t)strlen(req), &f)) == 0) {
		snprintf(text, len, "%.*s", (int)f.hdr.len, (char *)f.payload);
		free(f.payload);
	}
	if (r < 0 && w.diag_len > 0)    /* why the worker did not answer */
		fprintf(stderr, "conformance: %s under %s said: %.*s\n",
		    fixture, p->name, (int)(w.diag_len > 2000 ? 2000 :
		    w.diag_len), (char *)w.diag);
	cw_finish(&w);
	conf_prov = saved;
	conf_prov_state = saved_st;
	return r;
}

/* "errno=E" in a probe reply, as text ("?" when absent). */
static const char *
reply_err(const char *text)
{
	const char *e = strstr(text, "errno=");

	return e != NULL ? strerror(atoi(e + 6)) : "?";
}

int
conf_verify_host_files(const struct sipc_provider_ops *p, void *st,
                       char *why, size_t len)
{
	struct host_bait b;
	char req[320], text[512] = "";
	int r;

	if ((r = bait_make(&b)) < 0)
		return r;
	snprintf(req, sizeof(req), "read %s", b.file);
	r = conf_ask(p, st, "probe", req, text, sizeof(text));
	bait_drop(&b);
	if (r < 0)
		return r;
	if (strncmp(text, "read=1 ", 7) == 0 && strstr(text, b.token)) {
		snprintf(why, len, "the worker read the host's file %s",
		    b.file);
		return 0;
	}
	if (strncmp(text, "read=0 ", 7) != 0)
		return SIPC_E_PROTOCOL;
	snprintf(why, len, "the host's file %s: %s from the worker", b.file,
	    reply_err(text));
	return 1;
}

static int
listen_unix(const char *path)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int fd;

	if (strlen(path) >= sizeof(sun.sun_path))
		return -ENAMETOOLONG;
	memcpy(sun.sun_path, path, strlen(path) + 1);
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&sun, sizeof(sun)) < 0 ||
	    chmod(path, 0777) < 0 || listen(fd, 8) < 0) {
		int e = errno;

		close(fd);
		return -e;
	}
	return fd;
}

/* Listen on 127.0.0.1, a port of the kernel's choice (*ret_port). */
static int
listen_tcp(int *ret_port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	socklen_t sl = sizeof(sin);
	int fd;

	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if ((fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0 ||
	    listen(fd, 8) < 0 ||
	    getsockname(fd, (struct sockaddr *)&sin, &sl) < 0) {
		int e = errno;

		close(fd);
		return -e;
	}
	*ret_port = ntohs(sin.sin_port);
	return fd;
}

/*
 * The host listens on a unix socket path and on 127.0.0.1 of its own
 * network namespace; the worker tries to connect to both.  Neither
 * listener accepts: a connect that completes is already a reached host.
 */
int
conf_verify_host_sockets(const struct sipc_provider_ops *p, void *st,
                         char *why, size_t len)
{
	char path[300], req[320], tu[128] = "", tt[128] = "";
	struct host_bait b;
	int ufd = -1, tfd = -1, port = 0, r;
	bool ureach, treach;

	if ((r = bait_make(&b)) < 0)
		return r;
	snprintf(path, sizeof(path), "%s/sock", b.dir);
	if ((ufd = r = listen_unix(path)) < 0 ||
	    (tfd = r = listen_tcp(&port)) < 0)
		goto out;
	snprintf(req, sizeof(req), "unix %s", path);
	if ((r = conf_ask(p, st, "probe", req, tu, sizeof(tu))) < 0)
		goto out;
	snprintf(req, sizeof(req), "tcp %d", port);
	if ((r = conf_ask(p, st, "probe", req, tt, sizeof(tt))) < 0)
		goto out;
	if (strncmp(tu, "connect=", 8) != 0 || strncmp(tt, "connect=", 8) != 0) {
		r = SIPC_E_PROTOCOL;
		goto out;
	}
	ureach = tu[8] == '1';
	treach = tt[8] == '1';
	snprintf(why, len, "unix socket %s: %s; 127.0.0.1:%d: %s", path,
	    ureach ? "the worker connected" : reply_err(tu), port,
	    treach ? "the worker connected" : reply_err(tt));
	r = !ureach && !treach;
out:
	if (ufd >= 0)
		close(ufd);
	if (tfd >= 0)
		close(tfd);
	bait_drop(&b);
	return r;
}

/*
 * The descriptor half of no-inherited-secrets: the host holds a
 * descriptor to a secret file open without close-on-exec while the
 * worker is launched; the worker looks through every descriptor it has
 * for the file or its content.  why gets the finding.
 */
int
conf_verify_no_inherited_fds(const struct sipc_provider_ops *p, void *st,
                             char *why, size_t len)
{
	char req[80], text[512] = "";
	struct host_bait b;
	const char *leaks;
	int fd, r;

	if ((r = bait_make(&b)) < 0)
		return r;
	if ((fd = open(b.file, O_RDONLY)) < 0) {   /* no O_CLOEXEC: bait */
		r = -errno;
		bait_drop(&b);
		return r;
	}
	snprintf(req, sizeof(req), "fds %s", b.token);
	r = conf_ask(p, st, "probe", req, text, sizeof(text));
	close(fd);
	bait_drop(&b);
	if (r < 0)
		return r;
	if ((leaks = strstr(text, "leaks=")) == NULL)
		return SIPC_E_PROTOCOL;
	leaks += 6;
	if (*leaks != '\0') {
		snprintf(why, len, "the host's open descriptor %d to a secret "
		    "file reached the worker (as its fd %s)", fd, leaks);
		return 0;
	}
	snprintf(why, len, "the host's open descriptor %d to a secret file "
	    "did not reach the worker (%s)", fd, text);
	return 1;
}

#define FORK_PROBE 128

/*
 * Resource limits: only a provider that declares limits has any to
 * probe (the launch carries no other).  The worker forks up to
 * FORK_PROBE waiting children; a pids limit must refuse one with EAGAIN.
 */
int
conf_verify_resource_limits(const struct sipc_provider_ops *p, void *st,
                            char *why, size_t len)
{
	char req[32], text[128] = "";
	int forked = 0, err = 0, r;

	if (!(conf_declared(p) & SIPC_G_RESOURCE_LIMITS)) {
		snprintf(why, len, "provider %s declares no resource limit, "
		    "so none is set on its workers to probe", p->name);
		return 0;
	}
	snprintf(req, sizeof(req), "forks %d", FORK_PROBE);
	if ((r = conf_ask(p, st, "probe", req, text, sizeof(text))) < 0)
		return r;
	if (sscanf(text, "forked=%d errno=%d", &forked, &err) != 2)
		return SIPC_E_PROTOCOL;
	if (forked < FORK_PROBE && err == EAGAIN) {
		snprintf(why, len, "the worker's fork was refused (%s) after "
		    "%d children", strerror(err), forked);
		return 1;
	}
	snprintf(why, len, "the worker forked %d of %d children (%s): no "
	    "pids limit held it", forked, FORK_PROBE,
	    err ? strerror(err) : "no refusal");
	return 0;
}
