//! `specula report` draws every plot as SVG and PNG and writes a
//! self-contained report.html and a report.md with the acceptance analysis;
//! rows whose tau is about 1.00 appear as configuration errors, not as
//! results. `specula compare` matches rows by identity and gives each a
//! verdict; `specula nightly` sweeps, reports and gates into a dated folder.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Output;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn specula(args: &[&str]) -> Output {
    common::specula_in(&repo(), args)
}

fn ci_sweep(out: &Path, extra: &[&str]) {
    let mut args = vec![
        "sweep",
        "bench/sweeps/ci.toml",
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    common::ok(&specula(&args));
}

const PLOTS: [&str; 6] = [
    "throughput",
    "tau",
    "positions",
    "tau_histogram",
    "kernels",
    "speedup_heatmap",
];

#[test]
fn a_report_has_every_plot_as_svg_and_png_and_a_self_contained_html_page() {
    let t = tempfile::tempdir().unwrap();
    let run = t.path().join("run");
    ci_sweep(&run, &["--repeats", "2"]);
    common::edit_json(&run.join("meta.json"), |m| {
        m["engine_switches"] = serde_json::json!({"SPECULA_PDL": "0"});
    });
    common::ok(&specula(&["report", run.to_str().unwrap()]));
    let out = run.join("report");
    for p in PLOTS {
        let png = std::fs::read(out.join(format!("plots/{p}.png"))).unwrap();
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "{p}.png is a PNG");
        assert!(png.len() > 5_000, "{p}.png has content");
        let svg = std::fs::read_to_string(out.join(format!("plots/{p}.svg"))).unwrap();
        assert!(svg.contains("<svg") && svg.contains("</svg>"));
    }
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert_eq!(
        html.matches("<svg").count(),
        PLOTS.len(),
        "plots are inline"
    );
    // The SVG namespace is a name, not a resource.
    let stripped = html.replace("xmlns=\"http://www.w3.org/2000/svg\"", "");
    for external in ["http://", "https://", "<script", "<link", "src=", "url("] {
        assert!(
            !stripped.contains(external),
            "report.html refers to nothing outside: {external}"
        );
    }
    assert!(html.contains("<h2>Acceptance analysis</h2>"));
    assert!(html.contains("break-even"));
    assert!(html.contains("speculation is a net loss") || html.contains("speculation pays"));
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    for p in PLOTS {
        assert!(
            md.contains(&format!("(plots/{p}.png)")),
            "report.md shows {p}"
        );
    }
    assert!(md.contains("## Acceptance analysis"));
    assert!(
        md.contains("engine switches: SPECULA_PDL=0"),
        "the overview says what the run ran with"
    );
}

/// The text of an SVG: plotters writes each text element's content on its own line.
fn svg_text(svg: &str) -> String {
    svg.lines()
        .filter(|l| !l.starts_with('<'))
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn plots_have_titles_a_panel_per_batch_and_temperature_and_the_heatmap_a_colour_bar() {
    let t = tempfile::tempdir().unwrap();
    let run = t.path().join("run");
    ci_sweep(&run, &["--temperatures", "0,0.7"]);
    common::ok(&specula(&["report", run.to_str().unwrap()]));
    let plot = |p: &str| {
        let svg = std::fs::read_to_string(run.join(format!("report/plots/{p}.svg"))).unwrap();
        svg_text(&svg)
    };
    let titles = [
        ("throughput", "Decode throughput (tokens/s) against batch size by draft config — tiny-llama; a panel per temperature"),
        ("tau", "Acceptance length tau (tokens per verify step) by draft config — tiny-llama; a panel per batch size x temperature"),
        ("positions", "by draft config — tiny-llama; a panel per temperature; mean over batch sizes"),
        ("tau_histogram", "over all 12 speculative rows, pooled"),
        ("kernels", "Time per decode step by span (microseconds) — tiny-llama, batch 1, prompt set"),
        ("speedup_heatmap", "Wall-clock speedup over the same-run baseline by steps x topk — tiny-llama; a panel per batch size x temperature"),
    ];
    for (p, title) in titles {
        assert!(
            plot(p).contains(title),
            "{p} is titled {title}:\n{}",
            plot(p)
        );
    }
    for p in ["tau", "speedup_heatmap"] {
        for panel in [
            "batch 1, T=0",
            "batch 1, T=0.7",
            "batch 2, T=0",
            "batch 2, T=0.7",
        ] {
            assert!(plot(p).contains(panel), "{p} has a panel {panel}");
        }
    }
    let heatmap = plot("speedup_heatmap");
    for bar in [
        "speedup (log scale)",
        "2x or more",
        "1x (no change)",
        "0.5x or less",
    ] {
        assert!(heatmap.contains(bar), "the heatmap's colour bar: {bar}");
    }
    let html = std::fs::read_to_string(run.join("report/report.html")).unwrap();
    assert!(html.contains("<figcaption>Wall-clock speedup over the same-run baseline"));
}

#[test]
fn compare_plots_name_their_measure_and_draw_the_noise_band() {
    let t = tempfile::tempdir().unwrap();
    let (a, b) = (t.path().join("a"), t.path().join("b"));
    ci_sweep(&a, &["--repeats", "2", "--batch-sizes", "1"]);
    ci_sweep(&b, &["--repeats", "2", "--batch-sizes", "1"]);
    let out = t.path().join("cmp");
    let args = [
        "compare",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--noise-threshold",
        "0.08",
    ];
    common::ok(&specula(&args));
    let plot =
        |p: &str| svg_text(&std::fs::read_to_string(out.join(format!("plots/{p}.svg"))).unwrap());
    let scatter = plot("throughput_a_vs_b");
    assert!(scatter.contains("Decode throughput (throughput_tok_s, tokens/s) of B against A"));
    assert!(scatter.contains("A: decode tokens / s") && scatter.contains("B: decode tokens / s"));
    let changes = plot("changes");
    assert!(changes
        .contains("speedup for speculative rows (dot), decode throughput for baselines (square)"));
    for p in [&scatter, &changes] {
        assert!(p.contains("±8% noise threshold") && p.contains("noise band: ±8%"));
        assert!(p.contains("95% bootstrap interval"));
    }
}

#[test]
fn rows_with_a_tau_of_one_are_reported_as_configuration_errors_not_results() {
    let t = tempfile::tempdir().unwrap();
    let fx = t.path().join("fx");
    common::ok(&specula(&[
        "fixtures",
        "random",
        "--out",
        fx.to_str().unwrap(),
    ]));
    let run = t.path().join("run");
    let (target, draft) = (fx.join("target"), fx.join("draft"));
    ci_sweep(
        &run,
        &[
            "--target",
            target.to_str().unwrap(),
            "--draft",
            draft.to_str().unwrap(),
        ],
    );
    let out = t.path().join("report");
    common::ok(&specula(&[
        "report",
        run.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]));
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    let results = md
        .split("## Results")
        .nth(1)
        .unwrap()
        .split("## ")
        .next()
        .unwrap();
    assert!(
        !results.contains(".s1k1n2."),
        "flagged rows are not in the results table:\n{results}"
    );
    let flagged = md
        .split("## Likely configuration errors (not results)")
        .nth(1)
        .expect("a section of configuration errors");
    assert!(flagged.contains(".s3k1n4.") && flagged.contains("| likely configuration error |"));
    assert!(md.contains("no speculative rows that are results"));
}

#[test]
fn compare_matches_rows_by_identity_and_gives_each_a_verdict() {
    let t = tempfile::tempdir().unwrap();
    let (a, b) = (t.path().join("a"), t.path().join("b"));
    ci_sweep(&a, &[]);
    ci_sweep(&b, &["--batch-sizes", "1"]);
    let out = t.path().join("cmp");
    let text = common::ok(&specula(&[
        "compare",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]));
    assert!(
        text.contains("rows: 4 matched groups; 4 only in A; 0 only in B"),
        "{text}"
    );
    let verdicts = ["| improved |", "| regressed |", "| within noise |"];
    let rows: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("| tiny-llama."))
        .collect();
    assert_eq!(rows.len(), 4, "{text}");
    assert!(rows.iter().all(|l| verdicts.iter().any(|v| l.contains(v))));
    assert!(
        text.lines()
            .filter(|l| l.contains("| tau |"))
            .all(|l| l.contains("| +0.0% |") && l.ends_with("| within noise |")),
        "greedy tau is the same in both runs:\n{text}"
    );
    let html = std::fs::read_to_string(out.join("compare.html")).unwrap();
    assert_eq!(html.matches("<svg").count(), 2);
    assert!(
        out.join("plots/changes.png").exists() && out.join("plots/throughput_a_vs_b.png").exists()
    );
}

#[test]
fn nightly_sweeps_reports_and_gates_against_the_newest_baseline_into_a_dated_folder() {
    let t = tempfile::tempdir().unwrap();
    let baselines = t.path().join("baselines");
    ci_sweep(&baselines.join("ci-old"), &[]);
    ci_sweep(&baselines.join("ci-new"), &[]);
    let nightly = t.path().join("nightly");
    let args = [
        "nightly",
        "--spec",
        "bench/sweeps/ci.toml",
        "--baselines",
        baselines.to_str().unwrap(),
        "--out",
        nightly.to_str().unwrap(),
    ];
    // One repeat per row: the gate cannot judge timing, so the nightly run is
    // inconclusive (exit 3) under the default policy, never a silent pass.
    let first = specula(&args);
    let text = String::from_utf8_lossy(&first.stdout).into_owned();
    assert_eq!(first.status.code(), Some(3), "{text}");
    assert!(text.contains("specula gate: INCONCLUSIVE"), "{text}");
    assert!(
        text.contains("ci-new (run"),
        "the newest baseline is used:\n{text}"
    );
    let days: Vec<PathBuf> = std::fs::read_dir(&nightly)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(days.len(), 1);
    let day = &days[0];
    let name = day.file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        name.len() == 10 && name.as_bytes()[4] == b'-',
        "a UTC date: {name}"
    );
    for f in [
        "run/runs.csv",
        "report/report.html",
        "report/report.md",
        "gate.md",
    ] {
        assert!(day.join(f).exists(), "{f}");
    }
    let policy = t.path().join("policy.toml");
    std::fs::write(&policy, "on_inconclusive = \"pass\"\n").unwrap();
    let mut passing = args.to_vec();
    passing.extend(["--policy", policy.to_str().unwrap()]);
    common::ok(&specula(&passing));
    assert!(
        nightly.join(format!("{name}-2")).join("gate.md").exists(),
        "a second run the same day gets its own folder"
    );
    let none = specula(&[
        "nightly",
        "--baselines",
        t.path().to_str().unwrap(),
        "--out",
        nightly.to_str().unwrap(),
    ]);
    assert_eq!(none.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&none.stderr).contains("no baseline of sweep `gate`"));
}
