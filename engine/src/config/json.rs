//! Reading JSON files into typed structs with errors that name the field.

use crate::error::{EngineError, Result};
use serde::de::DeserializeOwned;
use std::path::Path;

/// Reads and parses `path`; a syntax error reports line and column, a type
/// error reports the JSON path of the field (`rope_scaling.factor`).
pub fn read_json<T: DeserializeOwned>(path: &Path, what: &str) -> Result<T> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(EngineError::MissingFile {
                path: path.to_path_buf(),
                what: what.to_string(),
            })
        }
        Err(e) => return Err(EngineError::io(path, e)),
    };
    let de = &mut serde_json::Deserializer::from_str(&text);
    serde_path_to_error::deserialize(de).map_err(|e| {
        let path_str = e.path().to_string();
        let field =
            if e.inner().is_syntax() || e.inner().is_eof() || path_str == "?" || path_str == "." {
                "invalid JSON".to_string()
            } else {
                format!("field `{path_str}`")
            };
        EngineError::Json {
            path: path.to_path_buf(),
            field,
            message: e.into_inner().to_string(),
        }
    })
}
