#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Copyright (c) 2026 The libncclx authors.
#
# Writes the seed corpus of each fuzz target (tests/fuzz/corpus/<target>/seed-*): a few valid
# inputs and edge cases in each target's input format (see the comment at the top of each
# tests/fuzz/fuzz_*.c).  The seeds are committed; run this again after changing a format:
#   python3 tests/fuzz/make_seeds.py
# Regression inputs (regress-*, inputs that once failed) are not written here: they stay as
# they were found.
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))


def u8(v):
    return struct.pack('<B', v & 0xff)


def u16(v):
    return struct.pack('<H', v & 0xffff)


def u32(v):
    return struct.pack('<I', v & 0xffffffff)


def u64(v):
    return struct.pack('<Q', v & 0xffffffffffffffff)


def write(target, name, data):
    d = os.path.join(HERE, 'corpus', target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, 'seed-' + name), 'wb') as f:
        f.write(data)


# ---- fuzz_plan ----
BF16, FP32, FP8, UINT8 = 0, 2, 3, 6
LL, HT = 1, 2
EM, RM, FLAT = 1, 2, 4
NONE, QUANT, RFP8, MXFP8 = 1, 2, 4, 8
F_TEAM, F_BAD_PLAN, F_BAD_TEAM, F_HOST, F_MIS, F_NULLS, F_NULL1, F_BAD_SIZES = \
    1, 2, 4, 8, 16, 32, 64, 128


def group(alg=LL, experts=16, topk=4, hidden=256, dtypes=1 << BF16, layouts=EM, recipes=NONE,
          tokens=64, recv=0, tok_bytes=0, scale_bytes=0, align=0, mask=0, handles=1, sm=0,
          timeout=0, overflow=0, size_pick=0, bad_magic=0):
    return (u8(size_pick) + u8(bad_magic) + u8(alg) + u32(experts) + u32(topk) + u32(hidden) +
            u32(dtypes) + u32(layouts) + u32(recipes) + u32(tokens) + u32(recv) +
            u32(tok_bytes) + u32(scale_bytes) + u32(align) + u32(mask) + u32(handles) + u32(sm) +
            u64(timeout) + u32(overflow))


def plan(groups, flags=F_TEAM, ranks=4, nodes=1, lsa=4, staging=0, entries=0, host_bytes=0,
         team_size=0, plan_size=0, num_groups=None, mutation=b''):
    n = len(groups) if num_groups is None else num_groups
    return (u8(flags) + u8(n) + u8(team_size) + u32(ranks) + u32(nodes) + u32(lsa) +
            u8(plan_size) + u64(staging) + u32(entries) + u32(host_bytes) + b''.join(groups) +
            mutation)


def mutation(scope, at, flip):
    return u8(scope) + u16(at) + u8(flip)


write('plan', 'empty-plan', plan([], flags=0))
write('plan', 'll-basic', plan([group()], mutation=mutation(2, 20, 1)))
write('plan', 'll-fp8-quant', plan([group(recipes=NONE | QUANT | RFP8, tok_bytes=512,
                                          scale_bytes=64, mask=1, handles=4)],
                                   mutation=mutation(2, 48, 0x80)))
write('plan', 'll-rank-major-fp32', plan([group(dtypes=(1 << BF16) | (1 << FP32),
                                                layouts=EM | RM, topk=8, sm=24)]))
write('plan', 'ht-mxfp8', plan([group(alg=HT, layouts=EM | FLAT, recipes=NONE | MXFP8,
                                      tokens=4096, recv=8192, align=16, overflow=1, topk=8)],
                               mutation=mutation(0, 8, 2)))
write('plan', 'ht-two-groups', plan([group(alg=HT, layouts=FLAT, topk=32, experts=64),
                                     group(handles=3)], ranks=8, lsa=8,
                                    mutation=mutation(1, 24, 4)))
write('plan', 'm2n', plan([], ranks=8, lsa=8, staging=8 * 16384, entries=16,
                          mutation=mutation(1, 32, 1)))
write('plan', 'm2n-too-small', plan([], staging=16384, entries=0))
write('plan', 'v1-sizes', plan([group(size_pick=1)], team_size=1, plan_size=1))
write('plan', 'newer-caller', plan([group(size_pick=2 | (3 << 2))], team_size=2 | (5 << 2),
                                   plan_size=2 | (1 << 2)))
write('plan', 'too-small-struct', plan([group(size_pick=3 | (2 << 2))]))
write('plan', 'bad-magics', plan([group(bad_magic=1)], flags=F_TEAM | F_BAD_TEAM))
write('plan', 'null-groups', plan([group(), group()], flags=F_TEAM | F_NULLS))
write('plan', 'null-group', plan([group(), group()], flags=F_TEAM | F_NULL1))
write('plan', 'host-block', plan([group()], flags=F_TEAM | F_HOST, host_bytes=128))
write('plan', 'host-block-misaligned', plan([group()], flags=F_TEAM | F_HOST | F_MIS,
                                            host_bytes=128))
write('plan', 'bad-sizes', plan([group()], flags=F_TEAM | F_BAD_SIZES))
write('plan', 'team-nodes', plan([group()], ranks=8, nodes=2, lsa=4))
write('plan', 'team-bad', plan([group()], ranks=6, nodes=4, lsa=6))
write('plan', 'groups-over-max', plan([group()], num_groups=65))
# 64 groups, the most a plan holds (the input ends after the first: the rest repeat it).
write('plan', '64-groups', plan([group()], num_groups=64))
write('plan', '64-groups-ht', plan([group(alg=HT, layouts=FLAT, tokens=128)], num_groups=64))

# ---- fuzz_env ----
# 0 NCCLX_DEBUG 1 NCCLX_DEBUG_FILE 2 NCCLX_BIND 3 NCCLX_CUDA_DEVICE 4 NCCLX_FENCE_TIMEOUT_S
# 5 NCCLX_TIMEOUT_MS 6 NCCLX_M2N_PATH 7 NCCLX_EP_HT_PATH, then the launchers' variables:
# 8 PMIX_NAMESPACE 9 PMIX_RANK 10 SLURM_STEP_NUM_TASKS 11 OMPI_COMM_WORLD_SIZE 12 PMI_SIZE
# 13 SLURM_STEP_ID 14 SLURM_NTASKS 15 NCCLX_DEBUGG (a typo).


def env(*pairs):
    out = b''
    for sel, value in pairs:
        v = value.encode() if isinstance(value, str) else value
        out += u8(sel) + u8(len(v)) + v
    return out


write('env', 'unset', b'')
write('env', 'valid-all', env((0, 'info'), (1, 'ncclx.%h.%p.log'), (2, 'NONE'), (3, '0'),
                              (4, '300'), (5, '1000'), (6, 'staged'), (7, 'Auto')))
write('env', 'maximums', env((3, '1023'), (4, '86400'), (5, '86400000')))
write('env', 'max-plus-one', env((3, '1024'), (4, '86401'), (5, '86400001')))
write('env', 'minimums', env((4, '1'), (5, '1'), (3, '0')))
write('env', 'below-minimum', env((4, '0'), (5, '0')))
write('env', 'empty-values', env((0, ''), (3, ''), (4, ''), (5, ''), (6, '')))
write('env', 'signs-spaces', env((3, '-1'), (4, ' 1'), (5, '+5'), (2, ' AUTO')))
write('env', 'uint-overflow', env((5, '18446744073709551616'), (4, '99999999999999999999')))
write('env', 'leading-zeros', env((5, '000000000000000000001'), (3, '00')))
write('env', 'garbage-choice', env((0, 'LOUD'), (2, 'auto\x00x'), (7, 'STAGEDX')))
write('env', 'debug-file-expand', env((1, '%h' * 100 + '%p' * 20 + '%'), (0, 'TRACE')))
write('env', 'debug-file-dots', env((1, '../../tmp/x'), (0, 'NONE')))
write('env', 'launchers', env((13, '7'), (14, '4'), (11, '1'), (12, 'x')))
write('env', 'pmix', env((8, 'ns'), (9, '0'), (10, '2')))
write('env', 'typo-and-unset', env((15, '1'), (0x80 | 0, 'x'), (0, 'warn')))

# ---- fuzz_handle_import ----
# The group: shape (ranks - 1 in bits 0-2, MXFP8 bit 3, alignment bit 4, handles - 1 in bits
# 5-7), experts per rank - 1, max_topk - 1, hidden / 32 - 1, layouts, tokens - 1 (u16), recv
# rows (u16), [alignment log2], overflow policy.
I_EM, I_FLAT, I_RM = 0, 1, 2


def ht_group(ranks=4, per_rank=4, topk=4, hidden=256, layouts=EM | FLAT, tokens=64, recv=0,
             handles=3, mxfp8=0, align=None, overflow=0):
    shape = (ranks - 1) | (8 if mxfp8 else 0) | (16 if align is not None else 0) | \
        ((handles - 1) << 5)
    out = u8(shape) + u8(per_rank - 1) + u8(topk - 1) + u8(hidden // 32 - 1) + u8(layouts) + \
        u16(tokens - 1) + u16(recv)
    if align is not None:
        out += u8(align)
    return out + u8(overflow)


def mem(pick=0, extra=b''):
    return u8(pick) + extra


def imp(layout=I_EM, tokens=64, topk=4, flags=0, size_pick=0, mem_=None, verdict=None,
        launch=None, extra=b''):
    out = u8(0) + u8(layout) + u8(flags) + u8(size_pick)
    out += u32(tokens) if flags & 2 else u16(tokens)
    out += u32(topk) if flags & 4 else u8(topk)
    out += extra
    out += mem_ if mem_ is not None else mem()
    if flags & 64:
        out += u32(verdict)
    if flags & 128:
        out += u8(launch)
    return out


def init(layout=I_EM, topk=4, flags=0, mem_=None):
    return u8(2) + u8(flags) + u8(0) + u8(layout) + u8(topk) + (mem_ if mem_ else mem())


def destroy(i=0):
    return u8(3) + u8(i)


def state(v):
    return u8(4) + u8(v)


write('handle_import', 'import-destroy', ht_group() + imp() + destroy() + imp(I_FLAT) +
      init() + destroy(1) + destroy())
write('handle_import', 'int64-global-ids', ht_group() + imp(I_FLAT, flags=16 | 32,
                                                             extra=u32(1)))
for bit in range(6):
    write('handle_import', 'verdict-%d' % bit,
          ht_group() + imp(flags=64, verdict=1 << bit) + imp())
write('handle_import', 'truncated', ht_group() + imp(mem_=mem(2)) + imp(mem_=mem(3, u16(100))))
write('handle_import', 'launch-failure', ht_group() + imp(flags=128, launch=1) + imp())
write('handle_import', 'sync-failure', ht_group() + imp(flags=64, verdict=0x80000000))
write('handle_import', 'pool-full', ht_group(handles=1) + imp() + imp() + init() + destroy() +
      imp())
write('handle_import', 'async-errors', ht_group() + state(0x10) + imp() + state(0x01) + imp() +
      state(0x80) + imp() + init() + state(0) + imp())
write('handle_import', 'bad-state', ht_group() + imp(tokens=65) + imp(topk=0) + imp(topk=5) +
      imp(flags=8, extra=u8(3)) + imp(size_pick=3) + imp(flags=1) + imp(I_RM) +
      imp(flags=2 | 4, tokens=0xffffffff, topk=0xffffffff))
write('handle_import', 'bad-mem', ht_group() + imp(mem_=mem(0x08, u8(0))) + imp(mem_=mem(0x18)) +
      imp(mem_=mem(0x20, u8(7))) + imp(mem_=mem(0x40, u8(2) + u64(1))) +
      imp(mem_=mem(4, u64(1 << 63))))
write('handle_import', 'mxfp8-aligned', ht_group(ranks=8, per_rank=2, topk=8, mxfp8=1, align=4,
                                                 tokens=4096, recv=1000, overflow=1) +
      imp(tokens=4096 % 4097, topk=8) + imp(I_FLAT, topk=1))
write('handle_import', 'one-rank', ht_group(ranks=1, per_rank=1, topk=1, layouts=FLAT) +
      imp(I_FLAT, tokens=1, topk=1) + imp(I_EM, tokens=1, topk=1))
write('handle_import', 'init-errors', ht_group() + init(flags=1) + init(topk=9) +
      init(layout=3 | (7 << 2)) + init(mem_=mem(2)))

# ---- fuzz_m2n ----
# The context: shape (ranks - 1 in bits 0-3, staging multiple - 1 in bits 4-5, one GPU bit 6),
# blocks, group entries, rank.  Operations: 0 reshard, 3 group start, 4 group end, 5 abort
# (bit 7) or the status word.  A side: flags, size pick, [dtype], ndims, 3 local dims, then the
# mesh byte (ndims - 1 in bit 0, dims[0] - 1 in bits 1-2, dims[1] - 1 in bits 3-4,
# placements[0] + 1 in bits 5-6, placements[1] = SHARD(0) in bit 7) and its start rank.


def world(ranks, rank=0, blocks=8, entries=8, staging=1, one_gpu=0):
    return u8((ranks - 1) | ((staging - 1) << 4) | (0x40 if one_gpu else 0)) + u8(blocks) + \
        u8(entries - 1) + u8(rank)


def mesh_byte(mndims=1, d0=1, d1=1, p0=-1, p1_shard0=0):
    return (mndims - 1) | ((d0 - 1) << 1) | ((d1 - 1) << 3) | ((p0 + 1) << 5) | \
        (0x80 if p1_shard0 else 0)


def side(shape=(8, 8, 8), ndims=2, start=0, flags=0, dtype=None, raw_mesh=None, **mesh):
    out = u8(flags) + u8(0)
    if flags & 2:
        out += u8(dtype)
    out += u32(ndims) if flags & 4 else u8(ndims - 1)
    for d in shape:
        out += u64(d) if flags & 8 else u8(d - 1)
    if flags & 16:
        out += b''.join(u32(v) for v in raw_mesh)
    else:
        out += u8(mesh_byte(**mesh)) + u8(start)
    return out


def reshard(src, dst, flags=0):
    return u8(0) + src + dst + u8(flags)


write('m2n', 'self-copy', world(1) + reshard(side(), side()))
write('m2n', 'shard-to-shard', world(8, rank=1) +
      reshard(side(d0=4, p0=0), side(ndims=2, start=4, d0=4, p0=1, shape=(16, 4, 1))))
write('m2n', 'mesh-2d', world(8, rank=5, blocks=132) +
      reshard(side(ndims=3, shape=(4, 6, 8), mndims=2, d0=2, d1=2, p0=0),
              side(ndims=3, shape=(8, 3, 8), start=4, mndims=2, d0=2, d1=2, p0=1)))
write('m2n', 'replicated', world(6, rank=3) +
      reshard(side(d0=3), side(start=3, d0=3, p0=0, shape=(3, 8, 1))))
write('m2n', 'one-gpu', world(8, rank=2, one_gpu=1) +
      reshard(side(d0=4, p0=1, shape=(8, 2, 1)), side(start=4, d0=4, p0=0, shape=(2, 8, 1))))
write('m2n', 'group', world(8, rank=4) + u8(3) +
      reshard(side(d0=4, p0=0), side(start=4, d0=4, p0=1, shape=(32, 2, 1))) +
      reshard(side(d0=2, p0=0, shape=(4, 4, 1)), side(start=2, d0=2, p0=1, shape=(8, 2, 1))) +
      reshard(side(), side(start=7)) + u8(4))
write('m2n', 'group-full', world(4, entries=1) + u8(3) + reshard(side(), side(start=1)) +
      reshard(side(), side(start=1)) + u8(4))
write('m2n', 'group-abort', world(4) + u8(3) + reshard(side(), side(start=1)) + u8(5 | 0x80) +
      reshard(side(), side(start=2)))
write('m2n', 'timeout-status', world(4) + u8(5) + reshard(side(), side(start=1)) + u8(5 | 0x40))
write('m2n', 'bad-descriptors', world(4, rank=1) +
      reshard(side(flags=2, dtype=99), side(start=1)) +
      reshard(side(flags=4, ndims=4), side(start=1)) +
      reshard(side(shape=(8, 8, 8)), side(start=1, shape=(8, 4, 8))) +
      reshard(side(), side(start=0)) +
      reshard(side(start=3, d0=2), side(start=1)) +
      reshard(side(flags=16, raw_mesh=(3, 1, 1, 0, 0, 0)), side(start=1)) +
      reshard(side(flags=16, raw_mesh=(2, 2, 2, 0, 0, 1)), side(start=1)) +
      reshard(side(flags=1), side(start=1)) + reshard(side(), side(start=1), flags=0x04))
write('m2n', 'bad-tiles', world(4, rank=1) + reshard(side(flags=32 | 64), side(start=1)) +
      reshard(side(), side(start=1, flags=32)) + reshard(side(start=1), side(start=2, flags=0)))
# Tensors of 2^62 bytes and just below (docs/m2n.md: sizes below 2^62).
write('m2n', 'huge', world(2) +
      reshard(side(flags=8, ndims=1, shape=(1 << 61, 1, 1)), side(start=1, flags=8, ndims=1,
                                                                   shape=(1 << 61, 1, 1))) +
      reshard(side(flags=8, ndims=1, shape=((1 << 61) - 1, 1, 1)),
              side(start=1, flags=8, ndims=1, shape=((1 << 61) - 1, 1, 1))) +
      reshard(side(flags=8, ndims=3, shape=(1 << 20, 1 << 20, 1 << 20)),
              side(start=1, flags=8, ndims=3, shape=(1 << 20, 1 << 20, 1 << 20))))
write('m2n', 'launch-failure', world(4, rank=0) + reshard(side(), side(start=1), flags=0xe0) +
      reshard(side(), side(start=1)))
write('m2n', 'capture', world(4, rank=1) + reshard(side(), side(start=1), flags=1) +
      reshard(side(), side(start=1)))
