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

/// Which shell quoting is open at a point of a script.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Quoting {
    /// Outside quotes.
    Bare,
    /// Inside `'...'`.
    Single,
    /// Inside `"..."`.
    Double,
}

/// `value` written so that a POSIX shell reads it back literally where
/// `quoting` is open: no expansion, no word splitting.
fn shell_quoted(value: &str, quoting: Quoting) -> String {
    match quoting {
        Quoting::Bare => format!("'{}'", value.replace('\'', r"'\''")),
        Quoting::Single => value.replace('\'', r"'\''"),
        Quoting::Double => value
            .chars()
            .flat_map(|c| match c {
                '"' | '\\' | '$' | '`' => vec!['\\', c],
                c => vec![c],
            })
            .collect(),
    }
}

/// Replaces every `{key}` of `vars` in `text` in one pass (a value is never
/// scanned again, so a `{port}` inside a model name stays as it is), each
/// value written by `write` for the shell quoting open where it stands
/// (tracked only when `script`; otherwise everything is `Bare`).
fn fill_with(
    text: &str,
    vars: &BTreeMap<&str, String>,
    script: bool,
    write: impl Fn(&str, Quoting) -> String,
) -> String {
    let mut out = String::with_capacity(text.len());
    let mut quoting = Quoting::Bare;
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        let placeholder = rest
            .strip_prefix('{')
            .and_then(|r| r.split_once('}'))
            .and_then(|(name, after)| vars.get(name).map(|v| (v, after)));
        if let Some((value, after)) = placeholder {
            out.push_str(&write(value, quoting));
            rest = after;
            continue;
        }
        rest = &rest[c.len_utf8()..];
        out.push(c);
        if !script {
            continue;
        }
        match (quoting, c) {
            (Quoting::Bare, '\'') => quoting = Quoting::Single,
            (Quoting::Bare, '"') => quoting = Quoting::Double,
            (Quoting::Single, '\'') | (Quoting::Double, '"') => quoting = Quoting::Bare,
            (Quoting::Bare | Quoting::Double, '\\') => {
                // The escaped character is copied as it is.
                if let Some(next) = rest.chars().next() {
                    out.push(next);
                    rest = &rest[next.len_utf8()..];
                }
            }
            _ => {}
        }
    }
    out
}

/// Replaces every `{key}` of `vars` in `word`, in one pass.
pub fn fill(word: &str, vars: &BTreeMap<&str, String>) -> String {
    fill_with(word, vars, false, |v, _| v.to_string())
}

/// Replaces every `{key}` of `vars` in a shell script (the word after
/// `sh -c`), each value quoted for where it stands, so a path holding
/// `$(...)`, backticks or quotes is a path, not a command.
pub fn fill_script(script: &str, vars: &BTreeMap<&str, String>) -> String {
    fill_with(script, vars, true, shell_quoted)
}

/// Where the script of a shell command is (`sh -c SCRIPT`, `bash -ec
/// SCRIPT`, ...): the index of the word after the `-c` option, if any.
fn script_index(words: &[String]) -> Option<usize> {
    let program = words.first()?.rsplit('/').next()?;
    if !["sh", "bash", "dash", "zsh", "ksh", "ash"].contains(&program) {
        return None;
    }
    words
        .iter()
        .skip(1)
        .position(|w| w.starts_with('-') && !w.starts_with("--") && w.contains('c'))
        .map(|i| i + 2)
        .filter(|&i| i < words.len())
}

/// The words of `template` (and `extra`, when given) with placeholders
/// filled; in a shell command's script, shell-quoted ([`fill_script`]).
pub fn expand(
    template: &str,
    extra: Option<&str>,
    vars: &BTreeMap<&str, String>,
) -> Result<Vec<String>, String> {
    let mut words = split(template)?;
    if let Some(e) = extra {
        words.extend(split(e)?);
    }
    let script = script_index(&words);
    Ok(words
        .iter()
        .enumerate()
        .map(|(i, w)| {
            if Some(i) == script {
                fill_script(w, vars)
            } else {
                fill(w, vars)
            }
        })
        .collect())
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

    /// What `sh` prints for the script `expand` makes of `template`.
    fn run_sh(template: &str, vars: &BTreeMap<&str, String>) -> String {
        let words = expand(template, None, vars).unwrap();
        let out = std::process::Command::new(&words[0])
            .args(&words[1..])
            .output()
            .unwrap();
        String::from_utf8(out.stdout).unwrap()
    }

    #[test]
    fn regression_a_target_path_holding_command_substitution_ran_in_the_shell() {
        let t = tempfile::tempdir().unwrap();
        let pwned = t.path().join("pwned");
        let nasty = format!(
            "m/$(touch {p})/`touch {p}`/it's \\\"q\\\" $HOME",
            p = pwned.display()
        );
        let vars = BTreeMap::from([("target", nasty.clone())]);
        for template in [
            "sh -c 'printf %s {target}'",
            "sh -c 'printf %s \"{target}\"'",
            "sh -c \"printf %s '{target}'\"",
            "/bin/sh -ec 'x={target}; printf %s \"$x\"'",
        ] {
            assert_eq!(run_sh(template, &vars), nasty, "{template}");
        }
        assert!(!pwned.exists(), "nothing in the value was run");
    }

    #[test]
    fn regression_a_port_placeholder_inside_the_model_value_was_expanded_twice() {
        let vars = BTreeMap::from([
            ("model", "org/m-{port}".to_string()),
            ("port", "30000".to_string()),
        ]);
        assert_eq!(
            expand("serve {model} --port {port}", None, &vars).unwrap(),
            vec!["serve", "org/m-{port}", "--port", "30000"]
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
