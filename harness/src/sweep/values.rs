//! The value types of a sweep spec: a value-or-list and the chat-template
//! choice (the span mode is a runs.csv value: [`crate::run_folder::SpanMode`]).

use serde::{Deserialize, Serialize};
use std::fmt;

/// A value or a list of values (`steps = 5` or `steps = [1, 3, 5]`); always a list once read.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(transparent)]
pub struct OneOrMany<T>(pub Vec<T>);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for OneOrMany<T> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::{value, IntoDeserializer, SeqAccess, Visitor};
        struct V<T>(std::marker::PhantomData<T>);
        macro_rules! one {
            ($name:ident, $t:ty) => {
                fn $name<E: serde::de::Error>(self, v: $t) -> Result<Self::Value, E> {
                    T::deserialize(v.into_deserializer()).map(|x| OneOrMany(vec![x]))
                }
            };
        }
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = OneOrMany<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a value or a list of values")
            }
            one!(visit_i64, i64);
            one!(visit_u64, u64);
            one!(visit_f64, f64);
            one!(visit_bool, bool);
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Self::Value, E> {
                T::deserialize(value::StrDeserializer::<E>::new(v)).map(|x| OneOrMany(vec![x]))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
                Vec::<T>::deserialize(value::SeqAccessDeserializer::new(seq)).map(OneOrMany)
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

/// Whether prompts go through the target's chat template.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChatTemplateMode {
    /// Use `tokenizer_config.json`'s `chat_template` when the target has one, else raw text.
    #[default]
    Auto,
    /// Always send the raw prompt text (with the tokenizer's special tokens).
    None,
}
