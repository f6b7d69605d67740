//! Helpers of the served-backend tests: the committed tiny-llama pair, a
//! sweep spec on it, running a sweep, and whether a process is alive.

use super::specula_in;
use std::path::{Path, PathBuf};

/// The committed tiny-llama target folder (its draft is `eagle3` inside).
pub fn models() -> PathBuf {
    super::repo().join("models/tiny-llama")
}

/// The binary under test (the command templates run its `serve`).
pub const BIN: &str = env!("CARGO_BIN_EXE_specula");
/// The spec tables of `sample` built-in prompts and the tiny-llama pair (named `tiny`).
pub fn prompts_and_tiny_pair(sample: usize) -> String {
    let m = models();
    format!(
        r#"
[[prompt_sets]]
sample = {sample}

[[models]]
name = "tiny"
target = "{}"
draft = "{}"
chat_template = "none"
"#,
        m.display(),
        m.join("eagle3").display()
    )
}

/// A spec on tiny-llama: baseline + two chains and a tree, batch 1 and 2, 3 prompts, 10 tokens.
pub fn body(backend_and_server: &str) -> String {
    format!(
        r#"
name = "served"
max_new_tokens = 10
batch_sizes = [1, 2]
warmup = 0
{backend_and_server}

[[drafts]]
steps = [1, 3]

[[drafts]]
steps = 2
topk = 2
num_draft_tokens = 4
{}"#,
        prompts_and_tiny_pair(3)
    )
}

/// Writes `text` as `dir/name` and sweeps it into `dir/<name without .toml>`, quietly.
pub fn sweep(dir: &Path, name: &str, text: &str) -> std::process::Output {
    std::fs::write(dir.join(name), text).unwrap();
    specula_in(
        dir,
        &[
            "sweep",
            name,
            "--out",
            name.trim_end_matches(".toml"),
            "--quiet",
        ],
    )
}

/// Whether `pid` is a live (not zombie) process.
pub fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| !s.split(") ").nth(1).unwrap_or("").starts_with('Z'))
        .unwrap_or(false)
}

/// Whether the tiny-llama pair is in this checkout (else the test is skipped).
pub fn have_models() -> bool {
    let ok = models().join("config.json").exists();
    if !ok {
        eprintln!("SKIPPED: models/tiny-llama is not in this checkout");
    }
    ok
}

/// A `specula serve` process on a free loopback port, killed on drop.
pub struct Serving {
    child: std::process::Child,
    /// `http://127.0.0.1:PORT`.
    pub url: String,
}

impl Serving {
    /// `specula serve` of the tiny-llama pair drafting `steps` deep, with `extra` flags.
    pub fn tiny(cwd: &Path, steps: &str, extra: &[&str]) -> Serving {
        let (m, draft) = (models(), models().join("eagle3"));
        let mut args = vec![
            "--target",
            m.to_str().unwrap(),
            "--draft",
            draft.to_str().unwrap(),
            "--steps",
            steps,
        ];
        args.extend_from_slice(extra);
        Serving::start(cwd, &args)
    }

    /// Starts `specula serve ARGS --port 0` in `cwd` and returns once it
    /// listens, on the port its `listening on` line names (the system picks
    /// it: no race with other tests' servers for a port found free).
    pub fn start(cwd: &Path, args: &[&str]) -> Serving {
        use std::io::BufRead;
        let mut all = vec!["serve"];
        all.extend_from_slice(args);
        all.extend_from_slice(&["--port", "0"]);
        let mut child = super::command(cwd, &all)
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = std::io::BufReader::new(child.stderr.take().unwrap()).lines();
        let url = loop {
            let line = lines
                .next()
                .unwrap_or_else(|| panic!("specula serve {args:?} exited before listening"))
                .unwrap();
            if let Some(rest) = line.split("listening on ").nth(1) {
                break rest.split_whitespace().next().unwrap().to_string();
            }
        };
        // Keep draining its stderr, so that it never blocks on a full pipe.
        std::thread::spawn(move || lines.for_each(drop));
        Serving { child, url }
    }
}

impl Serving {
    /// The server's loopback port.
    pub fn port(&self) -> u16 {
        self.url.rsplit(':').next().unwrap().parse().unwrap()
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// A line of the server's `/proc/PID/status` (`VmRSS`, `Threads`) as a number.
    pub fn status_field(&self, name: &str) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid())).unwrap();
        let line = status
            .lines()
            .find(|l| l.starts_with(&format!("{name}:")))
            .unwrap_or_else(|| panic!("no {name} in /proc status"));
        line.split_whitespace().nth(1).unwrap().parse().unwrap()
    }

    /// Whether the server process is still running.
    pub fn running(&mut self) -> bool {
        self.child.try_wait().unwrap().is_none()
    }
}

impl Drop for Serving {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
