//! The speculative methods each engine offers, as its launch flag spells
//! them: the `method` axis of a sweep's `[[drafts]]`, passed to the
//! `[server]` command as `{method}` (docs/DESIGN.md 9.1).
//!
//! - SGLang `--speculative-algorithm`: `EAGLE`, `EAGLE3`, `NEXTN` (MTP
//!   heads, also written `MTP` here), `STANDALONE` (a small draft model),
//!   `NGRAM`.
//! - vLLM `--speculative-config '{"method": ...}'`: `eagle`, `eagle3`,
//!   `mtp`, `draft_model`, `ngram`, `suffix`.
//! - The in-process engine (and `specula serve`): `eagle`, `eagle3` (the
//!   draft served as that generation, like `served_as`).

use super::EngineKind;

const SGLANG: [&str; 5] = ["EAGLE", "EAGLE3", "NEXTN", "STANDALONE", "NGRAM"];
const VLLM: [&str; 6] = ["eagle", "eagle3", "mtp", "draft_model", "ngram", "suffix"];
const ENGINE: [&str; 2] = ["eagle", "eagle3"];

/// `written` as `backend` spells it, or why `backend` has no such method.
pub fn resolve(backend: EngineKind, written: &str) -> Result<String, String> {
    let w = written.trim();
    let (names, spelled): (&[&str], String) = match backend {
        EngineKind::Sglang => {
            let up = w.to_ascii_uppercase();
            (&SGLANG, if up == "MTP" { "NEXTN".into() } else { up })
        }
        EngineKind::Vllm => (&VLLM, w.to_ascii_lowercase()),
        EngineKind::Engine => (&ENGINE, w.to_ascii_lowercase()),
    };
    if names.contains(&spelled.as_str()) {
        Ok(spelled)
    } else {
        Err(format!(
            "method {written:?}: the {} backend offers {}",
            backend.name(),
            names.join(", ")
        ))
    }
}

/// Whether `method` drafts without a trained draft model (n-gram or suffix
/// lookup): such a config runs without the pair's `draft`.
pub fn needs_no_draft(method: &str) -> bool {
    matches!(method, "NGRAM" | "ngram" | "suffix")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_backend_takes_its_own_methods_in_its_own_spelling() {
        assert_eq!(resolve(EngineKind::Sglang, "eagle3").unwrap(), "EAGLE3");
        assert_eq!(resolve(EngineKind::Sglang, "mtp").unwrap(), "NEXTN");
        assert_eq!(
            resolve(EngineKind::Sglang, "standalone").unwrap(),
            "STANDALONE"
        );
        assert_eq!(
            resolve(EngineKind::Vllm, "Draft_Model").unwrap(),
            "draft_model"
        );
        assert_eq!(resolve(EngineKind::Vllm, "suffix").unwrap(), "suffix");
        let e = resolve(EngineKind::Sglang, "suffix").unwrap_err();
        assert!(e.contains("sglang backend offers EAGLE, EAGLE3"), "{e}");
        assert!(resolve(EngineKind::Engine, "ngram").is_err());
        assert!(needs_no_draft("NGRAM") && needs_no_draft("suffix") && !needs_no_draft("eagle3"));
    }
}
