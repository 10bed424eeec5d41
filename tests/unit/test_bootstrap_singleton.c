/* SPDX-License-Identifier: Apache-2.0
 * Copyright (c) 2026 The libncclx authors.
 *
 * The PMIx bootstrap with no PMIx server (a plain ./app): the singleton is rank 0 of 1, its
 * exchanges return the caller's data, several bootstraps share one PMIx_Init, and bad
 * arguments fail clearly.  Also the team shape check on made-up node layouts, and the refusal
 * to run as a singleton when a launcher's variables say several tasks were started.
 */
#include <stdlib.h>
#include <unistd.h>

#include "ncclx_test.h"

#include "bootstrap.h"

extern char **environ;

/*
 * CI runs the unit tests under LeakSanitizer.  PMIx 4.2.2 leaks inside itself: one 32-byte
 * value per successful PMIx_Get even when the caller releases what it got (a ten-line program
 * doing only PMIx_Init, n x PMIx_Get + PMIX_VALUE_RELEASE, PMIx_Finalize leaks n values, all
 * from pmix_hash_fetch), and a string of its MCA setup in PMIx_Init.  Only those are ignored
 * (which also hides a value this library would forget to release: check those by reading).
 * Full stacks (libpmix has no frame pointers) let the second be named precisely.
 */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
    return "leak:pmix_hash_fetch\nleak:pmix_mca_base_show_load_errors_init\n";
}

const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
    return "fast_unwind_on_malloc=0";
}

/* Variables by which a launcher says it started several tasks (see the bootstrap). */
static const char *const launcher_vars[] = {"SLURM_STEP_NUM_TASKS", "SLURM_NTASKS", "SLURM_STEP_ID",
                                            "OMPI_COMM_WORLD_SIZE", "PMI_SIZE",     "PMIX_RANK",
                                            "PMIX_NAMESPACE"};

static void clear_launcher_env(void)
{
    for (size_t i = 0; i < sizeof(launcher_vars) / sizeof(launcher_vars[0]); i++) {
        unsetenv(launcher_vars[i]);
    }
}

/* A launcher's variables would connect PMIx to a server: this test wants none. */
static int clear_pmix_env(void **state)
{
    char name[256];
    (void)state;
    for (int again = 1; again;) {
        again = 0;
        for (char **entry = environ; *entry != NULL; entry++) {
            size_t len = strcspn(*entry, "=");
            if (strncmp(*entry, "PMIX_", 5) == 0 && len < sizeof(name)) {
                memcpy(name, *entry, len);
                name[len] = '\0';
                unsetenv(name); /* environ changed: start over */
                again = 1;
                break;
            }
        }
    }
    unsetenv("NCCLX_FENCE_TIMEOUT_S");
    clear_launcher_env();
    return 0;
}

static void test_singleton_identity(void **state)
{
    ncclx_bootstrap_t bs;
    char host[256] = "";
    (void)state;
    assert_ncclx_ok(ncclx_bootstrap_init(&bs));
    assert_int_equal(bs.singleton, 1);
    assert_int_equal(bs.initialized, 1);
    assert_int_equal(bs.rank, 0);
    assert_int_equal(bs.size, 1);
    assert_int_equal(bs.local_rank, 0);
    assert_int_equal(bs.local_size, 1);
    assert_int_equal(bs.node_id, 0);
    assert_int_equal(bs.num_nodes, 1);
    assert_true(bs.nspace[0] != '\0');
    assert_int_equal(gethostname(host, sizeof(host) - 1), 0);
    assert_int_equal(strncmp(bs.hostname, host, strcspn(host, ".")), 0);
    assert_ncclx_ok(ncclx_bootstrap_finalize(&bs));
    assert_int_equal(bs.initialized, 0);
}

static void test_singleton_exchange(void **state)
{
    ncclx_bootstrap_t bs;
    unsigned char data[128], copy[128], all[128];
    (void)state;
    for (size_t i = 0; i < sizeof(data); i++) {
        data[i] = (unsigned char)(i * 7 + 3);
    }
    memcpy(copy, data, sizeof(data));
    assert_ncclx_ok(ncclx_bootstrap_init(&bs));
    assert_ncclx_ok(ncclx_bootstrap_exchange(&bs, "uid", 0, 0, data, sizeof(data), 5));
    assert_memory_equal(data, copy, sizeof(data));
    memset(all, 0, sizeof(all));
    assert_ncclx_ok(ncclx_bootstrap_allgather(&bs, "uid", 0, data, all, sizeof(data), 0));
    assert_memory_equal(all, copy, sizeof(all));
    assert_ncclx_ok(ncclx_bootstrap_barrier(&bs, 0));
    assert_ncclx_ok(ncclx_bootstrap_finalize(&bs));
}

static void test_exchange_bad_arguments(void **state)
{
    ncclx_bootstrap_t bs;
    char long_key[600];
    unsigned char data[16] = {0};
    (void)state;
    memset(long_key, 'k', sizeof(long_key) - 1);
    long_key[sizeof(long_key) - 1] = '\0';
    assert_ncclx_ok(ncclx_bootstrap_init(&bs));
    assert_ncclx_error(ncclx_bootstrap_exchange(&bs, "uid", 0, 1, data, sizeof(data), 0),
                       ncclxInvalidArgument, "rank 1 is outside the job's 1 ranks");
    assert_ncclx_error(ncclx_bootstrap_exchange(&bs, NULL, 0, 0, data, sizeof(data), 0),
                       ncclxInvalidArgument, "key is NULL");
    assert_ncclx_error(ncclx_bootstrap_exchange(&bs, "", 0, 0, data, sizeof(data), 0),
                       ncclxInvalidArgument, "key is empty");
    assert_ncclx_error(ncclx_bootstrap_exchange(&bs, long_key, 0, 0, data, sizeof(data), 0),
                       ncclxInvalidArgument, "exceeds 511 characters");
    assert_ncclx_error(ncclx_bootstrap_exchange(&bs, "uid", 0, 0, NULL, sizeof(data), 0),
                       ncclxInvalidArgument, "data is NULL");
    assert_ncclx_error(ncclx_bootstrap_exchange(&bs, "uid", 0, 0, data, 0, 0), ncclxInvalidArgument,
                       "bytes is 0");
    assert_ncclx_error(ncclx_bootstrap_exchange(&bs, "uid", 0, 0, data, sizeof(data), -1),
                       ncclxInvalidArgument, "timeout_s=-1");
    assert_ncclx_ok(ncclx_bootstrap_finalize(&bs));
}

static void test_fence_timeout_env(void **state)
{
    ncclx_bootstrap_t bs;
    unsigned char data[16] = {0};
    (void)state;
    assert_ncclx_ok(ncclx_bootstrap_init(&bs));
    setenv("NCCLX_FENCE_TIMEOUT_S", "soon", 1);
    assert_ncclx_error(ncclx_bootstrap_exchange(&bs, "uid", 0, 0, data, sizeof(data), 0),
                       ncclxInvalidArgument, "NCCLX_FENCE_TIMEOUT_S='soon'");
    setenv("NCCLX_FENCE_TIMEOUT_S", "0", 1);
    assert_ncclx_error(ncclx_bootstrap_barrier(&bs, 0), ncclxInvalidArgument,
                       "NCCLX_FENCE_TIMEOUT_S=0 is outside");
    /* An explicit timeout does not read the variable. */
    assert_ncclx_ok(ncclx_bootstrap_barrier(&bs, 10));
    setenv("NCCLX_FENCE_TIMEOUT_S", "20", 1);
    assert_ncclx_ok(ncclx_bootstrap_barrier(&bs, 0));
    unsetenv("NCCLX_FENCE_TIMEOUT_S");
    assert_ncclx_ok(ncclx_bootstrap_finalize(&bs));
}

/* Put / fence / get go through PMIx even for a singleton: two instances, one key name. */
static void test_split_phase_instances(void **state)
{
    ncclx_bootstrap_t bs;
    unsigned char a[32], b[32], got[32];
    (void)state;
    memset(a, 0x11, sizeof(a));
    memset(b, 0x22, sizeof(b));
    assert_ncclx_ok(ncclx_bootstrap_init(&bs));
    assert_ncclx_ok(ncclx_bootstrap_put(&bs, "blob", 1, a, sizeof(a)));
    assert_ncclx_ok(ncclx_bootstrap_put(&bs, "blob", 2, b, sizeof(b)));
    assert_ncclx_ok(ncclx_bootstrap_fence(&bs, 0));
    assert_ncclx_ok(ncclx_bootstrap_get(&bs, "blob", 1, 0, got, sizeof(got), 0));
    assert_memory_equal(got, a, sizeof(a));
    assert_ncclx_ok(ncclx_bootstrap_get(&bs, "blob", 2, 0, got, sizeof(got), 0));
    assert_memory_equal(got, b, sizeof(b));
    assert_ncclx_error(ncclx_bootstrap_get(&bs, "blob", 1, 0, got, 16, 0), ncclxPmixError,
                       "32 bytes, expected 16");
    assert_ncclx_error(ncclx_bootstrap_get(&bs, "blob", 9, 0, got, sizeof(got), 0), ncclxPmixError,
                       "from rank 0 failed: NOT-FOUND");
    /* The same key and instance again, new data: the next fence serves the new value. */
    assert_ncclx_ok(ncclx_bootstrap_put(&bs, "blob", 1, b, sizeof(b)));
    assert_ncclx_ok(ncclx_bootstrap_fence(&bs, 0));
    assert_ncclx_ok(ncclx_bootstrap_get(&bs, "blob", 1, 0, got, sizeof(got), 0));
    assert_memory_equal(got, b, sizeof(b));
    assert_ncclx_ok(ncclx_bootstrap_finalize(&bs));
}

/* Two bootstraps share PMIx; the last finalize releases it; init works again after. */
static void test_lifecycle(void **state)
{
    ncclx_bootstrap_t first, second, third;
    unsigned char data[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    (void)state;
    assert_ncclx_ok(ncclx_bootstrap_init(&first));
    assert_ncclx_ok(ncclx_bootstrap_init(&second));
    assert_string_equal(first.nspace, second.nspace);
    assert_ncclx_ok(ncclx_bootstrap_finalize(&first));
    assert_ncclx_ok(ncclx_bootstrap_put(&second, "k", 3, data, sizeof(data)));
    assert_ncclx_ok(ncclx_bootstrap_fence(&second, 0));
    assert_ncclx_error(ncclx_bootstrap_finalize(&first), ncclxInvalidUsage, "not initialized");
    assert_ncclx_error(ncclx_bootstrap_barrier(&first, 0), ncclxInvalidUsage,
                       "ncclx_bootstrap_barrier: bootstrap is not initialized");
    assert_ncclx_ok(ncclx_bootstrap_finalize(&second));
    assert_ncclx_ok(ncclx_bootstrap_init(&third));
    assert_int_equal(third.size, 1);
    assert_ncclx_ok(ncclx_bootstrap_exchange(&third, "k", 3, 0, data, sizeof(data), 0));
    assert_ncclx_ok(ncclx_bootstrap_finalize(&third));
    assert_ncclx_error(ncclx_bootstrap_init(NULL), ncclxInvalidArgument, "bs is NULL");
}

static void test_team_singleton(void **state)
{
    ncclx_bootstrap_t bs;
    ncclxTeam_t team = NCCLX_TEAM_INIT;
    (void)state;
    team.num_ranks = team.num_nodes = team.lsa_size = 99;
    assert_ncclx_ok(ncclx_bootstrap_init(&bs));
    assert_ncclx_ok(ncclx_bootstrap_team(&bs, &team));
    assert_int_equal(team.size, sizeof(ncclxTeam_t));
    assert_int_equal(team.magic, NCCLX_MAGIC_TEAM);
    assert_int_equal(team.num_ranks, 1);
    assert_int_equal(team.num_nodes, 1);
    assert_int_equal(team.lsa_size, 1);
    assert_ncclx_ok(ncclx_bootstrap_finalize(&bs));
    assert_ncclx_error(ncclx_bootstrap_team(&bs, &team), ncclxInvalidUsage, "not initialized");
}

/* A made-up job: 8 ranks on 2 nodes, this process on node "b". */
static ncclx_bootstrap_t fake_job(uint32_t size, uint32_t num_nodes, uint32_t local_size)
{
    ncclx_bootstrap_t bs;
    memset(&bs, 0, sizeof(bs));
    bs.rank = 5;
    bs.size = size;
    bs.local_rank = 1;
    bs.local_size = local_size;
    bs.node_id = 1;
    bs.num_nodes = num_nodes;
    bs.initialized = 1;
    snprintf(bs.hostname, sizeof(bs.hostname), "b");
    return bs;
}

static void test_team_from_nodes(void **state)
{
    const ncclx_bootstrap_node_t even[] = {{"a", 4, 0, 3}, {"b", 4, 4, 7}};
    const ncclx_bootstrap_node_t odd[] = {{"a", 3, 0, 2}, {"b", 4, 3, 7}};
    const ncclx_bootstrap_node_t three[] = {{"a", 4, 0, 3}, {"b", 4, 4, 7}, {"c", 4, 8, 11}};
    /* srun --distribution=cyclic: a holds 0 2 4 6, b 1 3 5 7 */
    const ncclx_bootstrap_node_t cyclic[] = {{"a", 4, 0, 6}, {"b", 4, 1, 7}};
    /* consecutive but shifted: a holds 2..5, b 0 1 6 7 */
    const ncclx_bootstrap_node_t shifted[] = {{"a", 4, 2, 5}, {"b", 4, 0, 7}};
    ncclx_bootstrap_t bs = fake_job(8, 2, 4);
    ncclxTeam_t team = NCCLX_TEAM_INIT;
    (void)state;
    assert_ncclx_ok(ncclx_bootstrap_team_from_nodes(&bs, even, 2, &team));
    assert_int_equal(team.num_ranks, 8);
    assert_int_equal(team.num_nodes, 2);
    assert_int_equal(team.lsa_size, 4);
    team.num_ranks = 77; /* untouched by the failures below */
    assert_ncclx_error(ncclx_bootstrap_team_from_nodes(&bs, odd, 2, &team), ncclxUnsupported,
                       "node a runs 3 ranks but this node (b) runs 4");
    assert_ncclx_error(ncclx_bootstrap_team_from_nodes(&bs, three, 3, &team), ncclxPmixError,
                       "PMIx lists 3 nodes but pmix.num.nodes is 2");
    assert_ncclx_error(ncclx_bootstrap_team_from_nodes(&bs, cyclic, 2, &team), ncclxUnsupported,
                       "node a runs ranks 0 to 6, 4 of them, not a block of 4 consecutive");
    assert_ncclx_error(ncclx_bootstrap_team_from_nodes(&bs, shifted, 2, &team), ncclxUnsupported,
                       "node a runs ranks 2 to 5");
    bs.local_rank = 2; /* rank 5 must be local rank 1 of a block of 4 */
    assert_ncclx_error(ncclx_bootstrap_team_from_nodes(&bs, NULL, 0, &team), ncclxUnsupported,
                       "rank 5 has local rank 2 on node 1 (b), not rank % 4 = 1");
    bs = fake_job(7, 2, 4); /* no node list: the shape alone must add up */
    assert_ncclx_error(ncclx_bootstrap_team_from_nodes(&bs, NULL, 0, &team), ncclxUnsupported,
                       "7 ranks on 2 nodes with 4 on this node (b)");
    assert_ncclx_error(ncclx_bootstrap_team_from_nodes(&bs, NULL, 0, NULL), ncclxInvalidArgument,
                       "team is NULL");
    assert_int_equal(team.num_ranks, 77);
    bs.initialized = 0;
    assert_ncclx_error(ncclx_bootstrap_team_from_nodes(&bs, even, 2, &team), ncclxInvalidUsage,
                       "not initialized");
}

/* PMIx unreachable while a launcher says it started several tasks: an error naming the
 * variable, never N singletons.  A count of 1, garbage, or SLURM_NTASKS outside a step (a
 * batch script) is a real singleton. */
static void test_launcher_without_pmix(void **state)
{
    static const struct {
        const char *name, *value, *needle;
    } bad[] = {
        {"SLURM_STEP_NUM_TASKS", "2", "SLURM_STEP_NUM_TASKS=2 says a launcher started"},
        {"OMPI_COMM_WORLD_SIZE", "4", "OMPI_COMM_WORLD_SIZE=4"},
        {"PMI_SIZE", "16", "PMI_SIZE=16"},
        {"PMIX_RANK", "3", "PMIX_RANK=3"},
        {"PMIX_NAMESPACE", "job.7", "PMIX_NAMESPACE=job.7"},
    };
    static const struct {
        const char *name, *value;
    } fine[] = {{"SLURM_STEP_NUM_TASKS", "1"},
                {"OMPI_COMM_WORLD_SIZE", "many"},
                {"PMI_SIZE", ""},
                {"SLURM_NTASKS", "8"}};
    ncclx_bootstrap_t held, bs;
    (void)state;
    /* PMIx is up as a singleton before the variables appear, as in a process that started
     * alone: only the check of ncclx_bootstrap_init() sees them. */
    assert_ncclx_ok(ncclx_bootstrap_init(&held));
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        memset(&bs, 0x5a, sizeof(bs));
        setenv(bad[i].name, bad[i].value, 1);
        assert_ncclx_error(ncclx_bootstrap_init(&bs), ncclxPmixError, bad[i].needle);
        assert_non_null(strstr(ncclxGetLastError(), "no PMIx server could be reached"));
        assert_int_equal(bs.initialized, 0x5a5a5a5a); /* untouched on failure */
        unsetenv(bad[i].name);
    }
    for (size_t i = 0; i < sizeof(fine) / sizeof(fine[0]); i++) {
        setenv(fine[i].name, fine[i].value, 1);
        assert_ncclx_ok(ncclx_bootstrap_init(&bs));
        assert_int_equal(bs.size, 1);
        assert_ncclx_ok(ncclx_bootstrap_finalize(&bs));
        unsetenv(fine[i].name);
    }
    /* SLURM_NTASKS inside a step counts. */
    setenv("SLURM_NTASKS", "2", 1);
    setenv("SLURM_STEP_ID", "0", 1);
    assert_ncclx_error(ncclx_bootstrap_init(&bs), ncclxPmixError, "SLURM_NTASKS=2");
    clear_launcher_env();
    /* The failed inits released their references: one finalize drops the last. */
    assert_ncclx_ok(ncclx_bootstrap_finalize(&held));
    assert_ncclx_ok(ncclx_bootstrap_init(&bs));
    assert_ncclx_ok(ncclx_bootstrap_finalize(&bs));
}

int main(void)
{
    /* clang-format off */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_singleton_identity),
        cmocka_unit_test(test_singleton_exchange),
        cmocka_unit_test(test_exchange_bad_arguments),
        cmocka_unit_test(test_fence_timeout_env),
        cmocka_unit_test(test_split_phase_instances),
        cmocka_unit_test(test_lifecycle),
        cmocka_unit_test(test_team_singleton),
        cmocka_unit_test(test_team_from_nodes),
        cmocka_unit_test(test_launcher_without_pmix),
    };
    /* clang-format on */
    return cmocka_run_group_tests(tests, clear_pmix_env, NULL);
}
