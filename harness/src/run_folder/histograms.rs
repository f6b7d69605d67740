//! `histograms/<row_key>.hlog`: every span sample of a row in HdrHistogram
//! V2 interval logs (compressed V2 encoding, the Java `HistogramLogWriter`
//! format), one interval per (`generate` call, span), tagged with the span
//! name (served rows: the client-side `ttft`, `tpot` and `e2e` per row).
//! Values are **nanoseconds** at 3 significant digits; histograms add
//! exactly, so logs from shards or repeats merge without loss.

use super::{Row, RowWriter, RunFolderError};
use base64::Engine;
use hdrhistogram::serialization::interval_log::{
    IntervalLogIterator, IntervalLogWriterBuilder, LogEntry, LogIteratorError, Tag,
};
use hdrhistogram::serialization::{Deserializer, V2DeflateSerializer};
use hdrhistogram::Histogram;
use specula_engine::timing::Span;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The unit of every recorded value.
pub const UNIT: &str = "ns";

/// Significant digits kept by every histogram.
pub const SIGNIFICANT_DIGITS: u8 = 3;

/// An empty auto-resizing histogram of nanoseconds.
pub fn empty() -> Histogram<u64> {
    Histogram::new(SIGNIFICANT_DIGITS).expect("3 significant digits is a valid precision")
}

/// A histogram of `samples` (nanoseconds).
pub fn of_samples(samples: &[u64]) -> Histogram<u64> {
    let mut h = empty();
    for &s in samples {
        h.record(s)
            .expect("auto-resizing histograms accept any u64");
    }
    h
}

/// Writes one `.hlog` per row that recorded spans.
#[derive(Debug)]
pub struct HistogramLogs {
    dir: PathBuf,
}

impl HistogramLogs {
    /// Writes into `dir` (created).
    pub fn open(dir: &Path) -> Result<HistogramLogs, RunFolderError> {
        std::fs::create_dir_all(dir).map_err(|e| RunFolderError::write(dir, e))?;
        Ok(HistogramLogs {
            dir: dir.to_path_buf(),
        })
    }

    /// The log file of `row_key` in `dir`.
    pub fn path(dir: &Path, row_key: &str) -> PathBuf {
        dir.join(format!("{row_key}.hlog"))
    }
}

impl RowWriter for HistogramLogs {
    fn write(&mut self, row: &Row) -> Result<(), RunFolderError> {
        if row.intervals.is_empty() {
            return Ok(());
        }
        let path = HistogramLogs::path(&self.dir, &row.row_key);
        // Encoding into memory fails only on values no span has.
        let corrupt = |m: String| RunFolderError::malformed(&path, m);
        let mut buf = Vec::new();
        let mut ser = V2DeflateSerializer::new();
        let mut w = IntervalLogWriterBuilder::new()
            .add_comment(&format!(
                "specula span latencies of row {} (run {}), values in {UNIT}",
                row.row_key, row.run_id
            ))
            .with_start_time(row.start_time)
            .with_base_time(row.start_time)
            .begin_log_with(&mut buf, &mut ser)
            .map_err(|e| corrupt(e.to_string()))?;
        for iv in &row.intervals {
            for span in Span::ALL {
                let Some(samples) = iv.log.samples.get(&span).filter(|s| !s.is_empty()) else {
                    continue;
                };
                w.write_histogram(
                    &of_samples(samples),
                    iv.start,
                    iv.duration,
                    Tag::new(span.name()),
                )
                .map_err(|e| corrupt(e.to_string()))?;
            }
            for (name, samples) in iv.client.iter().filter(|(_, s)| !s.is_empty()) {
                w.write_histogram(&of_samples(samples), iv.start, iv.duration, Tag::new(name))
                    .map_err(|e| corrupt(e.to_string()))?;
            }
        }
        // Write then rename, so a log exists whole or not at all.
        let tmp = path.with_extension("hlog.tmp");
        std::fs::write(&tmp, &buf).map_err(|e| RunFolderError::write(&tmp, e))?;
        std::fs::rename(&tmp, &path).map_err(|e| RunFolderError::write(&path, e))
    }
}

/// Reads a log and adds its intervals up per tag (span name).
pub fn read_log(path: &Path) -> Result<BTreeMap<String, Histogram<u64>>, RunFolderError> {
    let bytes = std::fs::read(path).map_err(|e| RunFolderError::read(path, e))?;
    let corrupt = |m: String| RunFolderError::malformed(path, m);
    let mut out: BTreeMap<String, Histogram<u64>> = BTreeMap::new();
    let mut de = Deserializer::new();
    for entry in IntervalLogIterator::new(&bytes) {
        let LogEntry::Interval(iv) = entry.map_err(|LogIteratorError::ParseError { offset }| {
            corrupt(format!("not an interval log line at byte {offset}"))
        })?
        else {
            continue;
        };
        let raw = base64::engine::general_purpose::STANDARD
            .decode(iv.encoded_histogram())
            .map_err(|e| corrupt(e.to_string()))?;
        let h: Histogram<u64> = de
            .deserialize(&mut raw.as_slice())
            .map_err(|e| corrupt(e.to_string()))?;
        let tag = iv.tag().map_or("untagged".to_string(), |t| t.to_string());
        out.entry(tag)
            .or_insert_with(empty)
            .add(&h)
            .map_err(|e| corrupt(e.to_string()))?;
    }
    Ok(out)
}
