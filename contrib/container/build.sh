#!/usr/bin/env bash
# build.sh: build groupd's container image, FROM scratch, reproducibly.
#
#   contrib/container/build.sh [IMAGE]     (default IMAGE: localhost/groupd:COMMIT)
#
# Needs Go and buildah (or podman, whose `podman build` is buildah's);
# pulls nothing. The binary is static (CGO_ENABLED=0), built with
# -trimpath and an empty build ID, and stamped with the commit (not with
# the time: `groupd version` prints the commit); every layer and the
# image's creation time are the commit's time (SOURCE_DATE_EPOCH), so that
# the same commit gives the same image ID. Prints the image's ID and size.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
commit=$(git -C "$repo" describe --always --dirty 2>/dev/null || echo unknown)
image=${1:-localhost/groupd:$commit}
epoch=${SOURCE_DATE_EPOCH:-$(git -C "$repo" log -1 --format=%ct 2>/dev/null || echo 0)}

ctx=$(mktemp -d)
trap 'rm -rf "$ctx"' EXIT
mkdir -p "$ctx/rootfs/var/lib/groupd"
# Directories carry mtimes into the layer: pin them too.
find "$ctx/rootfs" -exec touch -h -d "@$epoch" {} +
(cd "$repo" && CGO_ENABLED=0 GOFLAGS=-buildvcs=false go build -trimpath \
	-ldflags "-s -w -buildid= -X main.commit=$commit" -o "$ctx/groupd" ./cmd/groupd)
touch -d "@$epoch" "$ctx/groupd"
cp "$here/Containerfile" "$ctx/Containerfile"

if command -v buildah >/dev/null; then
	buildah bud --quiet --timestamp "$epoch" --layers=false -t "$image" -f "$ctx/Containerfile" "$ctx" >/dev/null
	engine=buildah
elif command -v podman >/dev/null; then
	podman build --quiet --timestamp "$epoch" -t "$image" -f "$ctx/Containerfile" "$ctx" >/dev/null
	engine=podman
else
	echo "build.sh: neither buildah nor podman is installed (apt-get install -y buildah podman)" >&2
	exit 1
fi
id=$($engine images --noheading --no-trunc --format '{{.ID}}' "$image" | head -1)
size=$($engine images --noheading --format '{{.Size}}' "$image" | head -1)
echo "$image id $id size $size (binary $(stat -c %s "$ctx/groupd") bytes)"
