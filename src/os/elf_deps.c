/*
 * os/elf_deps.c - what a program needs to start, read from its ELF files
 * (os/os.h).  Nothing is executed: a loader run for the answer (ldd)
 * would run the program's own code when it is hostile.
 *
 * Only the native class and byte order are read (a program of another
 * class is ENOEXEC, so the caller falls back).  The loader's cache is
 * not parsed: the directories it is built from are searched in its
 * order, which finds the same files.
 *
 * Threads: any; everything is on the caller's stack or in its set.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <limits.h>
#include <link.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "os/os.h"

#if __ELF_NATIVE_CLASS == 64
#define ELF_CLASS_NATIVE ELFCLASS64
#else
#define ELF_CLASS_NATIVE ELFCLASS32
#endif
#if __BYTE_ORDER == __LITTLE_ENDIAN
#define ELF_DATA_NATIVE ELFDATA2LSB
#else
#define ELF_DATA_NATIVE ELFDATA2MSB
#endif

#define MAX_LINKS 16                  /* links followed per path */
#define MAX_PHDRS 256
#define MAX_DYNS 4096
#define MAX_STRTAB (16u << 20)        /* .dynstr of the largest C++ libs */
#define MAX_DIRS 64                   /* search directories kept */
#define MAX_OBJS 512                  /* objects read per call */

/* Where libraries are looked for after an object's own paths. */
struct search {
	char dir[MAX_DIRS][PATH_MAX];
	size_t ndir;
	uint16_t machine;             /* of the program: libraries match it */
};

/* One ELF object as read: its interpreter and dynamic section. */
struct elf_obj {
	char interp[PATH_MAX];        /* "" if none */
	ElfW(Dyn) *dyn;
	size_t ndyn;
	char *strtab;                 /* NUL-terminated at strsz */
	size_t strsz;
	uint16_t machine;
};

static void
obj_free(struct elf_obj *o)
{
	free(o->dyn);
	free(o->strtab);
	memset(o, 0, sizeof(*o));
}

int
sipc__elfdeps_has(const struct sipc__elfdeps *d, const char *path)
{
	for (size_t i = 0; i < d->n; i++)
		if (strcmp(d->path[i], path) == 0)
			return 1;
	return 0;
}

/* 1 added, 0 already there, or -ENOMEM. */
static int
set_add(struct sipc__elfdeps *d, const char *path)
{
	char **v;

	if (sipc__elfdeps_has(d, path))
		return 0;
	if (d->n == d->cap) {
		if ((v = realloc(d->path, (d->cap * 2 + 16) *
		    sizeof(*v))) == NULL)
			return -ENOMEM;
		d->path = v;
		d->cap = d->cap * 2 + 16;
	}
	if ((d->path[d->n] = strdup(path)) == NULL)
		return -ENOMEM;
	d->n++;
	return 1;
}

void
sipc__elfdeps_free(struct sipc__elfdeps *d)
{
	for (size_t i = 0; i < d->n; i++)
		free(d->path[i]);
	free(d->path);
	memset(d, 0, sizeof(*d));
}

/* ret = path with its directory resolved, its last component kept (a
 * link stays a link).  0 or -errno. */
static int
canonical(const char *path, char *ret)
{
	char dir[PATH_MAX], real[PATH_MAX];
	const char *slash = strrchr(path, '/');

	if (slash == NULL || slash[1] == '\0' ||
	    (size_t)(slash - path) >= sizeof(dir))
		return -EINVAL;
	if (slash == path)
		snprintf(dir, sizeof(dir), "/");
	else
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
	if (realpath(dir, real) == NULL)
		return -errno;
	if (snprintf(ret, PATH_MAX, "%s/%s", strcmp(real, "/") == 0 ? "" :
	    real, slash + 1) >= PATH_MAX)
		return -ENAMETOOLONG;
	return 0;
}

/*
 * Every path of path's link chain into d, each canonical; real = the
 * regular file at its end.  1 when real is new to d (to be read), 0 when
 * it was there, or -errno.
 */
static int
chain_add(struct sipc__elfdeps *d, const char *path, char *real)
{
	char cur[PATH_MAX], canon[PATH_MAX], tgt[PATH_MAX];
	struct stat st;
	ssize_t n;
	int rc;

	snprintf(cur, sizeof(cur), "%s", path);
	for (int i = 0; i < MAX_LINKS; i++) {
		if ((rc = canonical(cur, canon)) < 0 ||
		    (rc = set_add(d, canon)) < 0)
			return rc;
		if (lstat(canon, &st) < 0)
			return -errno;
		if (!S_ISLNK(st.st_mode)) {
			memcpy(real, canon, PATH_MAX);
			return S_ISREG(st.st_mode) ? rc : -EACCES;
		}
		if ((n = readlink(canon, tgt, sizeof(tgt) - 1)) < 0)
			return -errno;
		tgt[n] = '\0';
		if (tgt[0] == '/')
			memcpy(cur, tgt, sizeof(cur));
		else if (snprintf(cur, sizeof(cur), "%.*s/%s",
		    (int)(strrchr(canon, '/') - canon), canon, tgt) >=
		    (int)sizeof(cur))
			return -ENAMETOOLONG;
	}
	return -ELOOP;
}

static int
pread_all(int fd, void *buf, size_t len, off_t off)
{
	ssize_t n = pread(fd, buf, len, off);

	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -ENOEXEC;
}

/* The ELF header, checked: native class and order, an executable or a
 * shared object.  0, or -ENOEXEC. */
static int
ehdr_read(int fd, ElfW(Ehdr) *eh)
{
	if (pread_all(fd, eh, sizeof(*eh), 0) < 0 ||
	    memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 ||
	    eh->e_ident[EI_CLASS] != ELF_CLASS_NATIVE ||
	    eh->e_ident[EI_DATA] != ELF_DATA_NATIVE ||
	    (eh->e_type != ET_EXEC && eh->e_type != ET_DYN) ||
	    eh->e_phentsize != sizeof(ElfW(Phdr)) || eh->e_phnum > MAX_PHDRS)
		return -ENOEXEC;
	return 0;
}

/* The file offset of address a, from the PT_LOAD segments. */
static int
vaddr_off(const ElfW(Phdr) *ph, size_t n, ElfW(Addr) a, off_t *ret)
{
	for (size_t i = 0; i < n; i++)
		if (ph[i].p_type == PT_LOAD && a >= ph[i].p_vaddr &&
		    a - ph[i].p_vaddr < ph[i].p_filesz) {
			*ret = (off_t)(a - ph[i].p_vaddr + ph[i].p_offset);
			return 0;
		}
	return -ENOEXEC;
}

/* The dynamic section and its string table. */
static int
dyn_read(int fd, const ElfW(Phdr) *ph, size_t nph, const ElfW(Phdr) *dp,
         struct elf_obj *o)
{
	ElfW(Addr) strtab = 0;
	off_t off;
	int rc;

	o->ndyn = dp->p_filesz / sizeof(ElfW(Dyn));
	if (o->ndyn == 0 || o->ndyn > MAX_DYNS)
		return -ENOEXEC;
	if ((o->dyn = calloc(o->ndyn, sizeof(*o->dyn))) == NULL)
		return -ENOMEM;
	if ((rc = pread_all(fd, o->dyn, o->ndyn * sizeof(*o->dyn),
	    (off_t)dp->p_offset)) < 0)
		return rc;
	for (size_t i = 0; i < o->ndyn && o->dyn[i].d_tag != DT_NULL; i++) {
		if (o->dyn[i].d_tag == DT_STRTAB)
			strtab = o->dyn[i].d_un.d_ptr;
		else if (o->dyn[i].d_tag == DT_STRSZ)
			o->strsz = o->dyn[i].d_un.d_val;
	}
	if (strtab == 0 || o->strsz == 0)
		return 0;               /* nothing named: nothing needed */
	if (o->strsz > MAX_STRTAB || vaddr_off(ph, nph, strtab, &off) < 0)
		return -ENOEXEC;
	if ((o->strtab = malloc(o->strsz + 1)) == NULL)
		return -ENOMEM;
	o->strtab[o->strsz] = '\0';
	return pread_all(fd, o->strtab, o->strsz, off);
}

/* Read path's interpreter and dynamic section.  0, or -errno (ENOEXEC:
 * not a native ELF object; why says a script). */
static int
obj_read(const char *path, struct elf_obj *o, char *why, size_t whylen)
{
	ElfW(Phdr) ph[MAX_PHDRS];
	ElfW(Ehdr) eh;
	size_t len;
	int fd, rc;

	memset(o, 0, sizeof(*o));
	memset(&eh, 0, sizeof(eh));
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
		rc = -errno;
		snprintf(why, whylen, "%s: %s", path, strerror(-rc));
		return rc;
	}
	if ((rc = ehdr_read(fd, &eh)) < 0) {
		snprintf(why, whylen, "%s: %s", memcmp(&eh, "#!", 2) == 0 ?
		    "a script (#!), not ELF" : "not an ELF file of this "
		    "machine", path);
		goto out;
	}
	o->machine = eh.e_machine;
	if ((rc = pread_all(fd, ph, eh.e_phnum * sizeof(ph[0]),
	    (off_t)eh.e_phoff)) < 0)
		goto bad;
	for (size_t i = 0; i < eh.e_phnum && rc == 0; i++) {
		if (ph[i].p_type == PT_INTERP) {
			len = ph[i].p_filesz;
			if (len == 0 || len >= sizeof(o->interp))
				rc = -ENOEXEC;
			else
				rc = pread_all(fd, o->interp, len,
				    (off_t)ph[i].p_offset);
			o->interp[len < sizeof(o->interp) ? len : 0] = '\0';
		} else if (ph[i].p_type == PT_DYNAMIC && o->dyn == NULL) {
			rc = dyn_read(fd, ph, eh.e_phnum, &ph[i], o);
		}
	}
bad:
	if (rc < 0)
		snprintf(why, whylen, "%s: malformed ELF file", path);
out:
	close(fd);
	return rc;
}

/* Is path an ELF object of the program's machine (what the loader
 * takes; a 32-bit library of the same name is passed over)? */
static bool
elf_fits(const char *path, const struct search *s)
{
	ElfW(Ehdr) eh;
	int fd;
	bool ok;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return false;
	ok = ehdr_read(fd, &eh) == 0 && eh.e_type == ET_DYN &&
	    eh.e_machine == s->machine;
	close(fd);
	return ok;
}

static void
dir_add(struct search *s, const char *dir, size_t len)
{
	if (len == 0 || dir[0] != '/' || len >= PATH_MAX ||
	    s->ndir == MAX_DIRS)
		return;
	for (size_t i = 0; i < s->ndir; i++)
		if (strlen(s->dir[i]) == len &&
		    memcmp(s->dir[i], dir, len) == 0)
			return;
	memcpy(s->dir[s->ndir], dir, len);
	s->dir[s->ndir++][len] = '\0';
}

/* The directories of one ld.so.conf file; "include" one level deeper. */
static void
conf_read(struct search *s, const char *file, int depth)
{
	char line[PATH_MAX + 16], *p, *e;
	glob_t g;
	FILE *f;

	if (depth > 2 || (f = fopen(file, "re")) == NULL)
		return;
	while (fgets(line, sizeof(line), f) != NULL) {
		if ((p = strchr(line, '#')) != NULL)
			*p = '\0';
		p = line + strspn(line, " \t");
		e = p + strcspn(p, " \t\r\n:,=");
		if (strncmp(p, "include", 7) == 0 && (p[7] == ' ' ||
		    p[7] == '\t')) {
			p += 8 + strspn(p + 8, " \t");
			p[strcspn(p, " \t\r\n")] = '\0';
			if (glob(p, 0, NULL, &g) != 0)
				continue;
			for (size_t i = 0; i < g.gl_pathc; i++)
				conf_read(s, g.gl_pathv[i], depth + 1);
			globfree(&g);
		} else {
			dir_add(s, p, (size_t)(e - p));
		}
	}
	fclose(f);
}

/* The loader's directories after an object's own: ld.so.conf, the
 * multiarch pair named like the interpreter's directory, the defaults. */
static void
search_init(struct search *s, const char *interp_real, uint16_t machine)
{
	static const char *const dflt[] = { "/lib", "/usr/lib", "/lib64",
	    "/usr/lib64" };
	const char *slash, *t;
	char dir[PATH_MAX];
	size_t tlen;

	s->ndir = 0;
	s->machine = machine;
	conf_read(s, "/etc/ld.so.conf", 0);
	slash = strrchr(interp_real, '/');
	if (slash != NULL && slash != interp_real) {
		for (t = slash - 1; t > interp_real && *t != '/'; t--)
			;
		tlen = (size_t)(slash - t - 1);
		if (*t == '/' && memchr(t + 1, '-', tlen) != NULL) {
			snprintf(dir, sizeof(dir), "/lib/%.*s", (int)tlen, t + 1);
			dir_add(s, dir, strlen(dir));
			snprintf(dir, sizeof(dir), "/usr/lib/%.*s", (int)tlen,
			    t + 1);
			dir_add(s, dir, strlen(dir));
		}
	}
	for (size_t i = 0; i < sizeof(dflt) / sizeof(dflt[0]); i++)
		dir_add(s, dflt[i], strlen(dflt[i]));
}

/* Look for name in one colon-separated list of an object's paths
 * ($ORIGIN: the object's directory; other tokens are passed over). */
static bool
find_in_list(const char *list, const char *origin, const char *name,
             const struct search *s, char *ret)
{
	const char *p, *e, *rest;
	int n;

	for (p = list; *p != '\0'; p = *e ? e + 1 : e) {
		e = strchrnul(p, ':');
		rest = NULL;
		if (strncmp(p, "$ORIGIN", 7) == 0)
			rest = p + 7;
		else if (strncmp(p, "${ORIGIN}", 9) == 0)
			rest = p + 9;
		if (rest != NULL)
			n = snprintf(ret, PATH_MAX, "%s%.*s/%s", origin,
			    (int)(e - rest), rest, name);
		else if (memchr(p, '$', (size_t)(e - p)) != NULL || *p != '/')
			continue;
		else
			n = snprintf(ret, PATH_MAX, "%.*s/%s", (int)(e - p), p,
			    name);
		if (n < PATH_MAX && elf_fits(ret, s))
			return true;
	}
	return false;
}

/* Where the loader finds library `name` needed by object o at real. */
static bool
lib_find(const struct elf_obj *o, const char *real, const char *name,
         const struct search *s, char *ret)
{
	const char *rpath = NULL, *runpath = NULL;
	char origin[PATH_MAX];

	if (strchr(name, '/') != NULL) {
		snprintf(ret, PATH_MAX, "%s", name);
		return elf_fits(ret, s);
	}
	for (size_t i = 0; i < o->ndyn && o->dyn[i].d_tag != DT_NULL; i++) {
		if (o->dyn[i].d_un.d_val >= o->strsz)
			continue;
		if (o->dyn[i].d_tag == DT_RPATH)
			rpath = o->strtab + o->dyn[i].d_un.d_val;
		else if (o->dyn[i].d_tag == DT_RUNPATH)
			runpath = o->strtab + o->dyn[i].d_un.d_val;
	}
	snprintf(origin, sizeof(origin), "%.*s",
	    (int)(strrchr(real, '/') - real), real);
	if (runpath == NULL && rpath != NULL &&
	    find_in_list(rpath, origin, name, s, ret))
		return true;
	if (runpath != NULL && find_in_list(runpath, origin, name, s, ret))
		return true;
	for (size_t i = 0; i < s->ndir; i++)
		if (snprintf(ret, PATH_MAX, "%s/%s", s->dir[i], name) <
		    PATH_MAX && elf_fits(ret, s))
			return true;
	return false;
}

/* Each DT_NEEDED of o found and its chain added; new files queued. */
static int
needed_add(struct sipc__elfdeps *d, const struct elf_obj *o, const char *real,
           const struct search *s, char (*queue)[PATH_MAX], size_t *nq,
           char *why, size_t whylen)
{
	char found[PATH_MAX];
	const char *name;
	int rc;

	for (size_t i = 0; i < o->ndyn && o->dyn[i].d_tag != DT_NULL; i++) {
		if (o->dyn[i].d_tag != DT_NEEDED ||
		    o->dyn[i].d_un.d_val >= o->strsz)
			continue;
		name = o->strtab + o->dyn[i].d_un.d_val;
		if (!lib_find(o, real, name, s, found)) {
			snprintf(why, whylen, "library %s not found, needed "
			    "by %s", name, real);
			return -ENOENT;
		}
		if ((rc = chain_add(d, found, queue[*nq])) < 0) {
			snprintf(why, whylen, "%s: %s", found, strerror(-rc));
			return rc;
		}
		if (rc == 1 && ++*nq == MAX_OBJS) {
			snprintf(why, whylen, "more than %d libraries",
			    MAX_OBJS);
			return -E2BIG;
		}
	}
	return 0;
}

/* The program itself: its chain, its interpreter's, the search list. */
static int
prog_add(struct sipc__elfdeps *d, const char *prog, struct search *s,
         struct elf_obj *o, char (*queue)[PATH_MAX], size_t *nq, char *why,
         size_t whylen)
{
	char real[PATH_MAX];
	int rc;

	if ((rc = chain_add(d, prog, real)) < 0) {
		snprintf(why, whylen, "%s: %s", prog, strerror(-rc));
		return rc;
	}
	if ((rc = obj_read(real, o, why, whylen)) < 0)
		return rc;
	s->machine = o->machine;
	if (o->interp[0] == '\0') {
		search_init(s, "", o->machine);
	} else {
		if ((rc = chain_add(d, o->interp, queue[*nq])) < 0) {
			snprintf(why, whylen, "interpreter %s: %s", o->interp,
			    strerror(-rc));
			return rc;
		}
		search_init(s, queue[*nq], o->machine);
		if (rc == 1)
			++*nq;
	}
	return needed_add(d, o, real, s, queue, nq, why, whylen);
}

int
sipc__elfdeps_add_file(struct sipc__elfdeps *d, const char *path, char *why,
                       size_t whylen)
{
	char real[PATH_MAX];
	int rc;

	if ((rc = chain_add(d, path, real)) < 0) {
		snprintf(why, whylen, "%s: %s", path, strerror(-rc));
		return rc;
	}
	return 0;
}

/* Read each queued file from *i on, queueing what it needs. */
static int
queue_run(struct sipc__elfdeps *d, const struct search *s,
          char (*queue)[PATH_MAX], size_t *nq, size_t *i, char *why,
          size_t whylen)
{
	struct elf_obj o;
	int rc = 0;

	for (; rc == 0 && *i < *nq; ++*i) {
		if ((rc = obj_read(queue[*i], &o, why, whylen)) == 0)
			rc = needed_add(d, &o, queue[*i], s, queue, nq, why,
			    whylen);
		obj_free(&o);
	}
	return rc;
}

/* glibc loads libgcc_s itself (pthread_exit, cancellation unwind), and
 * no DT_NEEDED names it: queued with libc when it is found. */
static int
libc_extra(struct sipc__elfdeps *d, const struct search *s,
           char (*queue)[PATH_MAX], size_t *nq, char *why, size_t whylen)
{
	static const struct elf_obj none;
	char found[PATH_MAX];
	bool libc = false;
	size_t len;
	int rc;

	for (size_t i = 0; i < d->n && !libc; i++)
		libc = (len = strlen(d->path[i])) >= 10 &&
		    strcmp(d->path[i] + len - 10, "/libc.so.6") == 0;
	if (!libc || !lib_find(&none, "/", "libgcc_s.so.1", s, found))
		return 0;
	if ((rc = chain_add(d, found, queue[*nq])) < 0) {
		snprintf(why, whylen, "%s: %s", found, strerror(-rc));
		return rc;
	}
	if (rc == 1 && ++*nq == MAX_OBJS) {
		snprintf(why, whylen, "more than %d libraries", MAX_OBJS);
		return -E2BIG;
	}
	return 0;
}

int
sipc__elfdeps_add(struct sipc__elfdeps *d, const char *prog, char *why,
                  size_t whylen)
{
	char (*queue)[PATH_MAX];
	struct search *s;
	struct elf_obj o;
	size_t nq = 0, i = 0;
	int rc = -ENOMEM;

	why[0] = '\0';
	memset(&o, 0, sizeof(o));
	queue = calloc(MAX_OBJS, sizeof(*queue));
	s = calloc(1, sizeof(*s));
	if (queue == NULL || s == NULL) {
		snprintf(why, whylen, "out of memory");
		goto out;
	}
	rc = prog_add(d, prog, s, &o, queue, &nq, why, whylen);
	obj_free(&o);
	/* Breadth first; each file is read once (chain_add says new). */
	if (rc == 0 && (rc = queue_run(d, s, queue, &nq, &i, why,
	    whylen)) == 0 &&
	    (rc = libc_extra(d, s, queue, &nq, why, whylen)) == 0)
		rc = queue_run(d, s, queue, &nq, &i, why, whylen);
out:
	free(queue);
	free(s);
	return rc;
}
