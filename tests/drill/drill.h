/*
 * drill.h - the crash-and-restart drill of docs/RUNBOOK.md, shared
 * between its three parts:
 *   drill.c   the controller: starts supervisor processes, SIGKILLs a
 *             worker and then the supervisor mid-load, cycle after cycle,
 *             and finally checks for leftovers and prints the tally;
 *   gen.c     one supervisor process ("generation"): links libsipc,
 *             reconciles what the previous one left, and is the load
 *             generator, writing its own ledger;
 *   ledger.c  the ledger format, its replay into per-key state, and the
 *             tally (ledger + the fixture's exec log).
 *
 * The ledger is the host's own append-only record, separate from the
 * library's journal: one line per event, each written with one write()
 * on an O_APPEND descriptor, so it survives a SIGKILL of its writer.
 *   S <num> <i|n> <gen>            about to submit (i = idempotent)
 *   A <num> <gen> <id>             sipc_submit returned 0 with this id
 *   O <num> <gen> <kind> <error>   outcome delivered to the callback
 *   R <num> <gen> <state> [<kind>] reconciled by generation <gen>:
 *                                  never_sent | may_have_run |
 *                                  completed <kind> | never_accepted
 *   L <num> <gen>                  accepted, yet neither delivered nor
 *                                  listed by reconciliation: LOST
 * <num> is the key's number; the idempotency key is "k<num>".
 *
 * Threads: the controller is single-threaded; in a generation the
 * ledger is written by submitter threads and by the library's callback
 * threads (one write() per line, atomic under O_APPEND).
 */
#ifndef SIPC_DRILL_H
#define SIPC_DRILL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Echo payloads: "DRL1", the key number (little-endian u32), filler.
 * All the same length and differing only in those four bytes, so their
 * CRC-32C values (what the exec log records) are all distinct. */
#define DRILL_PAYLOAD_LEN 32u
#define DRILL_GEN_STRIDE 1000000u   /* key num = gen * stride + seq */

enum drill_kind {                   /* outcome kinds, as in the ledger */
	DK_OK, DK_WERR, DK_REJECTED, DK_TIMEOUT, DK_UNKNOWN, DK__N
};
enum drill_rstate {                 /* reconciliation states */
	DR_NEVER_SENT, DR_MAY_HAVE_RUN, DR_COMPLETED, DR_NEVER_ACCEPTED, DR__N
};

struct drill_key {
	uint32_t num;
	bool used;
	bool idem;
	bool open;          /* a submission without its terminal record */
	bool accepted;      /* A seen for the open submission */
	bool had_outcome;   /* some O was delivered for this key */
	int last_kind;      /* of the last O, -1 if none */
	unsigned subs;      /* S lines */
	unsigned execs;     /* exec log lines that match it */
	bool left_to_host;  /* last closure: may_have_run, not resubmitted */
};

/* Open-addressing map from key number to its state. */
struct drill_map {
	struct drill_key *v;
	size_t cap, n;
};

struct drill_counts {
	uint64_t submissions, keys;
	uint64_t outcome[DK__N];
	uint64_t recon[DR__N];
	uint64_t dup_completed;     /* completed listed after its delivery */
	uint64_t mismatch;          /* listed outcome != delivered outcome */
	uint64_t contradiction;     /* reconciled a submission already closed */
	uint64_t lost_marked;       /* L lines */
	uint64_t bad_lines;
};

const char *drill_kind_name(int k);
int drill_kind_parse(const char *s);
const char *drill_rstate_name(int r);
int drill_rstate_parse(const char *s);

struct drill_key *drill_map_get(struct drill_map *m, uint32_t num, bool add);
void drill_map_free(struct drill_map *m);

/* Replay the ledger at `path` (missing = empty) into `m` and `c`.
 * Returns 0 or -errno. */
int drill_ledger_load(const char *path, struct drill_map *m,
    struct drill_counts *c);

/* Fill `out` with the echo payload of key `num`. */
void drill_payload(uint32_t num, uint8_t out[DRILL_PAYLOAD_LEN]);

/* What the controller measured, for the tally. */
struct drill_run {
	unsigned cycles, worker_kills, supervisor_kills;
	int lock_probe;             /* 1 ok, 0 failed, -1 not run */
	int leftovers_final;        /* tagged processes alive at the end */
	unsigned leftovers_seen;    /* alive right after a crash (sum) */
	int fds_baseline, fds_final;
	int unresolved_after;       /* listed by a clean reopen at the end */
	int final_status;           /* exit status of the final generation */
	unsigned long long seed;
};

/* Do the workers run under a sandboxed provider ($SIPC_TEST_PROVIDER
 * set and not "local"; the generations then also take sipc-init from
 * $SIPC_INIT)?  Such workers see no host file: no execution log. */
bool drill_sandboxed(void);
/* Print the tally; returns true when nothing is lost, re-run or left
 * behind.  exec_log NULL: none was kept (the checks needing it are
 * left out, said so). */
bool drill_tally(const char *ledger, const char *exec_log,
    const struct drill_run *run);

/* The supervisor process (gen.c); returns the process exit status. */
int drill_gen_main(int argc, char **argv);
/* The lock probe: a second instance on a live state directory. */
int drill_probe_main(int argc, char **argv);

#endif
