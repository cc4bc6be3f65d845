/*
 * NCCL's shared comms through ncclNetPlugin_v11, across processes. When a
 * device reports maxRecvs > 1, NCCL gives the GPUs of a node that send to one
 * peer a single send comm, each GPU with its own tag, and its receiving proxy
 * groups their buffers into receives of up to maxRecvs, posting a step only
 * once the oldest step is complete; the GPUs progress independently, so sends
 * come before their receive and while the oldest receive lacks their tag.
 *
 * The peer (helper_peer "tags-shared") plays the sending GPUs on one send
 * comm: PEER_TAGS_T tags, half of them posting every step at once, the other
 * half one step every third round. This process receives as NCCL's proxy
 * does: each step's buffers, tags permuted, in grouped receives of maxRecvs;
 * with maxRecvs > 1 one step is posted at a time, behind the oldest; with
 * maxRecvs 1 (NCCL then opens one comm per GPU and never shares) all steps at
 * once. Every buffer must hold its (tag, step) message.
 *
 * Over tcp (STRATA_TRANSPORT=tcp, the default of this binary) the plugin must
 * report maxRecvs 1: tcp's comm is one byte stream, where a message waiting for
 * its receive holds back the ones behind it (docs/tcp-protocol.md), so NCCL
 * must not share it. The ucx pass of make test runs the shared pattern itself.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "func_common.h"

#define TAGS_N (PEER_TAGS_T * PEER_TAGS_STEPS)

static int tags_setup(void **state)
{
    /* The auto choice is tcp on a host without an RDMA device; name it, so the check of
     * maxRecvs below knows what it checks. A pass that names a transport keeps it. */
    if (getenv("STRATA_TRANSPORT") == NULL)
        setenv("STRATA_TRANSPORT", "tcp", 1);
    return func_setup(state);
}

static void tags_shared_comm(void **state)
{
    func_fix_t *fix = *state;
    const int width = fix->max_recvs;
    const int depth = width > 1 ? 1 : PEER_TAGS_STEPS;
    sts_net_req_t reqs[TAGS_N];
    int r_step[TAGS_N], r_n[TAGS_N], r_t[TAGS_N][STB_PLUGIN_MAX_RECVS], nrecv = 0;
    int step_first[PEER_TAGS_STEPS + 1], posted = 0, done = 0;
    size_t off[TAGS_N + 1];
    sts_net_link_t link;
    sts_net_buf_t b;
    sts_peer_t peer;

    if (strcmp(getenv("STRATA_TRANSPORT"), "tcp") == 0 && fix->props.max_recvs != 1)
        fail_msg("tcp: the plugin reports maxRecvs %d; a byte-stream comm must report 1 so"
                 " that NCCL never shares it", fix->props.max_recvs);
    off[0] = 0;
    for (int m = 0; m < TAGS_N; m++)
        off[m + 1] = off[m] + peer_tags_size(m % PEER_TAGS_T, m / PEER_TAGS_T) + 16;
    /* each step's tags, permuted, in grouped receives of `width` buffers */
    for (int s = 0; s < PEER_TAGS_STEPS; s++) {
        int perm[PEER_TAGS_T];
        step_first[s] = nrecv;
        sts_permute(perm, PEER_TAGS_T, (uint32_t)(s + 3));
        for (int k = 0; k < PEER_TAGS_T; nrecv++) {
            r_step[nrecv] = s;
            r_n[nrecv] = width < PEER_TAGS_T - k ? width : PEER_TAGS_T - k;
            for (int i = 0; i < r_n[nrecv]; i++)
                r_t[nrecv][i] = perm[k + i];
            k += r_n[nrecv];
        }
    }
    step_first[PEER_TAGS_STEPS] = nrecv;

    func_start(fix, &peer, "tags-shared", 0, &link);
    func_buf_get(fix, &b, link.recv, off[TAGS_N]);
    memset(b.data, 0, off[TAGS_N]);
    uint64_t deadline = sts_deadline(PEER_TIMEOUT_S);
    while (done < PEER_TAGS_STEPS) {
        if (stu_deadline_passed(deadline))
            func_fail_with_peer(&peer, "%d of %d steps received, %d posted, at the deadline",
                                done, PEER_TAGS_STEPS, posted);
        while (posted < PEER_TAGS_STEPS && posted < done + depth) {
            for (int r = step_first[posted]; r < step_first[posted + 1]; r++) {
                void *data[STB_PLUGIN_MAX_RECVS], *mhs[STB_PLUGIN_MAX_RECVS];
                size_t sizes[STB_PLUGIN_MAX_RECVS];
                int tags[STB_PLUGIN_MAX_RECVS];
                for (int i = 0; i < r_n[r]; i++) {
                    int m = posted * PEER_TAGS_T + r_t[r][i];
                    data[i] = b.data + off[m];
                    sizes[i] = off[m + 1] - off[m];
                    tags[i] = peer_tags_tag(r_t[r][i]);
                    mhs[i] = b.mh;
                }
                reqs[r] = (sts_net_req_t){.result = ncclInProgress};
                assert_nccl_ok(sts_net_irecv_retry(fix->net, link.recv, r_n[r], data, sizes,
                                                   tags, mhs, reqs, r, deadline, &reqs[r].req));
            }
            posted++;
        }
        sts_net_progress(fix->net, reqs, step_first[posted]);
        for (int r = step_first[done]; r < step_first[posted]; r++)
            if (reqs[r].req == NULL && reqs[r].result != ncclSuccess)
                func_fail_with_peer(&peer, "receive %d (step %d): %s", r, r_step[r],
                                    stb_plugin_result_str(reqs[r].result));
        while (done < posted) {
            int complete = 1;
            for (int r = step_first[done]; r < step_first[done + 1]; r++)
                complete = complete && reqs[r].req == NULL;
            if (!complete)
                break;
            done++;
        }
    }
    for (int r = 0; r < nrecv; r++)
        for (int i = 0; i < r_n[r]; i++) {
            int t = r_t[r][i], s = r_step[r], m = s * PEER_TAGS_T + t;
            size_t want = peer_tags_size(t, s);
            if ((size_t)reqs[r].sizes[i] != want)
                fail_msg("tag %d step %d: %d bytes reported, %zu sent", peer_tags_tag(t), s,
                         reqs[r].sizes[i], want);
            if (sts_pattern_check(b.data + off[m], want, peer_tags_seed(t, s)) != SIZE_MAX)
                fail_msg("tag %d step %d: holds another message's data", peer_tags_tag(t), s);
        }
    func_buf_put(fix, &b);
    func_link_close(fix, &link);
    func_finish(&peer);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(tags_shared_comm, tags_setup, func_teardown),
    };
    return cmocka_run_group_tests_name("plugin_tags", tests, NULL, NULL);
}
