//! The reader, and row identity, on run folders written here cell by cell.

use super::*;
use crate::run_folder::identity::{by_identity, group_key, group_label, row_identity};
use crate::run_folder::schema::RUNS_COLUMNS;

/// A runs.csv line with `cells` set and every other column empty.
fn line(cells: &[(&str, &str)]) -> String {
    RUNS_COLUMNS
        .iter()
        .map(|c| cells.iter().find(|(k, _)| k == c).map_or("", |(_, v)| *v))
        .collect::<Vec<_>>()
        .join(",")
}

/// A run folder holding `rows` (and positions.csv / kernels.csv when given).
fn folder(rows: &[String], positions: Option<&str>, kernels: Option<&str>) -> tempfile::TempDir {
    let t = tempfile::tempdir().unwrap();
    let mut runs = RUNS_COLUMNS.join(",") + "\n";
    for r in rows {
        runs.push_str(r);
        runs.push('\n');
    }
    std::fs::write(t.path().join("runs.csv"), runs).unwrap();
    if let Some(p) = positions {
        std::fs::write(
            t.path().join("positions.csv"),
            format!("run_id,row_key,position,acceptance_rate\n{p}"),
        )
        .unwrap();
    }
    if let Some(k) = kernels {
        std::fs::write(
            t.path().join("kernels.csv"),
            format!("run_id,row_key,span,count,mean_us,p50_us,p90_us,p99_us,max_us,share\n{k}"),
        )
        .unwrap();
    }
    t
}

fn row(key: &str, steps: &str, repeat: &str, machine: &str) -> String {
    line(&[
        ("run_id", "r"),
        ("machine", machine),
        ("backend", "cpu"),
        ("steps", steps),
        ("topk", "1"),
        ("batch_size", "1"),
        ("tau", "2.5"),
        ("repeat", repeat),
        ("seed", repeat),
        ("row_key", key),
    ])
}

#[test]
fn a_folder_reads_back_with_positions_and_span_totals() {
    let t = folder(
        &[
            row("m.base.b1.p.t0.r0", "0", "0", "a"),
            row("m.s2k1n3.b1.p.t0.r0", "2", "0", "a"),
        ],
        Some("r,m.s2k1n3.b1.p.t0.r0,2,0.5\nr,m.s2k1n3.b1.p.t0.r0,1,0.75\n"),
        Some("r,m.s2k1n3.b1.p.t0.r0,verify,4,10.0,,,,,\nr,m.s2k1n3.b1.p.t0.r0,draft,8,2.5,,,,,\n"),
    );
    let run = Run::read(t.path()).unwrap();
    assert_eq!(run.rows.len(), 2);
    assert_eq!(run.header, RUNS_COLUMNS);
    let spec = run.row("m.s2k1n3.b1.p.t0.r0").unwrap();
    assert!(spec.speculative() && !run.rows[0].speculative());
    assert_eq!(
        (spec.steps(), spec.num("tau"), spec.num("speedup")),
        (2, Some(2.5), None)
    );
    assert_eq!(run.positions["m.s2k1n3.b1.p.t0.r0"], [0.75, 0.5]);
    let spans = &run.spans["m.s2k1n3.b1.p.t0.r0"];
    assert_eq!(
        spans["verify"],
        SpanTotal {
            count: 4.0,
            total_us: 40.0
        }
    );
    assert_eq!(spans["draft"].total_us, 20.0);
    assert!(run.has_positions && run.meta.is_none());
    assert_eq!(Run::read(&t.path().join("runs.csv")).unwrap().rows.len(), 2);
}

#[test]
fn the_newest_run_folder_of_a_folder_of_runs_is_read() {
    let t = tempfile::tempdir().unwrap();
    let one = folder(&[row("m.base.b1.p.t0.r0", "0", "0", "a")], None, None);
    for name in ["run-20261101", "run-20261130", "not-a-run"] {
        std::fs::create_dir(t.path().join(name)).unwrap();
        if name.starts_with("run") {
            std::fs::copy(
                one.path().join("runs.csv"),
                t.path().join(name).join("runs.csv"),
            )
            .unwrap();
        }
    }
    assert_eq!(
        locate(t.path()).unwrap(),
        t.path().join("run-20261130/runs.csv")
    );
}

#[test]
fn bad_cells_and_files_are_named_with_their_row_and_column() {
    let bad = folder(&[row("k", "two", "0", "a")], None, None);
    let e = Run::read(bad.path()).unwrap_err();
    assert!(matches!(e, RunFolderError::Malformed { .. }), "{e}");
    let e = e.to_string();
    assert!(
        e.contains("runs.csv: row 2: column `steps`: \"two\" is not a number"),
        "{e}"
    );

    let gap = folder(
        &[row("k", "3", "0", "a")],
        Some("r,k,1,0.5\nr,k,3,0.1\n"),
        None,
    );
    let e = Run::read(gap.path()).unwrap_err().to_string();
    assert!(
        e.contains("positions.csv: row `k` has positions up to 3 but not 2"),
        "{e}"
    );

    let zero = folder(&[row("k", "3", "0", "a")], Some("r,k,0,0.5\n"), None);
    let e = Run::read(zero.path()).unwrap_err().to_string();
    assert!(e.contains("positions.csv: row 2: position 0"), "{e}");

    let empty = folder(&[], None, None);
    let e = Run::read(empty.path()).unwrap_err().to_string();
    assert!(e.contains("no rows"), "{e}");

    let nothing = tempfile::tempdir().unwrap();
    let e = Run::read(nothing.path()).unwrap_err();
    assert_eq!(e.fault(), crate::Fault::Input);
    assert!(e.to_string().contains("missing runs.csv"), "{e}");
}

#[test]
fn identity_ignores_where_a_row_ran_and_groups_its_repeats() {
    let t = folder(
        &[
            row("m.s2k1n3.b1.p.t0.r0", "2", "0", "host-a"),
            row("m.s2k1n3.b1.p.t0.r1", "2", "1", "host-a"),
        ],
        None,
        None,
    );
    let other = folder(
        &[row("m.s2k1n3.b1.p.t0.r0", "2", "0", "host-b")],
        None,
        None,
    );
    let (a, b) = (
        Run::read(t.path()).unwrap(),
        Run::read(other.path()).unwrap(),
    );
    assert_eq!(
        row_identity(&a.rows[0]),
        row_identity(&b.rows[0]),
        "machine is not identity"
    );
    assert_ne!(
        row_identity(&a.rows[0]),
        row_identity(&a.rows[1]),
        "repeat is"
    );
    assert_eq!(
        group_key(&a.rows[0]),
        group_key(&a.rows[1]),
        "repeats share a group"
    );
    assert_eq!(group_label(&a.rows[1]), "m.s2k1n3.b1.p.t0");
    assert_eq!(by_identity(&a).unwrap().len(), 2);

    let twice = folder(
        &[row("x", "2", "0", "a"), row("y", "2", "0", "b")],
        None,
        None,
    );
    let e = by_identity(&Run::read(twice.path()).unwrap())
        .unwrap_err()
        .to_string();
    assert!(e.contains("rows 2 and 3 have the same identity"), "{e}");
}
