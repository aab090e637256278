/*
 * names.c - names of the public enums, exit formatting, result release.
 * Pure; any thread.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/resource.h>

#include "sipc.h"

const char *
sipc_outcome_name(enum sipc_outcome o)
{
	switch (o) {
	case SIPC_OUTCOME_OK: return "ok";
	case SIPC_OUTCOME_WORKER_ERROR: return "worker_error";
	case SIPC_OUTCOME_REJECTED: return "rejected";
	case SIPC_OUTCOME_TIMEOUT: return "timeout";
	case SIPC_OUTCOME_UNKNOWN: return "unknown";
	}
	return "invalid";
}

const char *
sipc_exit_kind_name(enum sipc_exit_kind k)
{
	switch (k) {
	case SIPC_EXIT_NONE: return "none";
	case SIPC_EXIT_CLEAN: return "clean";
	case SIPC_EXIT_CODE: return "exit_code";
	case SIPC_EXIT_SIGNAL: return "signal";
	case SIPC_EXIT_TERMINATED: return "terminated";
	case SIPC_EXIT_EXEC_FAILED: return "exec_failed";
	case SIPC_EXIT_HANDSHAKE: return "handshake";
	case SIPC_EXIT_LOST: return "lost";
	case SIPC_EXIT_OOM: return "oom";
	case SIPC_EXIT_RECYCLED: return "recycled";
	case SIPC_EXIT_POLICY: return "policy";
	case SIPC_EXIT_LIMIT: return "limit";
	}
	return "invalid";
}

const char *
sipc_term_reason_name(enum sipc_term_reason r)
{
	switch (r) {
	case SIPC_TERM_NONE: return "none";
	case SIPC_TERM_SHUTDOWN: return "shutdown";
	case SIPC_TERM_DEADLINE: return "deadline";
	case SIPC_TERM_STALL: return "stall";
	case SIPC_TERM_PROTOCOL: return "protocol";
	case SIPC_TERM_CHANNEL_LOST: return "channel_lost";
	case SIPC_TERM_POLICY: return "policy";
	}
	return "invalid";
}

const char *
sipc_worker_state_name(enum sipc_worker_state s)
{
	switch (s) {
	case SIPC_WS_IDLE: return "idle";
	case SIPC_WS_STARTING: return "starting";
	case SIPC_WS_READY: return "ready";
	case SIPC_WS_DRAINING: return "draining";
	case SIPC_WS_STOPPING: return "stopping";
	case SIPC_WS_COOLDOWN: return "cooldown";
	case SIPC_WS_FAILED: return "failed";
	}
	return "invalid";
}

const char *
sipc_containment_name(enum sipc_containment c)
{
	switch (c) {
	case SIPC_CONTAIN_AUTO: return "auto";
	case SIPC_CONTAIN_PID_NAMESPACE: return "pid_namespace";
	case SIPC_CONTAIN_USER_NAMESPACE: return "user_namespace";
	case SIPC_CONTAIN_PROCESS_GROUP: return "process_group";
	}
	return "invalid";
}

const char *
sipc_cgroup_mode_name(enum sipc_cgroup_mode m)
{
	switch (m) {
	case SIPC_CGROUP_AUTO: return "auto";
	case SIPC_CGROUP_OFF: return "off";
	case SIPC_CGROUP_REQUIRED: return "required";
	}
	return "invalid";
}

/* How the process itself ended, whatever the supervisor's reason. */
static int
raw_end(const struct sipc_exit *e, char *buf, size_t len)
{
	if (e->signo != 0)
		return snprintf(buf, len, "killed by signal %d%s", e->signo,
		    e->core_dumped ? " (core dumped)" : "");
	return snprintf(buf, len, "exit status %d", e->code);
}

int
sipc_exit_format(const struct sipc_exit *e, char *buf, size_t len)
{
	char raw[64];

	switch (e->kind) {
	case SIPC_EXIT_NONE:
		return snprintf(buf, len, "running");
	case SIPC_EXIT_CLEAN:
		return snprintf(buf, len, "exited cleanly");
	case SIPC_EXIT_CODE:
		return snprintf(buf, len, "exited with status %d", e->code);
	case SIPC_EXIT_SIGNAL:
		return raw_end(e, buf, len);
	case SIPC_EXIT_TERMINATED:
		raw_end(e, raw, sizeof(raw));
		return snprintf(buf, len, "terminated by supervisor (%s); %s",
		    sipc_term_reason_name(e->reason), raw);
	case SIPC_EXIT_EXEC_FAILED:
		return snprintf(buf, len, "exec failed: %s", strerror(e->code));
	case SIPC_EXIT_HANDSHAKE:
		raw_end(e, raw, sizeof(raw));
		return snprintf(buf, len, "ended before completing the "
		    "handshake; %s", raw);
	case SIPC_EXIT_LOST:
		return snprintf(buf, len, "lost child: reaped by someone else, "
		    "exit status unknown; its process group was not signalled");
	case SIPC_EXIT_OOM:
		return snprintf(buf, len, "killed by the OOM killer in its "
		    "cgroup (memory_max reached)");
	case SIPC_EXIT_RECYCLED:
		raw_end(e, raw, sizeof(raw));
		return snprintf(buf, len, "recycled (%s); %s",
		    e->recycle == SIPC_RECYCLE_AGE ? "max_age_ms" :
		    e->recycle == SIPC_RECYCLE_RSS ? "max_rss" :
		    "max_requests", raw);
	case SIPC_EXIT_POLICY:
		raw_end(e, raw, sizeof(raw));
		if (e->syscall < 0)
			return snprintf(buf, len, "refused system call (the "
			    "kernel did not say which); %s", raw);
		return snprintf(buf, len, "refused system call %s (%d); %s",
		    e->syscall_name[0] != '\0' ? e->syscall_name : "?",
		    e->syscall, raw);
	case SIPC_EXIT_LIMIT:
		raw_end(e, raw, sizeof(raw));
		return snprintf(buf, len, "resource limit reached (%s); %s",
		    e->rlimit == RLIMIT_CPU ? "RLIMIT_CPU" : "RLIMIT_FSIZE", raw);
	}
	return snprintf(buf, len, "invalid exit");
}

void
sipc_result_release(struct sipc_result *r)
{
	if (r == NULL)
		return;
	free((void *)r->reply);
	free((void *)r->diag_tail);
	if (r->reply_fd > 0)
		(void)close(r->reply_fd);
	r->reply_fd = -1;
	r->reply = NULL;
	r->reply_len = 0;
	r->diag_tail = NULL;
}
