# install_test.sh - what a packager and a user of the installed library
# see: `make install` into a DESTDIR with a non-default PREFIX and
# LIBDIR writes sipc.pc and sipc-worker.pc that name them; programs
# built with pkg-config output alone (the examples' host and worker)
# link and run, once dynamically and once fully static (-static with
# `pkg-config --static`, which must bring libbsd's own -lmd); and
# `make uninstall` leaves the DESTDIR empty.
#
# Needs SIPC_MAKE (a make for this tree) and SIPC_BUILD (its build
# directory), as `make check` sets them.
. tests/lib/shtest.sh
CC=${CC:-cc}

if [ -n "$SIPC_SAN" ]; then
	# A sanitizer build's archive needs the sanitizer's runtime, which
	# pkg-config does not (and should not) name.
	t_skip install_and_link "sanitizer build ($SIPC_SAN)"
	t_done
fi
if [ -z "$SIPC_MAKE" ] || ! command -v pkg-config >/dev/null; then
	t_fail install_and_link "needs SIPC_MAKE and pkg-config"
	t_done
fi

d=$(mktemp -d /tmp/sipc-destdir-XXXXXX)
w=$(mktemp -d /tmp/sipc-consumer-XXXXXX)
trap 'rm -rf "$d" "$w"' EXIT
prefix=/opt/sipc-test
libdir=$prefix/lib64
vars="BUILD=${SIPC_BUILD:-build} DESTDIR=$d PREFIX=$prefix LIBDIR=$libdir"

check() { # name command... : ok when the command succeeds
	name=$1; shift
	if out=$("$@" 2>&1); then t_ok "$name"
	else printf '%s\n' "$out" | sed 's/^/    /'; t_fail "$name" "$*"; fi
}

check install_runs $SIPC_MAKE $vars install
pc=$d$libdir/pkgconfig/sipc.pc
check pc_names_install_prefix grep -qx "prefix=$prefix" "$pc"
check pc_names_libdir grep -qx 'libdir=${prefix}/lib64' "$pc"
check pc_requires_private_libbsd grep -qx 'Requires.private: libbsd' "$pc"
check worker_pc_installed grep -qx "prefix=$prefix" "$d$libdir/pkgconfig/sipc-worker.pc"
check man_pages_installed test -s "$d$prefix/share/man/man7/sipc.7" -a \
	-s "$d$prefix/share/man/man3/sipc_create.3" -a \
	-s "$d$prefix/share/man/man5/sipc.conf.5"
check probe_installed test -x "$d$prefix/libexec/sipc/sipc-probe"
check exec_installed test -x "$d$prefix/libexec/sipc/sipc-exec" -a \
	-s "$d$prefix/share/man/man1/sipc-exec.1"
check man_alias_sources_group_page grep -qx '.so man3/sipc_call.3' \
	"$d$prefix/share/man/man3/sipc_result_release.3"

export PKG_CONFIG_SYSROOT_DIR="$d"
export PKG_CONFIG_PATH="$d$libdir/pkgconfig"
version=$(sed -n 's/^.define SIPC_VERSION_\(MAJOR\|MINOR\|PATCH\) \+//p' \
	include/sipc_version.h | paste -sd.)
check pc_version_is_header_version test "$(pkg-config --modversion sipc)" = \
	"$version"
check pkg_config_static_has_libmd sh -c \
	'pkg-config --static --libs sipc | grep -q -- -lmd'

# Only pkg-config's output: the tree's include/ and build/ are not named.
build() { # out src pc [static]
	if [ -n "$4" ]; then
		$CC -static -o "$1" "$2" $(pkg-config --cflags "$3") \
			$(pkg-config --static --libs "$3")
	else
		$CC -o "$1" "$2" $(pkg-config --cflags --libs "$3")
	fi
}
check link_dynamic_host build "$w/host" examples/hello-host.c sipc
check link_dynamic_worker build "$w/worker" examples/hello-worker.c sipc-worker
check run_dynamic_pair "$w/host" "$w/worker"
check link_static_host build "$w/host-static" examples/hello-host.c sipc static
check link_static_worker build "$w/worker-static" examples/hello-worker.c \
	sipc-worker static
check static_host_has_no_interpreter sh -c \
	"! readelf -l '$w/host-static' | grep -q INTERP"
check run_static_pair "$w/host-static" "$w/worker-static"

check uninstall_runs $SIPC_MAKE $vars uninstall
check uninstall_leaves_destdir_empty test -z "$(ls -A "$d")"
if [ -n "$(ls -A "$d")" ]; then (cd "$d" && find . | sed 's/^/    left: /'); fi
t_done
