//! Launch-command templates: split into words like a POSIX shell would
//! (single quotes, double quotes, backslashes; no expansions), then
//! `{name}` placeholders replaced inside each word, so a JSON argument such as
//! `'{"method": "eagle3", "model": "{draft}"}'` stays one word. Braces that
//! do not name a known placeholder are left alone.

use std::collections::BTreeMap;

/// Splits `s` into words; an unclosed quote is an error.
pub fn split(s: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(x) => cur.push(x),
                        None => return Err("unclosed single quote".into()),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(x @ ('"' | '\\' | '$' | '`')) => cur.push(x),
                            Some(x) => {
                                cur.push('\\');
                                cur.push(x);
                            }
                            None => return Err("unclosed double quote".into()),
                        },
                        Some(x) => cur.push(x),
                        None => return Err("unclosed double quote".into()),
                    }
                }
            }
            '\\' => {
                in_word = true;
                match chars.next() {
                    Some('\n') => {}
                    Some(x) => cur.push(x),
                    None => return Err("a trailing backslash".into()),
                }
            }
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            c => {
                in_word = true;
                cur.push(c);
            }
        }
    }
    if in_word {
        words.push(cur);
    }
    Ok(words)
}

/// Replaces every `{key}` of `vars` in `word`.
pub fn fill(word: &str, vars: &BTreeMap<&str, String>) -> String {
    let mut out = word.to_string();
    for (k, v) in vars {
        out = out.replace(&format!("{{{k}}}"), v);
    }
    out
}

/// The words of `template` (and `extra`, when given) with placeholders filled.
pub fn expand(
    template: &str,
    extra: Option<&str>,
    vars: &BTreeMap<&str, String>,
) -> Result<Vec<String>, String> {
    let mut words = split(template)?;
    if let Some(e) = extra {
        words.extend(split(e)?);
    }
    Ok(words.iter().map(|w| fill(w, vars)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_keep_json_in_one_word_and_placeholders_are_filled_inside() {
        let vars = BTreeMap::from([("draft", "d/e 3".to_string()), ("steps", "5".to_string())]);
        let w = expand(
            "vllm serve m --speculative-config '{\"method\": \"eagle3\", \"model\": \"{draft}\", \"num_speculative_tokens\": {steps}}'",
            Some("--x \"a b\" c\\ d {unknown}"),
            &vars,
        )
        .unwrap();
        assert_eq!(
            w,
            vec![
                "vllm",
                "serve",
                "m",
                "--speculative-config",
                "{\"method\": \"eagle3\", \"model\": \"d/e 3\", \"num_speculative_tokens\": 5}",
                "--x",
                "a b",
                "c d",
                "{unknown}",
            ]
        );
    }

    #[test]
    fn unclosed_quotes_are_errors() {
        assert!(split("a 'b").is_err());
        assert!(split("a \"b").is_err());
        assert_eq!(split("  ").unwrap(), Vec::<String>::new());
        assert_eq!(split("''").unwrap(), vec![String::new()]);
    }
}
