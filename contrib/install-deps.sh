#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Copyright (c) 2026 The libncclx authors.
#
# Installs what building and testing libncclx needs on Debian/Ubuntu (run as root or with
# sudo): the packages listed in contrib/debian-packages.txt.  The CUDA toolkit (>= 12, with NCCL >= 2.28) is expected at $CUDA_HOME
# (default /usr/local/cuda): it is not in Debian's main archive.
set -euo pipefail
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
# shellcheck disable=SC2046
if ! $SUDO apt-get update -q ||
    ! $SUDO apt-get install -y -q --no-install-recommends $(cat "$(dirname "$0")/debian-packages.txt"); then
    # No network (a GPU node behind a firewall, say): go on with what is installed when the
    # build tools are there; configure then names any library that is missing.
    missing=""
    for tool in autoreconf automake make gcc g++ pkg-config; do
        command -v "$tool" >/dev/null 2>&1 || missing="$missing $tool"
    done
    if [ -n "$missing" ]; then
        echo "install-deps: apt-get failed and these build tools are missing:$missing" >&2
        exit 1
    fi
    echo "install-deps: apt-get failed (no network?): going on with the packages installed;" \
         "configure will name a missing library (without cmocka only the tests are skipped)" >&2
fi
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
if [ ! -x "$CUDA_HOME/bin/nvcc" ]; then
    echo "install-deps: no CUDA toolkit at $CUDA_HOME: install CUDA >= 12 and NCCL >= 2.28" \
         "(NVIDIA's cuda-toolkit and libnccl-dev packages), or set CUDA_HOME" >&2
    exit 1
fi
