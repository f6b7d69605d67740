//! Chat templates read from tokenizer configs, rendered with minijinja.

use crate::common::{err_msg, write};
use serde_json::json;
use specula_datasets::{prompt_input, ChatMessage, ChatTemplate, Prompt};

/// A small Llama-3-style template written for these tests: BOS, one header
/// per message, `.strip()` (a Python method), a role check that raises.
///
/// The expected strings below were checked against Python's jinja2 3.1 set up
/// as `transformers` does (sandboxed, trim_blocks, lstrip_blocks, loopcontrols).
const LLAMA3_LIKE: &str = "{{- bos_token }}\n\
{%- for message in messages %}\n\
    {%- if message['role'] not in ['system', 'user', 'assistant'] %}\n\
        {{- raise_exception('unknown role: ' + message['role']) }}\n\
    {%- endif %}\n\
    {{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n' }}\n\
    {{- message['content'].strip() + '<|eot_id|>' }}\n\
{%- endfor %}\n\
{%- if add_generation_prompt %}\n\
    {{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}\n\
{%- endif %}\n";

fn config(dir: &std::path::Path, value: serde_json::Value) -> std::path::PathBuf {
    write(dir, "tokenizer_config.json", value.to_string().as_bytes())
}

#[test]
fn renders_a_llama3_like_template_from_a_string() {
    let tmp = tempfile::tempdir().unwrap();
    let path = config(
        tmp.path(),
        json!({
            "bos_token": "<|begin_of_text|>",
            "eos_token": {"content": "<|eot_id|>", "lstrip": false},
            "chat_template": LLAMA3_LIKE,
        }),
    );
    let t = ChatTemplate::from_tokenizer_config(&path).unwrap().unwrap();
    assert_eq!(t.bos_token(), "<|begin_of_text|>");
    assert_eq!(t.eos_token(), "<|eot_id|>");
    let msgs = [
        ChatMessage::system("You are terse. "),
        ChatMessage::user("  Hi!\n"),
    ];
    assert_eq!(
        t.render(&msgs, true).unwrap(),
        "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nYou are terse.<|eot_id|>\
         <|start_header_id|>user<|end_header_id|>\n\nHi!<|eot_id|>\
         <|start_header_id|>assistant<|end_header_id|>\n\n"
    );
    assert_eq!(
        t.render(&msgs[1..], false).unwrap(),
        "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi!<|eot_id|>"
    );
    let p = Prompt {
        id: "1".into(),
        category: "writing".into(),
        subcategory: None,
        turns: vec!["First turn".into(), "Second turn".into()],
    };
    assert_eq!(
        prompt_input(Some(&t), &p).unwrap(),
        "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nFirst turn<|eot_id|>\
         <|start_header_id|>assistant<|end_header_id|>\n\n"
    );
    assert_eq!(prompt_input(None, &p).unwrap(), "First turn");
}

#[test]
fn raise_exception_becomes_an_error_naming_the_file() {
    let tmp = tempfile::tempdir().unwrap();
    let path = config(tmp.path(), json!({"chat_template": LLAMA3_LIKE}));
    let t = ChatTemplate::from_tokenizer_config(&path).unwrap().unwrap();
    assert_eq!(t.bos_token(), "");
    let msg = err_msg(t.render(&[ChatMessage::new("tool", "x")], true));
    assert!(
        msg.starts_with(&format!("{}: chat template error", path.display())),
        "{msg}"
    );
    assert!(msg.contains("unknown role: tool"), "{msg}");
}

#[test]
fn list_form_picks_default() {
    let tmp = tempfile::tempdir().unwrap();
    let path = config(
        tmp.path(),
        json!({"chat_template": [
            {"name": "tool_use", "template": "TOOLS"},
            {"name": "default", "template": "{% for m in messages %}[{{ m.role }}] {{ m.content }}\n{% endfor %}"},
        ]}),
    );
    let t = ChatTemplate::from_tokenizer_config(&path).unwrap().unwrap();
    let out = t.render(
        &[ChatMessage::user("a"), ChatMessage::assistant("b")],
        false,
    );
    assert_eq!(out.unwrap(), "[user] a\n[assistant] b\n");

    let path = config(
        tmp.path(),
        json!({"chat_template": [{"name": "rag", "template": "x"}]}),
    );
    let msg = err_msg(ChatTemplate::from_tokenizer_config(&path));
    assert_eq!(
        msg,
        format!(
            "{}: the `chat_template` list has no template named `default` (it has: rag)",
            path.display()
        )
    );
}

#[test]
fn no_template_means_none() {
    let tmp = tempfile::tempdir().unwrap();
    let path = config(
        tmp.path(),
        json!({"bos_token": "<s>", "model_max_length": 2048}),
    );
    assert!(ChatTemplate::from_tokenizer_config(&path)
        .unwrap()
        .is_none());
    let path = config(tmp.path(), json!({"chat_template": null}));
    assert!(ChatTemplate::from_tokenizer_config(&path)
        .unwrap()
        .is_none());
}

#[test]
fn falls_back_to_a_sibling_chat_template_jinja() {
    let tmp = tempfile::tempdir().unwrap();
    let path = config(tmp.path(), json!({"bos_token": "<s>"}));
    write(
        tmp.path(),
        "chat_template.jinja",
        b"{{ bos_token }}{{ messages[0].content }}",
    );
    let t = ChatTemplate::from_tokenizer_config(&path).unwrap().unwrap();
    assert_eq!(t.render(&[ChatMessage::user("x")], true).unwrap(), "<s>x");
}

#[test]
fn whitespace_follows_transformers_trim_and_lstrip_blocks() {
    let t = ChatTemplate::new(
        "{% for m in messages %}\n    {% if m.role == 'user' %}\n  {{ m.content }}\n    {% endif %}\n{% endfor %}\n",
        "",
        "",
    )
    .unwrap();
    assert_eq!(t.render(&[ChatMessage::user("x")], false).unwrap(), "  x\n");
}

#[test]
fn strftime_now_is_a_fixed_date() {
    let t = ChatTemplate::new("Today Date: {{ strftime_now('%d %b %Y') }}", "", "").unwrap();
    assert_eq!(t.render(&[], true).unwrap(), "Today Date: 26 Jul 2024");
}

#[test]
fn bad_templates_and_configs_name_the_file() {
    let tmp = tempfile::tempdir().unwrap();
    let path = config(
        tmp.path(),
        json!({"chat_template": "line one\n{% for m in messages %}{{ m }"}),
    );
    let msg = err_msg(ChatTemplate::from_tokenizer_config(&path));
    assert!(
        msg.starts_with(&format!(
            "{}: chat template error at template line 2: ",
            path.display()
        )),
        "{msg}"
    );

    let path = write(
        tmp.path(),
        "tokenizer_config.json",
        b"{\"chat_template\": \"x\",\n",
    );
    let msg = err_msg(ChatTemplate::from_tokenizer_config(&path));
    assert!(
        msg.starts_with(&format!(
            "{}: malformed JSON: EOF while parsing",
            path.display()
        )),
        "{msg}"
    );
    assert!(msg.ends_with("line 2 column 0"), "{msg}");

    let path = config(tmp.path(), json!({"chat_template": 3}));
    let msg = err_msg(ChatTemplate::from_tokenizer_config(&path));
    assert_eq!(
        msg,
        format!(
            "{}: field `chat_template` must be a string or a list of {{name, template}}",
            path.display()
        )
    );
}
