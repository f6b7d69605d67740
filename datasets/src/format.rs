//! Prompt-set file formats and their auto-detection.

use std::fmt;
use std::path::Path;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::error::{DatasetError, Result};

/// The upstream format of a prompt-set file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum Format {
    /// FastChat's MT-bench `question.jsonl`: `question_id`, `category`, `turns[]`.
    MtBench,
    /// Spec-Bench's `question.jsonl`: the MT-bench shape, 6 task categories.
    SpecBench,
    /// GSM8K (openai/grade-school-math): `question`, `answer`.
    Gsm8k,
    /// HumanEval (openai/human-eval): `task_id`, `prompt`, ...
    HumanEval,
    /// Generic JSONL: one object per line, the prompt in a configurable field.
    Jsonl,
    /// Plain text: one prompt per non-empty line.
    Text,
}

impl Format {
    /// Every format, in the order of [`Format::NAMES`].
    pub const ALL: [Format; 6] = [
        Format::MtBench,
        Format::SpecBench,
        Format::Gsm8k,
        Format::HumanEval,
        Format::Jsonl,
        Format::Text,
    ];

    /// The canonical names accepted by [`Format::from_str`] (which also
    /// accepts `_` for `-` and any letter case).
    pub const NAMES: [&'static str; 6] = [
        "mt-bench",
        "spec-bench",
        "gsm8k",
        "humaneval",
        "jsonl",
        "text",
    ];

    /// The canonical name of this format, e.g. `"spec-bench"`.
    pub fn name(self) -> &'static str {
        match self {
            Format::MtBench => "mt-bench",
            Format::SpecBench => "spec-bench",
            Format::Gsm8k => "gsm8k",
            Format::HumanEval => "humaneval",
            Format::Jsonl => "jsonl",
            Format::Text => "text",
        }
    }

    /// Detects the format of `file` from its content, using its name only to
    /// tell MT-bench from Spec-Bench (which share one record shape).
    ///
    /// Rules, in order:
    /// 1. the first non-empty line is a JSON object with `question_id` and
    ///    `turns`: Spec-Bench if the file name contains `spec`, MT-bench if it
    ///    contains `mt_bench` (or `mt-bench`, `mtbench`), otherwise Spec-Bench when any record has one of
    ///    Spec-Bench's own categories (`translation`, `summarization`, `qa`,
    ///    `math_reasoning`, `rag`), else MT-bench;
    /// 2. an object with `task_id` and `prompt`: HumanEval;
    /// 3. an object with `question` and `answer`: GSM8K;
    /// 4. any other object: generic JSONL;
    /// 5. not JSON, but the file name ends in `.jsonl` or `.json`: generic
    ///    JSONL (loading it then reports the malformed line);
    /// 6. otherwise: plain text.
    pub fn detect(file: &Path, content: &str) -> Result<Format> {
        let Some(first) = content.lines().map(str::trim).find(|l| !l.is_empty()) else {
            return Err(DatasetError::Empty {
                file: file.to_path_buf(),
            });
        };
        let name = file
            .file_name()
            .map(|n| n.to_string_lossy().to_ascii_lowercase())
            .unwrap_or_default();
        match serde_json::from_str::<serde_json::Value>(first) {
            Ok(serde_json::Value::Object(obj)) => {
                let has = |k: &str| obj.contains_key(k);
                if has("question_id") && has("turns") {
                    Ok(detect_fastchat(&name, content))
                } else if has("task_id") && has("prompt") {
                    Ok(Format::HumanEval)
                } else if has("question") && has("answer") {
                    Ok(Format::Gsm8k)
                } else {
                    Ok(Format::Jsonl)
                }
            }
            _ if name.ends_with(".jsonl") || name.ends_with(".json") => Ok(Format::Jsonl),
            _ => Ok(Format::Text),
        }
    }
}

/// Spec-Bench's categories that MT-bench does not have.
const SPEC_BENCH_ONLY: [&str; 5] = [
    "translation",
    "summarization",
    "qa",
    "math_reasoning",
    "rag",
];

fn detect_fastchat(lower_name: &str, content: &str) -> Format {
    if lower_name.contains("spec") {
        return Format::SpecBench;
    }
    if ["mt_bench", "mt-bench", "mtbench"]
        .iter()
        .any(|m| lower_name.contains(m))
    {
        return Format::MtBench;
    }
    let spec_only = content.lines().any(|line| {
        serde_json::from_str::<serde_json::Value>(line)
            .ok()
            .and_then(|v| {
                v.get("category")
                    .and_then(|c| c.as_str())
                    .map(str::to_owned)
            })
            .is_some_and(|c| SPEC_BENCH_ONLY.contains(&c.as_str()))
    });
    if spec_only {
        Format::SpecBench
    } else {
        Format::MtBench
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Format {
    type Err = DatasetError;

    fn from_str(s: &str) -> Result<Self> {
        let norm = s.trim().to_ascii_lowercase().replace('_', "-");
        let found = match norm.as_str() {
            "mtbench" => Some(Format::MtBench),
            "specbench" => Some(Format::SpecBench),
            "human-eval" => Some(Format::HumanEval),
            "txt" => Some(Format::Text),
            other => Format::ALL.into_iter().find(|f| f.name() == other),
        };
        found.ok_or_else(|| DatasetError::FormatName { name: s.to_owned() })
    }
}

impl TryFrom<String> for Format {
    type Error = DatasetError;

    fn try_from(s: String) -> Result<Self> {
        s.parse()
    }
}

impl From<Format> for String {
    fn from(f: Format) -> String {
        f.name().to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for f in Format::ALL {
            assert_eq!(f.name().parse::<Format>().ok(), Some(f));
        }
        assert_eq!("SPEC_BENCH".parse::<Format>().ok(), Some(Format::SpecBench));
        assert_eq!("human-eval".parse::<Format>().ok(), Some(Format::HumanEval));
        let err = "csv".parse::<Format>().err().map(|e| e.to_string());
        assert_eq!(
            err.as_deref(),
            Some("unknown prompt-set format `csv`; valid formats: mt-bench, spec-bench, gsm8k, humaneval, jsonl, text")
        );
    }

    #[test]
    fn detects_from_content() {
        let p = Path::new("x.jsonl");
        let d = |c: &str| Format::detect(p, c).ok();
        assert_eq!(
            d(r#"{"task_id":"a","prompt":"def f():"}"#),
            Some(Format::HumanEval)
        );
        assert_eq!(d(r#"{"question":"q","answer":"a"}"#), Some(Format::Gsm8k));
        assert_eq!(d(r#"{"prompt":"hi"}"#), Some(Format::Jsonl));
        assert_eq!(d("not json"), Some(Format::Jsonl));
        let fc = r#"{"question_id":1,"category":"writing","turns":["a"]}"#;
        assert_eq!(d(fc), Some(Format::MtBench));
        let sb = format!(
            "{fc}\n{}",
            r#"{"question_id":2,"category":"rag","turns":["b"]}"#
        );
        assert_eq!(d(&sb), Some(Format::SpecBench));
        assert_eq!(
            Format::detect(Path::new("spec_q.jsonl"), fc).ok(),
            Some(Format::SpecBench)
        );
        assert_eq!(
            Format::detect(Path::new("prompts.txt"), "hello\nworld").ok(),
            Some(Format::Text)
        );
        assert!(matches!(
            Format::detect(p, "\n  \n"),
            Err(DatasetError::Empty { .. })
        ));
    }
}
