//! CSV files of a run folder at the byte level: appended to whole lines at
//! a time, one `write` and a flush per row (a kill never leaves half a row
//! that a reader would take for a whole one), and read back whole.

use super::RunFolderError;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

/// A CSV file that is only appended to, whole lines at a time.
#[derive(Debug)]
pub struct AppendCsv {
    path: PathBuf,
    file: File,
}

impl AppendCsv {
    /// Opens `path` for appending, writing `header` if the file is new or
    /// empty, and refusing a file whose header differs.
    pub fn open(path: &Path, header: &[&str]) -> Result<AppendCsv, RunFolderError> {
        let existing = std::fs::read_to_string(path).unwrap_or_default();
        let mut file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|e| RunFolderError::write(path, e))?;
        let want = header.join(",");
        match existing.lines().next() {
            None => {
                file.write_all(format!("{want}\n").as_bytes())
                    .map_err(|e| RunFolderError::write(path, e))?;
            }
            Some(h) if h == want => {}
            Some(h) => {
                return Err(RunFolderError::malformed(
                    path,
                    format!("header `{h}` is not the one this tool writes (`{want}`)"),
                ))
            }
        }
        Ok(AppendCsv {
            path: path.to_path_buf(),
            file,
        })
    }

    /// Appends `records` with one write, then flushes.
    pub fn append(&mut self, records: &[Vec<String>]) -> Result<(), RunFolderError> {
        let mut w = csv::WriterBuilder::new()
            .terminator(csv::Terminator::Any(b'\n'))
            .from_writer(Vec::new());
        for r in records {
            w.write_record(r)
                .map_err(|e| RunFolderError::malformed(&self.path, e))?;
        }
        let buf = w
            .into_inner()
            .map_err(|e| RunFolderError::malformed(&self.path, e))?;
        self.file
            .write_all(&buf)
            .and_then(|()| self.file.flush())
            .map_err(|e| RunFolderError::write(&self.path, e))
    }
}

/// A whole CSV file, read back as text.
#[derive(Debug, Clone, PartialEq)]
pub struct Table {
    /// Column names.
    pub header: Vec<String>,
    /// Rows, as text.
    pub rows: Vec<Vec<String>>,
}

impl Table {
    /// Reads `path`; every row must have the header's width.
    pub fn read(path: &Path) -> Result<Table, RunFolderError> {
        let file = File::open(path).map_err(|e| RunFolderError::read(path, e))?;
        let malformed = |e: csv::Error| RunFolderError::malformed(path, e);
        let mut r = csv::Reader::from_reader(file);
        let header = r
            .headers()
            .map_err(malformed)?
            .iter()
            .map(str::to_owned)
            .collect();
        let rows = r
            .records()
            .map(|rec| rec.map(|rec| rec.iter().map(str::to_owned).collect()))
            .collect::<Result<_, _>>()
            .map_err(malformed)?;
        Ok(Table { header, rows })
    }

    /// An empty table with `header` (a file that does not exist yet).
    pub fn empty(header: &[&str]) -> Table {
        Table {
            header: header.iter().map(|s| s.to_string()).collect(),
            rows: Vec::new(),
        }
    }

    /// The index of column `name`.
    pub fn col(&self, name: &str) -> Option<usize> {
        self.header.iter().position(|h| h == name)
    }

    /// The values of column `name` (empty when there is no such column).
    pub fn column(&self, name: &str) -> Vec<&str> {
        match self.col(name) {
            Some(i) => self.rows.iter().map(|r| r[i].as_str()).collect(),
            None => Vec::new(),
        }
    }

    /// The index of column `name`, or an error naming the file and the column.
    pub fn require(&self, name: &str, path: &Path) -> Result<usize, RunFolderError> {
        self.col(name)
            .ok_or_else(|| RunFolderError::malformed(path, format!("missing column `{name}`")))
    }

    /// Whether the header is exactly `columns`.
    pub fn has_header(&self, columns: &[&str]) -> bool {
        self.header.len() == columns.len() && self.header.iter().zip(columns).all(|(a, b)| a == b)
    }
}

/// `x` with `digits` decimals.
pub fn fixed(x: f64, digits: usize) -> String {
    format!("{x:.digits$}")
}

/// `x` with `digits` decimals, or empty.
pub fn opt_fixed(x: Option<f64>, digits: usize) -> String {
    x.map(|x| fixed(x, digits)).unwrap_or_default()
}
