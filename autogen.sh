#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Copyright (c) 2026 The libncclx authors.
# Generates configure and Makefile.in; these are never committed.
set -e
cd "$(dirname "$0")"
autoreconf -fi
