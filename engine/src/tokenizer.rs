//! The target's tokenizer (`tokenizer.json`, through the `tokenizers` crate).

use crate::error::{EngineError, Result};
use std::path::{Path, PathBuf};

/// A loaded `tokenizer.json`.
pub struct TextTokenizer {
    path: PathBuf,
    inner: tokenizers::Tokenizer,
    longest_token_bytes: Option<usize>,
}

/// The most bytes of text one token of `t` can stand for, when that is
/// bounded: a BPE model without fused unknown pieces maps each token to one
/// entry of its vocabulary (added tokens included), whose UTF-8 spelling is
/// at least as long as the text it covers (byte-level `Ġ` is 2 bytes for 1,
/// `▁` 3 for 1, `<0x41>` 6 for 1). Other models (WordPiece's `[UNK]` for a
/// whole word, fused unknowns) are unbounded: `None`.
fn longest_token_bytes(t: &tokenizers::Tokenizer) -> Option<usize> {
    match t.get_model() {
        tokenizers::ModelWrapper::BPE(bpe) if !(bpe.fuse_unk && bpe.unk_token.is_some()) => {
            t.get_vocab(true).keys().map(String::len).max()
        }
        _ => None,
    }
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
        Ok(TextTokenizer {
            path,
            longest_token_bytes: longest_token_bytes(&inner),
            inner,
        })
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

    /// The most bytes of text one token can stand for, when bounded (a BPE
    /// vocabulary): a text longer than `n` times this cannot fit in `n`
    /// tokens, whatever its content, and need not be tokenized to be refused.
    pub fn longest_token_bytes(&self) -> Option<usize> {
        self.longest_token_bytes
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
