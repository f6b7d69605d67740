
// ---------------------------------------------------------------------------
// The end of a tree-attention block (tree_attention.cu) whose rows span more
// than one split: it counts its split for each row it covered, and the
// block that completes a row (a counter per (row, kv head), back to zero
// after) merges the row's splits in split order, so a row's sums depend on
// its split count alone (a function of its key count), whatever the batch,
// the group or the order the blocks ran.

// Merges the rows of the block's group (rows first .. first + count - 1,
// kv head kvh, its split starting at key k0) that this block completes,
// through `stages` (`cap` floats of shared memory the block no longer needs).
template <int HD>
__device__ void tree_merge(bf16* out, const float* part_out, const float* part_ml, int* counters, const int* prefix,
                           const int* extra_off, int first, int count, int heads, int kv_heads, int kvh, int k0,
                           int split_keys, int splits_cap, float sl2, float* stages, int cap) {
    __shared__ int done[TREE_GROUP_MAX];
    __shared__ int n_done;
    __shared__ int roff[TREE_GROUP_MAX];
    __shared__ int n_round;
    int G = heads / kv_heads, warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    // Count this split for each row it covered; whoever completes a row
    // merges it. Each count is an acq_rel atomic after a block barrier (the
    // barrier orders the block's partials before it, as in last_to_arrive):
    // the completing thread sees every split's partials, and the barrier
    // below passes them on to the block.
    __syncthreads();
    if (threadIdx.x == 0) n_done = 0;
    __syncthreads();
    for (int i = threadIdx.x; i < count; i += blockDim.x) {
        int r = first + i, n = tree_keys(prefix, extra_off, r);
        if (k0 >= n) continue;
        int splits = (n + split_keys - 1) / split_keys;
        if (splits == 1) continue;  // written above
        if (atom_add_acq_rel((unsigned int*)&counters[r * kv_heads + kvh], 1u) == (unsigned int)splits - 1)
            done[atomicAdd(&n_done, 1)] = r;
    }
    __syncthreads();
    int nd = n_done;
    if (nd == 0) return;
    // Merge the completed rows, as many at a time as their split weights fit
    // the (now free) stages: per (row, head) one warp finds the maximum and
    // the weights over the splits (lanes over splits; the sum of weights in
    // a fixed order: lanes in split order, then lane 0's butterfly), then
    // every thread sums 4 outputs over the splits in split order. A row's
    // sums depend on its split count alone (a function of its key count).
    float* wbuf = stages;
    for (int k = 0; k < nd;) {
        // Rows k .. k_end of this round and their weights' offsets.
        if (threadIdx.x == 0) {
            int used = 0, k_end = k;
            while (k_end < nd) {
                int sp = (tree_keys(prefix, extra_off, done[k_end]) + split_keys - 1) / split_keys;
                if (used + G * (sp + 1) > cap) break;
                roff[k_end - k] = used;
                used += G * (sp + 1);
                k_end++;
            }
            n_round = k_end - k;
        }
        __syncthreads();
        int nr = n_round;
        if (nr == 0) {
            // One row whose weights do not fit: each output on its own.
            int r = done[k], n = tree_keys(prefix, extra_off, r);
            int splits = (n + split_keys - 1) / split_keys;
            for (int idx = threadIdx.x; idx < G * HD; idx += blockDim.x) {
                int head = kvh * G + idx / HD, d = idx % HD;
                size_t s0 = ((size_t)r * heads + head) * splits_cap;
                float m = -INFINITY;
                for (int t = 0; t < splits; t++) m = fmaxf(m, __ldcg(&part_ml[2 * (s0 + t)]));
                float l = 0.f, acc = 0.f;
                for (int t = 0; t < splits; t++) {
                    float w = exp2f((__ldcg(&part_ml[2 * (s0 + t)]) - m) * sl2);
                    l = fmaf(__ldcg(&part_ml[2 * (s0 + t) + 1]), w, l);
                    acc = fmaf(__ldcg(&part_out[(s0 + t) * HD + d]), w, acc);
                }
                st(&out[((size_t)r * heads + head) * HD + d], acc / l);
            }
            __syncthreads();
            k++;
            continue;
        }
        for (int pair = warp; pair < nr * G; pair += blockDim.x / 32) {
            int j = pair / G, hh = pair % G, r = done[k + j];
            int sp = (tree_keys(prefix, extra_off, r) + split_keys - 1) / split_keys;
            float* w = wbuf + roff[j] + hh * (sp + 1);
            size_t s0 = ((size_t)r * heads + kvh * G + hh) * splits_cap;
            float m = -INFINITY;
            for (int t = lane; t < sp; t += 32) m = fmaxf(m, __ldcg(&part_ml[2 * (s0 + t)]));
#pragma unroll
            for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
            float l = 0.f;
            for (int t = lane; t < sp; t += 32) {
                float wt = exp2f((__ldcg(&part_ml[2 * (s0 + t)]) - m) * sl2);
                w[t] = wt;
                l = fmaf(__ldcg(&part_ml[2 * (s0 + t) + 1]), wt, l);
            }
#pragma unroll
            for (int o = 16; o > 0; o >>= 1) l += __shfl_xor_sync(0xffffffffu, l, o);
            if (lane == 0) w[sp] = l;
        }
        __syncthreads();
        constexpr int D4 = HD / 4;
        for (int it = threadIdx.x; it < nr * G * D4; it += blockDim.x) {
            int j = it / (G * D4), hh = (it / D4) % G, d = (it % D4) * 4, r = done[k + j];
            int sp = (tree_keys(prefix, extra_off, r) + split_keys - 1) / split_keys;
            const float* w = wbuf + roff[j] + hh * (sp + 1);
            size_t s0 = ((size_t)r * heads + kvh * G + hh) * splits_cap;
            float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll 8
            for (int t = 0; t < sp; t++) {
                float4 p = __ldcg((const float4*)&part_out[(s0 + t) * HD + d]);
                float wt = w[t];
                acc.x = fmaf(p.x, wt, acc.x);
                acc.y = fmaf(p.y, wt, acc.y);
                acc.z = fmaf(p.z, wt, acc.z);
                acc.w = fmaf(p.w, wt, acc.w);
            }
            float l = w[sp];
            bf16* o = out + ((size_t)r * heads + kvh * G + hh) * HD + d;
            st(&o[0], acc.x / l);
            st(&o[1], acc.y / l);
            st(&o[2], acc.z / l);
            st(&o[3], acc.w / l);
        }
        __syncthreads();
        k += nr;
    }
    __syncthreads();
    for (int k = threadIdx.x; k < nd; k += blockDim.x) counters[done[k] * kv_heads + kvh] = 0;
}
