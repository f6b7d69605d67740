//! Greedy tree verification and KV compaction: the host references of the
//! CUDA `verify_greedy_tree` and `kv_commit` kernels, and what the CPU engine runs.

/// The longest root-to-leaf path whose every node carries the target's
/// choice at its parent. Nodes are given by `parents` (`-1`: a child of the
/// root; parents precede children) and `tokens`; `choice[0]` is the target's
/// token at the root and `choice[i + 1]` at node `i`. Returns the accepted
/// node indices and the bonus token (the target's choice at the last accepted node).
pub fn greedy_tree_accept(parents: &[i32], tokens: &[u32], choice: &[u32]) -> (Vec<usize>, u32) {
    assert_eq!(
        parents.len(),
        tokens.len(),
        "greedy_tree_accept: one parent per node"
    );
    assert_eq!(
        choice.len(),
        tokens.len() + 1,
        "greedy_tree_accept: one choice per tree position"
    );
    let mut cur: i32 = -1;
    let mut path = Vec::new();
    loop {
        let want = choice[(cur + 1) as usize];
        match (0..tokens.len()).find(|&i| parents[i] == cur && tokens[i] == want) {
            Some(i) => {
                path.push(i);
                cur = i as i32;
            }
            None => return (path, want),
        }
    }
}

/// Moves rows `src[i]` of `buf: [rows, width]` to rows `dst_start + i`, in
/// order. Requires `src` ascending with `src[i] >= dst_start + i`, so that
/// no row is overwritten before it is read.
pub fn compact_rows(buf: &mut [f32], width: usize, dst_start: usize, src: &[usize]) {
    for (i, &s) in src.iter().enumerate() {
        let d = dst_start + i;
        assert!(
            s >= d,
            "compact_rows: source row {s} is below its destination {d}"
        );
        if s != d {
            buf.copy_within(s * width..(s + 1) * width, d * width);
        }
    }
}
