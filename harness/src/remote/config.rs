//! The spec's `backend` field and its `[server]` table.

use serde::{Deserialize, Serialize};

/// Which engine runs the rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EngineKind {
    /// The built-in engine, in this process.
    #[default]
    Engine,
    /// An SGLang server (`/generate`, `/get_server_info`).
    Sglang,
    /// A vLLM server (`/v1/completions`, `/metrics`).
    Vllm,
}

impl EngineKind {
    /// The name in specs and the `backend` column.
    pub fn name(self) -> &'static str {
        match self {
            EngineKind::Engine => "engine",
            EngineKind::Sglang => "sglang",
            EngineKind::Vllm => "vllm",
        }
    }
}

/// Which SGLang endpoint a sweep's requests go to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SglangEndpoint {
    /// The native `POST /generate` (`meta_info` per answer).
    #[default]
    Generate,
    /// The OpenAI-compatible `POST /v1/completions` with
    /// `return_spec_tokens_details` (`sglext.spec_tokens_details`).
    Openai,
}

/// How to reach a server: start one per draft config from `command`, or attach to `url`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerSpec {
    /// The launch command of every server (baseline included), with placeholders
    /// `{target}`, `{draft}`, `{steps}`, `{topk}`, `{num_draft_tokens}`,
    /// `{aux_layers}`, `{method}`, `{host}`, `{port}`, `{model}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// Appended to `command` for a draft config (not for the baseline).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speculative_args: Option<String>,
    /// A running server's base URL (`http://127.0.0.1:30000`): one config, no `command`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Host the started server listens on (and the client connects to).
    #[serde(default = "default_host")]
    pub host: String,
    /// Port of a started server; default: a free port, new for every server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<u16>,
    /// Model name sent in vLLM requests; default: the target as written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Seconds a started server may take to answer its health check.
    #[serde(default = "default_startup")]
    pub startup_timeout_s: f64,
    /// Seconds one request may take (a stalled server fails the row after it).
    #[serde(default = "default_request")]
    pub request_timeout_s: f64,
    /// Stream responses (real TTFT); off sends plain requests.
    #[serde(default = "default_stream")]
    pub stream: bool,
    /// SGLang only: `generate` (default) or `openai`.
    #[serde(default, skip_serializing_if = "is_generate")]
    pub endpoint: SglangEndpoint,
}

fn is_generate(e: &SglangEndpoint) -> bool {
    *e == SglangEndpoint::Generate
}

fn default_host() -> String {
    "127.0.0.1".into()
}
fn default_startup() -> f64 {
    600.0
}
fn default_request() -> f64 {
    600.0
}
fn default_stream() -> bool {
    true
}

impl ServerSpec {
    /// Checks what serde cannot; the message names the field.
    pub fn validate(&self) -> Result<(), String> {
        match (&self.command, &self.url) {
            (None, None) => {
                return Err(
                    "[server] needs `command` (to start servers) or `url` (to attach to one)"
                        .into(),
                )
            }
            (Some(_), Some(_)) => return Err("[server] takes `command` or `url`, not both".into()),
            _ => {}
        }
        if let Some(u) = &self.url {
            if !u.starts_with("http://") {
                return Err(format!("[server] `url` {u:?}: expected http://HOST:PORT"));
            }
        }
        if self.speculative_args.is_some() && self.command.is_none() {
            return Err("[server] `speculative_args` needs `command`".into());
        }
        for (name, v) in [
            ("startup_timeout_s", self.startup_timeout_s),
            ("request_timeout_s", self.request_timeout_s),
        ] {
            if !(v.is_finite() && v > 0.0) {
                return Err(format!(
                    "[server] `{name}` = {v}: must be a positive number of seconds"
                ));
            }
        }
        if let Some(c) = &self.command {
            super::template::split(c).map_err(|e| format!("[server] `command`: {e}"))?;
        }
        if let Some(c) = &self.speculative_args {
            super::template::split(c).map_err(|e| format!("[server] `speculative_args`: {e}"))?;
        }
        Ok(())
    }
}
