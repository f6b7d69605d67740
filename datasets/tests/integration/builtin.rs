//! The built-in prompt set.

use specula_datasets::{builtin, Format, PromptSetSpec};

#[test]
fn builtin_is_the_default_and_has_8_prompts_per_category() {
    let set = PromptSetSpec::default().load().unwrap();
    assert_eq!(set.name, "builtin");
    assert_eq!(set.source, "builtin");
    assert_eq!(set.format, Format::Jsonl);
    assert_eq!(set.len(), 24);
    assert_eq!(
        set.category_counts(),
        vec![
            ("chat".to_owned(), 8),
            ("code".to_owned(), 8),
            ("math".to_owned(), 8)
        ]
    );
    let mut ids: Vec<&str> = set.prompts.iter().map(|p| p.id.as_str()).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 24);
    for c in builtin::CATEGORIES {
        assert!(set.categories().iter().any(|s| s == c));
    }
}

#[test]
fn builtin_prompts_have_their_category_shape() {
    let set = builtin::prompt_set().unwrap();
    for p in &set.prompts {
        assert_eq!(p.turns.len(), 1);
        let t = p.text();
        match p.category.as_str() {
            "code" => {
                assert!(t.starts_with("def ") || t.starts_with("class "), "{}", p.id);
                assert!(t.contains("\"\"\"") && t.ends_with('\n'), "{}", p.id);
            }
            "math" => {
                assert!(
                    t.starts_with("Question: ") && t.ends_with("\nAnswer:"),
                    "{}",
                    p.id
                );
                assert!(t.chars().any(|c| c.is_ascii_digit()), "{}", p.id);
            }
            "chat" => assert!(!t.contains('\n') && t.len() < 200, "{}", p.id),
            other => panic!("unexpected category {other}"),
        }
    }
}
