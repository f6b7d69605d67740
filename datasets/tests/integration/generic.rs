//! Generic JSONL and plain-text prompt files.

use crate::common::write;
use specula_datasets::{Format, Prompt, PromptSetSpec};

#[test]
fn plain_text_is_one_prompt_per_non_empty_line() {
    let tmp = tempfile::tempdir().unwrap();
    let path = write(
        tmp.path(),
        "mine.txt",
        "\u{feff}Hello there\r\n\n   \n  Write a limerick.  \nlast line without newline".as_bytes(),
    );
    let set = PromptSetSpec::from_path(&path).load().unwrap();
    assert_eq!(set.format, Format::Text);
    assert_eq!(set.name, "mine");
    assert_eq!(
        set.prompts,
        vec![
            Prompt::new("1", "default", "Hello there"),
            Prompt::new("4", "default", "Write a limerick."),
            Prompt::new("5", "default", "last line without newline"),
        ]
    );
}

#[test]
fn jsonl_reads_prompt_then_text_with_optional_id_and_category() {
    let tmp = tempfile::tempdir().unwrap();
    let content = concat!(
        "{\"id\": \"a\", \"category\": \"chat\", \"prompt\": \"one\"}\n",
        "{\"text\": \"two\"}\n",
        "\n",
        "{\"id\": 9, \"prompt\": [\"three\", \"follow-up\"], \"extra\": true}\n",
    );
    let path = write(tmp.path(), "p.jsonl", content.as_bytes());
    let set = PromptSetSpec::from_path(&path).load().unwrap();
    assert_eq!(set.format, Format::Jsonl);
    let got: Vec<(&str, &str, &str, usize)> = set
        .prompts
        .iter()
        .map(|p| (p.id.as_str(), p.category.as_str(), p.text(), p.turns.len()))
        .collect();
    assert_eq!(
        got,
        [
            ("a", "chat", "one", 1),
            ("2", "default", "two", 1),
            ("9", "default", "three", 2),
        ]
    );
}

#[test]
fn jsonl_field_is_configurable() {
    let tmp = tempfile::tempdir().unwrap();
    let path = write(
        tmp.path(),
        "alpaca.jsonl",
        b"{\"instruction\": \"Name a colour.\", \"prompt\": \"ignored\"}\n",
    );
    let mut spec = PromptSetSpec::from_path(&path);
    spec.field = Some("instruction".to_owned());
    spec.name = Some("alpaca-mini".to_owned());
    let set = spec.load().unwrap();
    assert_eq!(set.name, "alpaca-mini");
    assert_eq!(set.prompts[0].text(), "Name a colour.");
}
