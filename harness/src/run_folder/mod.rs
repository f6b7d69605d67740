//! The run folder, owned here and nowhere else (docs/DESIGN.md, Files of a
//! run folder): its schema, its writers, its one reader, its lock, the
//! repair a resumed sweep starts with, and the merge of shards.
//!
//! - [`schema`]: file names, column lists, numeric and identity columns, the `flag` rule;
//! - [`row_key`]: row keys, built and taken apart;
//! - [`Row`] ([`row`]): one finished row as a sweep hands it over;
//! - writers, each behind [`RowWriter`]: runs.csv ([`runs_csv`]),
//!   positions.csv ([`positions_csv`]), kernels.csv ([`kernels_csv`]),
//!   `histograms/<row_key>.hlog` ([`histograms`]); meta.json ([`meta`]) is
//!   written once per run rather than per row; [`environment`]: the build,
//!   threads, CPU and load it records, and what makes two runs' timings
//!   incomparable; [`summary`]: summary.json, the run's rows as numbers;
//! - [`Run`] ([`read`]): the reader every consumer uses, refusing cells no run can hold (`cells`); [`identity`]: rows matched across runs;
//! - [`RunDir`] ([`lock`]): the folder created and locked for writing; [`resume`]: its repair;
//! - [`mod@merge`]: shards into one folder; [`upgrade`]: an earlier version's
//!   CSV files brought to this version's columns for both.
//!
//! Every row goes out with one append per file and a flush, runs.csv last:
//! a row is finished exactly when its runs.csv line exists, which is what
//! `--resume` reads.

mod cells;
mod csv_file;
pub mod environment;
mod error;
pub mod histograms;
pub mod identity;
pub mod kernels_csv;
pub mod lock;
pub mod merge;
pub mod meta;
pub mod positions_csv;
pub mod read;
pub mod requests_csv;
pub mod resume;
pub mod row;
pub mod row_key;
pub mod runs_csv;
pub mod schema;
pub mod serving;
pub mod summary;
pub mod upgrade;

pub use csv_file::{fixed, opt_fixed, AppendCsv, Table};
pub use error::RunFolderError;
pub use histograms::HistogramLogs;
pub use identity::{by_identity, group_key, group_label, row_identity};
pub use kernels_csv::KernelsCsv;
pub use lock::RunDir;
pub use merge::{merge, Merged};
pub use meta::{Machine, Meta, PastContextSet, SkippedConfig, TestHooks};
pub use positions_csv::PositionsCsv;
pub use read::{locate, Record, Run, SpanTotal};
pub use requests_csv::{RequestRecord, RequestsCsv};
pub use resume::{repair, Finished};
pub use row::{Measures, Row, SpanInterval, SpanMode};
pub use row_key::RowKey;
pub use runs_csv::RunsCsv;

/// One output file of a run folder, fed row by row.
pub trait RowWriter {
    /// Appends what `row` contributes to the file.
    fn write(&mut self, row: &Row) -> Result<(), RunFolderError>;
}
