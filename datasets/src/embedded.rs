//! The public prompt sets that ship with specula, compiled into the binary
//! so that a sweep names them without a path: `mt-bench`, `spec-bench`,
//! `gsm8k` (the test split) and `humaneval`, each the upstream file byte for
//! byte (`datasets/public/`), with its licence text and where it came from.
//!
//! A spec's `source` names one, optionally with one category after a colon
//! (`spec-bench:translation`); see [`crate::PromptSource`].

use crate::error::Result;
use crate::format::Format;
use crate::loaders;
use crate::prompt::PromptSet;
use std::path::Path;

/// One public prompt set, embedded.
#[derive(Debug, Clone, Copy)]
pub struct EmbeddedSet {
    /// The name a spec's `source` uses (`spec-bench`).
    pub name: &'static str,
    /// The file's name in `datasets/public/`.
    pub file: &'static str,
    /// Its upstream format.
    pub format: Format,
    /// The file, verbatim.
    pub text: &'static str,
    /// Prompts in it.
    pub prompts: usize,
    /// Its licence (SPDX identifier).
    pub licence: &'static str,
    /// The licence's text, verbatim from upstream.
    pub licence_text: &'static str,
    /// Where the file comes from (repository and path).
    pub upstream: &'static str,
    /// The upstream commit the file is identical to.
    pub commit: &'static str,
    /// SHA-256 of the file.
    pub sha256: &'static str,
}

/// Every embedded set, in the order `specula datasets list` shows them.
pub const EMBEDDED: [EmbeddedSet; 4] = [
    EmbeddedSet {
        name: "mt-bench",
        file: "mt_bench.jsonl",
        format: Format::MtBench,
        text: include_str!("../public/mt_bench.jsonl"),
        prompts: 80,
        licence: "Apache-2.0",
        licence_text: include_str!("../public/LICENSE.mt_bench"),
        upstream: "https://github.com/lm-sys/FastChat/blob/main/fastchat/llm_judge/data/mt_bench/question.jsonl",
        commit: "0e6d3e4beaab66f4d3f93db72541a4abab8af28d",
        sha256: "119565adbab82227089cefdb44c8d7e2cf04dc0a0ec233634c82e7d4e2a944f7",
    },
    EmbeddedSet {
        name: "spec-bench",
        file: "spec_bench.jsonl",
        format: Format::SpecBench,
        text: include_str!("../public/spec_bench.jsonl"),
        prompts: 480,
        licence: "Apache-2.0",
        licence_text: include_str!("../public/LICENSE.spec_bench"),
        upstream: "https://github.com/hemingkx/Spec-Bench/blob/main/data/spec_bench/question.jsonl",
        commit: "fd2c1cd7d2201ef71db4c5f4e455008f017967bf",
        sha256: "4b6d33e79484f9841c487ee87d1cf6aa8c6066f61d5d482ff09e5a007fafdf04",
    },
    EmbeddedSet {
        name: "gsm8k",
        file: "gsm8k_test.jsonl",
        format: Format::Gsm8k,
        text: include_str!("../public/gsm8k_test.jsonl"),
        prompts: 1319,
        licence: "MIT",
        licence_text: include_str!("../public/LICENSE.gsm8k"),
        upstream: "https://github.com/openai/grade-school-math/blob/master/grade_school_math/data/test.jsonl",
        commit: "3101c7d5072418e28b9008a6636bde82a006892c",
        sha256: "3730d312f6e3440559ace48831e51066acaca737f6eabec99bccb9e4b3c39d14",
    },
    EmbeddedSet {
        name: "humaneval",
        file: "humaneval.jsonl",
        format: Format::HumanEval,
        text: include_str!("../public/humaneval.jsonl"),
        prompts: 164,
        licence: "MIT",
        licence_text: include_str!("../public/LICENSE.humaneval"),
        upstream: "https://github.com/openai/human-eval/blob/master/data/HumanEval.jsonl.gz (gunzipped)",
        commit: "6d43fb980f9fee3c892a914eda09951f772ad10d",
        sha256: "1d49078ba3e2b196b9344535bef34a43021f038fad9561d6ee7c53450609a6a2",
    },
];

/// The embedded set named `name`.
pub fn embedded(name: &str) -> Option<&'static EmbeddedSet> {
    EMBEDDED.iter().find(|s| s.name == name)
}

impl EmbeddedSet {
    /// The names of the sets, for messages (`mt-bench, spec-bench, ...`).
    pub fn names() -> String {
        EMBEDDED.map(|s| s.name).join(", ")
    }

    /// Parses the whole set, named after it.
    pub fn prompt_set(&self) -> Result<PromptSet> {
        let origin = format!("<{}>/{}", self.name, self.file);
        let prompts = loaders::parse(self.format, Path::new(&origin), self.text, None)?;
        Ok(PromptSet {
            name: self.name.to_owned(),
            format: self.format,
            source: self.name.to_owned(),
            prompts,
        })
    }
}
