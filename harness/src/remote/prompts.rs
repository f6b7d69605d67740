//! The prompts of a served row: token ids when the target's tokenizer is on
//! this machine (exactly what the in-process engine feeds, chat template
//! included), else text (the server tokenizes).

use super::PromptInput;
use crate::sweep::grid::ModelInfo;
use crate::sweep::SweepError;
use specula_datasets::{prompt_input, ChatTemplate, PromptSet};
use specula_engine::tokenizer::TextTokenizer;

/// The prompts of `set` for `model`.
pub fn prompt_inputs(model: &ModelInfo, set: &PromptSet) -> Result<Vec<PromptInput>, SweepError> {
    let set = &set.prompts;
    if !model.target_dir.join("tokenizer.json").exists() {
        return set
            .iter()
            .map(|p| Ok(PromptInput::Text(prompt_input(None, p)?)))
            .collect();
    }
    let tok = TextTokenizer::load(&model.target_dir)?;
    let cfg = model.target_dir.join("tokenizer_config.json");
    let template = if model.chat_template && cfg.exists() {
        ChatTemplate::from_tokenizer_config(&cfg)?
    } else {
        None
    };
    set.iter()
        .map(|p| {
            let text = prompt_input(template.as_ref(), p)?;
            Ok(PromptInput::Ids(
                tok.encode_with(&text, template.is_none())?,
            ))
        })
        .collect()
}
