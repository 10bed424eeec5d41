# SPDX-License-Identifier: Apache-2.0
# Copyright (c) 2026 The libncclx authors.
#
# Spack recipe for libncclx.  Use it from a local repository:
#   spack repo create myrepo && cp contrib/spack/package.py myrepo/packages/libncclx/
#   spack install libncclx cuda_arch=90

from spack.package import *


class Libncclx(AutotoolsPackage, CudaPackage):
    """MoE dispatch/combine, mesh-to-mesh resharding and GPU-side fault tolerance for HPC
    applications on NVIDIA GPUs, built on NCCL's device API (static library)."""

    homepage = "https://github.com/libncclx/libncclx"
    git = "https://github.com/libncclx/libncclx.git"

    license("Apache-2.0")

    version("main", branch="main")

    variant("cuda", default=True, description="Build the GPU kernels (required)")
    conflicts("~cuda", msg="libncclx is a CUDA library")

    depends_on("autoconf", type="build")
    depends_on("automake", type="build")
    depends_on("m4", type="build")
    depends_on("pkgconfig", type="build")
    depends_on("c", type="build")
    depends_on("cxx", type="build")
    depends_on("cuda@12:")
    depends_on("nccl@2.28:")
    depends_on("pmix@4:")
    depends_on("hwloc@2:")
    depends_on("cmocka", type="test")

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
        archs = spec.variants["cuda_arch"].value
        if archs and archs[0] != "none":
            args.append("--with-cuda-arch=" + ",".join(archs))
        if self.run_tests:
            args.append(f"--with-cmocka={spec['cmocka'].prefix}")
        else:
            args.append("--without-cmocka")
        return args
