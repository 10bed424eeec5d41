/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * The smallest libncclx program: prints the library version and the versions of what it was
 * linked with.  Build it against an installed libncclx with only pkg-config:
 *
 *     gcc -o version version.c $(pkg-config --static --cflags --libs ncclx)
 */
#include <stdio.h>

#include <ncclx.h>

int main(void)
{
    ncclxVersionInfo_t info;
    ncclxResult_t res = ncclxGetVersionInfo(&info);
    if (res != ncclxSuccess) {
        fprintf(stderr, "ncclxGetVersionInfo: %s: %s\n", ncclxGetErrorString(res),
                ncclxGetLastError());
        return 1;
    }
    printf("libncclx %d.%d.%d (built against %s)\n", info.ncclx / 10000, info.ncclx / 100 % 100,
           info.ncclx % 100, NCCLX_VERSION_STRING);
    printf("nccl %d, cuda runtime %d, hwloc 0x%x, %s\n", info.nccl, info.cuda_runtime, info.hwloc,
           info.pmix);
    return info.ncclx == NCCLX_VERSION_CODE ? 0 : 1;
}
