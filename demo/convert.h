/*
 * convert.h - what the conversion demo's files share (demo/sipc-convert.c,
 * demo/convert_pool.c, demo/convert_bench.c): the documents of a
 * fixtures/docgen MANIFEST, the pool of sipc-exec workers running
 * Ghostscript and how it was contained, the checks of a result, and the
 * process scans of /proc.
 *
 * Threads: main builds everything; caller threads read the documents
 * and the pool (both read-only once built) and call the library.
 */
#ifndef SIPC_DEMO_CONVERT_H
#define SIPC_DEMO_CONVERT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sipc.h"

#define CV_MEM_LIMIT "512M"            /* sipc-exec --limit-as */
#define CV_MEM_CGROUP (256u << 20)     /* memory_max where a cgroup works */

struct cv_doc {
	char name[64], cls[16], expect[16], token[64];
	uint8_t *data;
	size_t len;
};

struct cv_docs {
	struct cv_doc *v;
	size_t n;
};

/* How the memory bomb is to end, decided when the pool is made. */
enum cv_mem { CV_MEM_CG, CV_MEM_RLIMIT, CV_MEM_DEADLINE };

struct cv_opts {
	const char *docs, *exec, *init, *gs, *provider;
	unsigned workers, threads;
	bool verbose, bench, quick;
};

struct cv_pool {
	sipc_supervisor *s;
	const char *provider;          /* "sandbox" or "local" */
	enum cv_mem mem;
	char why_not_sandbox[320];     /* "" when the sandbox is used */
	char why_not_cgroup[320];      /* "" with CV_MEM_CG */
	char marker[64];               /* NAME=VALUE in every worker's env */
	char *argv[24];
	const char *env[2];
};

/* MANIFEST and each document it names; exits 2 saying why on failure. */
void cv_docs_load(const char *dir, struct cv_docs *ret);
void cv_docs_free(struct cv_docs *d);

/* The pool: the sandbox where it can run (else the local adapter, the
 * reason kept), a cgroup memory limit where one can be made (else
 * sipc-exec's address-space limit).  0, or exits 2. */
void cv_pool_start(const struct cv_opts *o, struct cv_pool *p);
void cv_pool_stop(struct cv_pool *p);

/* TIMEOUT, or sipc-exec's answer when it ended the converter first. */
bool cv_at_deadline(const struct sipc_result *r);
/* Is `r` what document d must come to?  `how` (may be NULL) receives a
 * few words on how it ended. */
bool cv_judge(const struct cv_doc *d, const struct sipc_result *r,
              enum cv_mem mem, char *how, size_t howlen);

/* Processes whose environment holds `marker` (NAME=VALUE), and among
 * them those named gs; -1 when /proc cannot be read. */
int cv_marked(const char *marker, int *ret_gs);
/* Children of this process left (any state), and of them zombies. */
int cv_children(int *ret_zombies);

uint64_t cv_now_us(void);

/* Bytes of worker diagnostics the log callback has seen (escaped text). */
unsigned long long cv_diag_bytes(void);

/* The bench section: metric lines on stdout.  0 or 1. */
int cv_bench(const struct cv_opts *o, const struct cv_docs *d,
             struct cv_pool *p);

#endif
