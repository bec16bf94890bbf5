#!/usr/bin/env bash
# Installs the Debian 12 packages gpulens needs to build, test and run.
# Idempotent: installs only what is missing. Run as root (or with sudo).
set -euo pipefail

BUILD=(cmake ninja-build g++ pkg-config nodejs npm libgtest-dev libgmock-dev libbenchmark-dev libyaml-cpp-dev
       libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc
       libsimdjson-dev libsnappy-dev libcli11-dev libdeflate-dev zlib1g-dev libssl-dev libcrypt-dev)
# Real servers and tools the integration tests drive on loopback.
TEST=(prometheus prometheus-alertmanager prometheus-pushgateway python3-torch python3-pip python3-setuptools victoria-metrics kubectl curl jq python3 python3-yaml python3-jsonschema
      python3-kubernetes systemd procps clang libclang-rt-14-dev chromium firefox-esr python3-websocket
      golang-go golang-github-masterminds-sprig-dev golang-gopkg-yaml.v2-dev tmux debootstrap umoci)
TEST+=(openssl)  # certificates for the TLS tests of the web config
TEST+=(prometheus-node-exporter)  # a real target of the scrape source's test and benchmark
TEST+=(podman runc)  # the image run by a real container runtime (container_podman test)

want=("${BUILD[@]}")
[[ "${1:-}" == "--test" ]] && want+=("${TEST[@]}")

missing=()
for p in "${want[@]}"; do
  # A Node.js that brings its own npm (as NodeSource's nodejs does) conflicts
  # with Debian's npm package: any working npm is enough.
  [[ $p == npm ]] && command -v npm >/dev/null && continue
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep "install ok installed" >/dev/null || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "gpulens: installing ${missing[*]}" >&2
  SUDO=""
  [[ $(id -u) -ne 0 ]] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
