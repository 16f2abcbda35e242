#!/bin/sh
# Installs what the real-kernel lab (tests/vmlab) needs: qemu, qemu-img, mmdebstrap (to build the VM image once),
# ssh-keygen and mke2fs. It needs root and apt-get; anywhere else it says so, changes nothing, and the vmlab tests
# skip with the reason. Already installed tools are not touched.
set -eu
need=""
command -v qemu-system-x86_64 >/dev/null 2>&1 || need="$need qemu-system-x86"
command -v qemu-img >/dev/null 2>&1 || need="$need qemu-utils"
command -v mmdebstrap >/dev/null 2>&1 || need="$need mmdebstrap"
command -v ssh-keygen >/dev/null 2>&1 || need="$need openssh-client"
command -v mke2fs >/dev/null 2>&1 || [ -x /sbin/mke2fs ] || need="$need e2fsprogs"
[ -z "$need" ] && exit 0
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "vmlab: not installing$need (needs root and apt-get); the real-kernel tests (tests/vmlab) will skip" >&2
  exit 0
fi
echo "vmlab: installing$need" >&2
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $need >/dev/null
