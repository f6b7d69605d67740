//! End-to-end tests of the `specula` binary: each module runs it the way a user does.
//!
//! One test binary for the whole folder: one link instead of one per file,
//! which keeps CI's build time and disk small.

mod analyze_cli;
mod audit_cli;
mod audit_config_checks;
mod audit_engines;
mod audit_probe;
mod bad_input;
mod capture_cli;
mod capture_parity;
mod common;
mod context_tiers_cli;
mod datasets_cli;
mod draft_layouts_cli;
mod exit_codes;
mod fuzz_parsers;
mod gate_costs;
mod gate_gpu_spans;
mod generate_cli;
mod incident_end_to_end;
mod machine_readable;
mod older_runs;
mod report_cli;
mod serve_attacks;
mod serve_backends;
mod serve_faults;
mod serve_load;
mod serve_streams;
mod sparse_targets_cli;
mod speedup_trust;
mod sweep_cli;
mod sweep_outcomes;
