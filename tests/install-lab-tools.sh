#!/bin/sh
# Installs what the two real labs need, so their tests run instead of skipping:
#  - tests/nslab (network-namespace hosts with real OpenSSH): sshd, sudo, iptables;
#  - tests/vmlab (two qemu VMs with a real kernel): qemu, qemu-img, mmdebstrap (builds the VM image once), mke2fs;
#  - both: ssh-keygen;
#  - tests/handoff/metrics: promtool (Debian package prometheus) checks the shipped alert rules;
#  - the HTML report tests (tests/handoff/report, tests/validate, tests/test_browser.py): headless Chromium (Debian
#    package chromium) opens the run report and the bandwidth report, screenshots them and fails on a console error,
#    a missing chart or a fetch from the network;
#  - tests/nslab/test_real_lldpd.py: Debian's lldpd on both ends of veth links (switches configured like each NOS);
#  - tests/engine/test_switch_config_yang.py: yanglint (libyang2-tools) validates the SONiC files against the
#    sonic-yang-models.
# It needs root and apt-get; anywhere else it says so, changes nothing, and those tests skip with the reason.
# Already installed tools are not touched. sshd is only installed: the namespace lab starts its own, one per host.
set -eu
need=""
command -v qemu-system-x86_64 >/dev/null 2>&1 || need="$need qemu-system-x86"
command -v qemu-img >/dev/null 2>&1 || need="$need qemu-utils"
command -v mmdebstrap >/dev/null 2>&1 || need="$need mmdebstrap"
command -v ssh-keygen >/dev/null 2>&1 || need="$need openssh-client"
command -v mke2fs >/dev/null 2>&1 || [ -x /sbin/mke2fs ] || need="$need e2fsprogs"
[ -x /usr/sbin/sshd ] || need="$need openssh-server"
command -v sudo >/dev/null 2>&1 || need="$need sudo"
command -v iptables >/dev/null 2>&1 || [ -x /usr/sbin/iptables ] || need="$need iptables"
command -v promtool >/dev/null 2>&1 || need="$need prometheus"
command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 ||
  command -v google-chrome >/dev/null 2>&1 || need="$need chromium"
[ -x /usr/sbin/lldpd ] || need="$need lldpd"
command -v yanglint >/dev/null 2>&1 || need="$need libyang2-tools"
[ -z "$need" ] && exit 0
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "labs: not installing$need (needs root and apt-get); tests/nslab, tests/vmlab and the browser tests will skip" >&2
  exit 0
fi
echo "labs: installing$need" >&2
apt-get update -qq
# policy-rc.d keeps the package from starting a system-wide sshd on machines without systemd (nothing else listens).
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $need >/dev/null
