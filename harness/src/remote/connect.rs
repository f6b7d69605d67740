//! Reaching the server of one draft config: fill the `[server]` command's
//! placeholders, start it on a free port and wait for its health check, or
//! check the attached `url`.

use super::rows::RemoteRunner;
use super::served_config;
use super::server_process::ServerProcess;
use super::sglang::SglangClient;
use super::template;
use super::vllm::VllmClient;
use super::{EngineKind, RemoteError, ServingClient};
use std::collections::BTreeMap;
use std::time::Duration;

/// A server to talk to: started (and stopped on drop) or attached.
pub(super) struct Live {
    pub(super) process: Option<ServerProcess>,
    pub(super) client: Box<dyn ServingClient>,
    pub(super) url: String,
}

impl RemoteRunner<'_> {
    fn vars(&self, m: usize, c: Option<usize>, port: u16) -> BTreeMap<&'static str, String> {
        let model = &self.grid.models[m];
        let speculative = c.map(|c| &self.grid.configs[m][c]);
        let s = speculative.map(|d| d.speculative);
        let target = model.target.display().to_string();
        BTreeMap::from([
            ("target", target.clone()),
            (
                "draft",
                model
                    .draft
                    .as_ref()
                    .map(|d| d.display().to_string())
                    .unwrap_or_default(),
            ),
            ("steps", s.map_or(0, |s| s.steps).to_string()),
            ("topk", s.map_or(1, |s| s.topk).to_string()),
            (
                "num_draft_tokens",
                s.map_or(1, |s| s.num_draft_tokens).to_string(),
            ),
            (
                "aux_layers",
                speculative
                    .and_then(|d| d.capture.override_ids.as_ref())
                    .map(|ids| ids.iter().map(i64::to_string).collect::<Vec<_>>().join(","))
                    .unwrap_or_default(),
            ),
            (
                "method",
                speculative
                    .and_then(|d| d.method.clone())
                    .unwrap_or_default(),
            ),
            ("host", self.server.host.clone()),
            ("port", port.to_string()),
            ("model", self.server.model.clone().unwrap_or(target)),
        ])
    }

    fn client(&self, url: &str, m: usize) -> Box<dyn ServingClient> {
        let timeout = Duration::from_secs_f64(self.server.request_timeout_s);
        match self.kind {
            EngineKind::Vllm => {
                let model = self
                    .server
                    .model
                    .clone()
                    .unwrap_or_else(|| self.grid.models[m].target.display().to_string());
                Box::new(VllmClient::new(url, &model, timeout, self.server.stream))
            }
            _ => {
                let model = self
                    .server
                    .model
                    .clone()
                    .unwrap_or_else(|| self.grid.models[m].target.display().to_string());
                Box::new(SglangClient::new(
                    url,
                    timeout,
                    self.server.stream,
                    self.server.endpoint,
                    &model,
                ))
            }
        }
    }

    /// Starts (or attaches to) the server of config `c` and waits for its health check.
    pub(super) fn connect(&self, m: usize, c: Option<usize>) -> Result<Live, RemoteError> {
        if let Some(url) = &self.server.url {
            let client = self.client(url, m);
            if !self.rt.block_on(client.healthy()) {
                return Err(RemoteError(format!("{url}/health does not answer 200")));
            }
            return Ok(Live {
                process: None,
                client,
                url: url.clone(),
            });
        }
        let port = match self.server.port {
            Some(p) => p,
            None => free_port(&self.server.host)?,
        };
        let vars = self.vars(m, c, port);
        let extra = c.and(self.server.speculative_args.as_deref());
        let command = self.server.command.as_deref().unwrap_or_default();
        let words = template::expand(command, extra, &vars)
            .map_err(|e| RemoteError::new("[server] command", e))?;
        let url = format!("http://{}:{port}", self.server.host);
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .ok();
        let mut process = ServerProcess::start(&words, &self.base, log)?;
        let client = self.client(&url, m);
        process.wait_healthy(
            Duration::from_secs_f64(self.server.startup_timeout_s),
            || self.rt.block_on(client.healthy()),
        )?;
        Ok(Live {
            process: Some(process),
            client,
            url,
        })
    }
}

impl RemoteRunner<'_> {
    /// Why the server of config `c` runs something else than the spec asks,
    /// if it does ([`super::served_config`]).
    pub(super) fn served_mismatch(
        &self,
        m: usize,
        c: Option<usize>,
        client: &dyn ServingClient,
    ) -> Option<String> {
        let point = c.map(|c| &self.grid.configs[m][c]);
        match self.kind {
            EngineKind::Sglang => {
                let info = self.rt.block_on(client.served_config())?;
                let method = point.and_then(|p| p.method.as_deref());
                served_config::sglang_mismatch(&info, point.map(|p| p.speculative), method)
            }
            EngineKind::Vllm => {
                let point = point?;
                let expected = match &point.capture.override_ids {
                    Some(ids) => ids.clone(),
                    None => {
                        let d = self.grid.models[m].draft_dir.as_ref()?;
                        specula_engine::model::draft_config(d).ok()?.aux_layer_ids?
                    }
                };
                let log = std::fs::read_to_string(&self.log).ok()?;
                // This server's part of the log: after the last start line.
                let own = log.rsplit_once("\n=== ").map_or(log.as_str(), |(_, t)| t);
                served_config::vllm_mismatch(own, &expected)
            }
            EngineKind::Engine => None,
        }
    }
}

/// A port that was free on `host` a moment ago.
fn free_port(host: &str) -> Result<u16, RemoteError> {
    std::net::TcpListener::bind((host, 0))
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| RemoteError::new(&format!("no free port on {host}"), e))
}
