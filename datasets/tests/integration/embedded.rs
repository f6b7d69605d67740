//! The public sets compiled into the binary: byte for byte the upstream
//! files (checksums pinned), with their licences, and named by a spec's
//! `source` (optionally with a category) without any path.

use crate::common;

use sha2::{Digest, Sha256};
use specula_datasets::{EmbeddedSet, PromptSetSpec, PromptSource, EMBEDDED};

fn sha256(text: &str) -> String {
    Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[test]
fn every_embedded_set_is_the_upstream_file_byte_for_byte() {
    for set in EMBEDDED {
        assert_eq!(sha256(set.text), set.sha256, "{}: checksum", set.name);
        let on_disk = std::fs::read_to_string(common::public_dir().join(set.file)).unwrap();
        assert!(
            on_disk == set.text,
            "{}: the binary holds datasets/public/{}",
            set.name,
            set.file
        );
        assert_eq!(set.prompt_set().unwrap().len(), set.prompts, "{}", set.name);
        assert!(set.licence_text.len() > 500, "{}: licence text", set.name);
        assert_eq!(set.commit.len(), 40, "{}: a commit", set.name);
    }
}

#[test]
fn a_source_names_an_embedded_set_with_or_without_a_category() {
    let load = |source: &str| {
        PromptSetSpec {
            source: PromptSource::from(source),
            ..PromptSetSpec::default()
        }
        .load()
    };
    let all = load("spec-bench").unwrap();
    assert_eq!((all.name.as_str(), all.len()), ("spec-bench", 480));
    let translation = load("spec-bench:translation").unwrap();
    assert_eq!(translation.name, "spec-bench:translation");
    assert_eq!(translation.len(), 80);
    assert!(translation
        .prompts
        .iter()
        .all(|p| p.category == "translation"));
    assert_eq!(load("gsm8k").unwrap().len(), 1319);
    assert_eq!(load("mt-bench:coding").unwrap().len(), 10);
    assert_eq!(load("humaneval").unwrap().len(), 164);
    let e = load("spec-bench:poetry").unwrap_err().to_string();
    assert!(e.contains("unknown category `poetry`"), "{e}");
}

#[test]
fn a_path_that_is_not_a_set_name_stays_a_path() {
    assert_eq!(
        PromptSource::from("./gsm8k"),
        PromptSource::Path("./gsm8k".into())
    );
    assert_eq!(
        PromptSource::from("gsm8k_test.jsonl"),
        PromptSource::Path("gsm8k_test.jsonl".into())
    );
    assert_eq!(PromptSource::from("gsm8k").to_string(), "gsm8k");
    assert!(EmbeddedSet::names().contains("spec-bench"));
}
