//! A streamed answer: server-sent events written straight to the
//! connection as HTTP/1.1 chunks, each flushed as it is sent (tiny_http's
//! own responses buffer a body), so the client sees the first event when
//! the first token exists.

use serde_json::Value;
use std::io::Write;
use tiny_http::Request;

/// An open event stream.
pub struct EventStream {
    w: Box<dyn Write + Send>,
}

impl EventStream {
    /// Answers `req` with status 200 and a chunked `text/event-stream` body.
    pub fn start(req: Request) -> std::io::Result<EventStream> {
        let mut w = req.into_writer();
        w.write_all(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n\r\n",
        )?;
        w.flush()?;
        Ok(EventStream { w })
    }

    fn chunk(&mut self, data: &str) -> std::io::Result<()> {
        write!(self.w, "{:x}\r\n{data}\r\n", data.len())?;
        self.w.flush()
    }

    /// Sends `v` as one `data:` event.
    pub fn send(&mut self, v: &Value) -> std::io::Result<()> {
        self.chunk(&format!("data: {v}\n\n"))
    }

    /// Sends `data: [DONE]` and ends the body.
    pub fn finish(mut self) -> std::io::Result<()> {
        self.chunk("data: [DONE]\n\n")?;
        self.w.write_all(b"0\r\n\r\n")?;
        self.w.flush()
    }
}
