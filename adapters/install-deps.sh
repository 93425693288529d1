#!/bin/sh
# make adapter-deps: what the shipped adapters need (docs/adapters.md), on
# a fresh Debian or Ubuntu machine, from the repository's root. Idempotent:
# each step checks first and says what it found or did; exit 1 if
# anything could not be installed.
#
#   Debian packages  python3-etcd3 (python-etcd3), nodejs + npm (node-etcd3),
#                    etcd-client (etcdctl-3.4), etcd-server (/usr/bin/etcd
#                    for --etcd-bin); installed as root, with services kept
#                    from starting (a system etcd would hold 2379/2380)
#   npm              adapters/node-etcd3/node_modules from package-lock.json
#   Go               bin/etcdctl, etcdctl of the etcd release in go.mod
set -eu
GO=${GO:-go}
say() { echo "adapter-deps: $*"; }

# --- Debian packages --------------------------------------------------------
missing=
# ADAPTER_DEPS in the Makefile lists the same packages.
/usr/bin/python3 -c 'import etcd3' 2>/dev/null || missing="$missing python3-etcd3"
[ -x /usr/bin/node ] || missing="$missing nodejs"
[ -x /usr/bin/npm ] || missing="$missing npm"
[ -x /usr/bin/etcdctl ] || missing="$missing etcd-client"
[ -x /usr/bin/etcd ] || missing="$missing etcd-server"
if [ -z "$missing" ]; then
	say "Debian packages present (python3-etcd3, node, npm, etcdctl, etcd)"
elif [ "$(id -u)" != 0 ]; then
	say "run as root, or: sudo apt-get install -y$missing"
	exit 1
else
	# No service may start from the install: Debian's etcd-server would
	# otherwise start a system etcd where an init system allows it.
	# policy-rc.d (exit 101: "action forbidden") is how Debian says so.
	guard=
	if [ ! -e /usr/sbin/policy-rc.d ]; then
		guard=/usr/sbin/policy-rc.d
		printf '#!/bin/sh\nexit 101\n' >"$guard"
		chmod +x "$guard"
		trap 'rm -f "$guard"' EXIT
	fi
	say "apt-get install$missing"
	apt-get update -qq
	# shellcheck disable=SC2086
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null
	if [ -n "$guard" ]; then rm -f "$guard"; trap - EXIT; fi
fi
# A system etcd (the etcd-server package's service, user etcd) must not
# run: lockbench starts its own, and 2379/2380 are its defaults too.
if command -v pgrep >/dev/null && pids=$(pgrep -u etcd -x etcd 2>/dev/null); then
	say "stopping the system etcd service (pid $(echo $pids)) and disabling it"
	if [ -d /run/systemd/system ]; then
		systemctl disable --now etcd >/dev/null 2>&1 || true
	else
		/etc/init.d/etcd stop >/dev/null 2>&1 || kill $pids 2>/dev/null || true
		update-rc.d etcd disable >/dev/null 2>&1 || true
	fi
	if pgrep -u etcd -x etcd >/dev/null 2>&1; then say "the system etcd is still running"; exit 1; fi
fi

# --- npm: node-etcd3's package, into the repository ---------------------------
dir=adapters/node-etcd3
want=$(sed -n 's/.*"etcd3": *"\([^"]*\)".*/\1/p' "$dir/package.json" | head -1)
have=$(cd "$dir" && /usr/bin/node -p "require('etcd3/package.json').version" 2>/dev/null || true)
if [ -n "$want" ] && [ "$have" = "$want" ]; then
	say "$dir/node_modules has etcd3 $have"
else
	say "npm ci in $dir (etcd3 $want)"
	(cd "$dir" && /usr/bin/npm ci --no-audit --no-fund --ignore-scripts --loglevel=error)
fi

# --- Go: etcdctl of go.mod's etcd release, into bin/ ------------------------
version=$($GO list -m -f '{{.Version}}' go.etcd.io/etcd/client/v3)
if [ -x bin/etcdctl ] && bin/etcdctl version 2>/dev/null | grep -qx "etcdctl version: ${version#v}"; then
	say "bin/etcdctl is etcdctl ${version#v}"
else
	# Not go install: etcdctl's go.mod has replace directives, which go
	# install refuses; a throwaway module that requires it builds it.
	say "building bin/etcdctl (go.etcd.io/etcd/etcdctl/v3@$version)"
	tmp=$(mktemp -d)
	root=$(pwd)
	(cd "$tmp" && $GO mod init lockbench-etcdctl >/dev/null 2>&1 &&
		$GO get "go.etcd.io/etcd/etcdctl/v3@$version" >/dev/null 2>&1 &&
		$GO build -o "$root/bin/etcdctl" go.etcd.io/etcd/etcdctl/v3) || { rm -rf "$tmp"; say "building etcdctl failed"; exit 1; }
	rm -rf "$tmp"
fi
say "done"
