//! Chat templates from Hugging Face tokenizer configs, rendered with minijinja.
//!
//! The environment mirrors what `transformers` sets up for `apply_chat_template`:
//! `trim_blocks` and `lstrip_blocks` on, `{% break %}`/`{% continue %}`, the
//! `tojson` filter, Python string/list/dict methods (`.strip()`,
//! `.startswith()`, `.items()`, ... through minijinja-contrib's `pycompat`),
//! and the globals `raise_exception(msg)` and `strftime_now(fmt)`.
//!
//! `strftime_now` does not read the clock: it formats the fixed date
//! 26 July 2024 (the date Llama 3.1's template uses by default), so that a
//! rendered prompt, and so every benchmark number, is the same on every day.
//!
//! The rendered text contains whatever special tokens the template writes
//! (Llama 3's writes `{{ bos_token }}`): tokenize it without adding special
//! tokens again, or the sequence starts with two BOS tokens.

use std::collections::BTreeMap;
use std::path::Path;

use minijinja::value::Value;
use minijinja::{Environment, ErrorKind};

use crate::error::{DatasetError, Result};
use crate::prompt::Prompt;

/// The name the template is stored under in the environment.
const TEMPLATE_NAME: &str = "chat_template";

/// The file `transformers` writes beside `tokenizer_config.json` when it saves
/// the template separately.
pub const JINJA_FILE: &str = "chat_template.jinja";

/// One message of a conversation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChatMessage {
    /// `system`, `user` or `assistant`.
    pub role: String,
    /// The message text.
    pub content: String,
}

impl ChatMessage {
    /// A message with any role.
    pub fn new(role: impl Into<String>, content: impl Into<String>) -> Self {
        ChatMessage {
            role: role.into(),
            content: content.into(),
        }
    }

    /// A `user` message.
    pub fn user(content: impl Into<String>) -> Self {
        ChatMessage::new("user", content)
    }

    /// A `system` message.
    pub fn system(content: impl Into<String>) -> Self {
        ChatMessage::new("system", content)
    }

    /// An `assistant` message.
    pub fn assistant(content: impl Into<String>) -> Self {
        ChatMessage::new("assistant", content)
    }
}

/// A parsed chat template with the special tokens it is rendered with.
#[derive(Debug, Clone)]
pub struct ChatTemplate {
    env: Environment<'static>,
    source: String,
    bos_token: String,
    eos_token: String,
    origin: String,
}

impl ChatTemplate {
    /// Parses `source` (Jinja) for rendering with the given special tokens.
    /// Errors name the template `<string>`.
    pub fn new(
        source: impl Into<String>,
        bos_token: impl Into<String>,
        eos_token: impl Into<String>,
    ) -> Result<Self> {
        Self::with_origin(
            source.into(),
            bos_token.into(),
            eos_token.into(),
            "<string>".to_owned(),
        )
    }

    fn with_origin(
        source: String,
        bos_token: String,
        eos_token: String,
        origin: String,
    ) -> Result<Self> {
        let mut env = Environment::new();
        let syntax = minijinja::syntax::SyntaxConfig::builder()
            .trim_blocks(true)
            .lstrip_blocks(true)
            .build()
            .map_err(|e| template_error(&origin, &e))?;
        env.set_syntax(syntax);
        env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
        env.add_function(
            "raise_exception",
            |msg: String| -> Result<Value, minijinja::Error> {
                Err(minijinja::Error::new(ErrorKind::InvalidOperation, msg))
            },
        );
        env.add_function("strftime_now", |fmt: String| fixed_strftime(&fmt));
        env.add_template_owned(TEMPLATE_NAME, source.clone())
            .map_err(|e| template_error(&origin, &e))?;
        Ok(ChatTemplate {
            env,
            source,
            bos_token,
            eos_token,
            origin,
        })
    }

    /// Reads the chat template of a Hugging Face `tokenizer_config.json`.
    ///
    /// `chat_template` may be a string, or a list of `{"name", "template"}`
    /// objects, of which the one named `default` is used. When the config has
    /// no `chat_template` (or it is null) but a `chat_template.jinja` file sits
    /// beside it, that file is used. `bos_token` and `eos_token` are read as
    /// strings or as `{"content": ...}` objects; absent ones render as "".
    ///
    /// Returns `Ok(None)` when there is no template: use the raw prompt text.
    pub fn from_tokenizer_config(path: impl AsRef<Path>) -> Result<Option<Self>> {
        let path = path.as_ref();
        let bad = |message: String| DatasetError::TokenizerConfig {
            file: path.to_path_buf(),
            message,
        };
        let text = crate::loaders::read_text(path)?;
        let config: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| bad(format!("malformed JSON: {e}")))?;
        let serde_json::Value::Object(config) = config else {
            return Err(bad("expected a JSON object at the top level".to_owned()));
        };
        let token = |field: &str| -> Result<String> {
            match config.get(field) {
                None | Some(serde_json::Value::Null) => Ok(String::new()),
                Some(serde_json::Value::String(s)) => Ok(s.clone()),
                Some(serde_json::Value::Object(o)) => match o.get("content") {
                    Some(serde_json::Value::String(s)) => Ok(s.clone()),
                    _ => Err(bad(format!("field `{field}` has no string `content`"))),
                },
                Some(_) => Err(bad(format!(
                    "field `{field}` must be a string or an object with `content`"
                ))),
            }
        };
        let (bos, eos) = (token("bos_token")?, token("eos_token")?);
        let origin = path.display().to_string();
        let source = match config.get("chat_template") {
            None | Some(serde_json::Value::Null) => {
                let jinja = path.with_file_name(JINJA_FILE);
                if !jinja.is_file() {
                    return Ok(None);
                }
                let source = crate::loaders::read_text(&jinja)?;
                let origin = jinja.display().to_string();
                return Self::with_origin(source, bos, eos, origin).map(Some);
            }
            Some(serde_json::Value::String(s)) => s.clone(),
            Some(serde_json::Value::Array(items)) => pick_default(items).map_err(bad)?,
            Some(_) => {
                return Err(bad(
                    "field `chat_template` must be a string or a list of {name, template}"
                        .to_owned(),
                ))
            }
        };
        Self::with_origin(source, bos, eos, origin).map(Some)
    }

    /// The template's Jinja source.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The BOS token the template is rendered with.
    pub fn bos_token(&self) -> &str {
        &self.bos_token
    }

    /// The EOS token the template is rendered with.
    pub fn eos_token(&self) -> &str {
        &self.eos_token
    }

    /// Renders `messages`; `add_generation_prompt` appends the header that
    /// opens the assistant's reply.
    pub fn render(&self, messages: &[ChatMessage], add_generation_prompt: bool) -> Result<String> {
        let messages: Vec<Value> = messages
            .iter()
            .map(|m| {
                let mut map = BTreeMap::new();
                map.insert("role", Value::from(m.role.as_str()));
                map.insert("content", Value::from(m.content.as_str()));
                Value::from(map)
            })
            .collect();
        let ctx = minijinja::context! {
            messages => messages,
            add_generation_prompt => add_generation_prompt,
            bos_token => self.bos_token.as_str(),
            eos_token => self.eos_token.as_str(),
        };
        let tmpl = self
            .env
            .get_template(TEMPLATE_NAME)
            .map_err(|e| template_error(&self.origin, &e))?;
        tmpl.render(ctx)
            .map_err(|e| template_error(&self.origin, &e))
    }

    /// Renders a prompt as one user message (its first turn) followed by the
    /// generation prompt: what the benchmark sends for that prompt.
    pub fn render_prompt(&self, prompt: &Prompt) -> Result<String> {
        self.render(&[ChatMessage::user(prompt.text())], true)
    }
}

/// The text to tokenize for `prompt`: rendered through `template` when there
/// is one, else the raw first turn.
pub fn prompt_input(template: Option<&ChatTemplate>, prompt: &Prompt) -> Result<String> {
    match template {
        Some(t) => t.render_prompt(prompt),
        None => Ok(prompt.text().to_owned()),
    }
}

/// Picks the `default` entry of the list form of `chat_template`.
fn pick_default(items: &[serde_json::Value]) -> std::result::Result<String, String> {
    let mut names = Vec::new();
    for item in items {
        let name = item.get("name").and_then(|n| n.as_str());
        let template = item.get("template").and_then(|t| t.as_str());
        match (name, template) {
            (Some("default"), Some(t)) => return Ok(t.to_owned()),
            (Some(n), Some(_)) => names.push(n.to_owned()),
            _ => {
                return Err(
                    "every entry of the `chat_template` list needs string `name` and `template`"
                        .to_owned(),
                )
            }
        }
    }
    Err(format!(
        "the `chat_template` list has no template named `default` (it has: {})",
        names.join(", ")
    ))
}

fn template_error(origin: &str, e: &minijinja::Error) -> DatasetError {
    let mut message = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        message.push_str(": ");
        message.push_str(&s.to_string());
        source = s.source();
    }
    DatasetError::Template {
        origin: origin.to_owned(),
        line: e.line(),
        message,
    }
}

/// `strftime` on the fixed date Friday 26 July 2024, 00:00:00.
fn fixed_strftime(fmt: &str) -> String {
    let mut out = String::new();
    let mut chars = fmt.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('d') => out.push_str("26"),
            Some('e') => out.push_str("26"),
            Some('m') => out.push_str("07"),
            Some('Y') => out.push_str("2024"),
            Some('y') => out.push_str("24"),
            Some('b') => out.push_str("Jul"),
            Some('B') => out.push_str("July"),
            Some('a') => out.push_str("Fri"),
            Some('A') => out.push_str("Friday"),
            Some('j') => out.push_str("208"),
            Some('H') | Some('M') | Some('S') => out.push_str("00"),
            Some('%') => out.push('%'),
            Some(other) => {
                out.push('%');
                out.push(other);
            }
            None => out.push('%'),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::fixed_strftime;

    #[test]
    fn strftime_is_fixed() {
        assert_eq!(fixed_strftime("%d %b %Y"), "26 Jul 2024");
        assert_eq!(
            fixed_strftime("%A %Y-%m-%d %H:%M 100%%"),
            "Friday 2024-07-26 00:00 100%"
        );
    }
}
