//! Every bad input gives an error naming the file, the line and the field.

use crate::common::{err_msg, write};
use specula_datasets::{Format, PromptSetSpec};

const GOOD_MT: &str = r#"{"question_id": 1, "category": "writing", "turns": ["a", "b"]}"#;

#[test]
fn malformed_json_names_file_and_line() {
    let tmp = tempfile::tempdir().unwrap();
    let content = format!(
        "{GOOD_MT}\n\n{}\n",
        r#"{"question_id": 3, "category": "writing", "turns": ["x"]"#
    );
    let path = write(tmp.path(), "mt_bench.jsonl", content.as_bytes());
    let msg = err_msg(PromptSetSpec::from_path(&path).load());
    assert_eq!(
        msg,
        format!(
            "{}:3: malformed JSON: EOF while parsing an object (column 56)",
            path.display()
        )
    );
}

#[test]
fn a_line_that_is_not_an_object_is_rejected() {
    let tmp = tempfile::tempdir().unwrap();
    let path = write(tmp.path(), "p.jsonl", b"{\"prompt\": \"hi\"}\n[1, 2]\n");
    let msg = err_msg(PromptSetSpec::from_path(&path).load());
    assert_eq!(
        msg,
        format!(
            "{}:2: malformed JSON: expected a JSON object, found an array",
            path.display()
        )
    );
}

#[test]
fn missing_field_names_line_and_field() {
    let tmp = tempfile::tempdir().unwrap();
    let cases: [(&str, &str, usize, &str); 5] = [
        (
            "gsm8k.jsonl",
            "{\"question\": \"q1\", \"answer\": \"1\"}\n{\"question\": \"q2\"}\n",
            2,
            "answer",
        ),
        (
            "humaneval.jsonl",
            "{\"task_id\": \"H/0\", \"prompt\": \"def f():\\n\"}\n\n\n{\"task_id\": \"H/1\"}\n",
            4,
            "prompt",
        ),
        (
            "mt_bench.jsonl",
            &format!("{GOOD_MT}\n{{\"question_id\": 2, \"turns\": [\"x\"]}}\n"),
            2,
            "category",
        ),
        (
            "p.jsonl",
            "{\"prompt\": \"a\"}\n{\"body\": \"b\"}\n",
            2,
            "prompt",
        ),
        ("p2.jsonl", "{\"text\": \"a\"}\n{\"id\": 7}\n", 2, "prompt"),
    ];
    for (name, content, line, field) in cases {
        let path = write(tmp.path(), name, content.as_bytes());
        let msg = err_msg(PromptSetSpec::from_path(&path).load());
        assert_eq!(
            msg,
            format!("{}:{line}: missing field `{field}`", path.display()),
            "{name}"
        );
    }
}

#[test]
fn configured_jsonl_field_is_required() {
    let tmp = tempfile::tempdir().unwrap();
    let path = write(
        tmp.path(),
        "q.jsonl",
        b"{\"instruction\": \"a\"}\n{\"prompt\": \"b\"}\n",
    );
    let mut spec = PromptSetSpec::from_path(&path).with_format(Format::Jsonl);
    spec.field = Some("instruction".to_owned());
    let msg = err_msg(spec.load());
    assert_eq!(
        msg,
        format!("{}:2: missing field `instruction`", path.display())
    );
}

#[test]
fn wrong_field_types_are_named() {
    let tmp = tempfile::tempdir().unwrap();
    let cases = [
        (
            r#"{"question_id": 1, "category": "writing", "turns": "one"}"#,
            "field `turns` must be an array of strings, found a string",
        ),
        (
            r#"{"question_id": 1, "category": "writing", "turns": []}"#,
            "field `turns` is an empty array; it needs at least one turn",
        ),
        (
            r#"{"question_id": 1, "category": "writing", "turns": ["a", 2]}"#,
            "field `turns` turn 1 must be a string, found a number",
        ),
        (
            r#"{"question_id": 1.5, "category": "writing", "turns": ["a"]}"#,
            "field `question_id` must be a string or an integer, found a number",
        ),
        (
            r#"{"question_id": 1, "category": "  ", "turns": ["a"]}"#,
            "field `category` is empty",
        ),
    ];
    for (line2, problem) in cases {
        let path = write(
            tmp.path(),
            "mt_bench.jsonl",
            format!("{GOOD_MT}\n{line2}\n").as_bytes(),
        );
        let msg = err_msg(PromptSetSpec::from_path(&path).load());
        assert_eq!(msg, format!("{}:2: {problem}", path.display()));
    }
}

#[test]
fn empty_files_are_rejected() {
    let tmp = tempfile::tempdir().unwrap();
    for (name, content, format) in [
        ("empty.jsonl", "", None),
        ("blank.txt", "\n   \n\t\n", None),
        ("blank.jsonl", "\n\n", Some(Format::Gsm8k)),
        ("blank2.txt", "\n", Some(Format::Text)),
    ] {
        let path = write(tmp.path(), name, content.as_bytes());
        let mut spec = PromptSetSpec::from_path(&path);
        spec.format = format;
        let msg = err_msg(spec.load());
        assert_eq!(
            msg,
            format!("{}: empty file: no prompts found", path.display())
        );
    }
}

#[test]
fn missing_and_non_utf8_files() {
    let tmp = tempfile::tempdir().unwrap();
    let missing = tmp.path().join("nope.jsonl");
    let msg = err_msg(PromptSetSpec::from_path(&missing).load());
    assert!(
        msg.starts_with(&format!("{}: cannot read: ", missing.display())),
        "{msg}"
    );

    let path = write(tmp.path(), "bad.txt", b"fine\nbad \xff byte\n");
    let msg = err_msg(PromptSetSpec::from_path(&path).load());
    assert_eq!(msg, format!("{}:2: not valid UTF-8 text", path.display()));
}

#[test]
fn unknown_category_lists_valid_ones() {
    let msg = err_msg(
        PromptSetSpec::builtin()
            .with_categories(["code", "poetry"])
            .load(),
    );
    assert_eq!(
        msg,
        "prompt set `builtin`: unknown category `poetry`; valid categories: chat, code, math"
    );
}

#[test]
fn sample_larger_than_the_set_says_so() {
    let msg = err_msg(PromptSetSpec::builtin().with_sample(25, 1).load());
    assert_eq!(
        msg,
        "prompt set `builtin`: sample size 25 is larger than the set, which has only 24 prompts"
    );
    let msg = err_msg(
        PromptSetSpec::builtin()
            .with_categories(["math"])
            .with_sample(9, 1)
            .load(),
    );
    assert_eq!(
        msg,
        "prompt set `builtin`: sample size 9 is larger than the set, which has only 8 prompts \
         after the category filter"
    );
    let msg = err_msg(PromptSetSpec::builtin().with_sample(0, 1).load());
    assert_eq!(msg, "prompt set `builtin`: sample size must be at least 1");
}

#[test]
fn unknown_format_name_lists_valid_ones() {
    let msg = err_msg("parquet".parse::<Format>());
    assert_eq!(
        msg,
        "unknown prompt-set format `parquet`; valid formats: mt-bench, spec-bench, gsm8k, \
         humaneval, jsonl, text"
    );
    let msg = serde_json::from_str::<PromptSetSpec>(r#"{"format": "csv"}"#)
        .unwrap_err()
        .to_string();
    assert!(msg.contains("unknown prompt-set format `csv`"), "{msg}");
}
