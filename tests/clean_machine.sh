#!/usr/bin/env bash
# The README's set-up on a machine that has nothing but a minimal Debian 12: build one with
# debootstrap, copy this checkout into it (tracked files and untracked ones git does not ignore),
# and run there, as root: ./setup.sh, `bench run suite=quick`, and the tests that need no lab,
# no Slurm and no VM, with BENCH_TESTS_REQUIRE_REAL_PARTS=1 (so a program that setup.sh forgot
# stops the tests at their start, naming its package). Run it before a change that adds a tool,
# a package or a test of a real part. Not part of the README's test command (docs/performance.md
# has its time).
#
#   tests/clean_machine.sh [--keep] [--mirror URL] [--dir DIR]
#
# --keep leaves the root in DIR (default: a new directory under /var/tmp) for a look inside.
set -euo pipefail
cd "$(dirname "$0")/.."

keep=0
mirror=""
dir=""
while (($#)); do
  case "$1" in
    --keep) keep=1 ;;
    --mirror) mirror="$2"; shift ;;
    --dir) dir="$2"; shift ;;
    *) echo "clean_machine.sh: unknown argument $1 (--keep, --mirror URL, --dir DIR)" >&2; exit 2 ;;
  esac
  shift
done
if [ "$(id -u)" != 0 ]; then
  echo "clean_machine.sh: run as root (debootstrap, chroot, mounts)" >&2
  exit 2
fi
if [ -z "$mirror" ]; then
  # the Debian mirror this machine's apt uses (deb822 or one-line sources), else deb.debian.org
  mirror=$(grep -rhoE '(URIs:|^deb) +https?://[^ ]+/debian/?( |$)' /etc/apt/sources.list /etc/apt/sources.list.d/ \
             2>/dev/null | grep -oE 'https?://[^ ]+' | head -n 1 || true)
  mirror=${mirror:-http://deb.debian.org/debian}
fi
if ! command -v debootstrap >/dev/null; then
  echo "clean_machine.sh: installing debootstrap" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap >/dev/null
fi

root=${dir:-$(mktemp -d /var/tmp/bench-clean-root.XXXXXX)}
bound=()
mkdir -p "$root"
cleanup() {
  # the chroot's mounts go first (recursively: /dev and /sys are rbind mounts), then the root
  for m in dev sys proc run tmp "${bound[@]}"; do
    m=${m#/}
    if mountpoint -q "$root/$m"; then umount -R "$root/$m" 2>/dev/null || umount -lR "$root/$m" || true; fi
  done
  if ((keep)); then
    echo "clean_machine.sh: the root stays in $root" >&2
  else
    rm -rf --one-file-system "$root"
  fi
}
trap cleanup EXIT

phase_start=$SECONDS
times=()
phase() { times+=("$1 $((SECONDS - phase_start)) s"); phase_start=$SECONDS; }

echo "clean_machine.sh: debootstrap bookworm (minbase) from $mirror into $root" >&2
if ! debootstrap --variant=minbase bookworm "$root" "$mirror" >"$root.debootstrap.log" 2>&1; then
  tail -n 20 "$root.debootstrap.log" >&2
  echo "clean_machine.sh: debootstrap failed (log: $root.debootstrap.log)" >&2
  exit 1
fi
rm -f "$root.debootstrap.log"
phase debootstrap

echo "clean_machine.sh: copying the checkout into $root/root/benchharness" >&2
mkdir -p "$root/root/benchharness"
git ls-files -z --cached --others --exclude-standard | while IFS= read -r -d '' f; do
  [ -e "$f" ] && printf '%s\0' "$f"
done | tar --null -T - -cf - | tar -xf - -C "$root/root/benchharness"
cp /etc/resolv.conf "$root/etc/resolv.conf"
# what Debian's installer writes and debootstrap does not: without it "localhost" does not resolve
printf '127.0.0.1\tlocalhost\n127.0.1.1\t%s\n::1\tlocalhost ip6-localhost ip6-loopback\n' "$(hostname)" \
  >"$root/etc/hosts"
# How this machine reaches the package registries goes along, since a machine of its kind has it
# too: local CA certificates (a new root's ca-certificates package picks them up), pip's
# configuration, and the local package directories that configuration names (read-only).
if [ -d /usr/local/share/ca-certificates ]; then
  mkdir -p "$root/usr/local/share/ca-certificates"
  cp -a /usr/local/share/ca-certificates/. "$root/usr/local/share/ca-certificates/"
fi
if [ -f /etc/ssl/certs/ca-certificates.crt ]; then
  mkdir -p "$root/etc/ssl/certs" && cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/"
fi
for conf in /etc/pip.conf /etc/xdg/pip /root/.config/pip; do
  [ -e "$conf" ] && mkdir -p "$root$(dirname "$conf")" && cp -a "$conf" "$root$(dirname "$conf")/"
done
local_dirs=$({ cat /etc/pip.conf /etc/xdg/pip/pip.conf /root/.config/pip/pip.conf 2>/dev/null; env | grep '^PIP_'; } |
             grep -oE '(file://)?/[^ ,]+' | sed 's|^file://||' | sort -u)
for d in $local_dirs; do
  d=/$(echo "$d" | cut -d/ -f2-3)  # a package directory's top (an index's simple/ names files beside it)
  [ -d "$d" ] || continue
  case "$d" in /|/etc|/etc/*|/root|/root/*) continue ;; esac
  mkdir -p "$root$d"
  mountpoint -q "$root$d" || { mount --bind "$d" "$root$d" && mount -o remount,bind,ro "$root$d"; }
  bound+=("$d")
done
mount -t proc proc "$root/proc"
mount --rbind /sys "$root/sys" && mount --make-rslave "$root/sys"
mount --rbind /dev "$root/dev" && mount --make-rslave "$root/dev"
mount -t tmpfs tmpfs "$root/run"
mount -t tmpfs tmpfs "$root/tmp"

# this machine's network settings (proxies, CA bundles, pip's) and nothing else of its environment
mapfile -t passed < <(env | grep -E '^(PIP_[A-Z_]+|[A-Z_]*CA_(BUNDLE|CERTS?)[A-Z_]*|SSL_CERT_(FILE|DIR)|(https?|no)_proxy|(HTTPS?|NO)_PROXY)=' || true)
inside() {
  chroot "$root" /usr/bin/env -i HOME=/root TERM=dumb LANG=C.UTF-8 "${passed[@]}" \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    BENCH_TESTS_REQUIRE_REAL_PARTS=1 /bin/bash -c "cd /root/benchharness && $1"
}

echo "clean_machine.sh: ./setup.sh" >&2
inside ./setup.sh
phase setup.sh
echo "clean_machine.sh: bench run suite=quick" >&2
inside ".venv/bin/bench run suite=quick out=/root/quick-run"
phase "bench run suite=quick"
echo "clean_machine.sh: the tests without lab, Slurm or VM" >&2
inside ".venv/bin/python -m pytest -q -p no:cacheprovider -m 'not lab and not slurm and not rdma_vm'"
phase tests

echo "clean_machine.sh: passed on a minimal Debian 12 root: ${times[*]/%/;} total $SECONDS s" >&2
