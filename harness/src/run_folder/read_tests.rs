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
        // A baseline emits one token per verify step.
        ("tau", if steps == "0" { "1" } else { "2.5" }),
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
        e.contains("runs.csv: line 2: column `steps`: \"two\" is not a number"),
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
    assert!(e.contains("positions.csv: line 2: position 0"), "{e}");

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

/// The error reading a folder of `rows` (and positions.csv / kernels.csv) gives.
fn refused(rows: &[String], positions: Option<&str>, kernels: Option<&str>) -> String {
    let t = folder(rows, positions, kernels);
    let e = Run::read(t.path()).unwrap_err();
    assert_eq!(e.fault(), crate::Fault::Input, "{e}");
    e.to_string()
}

/// A speculative row (steps 3, 4 tokens verified) with `cells` changed.
fn with(key: &str, cells: &[(&str, &str)]) -> String {
    let mut all = vec![
        ("run_id", "r"),
        ("steps", "3"),
        ("topk", "1"),
        ("num_draft_tokens", "4"),
        ("verify_steps", "10"),
        ("output_tokens", "30"),
        ("tau", "2.5"),
        ("accept_rate", "0.5"),
        ("row_key", key),
    ];
    for (c, v) in cells {
        all.retain(|(k, _)| k != c);
        all.push((c, v));
    }
    line(&all)
}

#[test]
fn regression_tau_nan_or_infinite_is_refused_naming_line_and_column() {
    for bad in ["NaN", "inf", "-inf"] {
        let e = refused(&[with("a", &[]), with("b", &[("tau", bad)])], None, None);
        assert!(
            e.contains(&format!("runs.csv: line 3: column `tau`: \"{bad}\"")),
            "{e}"
        );
    }
    let e = refused(&[with("a", &[("wall_s", "NaN")])], None, None);
    assert!(e.contains("line 2: column `wall_s`"), "{e}");
}

#[test]
fn regression_tau_minus_5_and_other_impossible_numbers_are_refused() {
    let cases: [(&[(&str, &str)], &str); 8] = [
        (&[("tau", "-5")], "column `tau`: \"-5\" is negative"),
        (&[("tau", "0.5")], "column `tau`: 0.5 is below 1"),
        (&[("tau", "4.5")], "column `tau`: 4.5 is above 4"),
        (
            &[("tau", "1.5"), ("verify_steps", "0")],
            "1.5 with 0 verify steps",
        ),
        (
            &[("accept_rate", "33")],
            "column `accept_rate`: \"33\" is above 1",
        ),
        (
            &[("output_tokens", "-3")],
            "column `output_tokens`: \"-3\" is negative",
        ),
        (
            &[("steps", "2.5")],
            "column `steps`: \"2.5\" is not a whole number",
        ),
        (
            &[("cpu_tok_s", "-1")],
            "column `cpu_tok_s`: \"-1\" is negative",
        ),
    ];
    for (cells, want) in cases {
        let e = refused(&[with("a", cells)], None, None);
        assert!(
            e.contains(&format!("runs.csv: line 2: {want}")) || e.contains(want),
            "{e}"
        );
        assert!(e.contains("line 2"), "{e}");
    }
    // A baseline emits one token per verify step; none when it made no verify step.
    let base = |tau: &str, v: &str| {
        with(
            "b",
            &[
                ("steps", "0"),
                ("num_draft_tokens", "1"),
                ("tau", tau),
                ("verify_steps", v),
            ],
        )
    };
    assert!(refused(&[base("1.2", "10")], None, None).contains("1.2 is above 1"));
    let t = folder(
        &[
            base("1", "10"),
            with("z", &[("tau", "0"), ("verify_steps", "0")]),
        ],
        None,
        None,
    );
    assert_eq!(Run::read(t.path()).unwrap().rows.len(), 2);
    let t = folder(
        &[with("a", &[("tau", "4"), ("accept_rate", "1")])],
        None,
        None,
    );
    assert!(
        Run::read(t.path()).is_ok(),
        "the longest a verify step emits is possible"
    );
}

#[test]
fn regression_duplicated_runs_csv_row_is_refused() {
    let e = refused(
        &[with("a", &[]), with("b", &[]), with("a", &[])],
        None,
        None,
    );
    assert!(
        e.contains("runs.csv: line 4: column `row_key`: `a` is line 2's too"),
        "{e}"
    );
    let e = refused(
        &[with("a", &[])],
        Some("r,a,1,0.5\nr,a,2,0.3\nr,a,1,0.5\n"),
        None,
    );
    assert!(
        e.contains("positions.csv: line 4: row `a`, position 1: line 2"),
        "{e}"
    );
    let e = refused(
        &[with("a", &[])],
        None,
        Some("r,a,verify,4,10.0,,,,,\nr,a,verify,4,10.0,,,,,\n"),
    );
    assert!(
        e.contains("kernels.csv: line 3: row `a`, span `verify`"),
        "{e}"
    );
}

#[test]
fn regression_a_k_outside_0_1_and_negative_span_times_are_refused() {
    let e = refused(&[with("a", &[])], Some("r,a,1,1.5\n"), None);
    assert!(
        e.contains("positions.csv: line 2: column `acceptance_rate`: \"1.5\" is above 1"),
        "{e}"
    );
    let e = refused(&[with("a", &[])], Some("r,a,1,-20\n"), None);
    assert!(e.contains("\"-20\" is negative"), "{e}");
    let e = refused(&[with("a", &[])], None, Some("r,a,draft,4,-2.5,,,,,\n"));
    assert!(
        e.contains("kernels.csv: line 2: column `mean_us`: \"-2.5\" is negative"),
        "{e}"
    );
    let e = refused(&[with("a", &[])], None, Some("r,a,draft,NaN,2.5,,,,,\n"));
    assert!(
        e.contains("column `count`: \"NaN\" is not a finite number"),
        "{e}"
    );
}
