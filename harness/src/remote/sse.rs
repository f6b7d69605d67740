//! Server-sent events as they arrive in chunks: bytes cut anywhere (inside
//! a line, inside a UTF-8 character) are joined into lines, and each line
//! is read as a `data:` payload, a field this client does not use
//! (`event:`, `id:`, `retry:`, a `:` comment), a blank separator, or
//! something that is not an event stream at all.

/// What one line of an event stream says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SseLine {
    /// `data: PAYLOAD` (the payload trimmed).
    Data(String),
    /// A blank line, a comment or a field without data.
    Other,
    /// A line no event stream has (quoted, for the error).
    Malformed(String),
}

/// Joins chunks into whole lines.
#[derive(Debug, Default)]
pub struct SseLines {
    pending: Vec<u8>,
}

fn read_line(raw: &[u8]) -> SseLine {
    let text = String::from_utf8_lossy(raw);
    let line = text.trim_end_matches(['\r', '\n']);
    if let Some(data) = line.strip_prefix("data:") {
        return SseLine::Data(data.trim().to_string());
    }
    let fields = ["event:", "id:", "retry:", ":"];
    if line.trim().is_empty() || fields.iter().any(|f| line.starts_with(f)) {
        SseLine::Other
    } else {
        SseLine::Malformed(line.to_string())
    }
}

impl SseLines {
    /// The lines that `chunk` completes, in order.
    pub fn push(&mut self, chunk: &[u8]) -> Vec<SseLine> {
        self.pending.extend_from_slice(chunk);
        let mut out = Vec::new();
        let mut start = 0;
        while let Some(n) = self.pending[start..].iter().position(|&b| b == b'\n') {
            out.push(read_line(&self.pending[start..start + n]));
            start += n + 1;
        }
        self.pending.drain(..start);
        out
    }

    /// The last line, when the stream ended without a newline after it.
    pub fn finish(&mut self) -> Option<SseLine> {
        let rest = std::mem::take(&mut self.pending);
        (!rest.is_empty()).then(|| read_line(&rest))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(s: &str) -> SseLine {
        SseLine::Data(s.into())
    }

    #[test]
    fn events_cut_anywhere_across_chunks_come_out_whole() {
        let stream = "data: {\"text\":\"héllo\"}\r\n\ndata: [DONE]\n\n".as_bytes();
        for cut in 1..stream.len() {
            let mut lines = SseLines::default();
            let mut got = lines.push(&stream[..cut]);
            got.extend(lines.push(&stream[cut..]));
            assert_eq!(lines.finish(), None, "cut at {cut}");
            let datas: Vec<SseLine> = got.into_iter().filter(|l| *l != SseLine::Other).collect();
            assert_eq!(datas, vec![data("{\"text\":\"héllo\"}"), data("[DONE]")]);
        }
    }

    #[test]
    fn comments_and_fields_are_skipped_and_anything_else_is_malformed() {
        let mut lines = SseLines::default();
        let got = lines.push(b": keep-alive\nevent: x\nid: 3\nretry: 10\n\n<html>\n");
        assert_eq!(got[..5], vec![SseLine::Other; 5][..]);
        assert_eq!(got[5], SseLine::Malformed("<html>".into()));
        assert_eq!(lines.push(b"data: 1"), vec![]);
        assert_eq!(lines.finish(), Some(data("1")), "an unterminated last line");
    }
}
