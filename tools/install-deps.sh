#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs the Debian packages approf builds and tests with. Run as root (or
# through sudo). The CUDA toolkit is not a Debian package here: when it is
# under /usr/local/cuda the CUDA backend module is built too. protobuf-c and
# python3-onnx (its onnx.proto, and the ONNX test models) give the ONNX reader.
# APPROF_EXTRA_PACKAGES adds packages: CI adds chromium, for the one test that
# renders report.html in a browser (skipped, and said, without it).
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
SUDO=
if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
$SUDO apt-get update
$SUDO apt-get install -y --no-install-recommends \
  build-essential meson ninja-build pkg-config python3 \
  libsqlite3-dev sqlite3 libcsv-dev libcunit1-dev libjansson-dev \
  coinor-libcbc-dev libopenmpi-dev openmpi-bin \
  protobuf-c-compiler libprotobuf-c-dev python3-onnx \
  ${APPROF_EXTRA_PACKAGES:-}
