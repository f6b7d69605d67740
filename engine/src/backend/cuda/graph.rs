//! CUDA graphs for the decode and draft forwards: a forward shape (rows,
//! logit rows, capture) runs eagerly once, is captured into a graph the
//! second time, and is replayed after that. Inputs are copied into the
//! shape's fixed buffers (its [`Step`]) before each launch; attention is
//! sized for the pool's whole capacity (empty splits exit at once), so one
//! graph serves every context length. Only the batch-invariant small-row
//! path (no cuBLAS) is captured.

use super::batch::{BatchOnDevice, HostBatch};
use super::forward::{Scratch, ScratchSizes};
use super::profile;
use crate::error::{EngineError, Result};
use cudarc::driver::{sys, CudaGraph, CudaSlice};
use specula_kernels::cuda::{Gpu, GpuElement, INVARIANT_MAX_ROWS};
use std::cell::RefCell;
use std::collections::hash_map::{Entry, HashMap};
use std::hash::Hash;

/// Tree entries per row a graph's key-list buffer holds (deeper trees run eagerly).
pub(crate) const GRAPH_EXTRA_PER_ROW: usize = 64;

/// Every buffer one forward shape uses: what both models' forwards share
/// (the batch's inputs, the residual stream and its norms, the blocks'
/// scratch, the logit rows and their logits) and the model's own `B`; kept
/// with the shape's graph for replays.
pub(crate) struct Step<T, B> {
    /// The batch's inputs.
    pub(crate) batch: BatchOnDevice,
    /// The residual stream `[rows, hidden]`.
    pub(crate) x: CudaSlice<T>,
    /// RMSNorm outputs `[rows, hidden]`: a block's input, the final norm.
    pub(crate) norm_out: CudaSlice<T>,
    /// Work buffers of the decoder blocks.
    pub(crate) sc: Scratch<T>,
    /// The logit rows' final hidden states `[n_logits, hidden]`.
    pub(crate) last: CudaSlice<T>,
    /// Their logits `[n_logits, vocab]`.
    pub(crate) logits: CudaSlice<T>,
    /// The model's own buffers.
    pub(crate) own: B,
    /// The captured graph, once there is one.
    graph: Option<CudaGraph>,
    /// The launches one replay of `graph` makes (none before it is captured).
    launches: Option<GraphLaunches>,
    /// Forwards run with this shape so far ([`EAGER_ONLY`]: never captured).
    runs: usize,
}

impl<T: GpuElement, B> Step<T, B> {
    /// Buffers for `batch` through layers of `sizes` (residual width
    /// `sizes.hidden`), `vocab` logits per logit row, and the model's `own`.
    pub(crate) fn new(
        gpu: &Gpu,
        batch: BatchOnDevice,
        sizes: ScratchSizes,
        vocab: usize,
        own: B,
    ) -> Result<Step<T, B>> {
        let s = &gpu.stream;
        let (rows, nl) = (batch.rows, batch.n_logits.max(1));
        let hidden = sizes.hidden;
        Ok(Step {
            x: s.alloc_zeros(rows * hidden)?,
            norm_out: s.alloc_zeros(rows * hidden)?,
            sc: Scratch::new(gpu, &batch, sizes)?,
            last: s.alloc_zeros(nl * hidden)?,
            logits: s.alloc_zeros(nl * vocab)?,
            own,
            batch,
            graph: None,
            launches: None,
            runs: 0,
        })
    }
}

/// A model's forward shapes replayed as CUDA graphs, by key `K`.
pub(crate) struct Replays<K, T, B> {
    /// Whether forwards may be replayed at all.
    graphs: bool,
    /// KV entries per sequence of the model's pool (the longest key list).
    capacity: usize,
    steps: RefCell<HashMap<K, Step<T, B>>>,
}

impl<K: Eq + Hash, T, B> Replays<K, T, B> {
    /// No shapes yet; `graphs` off replays none.
    pub(crate) fn new(graphs: bool, capacity: usize) -> Replays<K, T, B> {
        Replays {
            graphs,
            capacity,
            steps: RefCell::new(HashMap::new()),
        }
    }

    /// Whether forwards may be replayed at all.
    pub(crate) fn graphs(&self) -> bool {
        self.graphs
    }

    /// Whether a forward of `host`'s shape may be replayed as a graph: graphs
    /// on, batch-invariant rows only, a tree that fits the key-list buffer,
    /// and no per-operation profiling (which needs eager launches).
    pub(crate) fn graphable(&self, host: &HostBatch) -> bool {
        self.graphs
            && host.rows <= INVARIANT_MAX_ROWS
            && host.extra.len() <= GRAPH_EXTRA_PER_ROW * host.rows
            && !profile::enabled()
    }

    /// The launches of a captured forward whose shape `matches`, the one
    /// with the most kernels among several; none before one is captured.
    pub(crate) fn launches_where(&self, matches: impl Fn(&K) -> bool) -> Option<GraphLaunches> {
        let steps = self.steps.borrow();
        steps
            .iter()
            .filter(|(k, _)| matches(k))
            .filter_map(|(_, s)| s.launches)
            .max_by_key(|l| l.kernels)
    }

    /// Runs a graphable forward through the step of its shape `key`: makes
    /// the step (`make`, from batch buffers for the shape and the pool's
    /// capacity) on the shape's first use, copies the batch and then
    /// `inputs` in, replays or captures `enqueue`, and `read`s the outputs.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn replay<R>(
        &self,
        gpu: &Gpu,
        host: &HostBatch,
        key: K,
        make: impl FnOnce(BatchOnDevice) -> Result<Step<T, B>>,
        inputs: impl FnOnce(&mut Step<T, B>) -> Result<()>,
        enqueue: impl FnMut(&mut Step<T, B>) -> Result<()>,
        read: impl FnOnce(&mut Step<T, B>) -> Result<R>,
    ) -> Result<R> {
        let mut steps = self.steps.borrow_mut();
        let step = match steps.entry(key) {
            Entry::Occupied(e) => e.into_mut(),
            Entry::Vacant(v) => {
                let extra = GRAPH_EXTRA_PER_ROW * host.rows;
                let b = BatchOnDevice::new(gpu, host.rows, extra, host.n_logits, self.capacity)?;
                v.insert(make(b)?)
            }
        };
        step.batch.write(gpu, host)?;
        inputs(step)?;
        replay_or_capture(gpu, step, enqueue)?;
        read(step)
    }
}

/// Replays the shape's graph, or runs `enqueue` eagerly (first use) or
/// under capture (second use, then launches the new graph). A shape whose
/// capture fails runs eagerly from then on (the failure is reported once).
fn replay_or_capture<T, B>(
    gpu: &Gpu,
    step: &mut Step<T, B>,
    mut enqueue: impl FnMut(&mut Step<T, B>) -> Result<()>,
) -> Result<()> {
    let runs = step.runs;
    step.runs = runs.saturating_add(1);
    if let Some(g) = &step.graph {
        g.launch()?;
        return Ok(());
    }
    if runs == 0 || runs == EAGER_ONLY {
        if runs == EAGER_ONLY {
            step.runs = EAGER_ONLY;
        }
        return enqueue(step);
    }
    let mode = sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_RELAXED;
    let captured = gpu
        .stream
        .begin_capture(mode)
        .map_err(EngineError::from)
        .and_then(|()| {
            let enqueued = enqueue(step);
            let graph = gpu.stream.end_capture(sys::CUgraphInstantiate_flags(0));
            enqueued?;
            graph?.ok_or_else(|| EngineError::Device("CUDA graph capture produced no graph".into()))
        });
    match captured {
        Ok(graph) => {
            graph.launch()?;
            step.launches = Some(graph_launches(&graph)?);
            step.graph = Some(graph);
            Ok(())
        }
        Err(e) => {
            static WARNED: std::sync::Once = std::sync::Once::new();
            WARNED.call_once(|| {
                eprintln!("warning: CUDA graph capture failed ({e}); running eagerly")
            });
            step.runs = EAGER_ONLY;
            enqueue(step)
        }
    }
}

/// The launches one replay of a captured graph makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GraphLaunches {
    /// Its kernel nodes.
    pub kernels: usize,
    /// The launch shape (blocks, threads a block) of its first kernel (the
    /// kernel node no other node precedes), where there is one: where a
    /// replay's stamps begin.
    pub first: Option<(u32, u32)>,
}

/// The kernel nodes of `graph` and the shape of its root kernel.
fn graph_launches(graph: &CudaGraph) -> Result<GraphLaunches> {
    let g = graph.cu_graph();
    let nodes_of = |roots: bool| -> Result<Vec<sys::CUgraphNode>> {
        let mut count = 0usize;
        // SAFETY: a null node array asks only for the count; then an array
        // of that many nodes is filled.
        unsafe {
            let get = |nodes: *mut sys::CUgraphNode, count: &mut usize| {
                if roots {
                    sys::cuGraphGetRootNodes(g, nodes, count)
                } else {
                    sys::cuGraphGetNodes(g, nodes, count)
                }
            };
            get(std::ptr::null_mut(), &mut count).result()?;
            let mut nodes: Vec<sys::CUgraphNode> = vec![std::ptr::null_mut(); count];
            get(nodes.as_mut_ptr(), &mut count).result()?;
            nodes.truncate(count);
            Ok(nodes)
        }
    };
    let is_kernel = |n: sys::CUgraphNode| -> Result<bool> {
        let mut kind = sys::CUgraphNodeType::CU_GRAPH_NODE_TYPE_EMPTY;
        // SAFETY: `n` is a node of `graph`; its type is written to `kind`.
        unsafe { sys::cuGraphNodeGetType(n, &mut kind) }.result()?;
        Ok(kind == sys::CUgraphNodeType::CU_GRAPH_NODE_TYPE_KERNEL)
    };
    let mut kernels = 0;
    for n in nodes_of(false)? {
        kernels += usize::from(is_kernel(n)?);
    }
    let mut first = None;
    for n in nodes_of(true)? {
        if is_kernel(n)? {
            // SAFETY: a kernel node's parameters, written into a zeroed
            // struct of the driver's layout.
            let p = unsafe {
                let mut p: sys::CUDA_KERNEL_NODE_PARAMS = std::mem::zeroed();
                sys::cuGraphKernelNodeGetParams_v2(n, &mut p).result()?;
                p
            };
            first = Some((
                p.gridDimX * p.gridDimY * p.gridDimZ,
                p.blockDimX * p.blockDimY * p.blockDimZ,
            ));
            break;
        }
    }
    Ok(GraphLaunches { kernels, first })
}

/// `runs` of a shape that is never captured.
const EAGER_ONLY: usize = usize::MAX;
