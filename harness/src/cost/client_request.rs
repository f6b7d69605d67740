//! Valgrind client requests (valgrind.h's magic instruction sequence, x86-64
//! only): under valgrind the tool answers them; run natively they do nothing.
//! Only callgrind's requests are used: start instrumentation, toggle
//! collection, and dump the counters since the last dump under a label.

/// `VG_USERREQ_TOOL_BASE('C', 'T')`: callgrind's requests.
const CALLGRIND: u64 = ((b'C' as u64) << 24) | ((b'T' as u64) << 16);
/// `CALLGRIND_DUMP_STATS_AT(label)`.
const DUMP_STATS_AT: u64 = CALLGRIND + 3;
/// `CALLGRIND_TOGGLE_COLLECT`.
const TOGGLE_COLLECT: u64 = CALLGRIND + 2;
/// `CALLGRIND_ZERO_STATS`.
const ZERO_STATS: u64 = CALLGRIND + 1;
/// `CALLGRIND_START_INSTRUMENTATION`.
const START_INSTRUMENTATION: u64 = CALLGRIND + 4;
/// `RUNNING_ON_VALGRIND`.
const RUNNING_ON_VALGRIND: u64 = 0x1001;

/// One client request: `args[0]` is the request, then up to five
/// arguments; `default` is the answer when not under valgrind.
#[cfg(target_arch = "x86_64")]
fn request(default: u64, args: [u64; 6]) -> u64 {
    let result: u64;
    // SAFETY: the rotations of rdi add up to 128 bits (rdi is unchanged)
    // and `xchg rbx, rbx` changes nothing; valgrind recognises the sequence
    // and writes its answer to rdx, reading the arguments through rax.
    unsafe {
        std::arch::asm!(
            "rol rdi, 3",
            "rol rdi, 13",
            "rol rdi, 61",
            "rol rdi, 51",
            "xchg rbx, rbx",
            in("rax") args.as_ptr(),
            inout("rdx") default => result,
            out("rdi") _,
        );
    }
    result
}

#[cfg(not(target_arch = "x86_64"))]
fn request(default: u64, _args: [u64; 6]) -> u64 {
    default
}

/// Whether this process runs under valgrind.
pub fn running_on_valgrind() -> bool {
    request(0, [RUNNING_ON_VALGRIND, 0, 0, 0, 0, 0]) > 0
}

/// Callgrind starts instrumenting (after `--instr-atstart=no`).
pub fn start_instrumentation() {
    request(0, [START_INSTRUMENTATION, 0, 0, 0, 0, 0]);
}

/// Callgrind's collection state flips (on after `--collect-atstart=no`).
pub fn toggle_collect() {
    request(0, [TOGGLE_COLLECT, 0, 0, 0, 0, 0]);
}

/// Callgrind's counters go back to zero.
pub fn zero_stats() {
    request(0, [ZERO_STATS, 0, 0, 0, 0, 0]);
}

/// Callgrind writes the counters since the last dump to a new file whose
/// `desc: Trigger:` line names `label`, and zeroes them.
pub fn dump_stats_at(label: &str) {
    let c = std::ffi::CString::new(label.replace('\0', " ")).expect("no NUL left");
    request(0, [DUMP_STATS_AT, c.as_ptr() as u64, 0, 0, 0, 0]);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_harmless_outside_valgrind() {
        // Under `cargo test` natively: every request answers its default.
        assert!(!running_on_valgrind());
        zero_stats();
        dump_stats_at("nothing");
    }
}
