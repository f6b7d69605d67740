//! What a draft's training promised: its teacher-forced validation accuracy
//! per unrolled step, from `training_report.json` beside the draft (written
//! by tools/train), to set beside the live acceptance.

use std::path::Path;

/// The teacher-forced accuracy per unrolled step in `draft/training_report.json`
/// (`validation.<set>.acc`, averaged over sets weighted by `label_positions`).
pub fn trained_accuracy(draft: &Path) -> Option<Vec<f64>> {
    let text = std::fs::read_to_string(draft.join("training_report.json")).ok()?;
    let v: serde_json::Value = serde_json::from_str(&text).ok()?;
    let mut sum: Vec<f64> = Vec::new();
    let mut weight = 0.0;
    for set in v.get("validation")?.as_object()?.values() {
        let acc: Vec<f64> = set
            .get("acc")?
            .as_array()?
            .iter()
            .filter_map(|x| x.as_f64())
            .collect();
        let w = set
            .get("label_positions")
            .and_then(|x| x.as_f64())
            .unwrap_or(1.0);
        if sum.is_empty() {
            sum = vec![0.0; acc.len()];
        }
        sum.iter_mut().zip(&acc).for_each(|(s, a)| *s += a * w);
        weight += w;
    }
    (weight > 0.0).then(|| sum.into_iter().map(|s| s / weight).collect())
}
