#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Copyright (c) 2026 The libncclx authors.
# configure did not find cmocka, so the unit tests were not built: fail loudly.
echo "cmocka was not found at configure time: install it (Debian: apt-get install" \
     "libcmocka-dev) and re-run configure to build the unit tests." >&2
exit 1
