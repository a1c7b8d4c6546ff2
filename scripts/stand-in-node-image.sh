#!/usr/bin/env bash
# Builds a local stand-in for the `node:20-bookworm-slim` base image the Dockerfile starts from,
# for machines whose Docker daemon cannot reach Docker Hub (closed hospital networks, this
# project's CI machines): Debian bookworm from Debian's own mirror (debootstrap, minbase) plus this
# machine's Node.js and npm, with the `node` user (uid 1000) the official image has. The
# Dockerfile is then built unchanged. Where Docker Hub answers, use the official image instead.
# The image trusts the certificate authorities this machine trusts (its CA bundle is copied in),
# so a TLS-inspecting proxy in front of the npm registry works for the build's `npm ci`.
#
#   scripts/stand-in-node-image.sh [rootfs-dir]
set -euo pipefail

ROOTFS="${1:-/tmp/flint-node-base}"
TAG="node:20-bookworm-slim"
MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"

node_major="$(node -p 'process.versions.node.split(".")[0]')"
if [ "$node_major" != "20" ]; then
  echo "this machine's Node.js is $(node --version); the image needs Node.js 20" >&2
  exit 1
fi

if [ ! -x "$ROOTFS/bin/sh" ]; then
  debootstrap --variant=minbase bookworm "$ROOTFS" "$MIRROR" >/dev/null
fi

npm_dir="$(dirname "$(dirname "$(readlink -f "$(command -v npm)")")")"
install -m 0755 "$(readlink -f "$(command -v node)")" "$ROOTFS/usr/local/bin/node"
mkdir -p "$ROOTFS/usr/local/lib/node_modules"
rm -rf "$ROOTFS/usr/local/lib/node_modules/npm"
cp -a "$npm_dir" "$ROOTFS/usr/local/lib/node_modules/npm"
ln -sf ../lib/node_modules/npm/bin/npm-cli.js "$ROOTFS/usr/local/bin/npm"
ln -sf ../lib/node_modules/npm/bin/npx-cli.js "$ROOTFS/usr/local/bin/npx"
chroot "$ROOTFS" sh -c 'getent passwd node >/dev/null || (groupadd --gid 1000 node && useradd --uid 1000 --gid node --shell /bin/bash --create-home node)'
CA_BUNDLE="${CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}"
mkdir -p "$ROOTFS/etc/ssl/certs"
cp "$CA_BUNDLE" "$ROOTFS/etc/ssl/certs/ca-certificates.crt"
rm -rf "$ROOTFS/var/cache/apt/archives/"*.deb "$ROOTFS/var/lib/apt/lists/"*

tar -C "$ROOTFS" -c . | docker import \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'ENV NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt' \
  --change 'ENV npm_config_cafile=/etc/ssl/certs/ca-certificates.crt' \
  --change 'CMD ["node"]' - "$TAG" >/dev/null
echo "$TAG: $(docker run --rm "$TAG" node --version) on Debian $(docker run --rm "$TAG" cat /etc/debian_version)"
