
// ---------------------------------------------------------------------------
// Greedy tree verification, one thread per sequence. Sequence s owns nodes
// node_off[s]..node_off[s+1] (parents local, -1 = root; parents first) and
// choices at node_off[s] + s .. (root first). Writes the accepted local node
// indices at accepted[node_off[s]..], their count and the bonus token.
extern "C" __global__ void verify_greedy_tree(const int* choice, const int* tokens, const int* parents, const int* node_off,
                                              int n_seq, int* accepted, int* accept_len, int* bonus) {
    pdl_enter();
    int s = blockIdx.x * blockDim.x + threadIdx.x;
    if (s >= n_seq) return;
    int o = node_off[s], n = node_off[s + 1] - o;
    const int* ch = choice + o + s;
    int cur = -1, len = 0;
    while (true) {
        int want = ch[cur + 1];
        int found = -1;
        for (int i = 0; i < n; i++) {
            if (parents[o + i] == cur && tokens[o + i] == want) { found = i; break; }
        }
        if (found < 0) { bonus[s] = want; break; }
        accepted[o + len++] = found;
        cur = found;
    }
    accept_len[s] = len;
}
