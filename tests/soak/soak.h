/*
 * soak.h - what the soak's driver (soak.c) and its end-of-run checks
 * (check.c) share.  Records are written by their caller and by exactly
 * one completion; the checks read them after every thread was joined.
 */
#ifndef SOAK_H
#define SOAK_H

#include <stdatomic.h>
#include <stdint.h>

#define RETRIES 2u                /* idempotent_retries configured */

enum { RF_IDEM = 1, RF_CMD = 2, RF_SYNC = 4, RF_REFUSED = 8, RF_BADREPLY = 16,
       RF_LENT = 32 };

/* One submitted request.  Written by its caller before submit and by
 * exactly one completion (the first, chosen by `ncb`). */
struct rec {
	uint8_t *payload;         /* freed by the first completion */
	uint64_t id;              /* from sipc_submit's ret_id */
	uint64_t cb_id;           /* from the result */
	uint32_t len, crc;
	_Atomic uint32_t ncb;     /* completions seen */
	uint8_t flags;            /* RF_* */
	uint8_t outcome, may_run;
	uint8_t exit_kind;        /* the result's exit.kind */
	int16_t error;
};

struct baseline { int fds, threads, children, zombies; };

int64_t now_ms(void);
void sleep_ms(int64_t ms);
struct rec *rec_at(uint64_t i);
/* Print one violation (the first 50) and count it.  Any thread. */
void violation(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* check.c */
void baseline_get(struct baseline *b);
void baseline_check(const struct baseline *b0);
/* Every record against its outcome and the execution log; `deaths` is
 * the number of workers that ended before sipc_destroy(). */
void check_all(uint64_t nrec, const char *log_path, uint64_t deaths);

#endif
