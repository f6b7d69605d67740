//! The worker threads the CPU kernels split large products over: one pool
//! of a chosen size, in which the caller's own thread is a worker, so a
//! 2-core machine runs two threads, not the caller plus two waking ones.

/// Threads of the CPU kernels when none are asked for: one per core.
pub fn default_cpu_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Threads of the pool the caller runs in now (in [`with_cpu_threads`],
/// the count it was given).
pub fn current_cpu_threads() -> usize {
    rayon::current_num_threads()
}

/// Runs `work` with the CPU kernels on `threads` worker threads (`None`: one
/// per core), `work` itself on one of them. Already in a pool of that size,
/// it runs `work` there. A pool that cannot be made (the system refuses
/// threads) is an error naming the count.
pub fn with_cpu_threads<R: Send>(
    threads: Option<usize>,
    work: impl FnOnce() -> R + Send,
) -> Result<R, String> {
    let n = threads.unwrap_or_else(default_cpu_threads);
    if n == 0 {
        return Err("cpu threads must be at least 1".into());
    }
    if rayon::current_thread_index().is_some() && rayon::current_num_threads() == n {
        return Ok(work());
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(n)
        .thread_name(|i| format!("specula-cpu-{i}"))
        // The size of a main thread's stack: `work` ran on one before.
        .stack_size(8 << 20)
        .build()
        .map_err(|e| format!("cannot start {n} cpu threads: {e}"))?;
    Ok(pool.install(work))
}
