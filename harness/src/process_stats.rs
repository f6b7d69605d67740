//! What the process itself has used so far: its peak resident memory
//! (`getrusage`'s `ru_maxrss`) and its age (from `/proc/self/stat`), for
//! the load records of `gpu bench` and sweeps.

/// Peak resident set size of this process so far, in bytes (0 when unknown).
pub fn peak_rss_bytes() -> u64 {
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage fills the struct we own.
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) } != 0 {
        return 0;
    }
    // Linux reports kilobytes (macOS bytes).
    let kb = u.ru_maxrss.max(0) as u64;
    if cfg!(target_os = "macos") {
        kb
    } else {
        kb * 1024
    }
}

/// Seconds since this process started (None where `/proc` is missing):
/// `/proc/self/stat`'s start time against `/proc/uptime`, both since boot.
pub fn process_age_s() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name, which is in parentheses and may hold spaces.
    let rest = &stat[stat.rfind(')')? + 2..];
    // starttime is field 22 overall: the 20th after the name.
    let start_ticks: f64 = rest.split_whitespace().nth(19)?.parse().ok()?;
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    let uptime: f64 = std::fs::read_to_string("/proc/uptime")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    (ticks > 0).then(|| uptime - start_ticks / ticks as f64)
}
