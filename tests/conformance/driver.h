/*
 * driver.h - the conformance suite's stand-in for the supervisor core:
 * it launches a fixture through a provider's ops table, speaks frames on
 * chan.proto_fd (src/wire/wire.h codec), drains chan.diag_fd, and observes
 * the worker's end with try_end.
 *
 * Threads: the CUnit thread only (it plays the reaper thread, the only
 * caller of provider ops).  No locks.
 */
#ifndef SIPC_CONF_DRIVER_H
#define SIPC_CONF_DRIVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wire/wire.h"
#include "provider/provider.h"

#define CW_MAX_PAYLOAD (1u << 20)
#define CW_DIAG_KEEP (1u << 20)  /* diagnostics bytes kept per worker */
#define DEADLINE_MS 10000        /* generous: sanitizers, loaded machines */

/* The provider under test and its state (passed to launch). */
extern const struct sipc_provider_ops *conf_prov;
extern void *conf_prov_state;
/* Containment asked of every launch (process group unless a rule sets
 * another) and the sipc-init the namespace modes run. */
extern enum sipc_containment conf_contain;
extern const char *conf_init_path;
/* What `p` declares for a default test configuration. */
unsigned conf_declared(const struct sipc_provider_ops *p);

/* One launched worker and what the suite has read from it. */
struct cw {
	struct sipc_provider_chan ch;
	void *h;
	bool ended;
	struct sipc_exit exit;
	struct sipc_decoder dec;
	uint8_t in[65536];
	size_t in_off, in_len;
	bool proto_eof, diag_eof;
	uint8_t *diag;
	size_t diag_len;
};

/* Per-rule leak check: nothing of ours survives a rule. */
struct cw_base { int fds, children; };

/*
 * Launch `path` (or fixture `name`) with up to two arguments and the
 * channel-convention environment plus extra_env.  Returns launch's
 * result; *ret_errno (may be NULL) gets the exec errno on SIPC_E_EXEC.
 * The frame readers return 1 (frame in *f; caller frees its payload),
 * 0 on timeout, -EPIPE at end of stream, or the decoder's error.
 * cw_reply skips ACCEPT and HEARTBEAT; cw_hello wants a valid HELLO as
 * the first frame; cw_roundtrip sends a REQUEST and wants its REPLY.
 * cw_wait_end polls try_end (1 = ended) while draining both channels.
 * cw_finish kills if needed, observes the end, releases and closes.
 */
int cw_launch_path(struct cw *w, const char *path, const char *a1,
                   const char *a2, char *const *extra_env, int *ret_errno);
int cw_launch(struct cw *w, const char *name, const char *a1, const char *a2);
int cw_frame(struct cw *w, int timeout_ms, struct sipc_frame *f);
int cw_reply(struct cw *w, int timeout_ms, struct sipc_frame *f);
int cw_hello(struct cw *w, struct sipc_hello *ret);
void cw_frame_put(uint8_t *out, uint8_t type, uint64_t id, const void *p,
                  uint32_t len);
int cw_write_all(int fd, const void *buf, size_t len);
int cw_send(struct cw *w, uint64_t id, const void *p, uint32_t len);
int cw_roundtrip(struct cw *w, uint64_t id, const void *p, uint32_t len,
                 struct sipc_frame *ret);
int cw_wait_end(struct cw *w, int timeout_ms);
void cw_finish(struct cw *w);
bool cw_diag_has(const struct cw *w, const void *needle, size_t len);
bool cw_wait_diag(struct cw *w, const char *needle, int timeout_ms);
struct cw_base cw_base_take(void);
void cw_base_check(struct cw_base b);
bool cw_same_pid_view(void);

#endif
