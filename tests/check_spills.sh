#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Copyright (c) 2026 The libncclx authors.
#
# Every kernel's register spill stores equal its budget in tests/spill_budget.txt (see
# tests/spill_budget.py for why they are pinned exactly, and when it skips: another nvcc or
# NCCL than the budget's, no SASS for its architecture).  The build keeps ptxas's report of each
# kernel file beside its object (OBJECT.ptxas, kernels/local.am); this gathers them.  No GPU
# needed.  Also skips (77) for flags other than the build's -O3 ones.  To update the budget
# after a kernel change that is meant:
#   tests/spill_budget.py write BUILD/tests/spills.log NVCC_RELEASE NCCL_CODE ARCH \
#       > tests/spill_budget.txt
set -u
: "${NVCC:?NVCC not set}" "${top_srcdir:?}" "${top_builddir:?}"
budget="$top_srcdir/tests/spill_budget.txt"
release=$("$NVCC" --version | sed -n 's/.*release \([0-9][0-9]*\.[0-9][0-9]*\).*/\1/p')
test -n "$release" || { echo "FAIL: no release in '$NVCC --version'"; exit 1; }

# The kernels that call NCCL's device API inline its headers: another NCCL, other spills.
nccl=$(printf '#include <nccl.h>\nncclx_version NCCL_VERSION_CODE\n' |
    ${CC:-cc} -E -P $NCCLX_DEP_CPPFLAGS - 2>/dev/null | sed -n 's/^ncclx_version *\([0-9]*\)$/\1/p')
test -n "$nccl" || { echo "FAIL: no NCCL_VERSION_CODE from nccl.h ($NCCLX_DEP_CPPFLAGS)"; exit 1; }
case " $NVCCFLAGS " in
*" -G "* | *" -lineinfo "* | *maxrregcount*)
    echo "SKIP: NVCCFLAGS change the kernels' registers ($NVCCFLAGS)"
    exit 77
    ;;
*" -O3 "*) ;;
*)
    echo "SKIP: the budget is for -O3 builds (NVCCFLAGS: $NVCCFLAGS)"
    exit 77
    ;;
esac

mkdir -p "$top_builddir/tests"
log="$top_builddir/tests/spills.log"
: >"$log"
for src in $NCCLX_CU_SRCS; do
    report="$top_builddir/${src%.cu}.o.ptxas"
    if [ ! -f "$report" ]; then
        echo "FAIL: no ptxas report $report: its object was built before the build kept"
        echo "      them; rebuild it (rm ${report%.ptxas}; make)"
        exit 1
    fi
    echo "== ${src#kernels/}" >>"$log"
    cat "$report" >>"$log"
done
python3 "$top_srcdir/tests/spill_budget.py" compare "$log" "$budget" --nvcc "$release" \
    --nccl "$nccl" --self-test
rc=$?
[ $rc -eq 1 ] && echo "the compiler's output is in $log"
exit $rc
