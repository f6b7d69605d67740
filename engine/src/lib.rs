//! Speculative decoding engine.
