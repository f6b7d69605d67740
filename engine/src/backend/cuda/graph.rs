//! CUDA graphs for the decode and draft forwards: a forward shape (rows,
//! logit rows, capture) runs eagerly once, is captured into a graph the
//! second time, and is replayed after that. Inputs are copied into the
//! shape's fixed buffers before each launch; attention is sized for the
//! pool's whole capacity (empty splits exit at once), so one graph serves
//! every context length. Only the batch-invariant small-row path (no
//! cuBLAS) is captured.

use super::forward::{BatchOnDevice, HostBatch};
use super::profile;
use crate::error::{EngineError, Result};
use cudarc::driver::{sys, CudaGraph};
use specula_kernels::cuda::{Gpu, INVARIANT_MAX_ROWS};
use std::collections::hash_map::{Entry, HashMap};
use std::hash::Hash;

/// Tree entries per row a graph's key-list buffer holds (deeper trees run eagerly).
pub(crate) const GRAPH_EXTRA_PER_ROW: usize = 64;

/// A forward shape's replay state.
pub(crate) trait GraphStep {
    /// The captured graph, once there is one.
    fn graph(&mut self) -> &mut Option<CudaGraph>;
    /// Forwards run with this shape so far.
    fn runs(&mut self) -> &mut usize;
    /// The shape's fixed batch buffers.
    fn batch(&mut self) -> &mut BatchOnDevice;
}

/// Whether a forward of `host`'s shape may be replayed as a graph: graphs
/// on, batch-invariant rows only, a tree that fits the key-list buffer, and
/// no per-operation profiling (which needs eager launches).
pub(crate) fn graphable(graphs: bool, host: &HostBatch) -> bool {
    graphs
        && host.rows <= INVARIANT_MAX_ROWS
        && host.extra.len() <= GRAPH_EXTRA_PER_ROW * host.rows
        && !profile::enabled()
}

/// Runs a graphable forward through its shape's cached step: makes the step
/// (buffers for the shape and the pool's `capacity`) on the shape's first
/// use, copies the batch and then `inputs` in, and replays or captures
/// `enqueue`. Returns the step to read the outputs from.
#[allow(clippy::too_many_arguments)]
pub(crate) fn replay_forward<'a, K: Eq + Hash, S: GraphStep>(
    gpu: &Gpu,
    steps: &'a mut HashMap<K, S>,
    key: K,
    host: &HostBatch,
    capacity: usize,
    make: impl FnOnce(BatchOnDevice) -> Result<S>,
    inputs: impl FnOnce(&mut S) -> Result<()>,
    enqueue: impl FnMut(&mut S) -> Result<()>,
) -> Result<&'a mut S> {
    let step = match steps.entry(key) {
        Entry::Occupied(e) => e.into_mut(),
        Entry::Vacant(v) => {
            let extra = GRAPH_EXTRA_PER_ROW * host.rows;
            let b = BatchOnDevice::new(gpu, host.rows, extra, host.n_logits, capacity)?;
            v.insert(make(b)?)
        }
    };
    step.batch().write(gpu, host)?;
    inputs(step)?;
    replay_or_capture(gpu, step, enqueue)?;
    Ok(step)
}

/// Replays the shape's graph, or runs `enqueue` eagerly (first use) or
/// under capture (second use, then launches the new graph). A shape whose
/// capture fails runs eagerly from then on (the failure is reported once).
pub(crate) fn replay_or_capture<S: GraphStep>(
    gpu: &Gpu,
    step: &mut S,
    mut enqueue: impl FnMut(&mut S) -> Result<()>,
) -> Result<()> {
    let runs = *step.runs();
    *step.runs() = runs.saturating_add(1);
    if let Some(g) = step.graph() {
        g.launch()?;
        return Ok(());
    }
    if runs == 0 || runs == EAGER_ONLY {
        if runs == EAGER_ONLY {
            *step.runs() = EAGER_ONLY;
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
            *step.graph() = Some(graph);
            Ok(())
        }
        Err(e) => {
            static WARNED: std::sync::Once = std::sync::Once::new();
            WARNED.call_once(|| {
                eprintln!("warning: CUDA graph capture failed ({e}); running eagerly")
            });
            *step.runs() = EAGER_ONLY;
            enqueue(step)
        }
    }
}

/// `runs` of a shape that is never captured.
const EAGER_ONLY: usize = usize::MAX;
