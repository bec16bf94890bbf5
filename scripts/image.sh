#!/usr/bin/env bash
# Builds the gpulens container image with no container daemon and no
# registry: a root of Debian 12 packages holding only the binary's runtime
# libraries, packed by umoci into an OCI image layout.
#
#   scripts/image.sh [--binary PATH] [--out DIR] [--tag TAG] [--root-only] [--archive FILE]
#
#   --binary     the gpulens to ship (default build/release/gpulens; stripped in the image)
#   --out        where to build (default build/image): DIR/rootfs, DIR/oci, DIR/packages.txt
#   --tag        the image's tag in DIR/oci (default: the binary's version)
#   --root-only  stop after DIR/rootfs (the Dockerfile copies it into an empty image)
#   --archive    also write the image as one tar file that `podman load -i FILE` and
#                `docker load -i FILE` read: the OCI layout with a docker manifest.json
#                naming gpulens:TAG beside its index.json
#
# How: the Debian packages of every library the binary loads (ldd, then
# dpkg -S) are DIR/packages.txt; `debootstrap --download-only` fetches them
# and their dependencies from the Debian 12 archive, signature-checked
# (cached in DIR/cache/debs-KEY, KEY a hash of the package list, suite and
# mirror, so a rebuild with the same libraries downloads nothing); the
# runtime closure of those packages (Depends/Pre-Depends, nothing else of
# the base system: no shell, no apt) is unpacked into DIR/rootfs, with
# /etc/passwd (user gpulens, 65532), the scenarios and dpkg metadata for
# image scanners. umoci then makes it one layer of DIR/oci:TAG with
# ENTRYPOINT ["/usr/bin/gpulens", "serve"], user 65532, port 9400.
#
# Environment: GPULENS_DEBIAN_MIRROR (default http://deb.debian.org/debian),
# GPULENS_DEBIAN_SUITE (default bookworm). Needs debootstrap, umoci,
# dpkg-deb, python3; run as root (umoci keeps the files root-owned).
set -euo pipefail
root_dir=$(cd "$(dirname "$0")/.." && pwd)
binary=$root_dir/build/release/gpulens
out=$root_dir/build/image
tag=""
root_only=0
archive=""
while (($#)); do
  case $1 in
    --binary) binary=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --tag) tag=$2; shift 2 ;;
    --root-only) root_only=1; shift ;;
    --archive) archive=$2; shift 2 ;;
    *) echo "image.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
mirror=${GPULENS_DEBIAN_MIRROR:-http://deb.debian.org/debian}
suite=${GPULENS_DEBIAN_SUITE:-bookworm}
die() { echo "image.sh: $*" >&2; exit 1; }
[[ -x $binary ]] || die "no binary at $binary (build it: cmake --build --preset release --target gpulens)"
for t in debootstrap dpkg-deb python3; do command -v $t >/dev/null || die "$t is not installed (scripts/deps.sh --test)"; done
((root_only)) || command -v umoci >/dev/null || die "umoci is not installed (scripts/deps.sh --test)"
[[ -n $tag ]] || tag=$("$binary" --version | awk 'NR==1 {print $2}')
mkdir -p "$out/cache"

# 1. The packages of the libraries the binary loads.
ldd "$binary" | awk '/=>/ {print $3}' | while read -r lib; do
  dpkg -S "$(readlink -f "$lib")" 2>/dev/null || dpkg -S "$lib" 2>/dev/null || die "no Debian package ships $lib"
done | cut -d: -f1 | sort -u >"$out/packages.txt"
[[ -s $out/packages.txt ]] || die "ldd found no libraries in $binary"

# 2. Those packages and their dependencies, from the Debian archive (cached).
key=$( (cat "$out/packages.txt"; echo "$suite $mirror") | sha256sum | cut -c1-16)
debs=$out/cache/debs-$key
if [[ ! -f $debs/.complete ]]; then
  rm -rf "$debs"
  echo "image.sh: downloading $(wc -l <"$out/packages.txt") packages and their dependencies from $mirror ($suite)" >&2
  debootstrap --variant=minbase --download-only --include="$(paste -sd, "$out/packages.txt")" \
    "$suite" "$debs" "$mirror" >"$out/debootstrap.log" 2>&1 || die "debootstrap failed: see $out/debootstrap.log"
  touch "$debs/.complete"
  # Older downloads (another package list) are not needed any more.
  find "$out/cache" -maxdepth 1 -name 'debs-*' ! -name "debs-$key" -exec rm -rf {} +
fi

# 3. The runtime closure of the packages, unpacked into a fresh root.
rootfs=$out/rootfs
rm -rf "$rootfs"
mkdir -p "$rootfs"
python3 - "$debs/var/cache/apt/archives" "$out/packages.txt" >"$out/closure.txt" <<'PY'
import glob, os, re, subprocess, sys
archives, wanted = sys.argv[1], open(sys.argv[2]).read().split()
debs = {}
for path in glob.glob(os.path.join(archives, "*.deb")):
    fields = subprocess.run(["dpkg-deb", "-f", path, "Package", "Depends", "Pre-Depends", "Provides"],
                            capture_output=True, text=True, check=True).stdout
    info = dict(re.findall(r"^([A-Za-z-]+): (.*)$", fields, re.M))
    debs[info["Package"]] = (path, info.get("Depends", "") + "," + info.get("Pre-Depends", ""))
    for p in info.get("Provides", "").split(","):
        if p.strip():
            debs.setdefault(p.split()[0].strip(), debs[info["Package"]])
seen, todo = {}, list(wanted)
while todo:
    name = todo.pop()
    if name in seen:
        continue
    if name not in debs:
        sys.exit(f"image.sh: package {name} was not downloaded")
    path, deps = debs[name]
    seen[name] = path
    for dep in deps.split(","):
        alternatives = [a.split()[0].split(":")[0] for a in dep.split("|") if a.strip()]
        if alternatives:
            todo.append(next((a for a in alternatives if a in debs), alternatives[0]))
for path in sorted(set(seen.values())):
    print(path)
PY
mkdir -p "$rootfs/var/lib/dpkg/status.d"
while read -r deb; do
  dpkg-deb -x "$deb" "$rootfs"
  dpkg-deb -f "$deb" >"$rootfs/var/lib/dpkg/status.d/$(dpkg-deb -f "$deb" Package)"
done <"$out/closure.txt"
rm -rf "$rootfs"/usr/share/{doc,man,info,locale,lintian,gcc,gdb} "$rootfs"/usr/lib/x86_64-linux-gnu/gconv
# The agent, its scenarios, its user; nothing writable but /tmp.
install -D -m 0755 "$binary" "$rootfs/usr/bin/gpulens"
strip --strip-unneeded "$rootfs/usr/bin/gpulens"
mkdir -p "$rootfs/usr/share/gpulens" "$rootfs/etc" "$rootfs/tmp" "$rootfs/proc" "$rootfs/sys" "$rootfs/dev"
cp -r "$root_dir/scenarios" "$rootfs/usr/share/gpulens/scenarios"
chmod 1777 "$rootfs/tmp"
printf 'root:x:0:0:root:/root:/sbin/nologin\ngpulens:x:65532:65532:gpulens:/nonexistent:/sbin/nologin\n' >"$rootfs/etc/passwd"
printf 'root:x:0:\ngpulens:x:65532:\n' >"$rootfs/etc/group"
echo "image.sh: root $rootfs: $(wc -l <"$out/closure.txt") packages, $(du -sh --apparent-size "$rootfs" | cut -f1)" >&2
((root_only)) && exit 0

# 4. The OCI image layout.
rm -rf "$out/oci" "$out/bundle"
umoci init --layout "$out/oci"
umoci new --image "$out/oci:$tag"
umoci unpack --image "$out/oci:$tag" "$out/bundle" >/dev/null
cp -a "$rootfs/." "$out/bundle/rootfs/"
umoci repack --image "$out/oci:$tag" "$out/bundle"
umoci config --image "$out/oci:$tag" --os linux --architecture amd64 \
  --config.user 65532:65532 --config.workingdir / \
  --config.entrypoint /usr/bin/gpulens --config.entrypoint serve \
  --config.cmd=--listen=0.0.0.0:9400 \
  --config.exposedports 9400/tcp \
  --config.env PATH=/usr/bin:/bin --config.env GPULENS_SCENARIOS=/usr/share/gpulens/scenarios \
  --config.env NVIDIA_VISIBLE_DEVICES=all --config.env NVIDIA_DRIVER_CAPABILITIES=utility \
  --config.label org.opencontainers.image.title=gpulens \
  --config.label org.opencontainers.image.version="$tag" \
  --config.label org.opencontainers.image.source=https://github.com/gpulens/gpulens
umoci gc --layout "$out/oci"
rm -rf "$out/bundle"
echo "image.sh: OCI layout $out/oci, image gpulens:$tag" >&2
[[ -z $archive ]] && exit 0

# 5. One tar file for `podman load` / `docker load`: the layout (an
# oci-archive, named by its ref annotation) and the manifest.json Docker's
# loader reads (config, layers, the name to give it).
meta=$(mktemp -d)
trap 'rm -rf "$meta"' EXIT
python3 - "$out/oci" "$tag" "$meta" <<'PY'
import json, os, sys
layout, tag, meta = sys.argv[1:]
def blob(digest):
    return os.path.join("blobs", *digest.split(":"))
index = json.load(open(os.path.join(layout, "index.json")))
wanted = [m for m in index["manifests"] if m.get("annotations", {}).get("org.opencontainers.image.ref.name") == tag]
if len(wanted) != 1:
    sys.exit(f"image.sh: the layout has no single image tagged {tag}")
manifest = json.load(open(os.path.join(layout, blob(wanted[0]["digest"]))))
json.dump([{"Config": blob(manifest["config"]["digest"]), "RepoTags": [f"gpulens:{tag}"],
            "Layers": [blob(l["digest"]) for l in manifest["layers"]]}], open(os.path.join(meta, "manifest.json"), "w"))
# podman names an oci-archive after the ref annotation: the full name, as docker's RepoTags.
wanted[0]["annotations"]["org.opencontainers.image.ref.name"] = f"gpulens:{tag}"
json.dump(index, open(os.path.join(meta, "index.json"), "w"))
PY
tar --owner=0 --group=0 --numeric-owner -cf "$archive.tmp" -C "$out/oci" oci-layout blobs -C "$meta" index.json manifest.json
mv "$archive.tmp" "$archive"
echo "image.sh: archive $archive ($(du -h --apparent-size "$archive" | cut -f1)): podman load -i $archive, docker load -i $archive" >&2
