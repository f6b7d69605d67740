//! A small mutation fuzzer over proptest's generators: inputs are valid
//! seeds (a config.json, a sweep spec, a safetensors file, a request body)
//! bent by random edits, byte-wise (flips, cuts, inserted syntax) and, for
//! JSON, value-wise (a field set to an extreme or wrongly typed value).
//! Each input runs in `catch_unwind`: a panic is a failure naming the
//! input; an abort (a huge allocation) fails the whole test binary.
//!
//! Budget: `SPECULA_FUZZ_SECONDS` runs each target for that long (the
//! 10-minute runs of `scripts/fuzz.sh`); otherwise a fixed number of cases
//! (CI). `SPECULA_FUZZ_SEED` replays a run.

use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use serde_json::Value;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::{Duration, Instant};

/// Cases per target in a CI run.
const CI_CASES: u64 = 300;

/// Fragments spliced into text: syntax and extreme values.
const DICTIONARY: &[&str] = &[
    "\"",
    "{",
    "}",
    "[",
    "]",
    ",",
    ":",
    "=",
    "\n",
    "[[",
    "]]",
    "null",
    "true",
    "-1",
    "0",
    "1e308",
    "-1e308",
    "4294967296",
    "18446744073709551616",
    "1000000000",
    "NaN",
    "inf",
    "\"x\"",
    "\u{0}",
    "\u{feff}",
    "é",
    "\\u0000",
    "9999999999999999999999",
];

/// Values a JSON field is set to.
fn odd_json_values() -> Vec<Value> {
    serde_json::from_str(
        r#"[0, -1, 1, 2, 3, 7, 1000000000, 4294967296, 18446744073709551615, -9223372036854775808,
            1e308, -1e308, 0.5, -0.0, 1e-320, "", "x", "0", [], [0], [1, 2, 3], {}, null, true,
            false, [1000000000], [-1], {"a": 1}]"#,
    )
    .unwrap()
}

/// One edit of a byte string.
#[derive(Debug, Clone)]
pub enum Edit {
    /// Xor the byte at (position mod length) with a mask.
    Flip(usize, u8),
    /// Insert a dictionary fragment.
    Insert(usize, usize),
    /// Delete up to n bytes.
    Delete(usize, usize),
    /// Keep only the first (position mod length) bytes.
    Truncate(usize),
    /// Overwrite 8 bytes with a little-endian number (a header length, an offset).
    Number(usize, u64),
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        (any::<usize>(), 1..=255u8).prop_map(|(p, m)| Edit::Flip(p, m)),
        (any::<usize>(), 0..DICTIONARY.len()).prop_map(|(p, d)| Edit::Insert(p, d)),
        (any::<usize>(), 1..64usize).prop_map(|(p, n)| Edit::Delete(p, n)),
        any::<usize>().prop_map(Edit::Truncate),
        (
            any::<usize>(),
            prop_oneof![Just(0u64), Just(u64::MAX), Just(1 << 40), any::<u64>()]
        )
            .prop_map(|(p, n)| Edit::Number(p, n)),
    ]
}

/// `seed` with `edits` applied.
pub fn apply(seed: &[u8], edits: &[Edit]) -> Vec<u8> {
    let mut b = seed.to_vec();
    for e in edits {
        let at = |p: usize, len: usize| if len == 0 { 0 } else { p % len };
        match *e {
            Edit::Flip(p, m) if !b.is_empty() => {
                let i = at(p, b.len());
                b[i] ^= m;
            }
            Edit::Insert(p, d) => {
                let i = at(p, b.len() + 1);
                b.splice(i..i, DICTIONARY[d].bytes());
            }
            Edit::Delete(p, n) if !b.is_empty() => {
                let i = at(p, b.len());
                b.drain(i..(i + n).min(b.len()));
            }
            Edit::Truncate(p) => b.truncate(at(p, b.len() + 1)),
            Edit::Number(p, n) if b.len() >= 8 => {
                let i = at(p, b.len() - 7);
                b[i..i + 8].copy_from_slice(&n.to_le_bytes());
            }
            _ => {}
        }
    }
    b
}

/// Byte strings made from `seed` by 1 to 6 edits (and, one time in 16, `seed` itself).
pub fn bytes_near(seed: Vec<u8>) -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        1 => Just(seed.clone()),
        15 => prop::collection::vec(edit(), 1..6).prop_map(move |e| apply(&seed, &e)),
    ]
}

/// Every path to a value inside `v` (object keys and array indices).
fn paths(v: &Value, prefix: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                prefix.push(k.clone());
                out.push(prefix.clone());
                paths(x, prefix, out);
                prefix.pop();
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                prefix.push(i.to_string());
                out.push(prefix.clone());
                paths(x, prefix, out);
                prefix.pop();
            }
        }
        _ => {}
    }
}

fn set(v: &mut Value, path: &[String], to: Value) {
    let pointer: String = path
        .iter()
        .map(|p| format!("/{}", p.replace('~', "~0").replace('/', "~1")))
        .collect();
    if let Some(slot) = v.pointer_mut(&pointer) {
        *slot = to;
    }
}

/// JSON texts made from `seed` by setting 1 to 3 fields to odd values, then
/// (one time in 4) a byte edit.
pub fn json_near(seed: Value) -> impl Strategy<Value = Vec<u8>> {
    let mut all = Vec::new();
    paths(&seed, &mut Vec::new(), &mut all);
    let odd = odd_json_values();
    let (n_paths, n_odd) = (all.len().max(1), odd.len());
    (
        prop::collection::vec((0..n_paths, 0..n_odd), 1..4),
        prop::option::weighted(0.25, prop::collection::vec(edit(), 1..3)),
    )
        .prop_map(move |(sets, edits)| {
            let mut v = seed.clone();
            for (p, o) in sets {
                if let Some(path) = all.get(p) {
                    set(&mut v, path, odd[o].clone());
                }
            }
            let text = serde_json::to_vec_pretty(&v).unwrap();
            match edits {
                Some(e) => apply(&text, &e),
                None => text,
            }
        })
}

/// Runs `check` on inputs from `strategy` for the budget; a panic fails
/// the test with the input and the seed that replays it.
pub fn fuzz<S: Strategy>(name: &str, strategy: S, check: impl Fn(&S::Value))
where
    S::Value: std::fmt::Debug,
{
    let seed: u64 = std::env::var("SPECULA_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
        });
    let budget = std::env::var("SPECULA_FUZZ_SECONDS")
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
        .map(Duration::from_secs_f64);
    let mut bytes = [0u8; 32];
    bytes[..8].copy_from_slice(&seed.to_le_bytes());
    let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &bytes);
    let mut runner = TestRunner::new_with_rng(Config::default(), rng);
    let t0 = Instant::now();
    let mut cases = 0u64;
    // Panics are expected to be caught; keep their messages out of the log.
    let quiet = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    loop {
        let input = strategy.new_tree(&mut runner).unwrap().current();
        if catch_unwind(AssertUnwindSafe(|| check(&input))).is_err() {
            std::panic::set_hook(quiet);
            let shown = format!("{input:?}");
            panic!(
                "{name}: panicked on case {cases} (SPECULA_FUZZ_SEED={seed}) for the input {}",
                &shown[..shown.len().min(4000)]
            );
        }
        cases += 1;
        let done = match budget {
            Some(b) => t0.elapsed() >= b,
            None => cases >= CI_CASES,
        };
        if done {
            break;
        }
    }
    std::panic::set_hook(quiet);
    eprintln!(
        "{name}: {cases} inputs in {:.1} s, no panic (SPECULA_FUZZ_SEED={seed})",
        t0.elapsed().as_secs_f64()
    );
}
