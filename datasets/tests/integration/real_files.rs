//! Loads the real upstream files, as the repository keeps them in
//! `datasets/public/` (read from disk, so the file loaders are what is tested).

use crate::common;

use crate::common::public_dir;
use specula_datasets::{Format, PromptSetSpec};

fn counts(set: &specula_datasets::PromptSet) -> Vec<(String, usize)> {
    set.category_counts()
}

fn owned(v: &[(&str, usize)]) -> Vec<(String, usize)> {
    v.iter().map(|(c, n)| ((*c).to_owned(), *n)).collect()
}

#[test]
fn mt_bench_has_80_two_turn_questions_in_8_categories() {
    let dir = public_dir();
    let set = PromptSetSpec::from_path(dir.join("mt_bench.jsonl"))
        .load()
        .unwrap();
    assert_eq!(set.name, "mt_bench");
    assert_eq!(set.format, Format::MtBench);
    assert_eq!(set.len(), 80);
    assert_eq!(
        counts(&set),
        owned(&[
            ("coding", 10),
            ("extraction", 10),
            ("humanities", 10),
            ("math", 10),
            ("reasoning", 10),
            ("roleplay", 10),
            ("stem", 10),
            ("writing", 10),
        ])
    );
    assert!(set.prompts.iter().all(|p| p.turns.len() == 2));
    let first = &set.prompts[0];
    assert_eq!(first.id, "81");
    assert!(first
        .text()
        .starts_with("Compose an engaging travel blog post"));
    assert_eq!(set.prompts[79].id, "160");
}

#[test]
fn spec_bench_has_480_questions_in_6_categories() {
    let dir = public_dir();
    let set = PromptSetSpec::from_path(dir.join("spec_bench.jsonl"))
        .load()
        .unwrap();
    assert_eq!(set.format, Format::SpecBench);
    assert_eq!(set.len(), 480);
    assert_eq!(
        counts(&set),
        owned(&[
            ("math_reasoning", 80),
            ("mt_bench", 80),
            ("qa", 80),
            ("rag", 80),
            ("summarization", 80),
            ("translation", 80),
        ])
    );
    // MT-bench's questions keep their own category as the subcategory.
    assert_eq!(set.subcategories().len(), 8);
    let mt = set.prompts.iter().filter(|p| p.category == "mt_bench");
    assert!(mt
        .clone()
        .all(|p| p.subcategory.is_some() && p.turns.len() == 2));
    assert_eq!(mt.count(), 80);
    let translation = set
        .prompts
        .iter()
        .find(|p| p.category == "translation")
        .unwrap();
    assert_eq!(translation.id, "161");
    assert!(translation
        .text()
        .starts_with("Translate German to English:"));
}

#[test]
fn spec_bench_filters_by_category_and_subcategory() {
    let dir = public_dir();
    let path = dir.join("spec_bench.jsonl");
    let set = PromptSetSpec::from_path(&path)
        .with_categories(["translation", "qa"])
        .load()
        .unwrap();
    assert_eq!(set.len(), 160);
    assert_eq!(
        set.categories(),
        vec!["qa".to_owned(), "translation".to_owned()]
    );
    let writing = PromptSetSpec::from_path(&path)
        .with_categories(["writing"])
        .load()
        .unwrap();
    assert_eq!(writing.len(), 10);
    assert!(writing.prompts.iter().all(|p| p.category == "mt_bench"));
    let rag = PromptSetSpec::from_path(&path)
        .with_categories(["RAG"])
        .with_sample(16, 3)
        .load()
        .unwrap();
    assert_eq!(rag.len(), 16);
    assert!(rag.prompts.iter().all(|p| p.category == "rag"));
}

#[test]
fn spec_bench_unknown_category_lists_valid_ones() {
    let dir = public_dir();
    let err = PromptSetSpec::from_path(dir.join("spec_bench.jsonl"))
        .with_categories(["poetry"])
        .load()
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        "prompt set `spec_bench`: unknown category `poetry`; valid categories: coding, \
         extraction, humanities, math, math_reasoning, mt_bench, qa, rag, reasoning, roleplay, \
         stem, summarization, translation, writing"
    );
}

#[test]
fn gsm8k_test_has_1319_questions() {
    let dir = public_dir();
    let set = PromptSetSpec::from_path(dir.join("gsm8k_test.jsonl"))
        .load()
        .unwrap();
    assert_eq!(set.format, Format::Gsm8k);
    assert_eq!(set.len(), 1319);
    assert_eq!(set.categories(), vec!["math".to_owned()]);
    assert_eq!(set.prompts[0].id, "1");
    assert!(set.prompts[0]
        .text()
        .starts_with("Janet\u{2019}s ducks lay 16 eggs per day."));
    // The prompt is the question only, never the answer.
    assert!(set.prompts.iter().all(|p| !p.text().contains("####")));
    let train = PromptSetSpec::from_path(dir.join("gsm8k_train.jsonl"))
        .load()
        .unwrap();
    assert_eq!(train.len(), 7473);
}

#[test]
fn humaneval_has_164_code_prompts() {
    let dir = public_dir();
    let set = PromptSetSpec::from_path(dir.join("humaneval.jsonl"))
        .load()
        .unwrap();
    assert_eq!(set.format, Format::HumanEval);
    assert_eq!(set.len(), 164);
    assert_eq!(set.categories(), vec!["code".to_owned()]);
    assert_eq!(set.prompts[0].id, "HumanEval/0");
    assert!(set.prompts[0]
        .text()
        .starts_with("from typing import List\n\n\ndef has_close_elements("));
    assert_eq!(set.prompts[163].id, "HumanEval/163");
    assert!(set.prompts.iter().all(|p| p.text().ends_with('\n')));
}

#[test]
fn detection_uses_content_not_just_names() {
    let dir = public_dir();
    let tmp = tempfile::tempdir().unwrap();
    for (file, format) in [
        ("mt_bench.jsonl", Format::MtBench),
        ("spec_bench.jsonl", Format::SpecBench),
        ("gsm8k_test.jsonl", Format::Gsm8k),
        ("humaneval.jsonl", Format::HumanEval),
    ] {
        let content = std::fs::read(dir.join(file)).unwrap();
        let neutral = common::write(tmp.path(), "questions.jsonl", &content);
        let set = PromptSetSpec::from_path(&neutral).load().unwrap();
        assert_eq!(set.format, format, "{file} copied to questions.jsonl");
        assert_eq!(set.name, "questions");
    }
}

#[test]
fn explicit_format_overrides_detection() {
    let dir = public_dir();
    // Spec-Bench read as MT-bench keeps the raw 13 categories.
    let set = PromptSetSpec::from_path(dir.join("spec_bench.jsonl"))
        .with_format(Format::MtBench)
        .load()
        .unwrap();
    assert_eq!(set.categories().len(), 13);
    // HumanEval read as generic JSONL uses its `prompt` field.
    let set = PromptSetSpec::from_path(dir.join("humaneval.jsonl"))
        .with_format(Format::Jsonl)
        .load()
        .unwrap();
    assert_eq!(set.len(), 164);
    assert_eq!(set.categories(), vec!["default".to_owned()]);
}
