# SPDX-License-Identifier: Apache-2.0
# Copyright (c) 2026 The libncclx authors.
#
# Spack recipe for libncclx, in the form of Spack's builtin repository (Spack >= 1.0, package
# API v2).  Until it is upstream, use it from a repository of your own (README, "Spack").
# `make check` loads this file with a stand-in for Spack's API (tests/spack_recipe.py) and
# checks every configure option it passes against this tree's configure.

import re

from spack_repo.builtin.build_systems.autotools import AutotoolsPackage
from spack_repo.builtin.build_systems.cuda import CudaPackage

from spack.package import *


class Libncclx(AutotoolsPackage, CudaPackage):
    """MoE dispatch/combine and GPU-side fault tolerance for HPC applications on NVIDIA GPUs,
    built on NCCL's device API (static library)."""

    homepage = "https://github.com/libncclx/libncclx"
    git = "https://github.com/libncclx/libncclx.git"

    license("Apache-2.0")

    # No release tarball exists yet.  Releases are the tarballs of `make dist` (they hold
    # configure): add them as version("X.Y.Z", sha256=...) with `url` set, above "main".
    version("main", branch="main")

    # CudaPackage's variant defaults to off; libncclx is nothing without its kernels.
    variant("cuda", default=True, description="Build the GPU kernels (required)")
    conflicts("~cuda", msg="libncclx is a CUDA library")

    depends_on("c", type="build")
    depends_on("cxx", type="build")
    depends_on("pkgconfig", type="build")

    # A git checkout has no configure: autogen.sh makes it (AC_PREREQ 2.69, automake 1.15).
    with when("@main"):
        depends_on("autoconf@2.69:", type="build")
        depends_on("automake@1.15:", type="build")
        depends_on("m4", type="build")

    # The minimum versions configure checks (m4/ncclx_*.m4).  configure checks no CUDA
    # version; 12 is the toolkit the README and CI require.
    depends_on("cuda@12:")
    depends_on("nccl@2.28:")
    depends_on("pmix@4:")
    depends_on("hwloc@2.0:")
    depends_on("cmocka@1.1:", type="test")

    # NCCL runs its own kernels on the same GPUs as ours: build it for them too.
    for _arch in CudaPackage.cuda_arch_values:
        depends_on(f"nccl +cuda cuda_arch={_arch}", when=f"+cuda cuda_arch={_arch}")

    @when("@main")
    def autoreconf(self, spec, prefix):
        Executable("./autogen.sh")()

    def configure_args(self):
        spec = self.spec
        args = [
            f"--with-cuda={spec['cuda'].prefix}",
            f"--with-nccl={spec['nccl'].prefix}",
            f"--with-pmix={spec['pmix'].prefix}",
            f"--with-hwloc={spec['hwloc'].prefix}",
        ]
        # cuda_arch=none: configure's default architecture (90).  Spack sorts the values as
        # strings ("100" before "90"); pass them oldest first.
        archs = [a for a in spec.variants["cuda_arch"].value if a != "none"]
        if archs:
            archs.sort(key=lambda a: (int(re.match(r"[0-9]*", a).group() or 0), a))
            args.append("--with-cuda-arch=" + ",".join(archs))
        # cmocka is a test dependency: present only with `spack install --test=root`.
        if self.run_tests:
            args.append(f"--with-cmocka={spec['cmocka'].prefix}")
        else:
            args.append("--without-cmocka")
        return args

    def check(self):
        # The CPU tests; the GPU tests are built by it and run by `make check-gpu`.
        with working_dir(self.build_directory):
            make("check")
