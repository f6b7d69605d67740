//! `specula ab SPEC --arm NAME=FLAGS ... --out DIR`: a paired, interleaved
//! timing comparison of a control and variants (docs/DESIGN.md 10.4).

use super::output::outln;
use super::CliError;
use clap::Args;
use specula::ab::{compare, AbSettings, Arm};
use specula::stats::paired::PairedRule;
use std::path::PathBuf;

/// Arguments of `specula ab`.
#[derive(Args, Debug)]
#[command(
    after_help = "Each --arm is NAME=FLAGS (flags of `specula sweep`, space-separated) or
NAME@BINARY=FLAGS (another specula build); the first arm is the control. Every round runs
each undecided variant between two control runs (A V1 A V2 A ..., each its own process,
variants' order rotating); per row group the mean thread-CPU time per call of the draft
and verify spans and the decode CPU time per token are compared to the geometric mean of
the two neighbouring control runs. A variant regresses when a measure's signed-rank
interval of the slowdown (95%, shared among its measures) lies wholly above
--regress-above; passes when every interval lies below --pass-below; else more rounds,
up to --max-rounds (then inconclusive).
Exit codes: 0 every variant passed, 1 some variant regressed, 3 some inconclusive.

Example (bench/gate_power.sh runs this under background load):
  specula ab bench/sweeps/gate-power.toml --out /tmp/ab --arm A= --arm A2= \\
      --arm verify10=\"--inject-verify-work-pct 10\" --arm target20=\"--inject-target-work-pct 20\""
)]
pub struct AbArgs {
    /// The sweep spec every process runs (keep it short: a second or so).
    spec: PathBuf,
    /// An arm: NAME=FLAGS or NAME@BINARY=FLAGS; the first is the control.
    #[arg(long = "arm", value_name = "NAME=FLAGS", required = true)]
    arms: Vec<String>,
    /// Folder for every process's run folder and ab.json.
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
    /// Rounds before any decision.
    #[arg(long, default_value_t = 8)]
    min_rounds: usize,
    /// Rounds at most (48: at two busy cores of background load a planted
    /// 10% draft slowdown was still undecided after 30 rounds in 2 of 18
    /// trials).
    #[arg(long, default_value_t = 48)]
    max_rounds: usize,
    /// A slowdown whose interval lies wholly above this regresses.
    #[arg(long, default_value_t = 0.03)]
    regress_above: f64,
    /// Every interval wholly below this: a pass.
    #[arg(long, default_value_t = 0.05)]
    pass_below: f64,
}

fn arm(text: &str) -> Result<Arm, CliError> {
    let (head, flags) = text
        .split_once('=')
        .ok_or_else(|| CliError::Usage(format!("--arm {text:?}: expected NAME=FLAGS")))?;
    let (name, binary) = match head.split_once('@') {
        Some((n, b)) => (n.to_string(), PathBuf::from(b)),
        None => (
            head.to_string(),
            std::env::current_exe().map_err(|e| CliError::Usage(e.to_string()))?,
        ),
    };
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Err(CliError::Usage(format!(
            "--arm {text:?}: NAME must be letters, digits, - or _"
        )));
    }
    Ok(Arm {
        name,
        binary,
        flags: flags.split_whitespace().map(str::to_owned).collect(),
    })
}

/// Runs `specula ab`.
pub fn run(a: AbArgs) -> Result<(), CliError> {
    let arms = a
        .arms
        .iter()
        .map(|s| arm(s))
        .collect::<Result<Vec<_>, _>>()?;
    if a.min_rounds < 2 || a.max_rounds < a.min_rounds {
        return Err(CliError::Usage(
            "--min-rounds >= 2 and --max-rounds >= --min-rounds".into(),
        ));
    }
    let settings = AbSettings {
        spec: a.spec,
        arms,
        out: a.out,
        rule: PairedRule {
            min_rounds: a.min_rounds,
            regress_above: a.regress_above,
            pass_below: a.pass_below,
            ..PairedRule::default()
        },
        max_rounds: a.max_rounds,
    };
    let outcomes = compare(&settings).map_err(|e| CliError::Usage(e.to_string()))?;
    for o in &outcomes {
        let worst = o
            .checks
            .iter()
            .max_by(|x, y| x.1.lower.total_cmp(&y.1.lower))
            .map(|(k, c)| {
                format!(
                    "{k} {:+.1}% [{:+.1}%, {:+.1}%]",
                    100.0 * c.estimate,
                    100.0 * c.lower,
                    100.0 * c.upper
                )
            })
            .unwrap_or_default();
        outln!(
            "{}: {} after {} rounds (largest: {worst})",
            o.arm,
            o.verdict,
            o.rounds
        );
    }
    if outcomes.iter().any(|o| o.verdict == "regression") {
        return Err(CliError::Found("a variant regressed".into()));
    }
    if outcomes.iter().any(|o| o.verdict == "inconclusive") {
        return Err(CliError::Inconclusive(
            "some variant is undecided after --max-rounds".into(),
        ));
    }
    Ok(())
}
