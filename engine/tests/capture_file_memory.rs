//! The capture file's memory bound: writing and reading hold one boundary
//! of one prompt, so the peak allocation does not grow with the number of
//! prompts (or boundaries). The full-size case (8 prompts, 61 boundaries of
//! 7168) is the ignored test at the end; run it with
//! `cargo test --release -p specula-engine --test capture_file_memory -- --ignored --nocapture`
//! under `/usr/bin/time -v` to see its peak resident memory.

use specula_engine::capture_file::{CaptureFile, CaptureMeta, CaptureWriter, StatesSource};
use std::alloc::{GlobalAlloc, Layout, System};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// Counts the bytes allocated now and the most allocated at once.
struct Counting;

static NOW: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);
/// Tests measuring the peak run one at a time.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let now = NOW.fetch_add(l.size(), Ordering::Relaxed) + l.size();
        PEAK.fetch_max(now, Ordering::Relaxed);
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        NOW.fetch_sub(l.size(), Ordering::Relaxed);
        unsafe { System.dealloc(p, l) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// A target of `layers` layers and width `hidden`, every boundary stored.
fn meta(layers: usize, hidden: usize, file: &Path) -> CaptureMeta {
    let config = serde_json::json!({"architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3",
        "num_hidden_layers": layers, "hidden_size": hidden, "vocab_size": 129280});
    CaptureMeta::for_target(&config, "capture_file_memory test", "bfloat16", None, file).unwrap()
}

/// Writes `prompts` prompts of `tokens` tokens, boundary by boundary (random
/// values), then reads every boundary of every prompt back one at a time.
/// Returns the peak bytes allocated above the start, and the file size.
fn write_and_read(
    file: &Path,
    layers: usize,
    hidden: usize,
    prompts: usize,
    tokens: usize,
) -> (usize, u64) {
    let base = NOW.load(Ordering::Relaxed);
    PEAK.store(base, Ordering::Relaxed);
    let mut w = CaptureWriter::create(file, meta(layers, hidden, file)).unwrap();
    let mut x = 0x9e37_79b9_u32;
    let mut states = vec![0f32; tokens * hidden];
    for _ in 0..prompts {
        let ids: Vec<u32> = (0..tokens as u32).collect();
        w.begin_prompt(tokens / 2, &ids, &ids).unwrap();
        for b in 0..layers {
            for s in states.iter_mut() {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                *s = (x >> 8) as f32 / (1 << 24) as f32 - 0.5;
            }
            w.boundary(b, &states).unwrap();
        }
    }
    drop(states);
    let bytes = w.finish().unwrap();
    let f = CaptureFile::open(file).unwrap();
    let mut sum = 0f64;
    for i in 0..f.prompt_count() {
        for b in 0..layers {
            let p = f.prompt(i, &[b]).unwrap();
            sum += p.hidden[&b][0] as f64;
        }
    }
    assert!(sum.is_finite());
    drop(f);
    (PEAK.load(Ordering::Relaxed) - base, bytes)
}

#[test]
fn the_peak_allocation_of_writing_and_reading_a_capture_does_not_grow_with_the_prompts() {
    let _one = ONE_AT_A_TIME.lock().unwrap();
    let t = tempfile::tempdir().unwrap();
    let (few, few_bytes) = write_and_read(&t.path().join("a"), 12, 512, 2, 64);
    let (many, many_bytes) = write_and_read(&t.path().join("b"), 12, 512, 16, 64);
    assert!(many_bytes > 7 * few_bytes, "{many_bytes} vs {few_bytes}");
    // 14 more prompts add 11 MB of states to the file, and only their header
    // entries (about 100 kB) to what is held at once.
    assert!(
        many < few + (512 << 10),
        "16 prompts peaked at {many} bytes, 2 prompts at {few}: memory grows with the prompts"
    );
    assert!(
        (many as u64) < many_bytes / 4,
        "the peak {many} is not small next to the file ({many_bytes} bytes)"
    );
}

#[test]
#[ignore = "writes a 1.8 GB file: the full-size memory check, run by hand"]
fn a_61_layer_hidden_7168_capture_of_8_prompts_stays_under_2_gb() {
    let _one = ONE_AT_A_TIME.lock().unwrap();
    let dir = std::env::var_os("SPECULA_BIG_CAPTURE_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(std::env::temp_dir);
    let file = dir.join("specula-61x7168.capture.safetensors");
    let started = std::time::Instant::now();
    let (peak, bytes) = write_and_read(&file, 61, 7168, 8, 256);
    let _ = std::fs::remove_file(&file);
    println!(
        "8 prompts x 256 tokens x 61 boundaries x 7168: file {:.2} GB, peak allocation {:.1} MB, {:.1} s",
        bytes as f64 / 1e9,
        peak as f64 / 1e6,
        started.elapsed().as_secs_f64()
    );
    assert!(peak < 2 << 30, "peak allocation {peak} bytes");
}
