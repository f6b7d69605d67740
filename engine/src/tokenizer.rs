//! The target's tokenizer (`tokenizer.json`, through the `tokenizers` crate).

use crate::error::{EngineError, Result};
use std::path::{Path, PathBuf};

/// A loaded `tokenizer.json`.
pub struct TextTokenizer {
    path: PathBuf,
    inner: tokenizers::Tokenizer,
}

impl TextTokenizer {
    /// Loads `dir/tokenizer.json`.
    pub fn load(dir: &Path) -> Result<TextTokenizer> {
        let path = dir.join("tokenizer.json");
        if !path.exists() {
            return Err(EngineError::MissingFile {
                path,
                what: "tokenizer.json (the target's tokenizer)".into(),
            });
        }
        let inner =
            tokenizers::Tokenizer::from_file(&path).map_err(|e| EngineError::Tokenizer {
                path: path.clone(),
                message: e.to_string(),
            })?;
        Ok(TextTokenizer { path, inner })
    }

    /// Token ids of `text`, with the special tokens the tokenizer adds (BOS).
    pub fn encode(&self, text: &str) -> Result<Vec<u32>> {
        self.encode_with(text, true)
    }

    /// Token ids of `text`; `add_special_tokens = false` for text that
    /// already holds them (a rendered chat template starts with BOS).
    pub fn encode_with(&self, text: &str, add_special_tokens: bool) -> Result<Vec<u32>> {
        let enc =
            self.inner
                .encode(text, add_special_tokens)
                .map_err(|e| EngineError::Tokenizer {
                    path: self.path.clone(),
                    message: e.to_string(),
                })?;
        Ok(enc.get_ids().to_vec())
    }

    /// Text of `ids`, without special tokens.
    pub fn decode(&self, ids: &[u32]) -> Result<String> {
        self.inner
            .decode(ids, true)
            .map_err(|e| EngineError::Tokenizer {
                path: self.path.clone(),
                message: e.to_string(),
            })
    }

    /// Number of tokens, added tokens included.
    pub fn vocab_size(&self) -> usize {
        self.inner.get_vocab_size(true)
    }

    /// The id of a token string, if it exists.
    pub fn token_id(&self, token: &str) -> Option<u32> {
        self.inner.token_to_id(token)
    }

    /// Where it was loaded from.
    pub fn path(&self) -> &Path {
        &self.path
    }
}
