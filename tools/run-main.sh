#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Sets up a fresh Debian machine and runs the main job: profile resnet50 into
# results.db with approf sweep, then plan it with apsolve.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install-deps.sh
[ -d build ] || meson setup build
ninja -C build
build/profiler/cli/approf sweep --model resnet50 --db results.db --resume --quiet
build/solver/apsolve --db results.db
