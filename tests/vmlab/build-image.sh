#!/bin/bash
# Build the vmlab's Debian 12 image: a raw ext4 root filesystem plus kernel and initrd for qemu's direct kernel boot.
# Usage: build-image.sh OUT_DIR AUTHORIZED_KEY_FILE   (needs root and mmdebstrap; about a minute)
# The guest looks like a small Ubuntu-style server: the management NIC (eth0) is configured by netplan (DHCP), a
# user "ubuntu" with passwordless sudo and the lab's key, root login by the same key, systemd, networkd.
set -euo pipefail
OUT=${1:?output directory}
KEY=${2:?authorized key file}
HERE=$(cd "$(dirname "$0")" && pwd)
PKGS=$(grep -v '^#' "$HERE/packages.txt" | paste -sd, -)
mkdir -p "$OUT"
ROOTFS="$OUT/rootfs.tmp"
rm -rf "$ROOTFS"
mmdebstrap --variant=minbase --include="$PKGS" \
  --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/doc/*' \
  --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-include=/usr/share/locale/locale.alias' \
  --customize-hook='echo "/dev/vda / ext4 defaults 0 1" > "$1/etc/fstab"' \
  --customize-hook='printf "127.0.0.1 localhost\n127.0.1.1 vm1 vm2\n" > "$1/etc/hosts"' \
  --customize-hook='mkdir -p -m700 "$1/root/.ssh"' \
  --customize-hook="cp '$KEY' \"\$1/root/.ssh/authorized_keys\"" \
  --customize-hook='chroot "$1" useradd -m -s /bin/bash ubuntu' \
  --customize-hook='mkdir -p -m700 "$1/home/ubuntu/.ssh"' \
  --customize-hook="cp '$KEY' \"\$1/home/ubuntu/.ssh/authorized_keys\"" \
  --customize-hook='chroot "$1" chown -R ubuntu:ubuntu /home/ubuntu/.ssh' \
  --customize-hook='echo "ubuntu ALL=(ALL) NOPASSWD:ALL" > "$1/etc/sudoers.d/ubuntu"; chmod 440 "$1/etc/sudoers.d/ubuntu"' \
  --customize-hook='mkdir -p "$1/etc/netplan"; printf "network:\n  version: 2\n  renderer: networkd\n  ethernets:\n    eth0:\n      dhcp4: true\n" > "$1/etc/netplan/01-management.yaml"; chmod 600 "$1/etc/netplan/01-management.yaml"' \
  --customize-hook='chroot "$1" systemctl enable systemd-networkd ssh' \
  --customize-hook='chroot "$1" systemctl mask systemd-networkd-wait-online.service apt-daily.timer apt-daily-upgrade.timer e2scrub_all.timer fstrim.timer getty@tty1.service serial-getty@ttyS0.service' \
  --customize-hook='printf "UseDNS no\nPasswordAuthentication no\n" > "$1/etc/ssh/sshd_config.d/lab.conf"' \
  --customize-hook='cp "$1"/etc/ssh/ssh_host_ed25519_key.pub '"'$OUT'"'/host_ed25519.pub' \
  --customize-hook='cp "$1"/boot/vmlinuz-* '"'$OUT'"'/vmlinuz; cp "$1"/boot/initrd.img-* '"'$OUT'"'/initrd.img' \
  bookworm "$ROOTFS" http://deb.debian.org/debian
rm -f "$OUT/base.img"
mke2fs -q -t ext4 -L root -d "$ROOTFS" "$OUT/base.img" 3G
rm -rf "$ROOTFS"
