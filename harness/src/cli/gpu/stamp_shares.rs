//! Each kernel's share of a replayed decode step, from the wait-return
//! stamps of a baseline run (`SPECULA_STAMPS=1`, docs/DESIGN.md 7.12): the
//! decode steps are the longest run of repeats of one sequence of launch
//! shapes, and the gap from a stamp to the next is its kernel's share. Where
//! the graph's first launch shape is known, the steps start there and the
//! step's last launch has a row of its own: its gap runs to the next step's
//! first kernel, so it holds whatever the GPU waits for between two steps
//! (the output's download, the host's work, the next inputs' transfer).

use specula::sweep::measure::median;
use specula_kernels::cuda::stamps::Stamp;

/// One kernel (a launch shape and its names) summed over a decode step.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct KernelShare {
    /// The kernels launched with this shape ('/'-joined), or the shape.
    pub(super) kernel: String,
    /// Blocks of the launch.
    pub(super) blocks: u32,
    /// Threads a block.
    pub(super) threads: u32,
    /// Launches of this shape in one step.
    pub(super) launches: usize,
    /// Whether this is the step's last launch, whose gap runs to the next
    /// step's first kernel (and so holds the time between steps).
    pub(super) ends_step: bool,
    /// Microseconds a step (the median gap of each launch, summed).
    pub(super) us: f64,
    /// Fraction of the step's summed gaps.
    pub(super) share: f64,
}

impl KernelShare {
    /// Microseconds a launch, on average over the step's launches.
    pub(super) fn us_each(&self) -> f64 {
        self.us / self.launches as f64
    }
}

/// The decode steps of `stamps`, `per` launches each: the first stamp of the
/// longest run of repeated shape sequences and how many repeats it holds.
fn find_steps(stamps: &[Stamp], per: usize) -> Option<(usize, usize)> {
    let shape = |s: &Stamp| (s.blocks, s.threads);
    let same =
        |a: usize, b: usize| (0..per).all(|k| shape(&stamps[a + k]) == shape(&stamps[b + k]));
    let mut best: Option<(usize, usize)> = None;
    for phase in 0..per.min(stamps.len()) {
        let (mut i, mut run, mut first) = (phase, 0, phase);
        while i + 2 * per <= stamps.len() {
            if same(i, i + per) {
                if run == 0 {
                    first = i;
                }
                run += 1;
                if best.is_none_or(|(_, r)| run + 1 > r) {
                    best = Some((first, run + 1));
                }
            } else {
                run = 0;
            }
            i += per;
        }
    }
    best
}

/// The step (median first stamp to the next step's first, us) and each
/// kernel's share, largest first, over the decode steps of `stamps` (`per`
/// launches each, beginning with the launch of shape `begins` (blocks,
/// threads a block) where given and held by one launch of a step; the first repeat is a warm-up and the
/// last has no next step, so both are left out); `name` names a stamp. None
/// with fewer than three measured steps.
pub(super) fn kernel_shares(
    stamps: &[Stamp],
    per: usize,
    begins: Option<(u32, u32)>,
    name: impl Fn(&Stamp) -> String,
) -> Option<(f64, Vec<KernelShare>)> {
    if per == 0 {
        return None;
    }
    let (first, reps) = find_steps(stamps, per)?;
    // The repeats found may start anywhere in a step: moved to its first
    // launch (a run of `reps` repeats holds `reps - 1` from any offset).
    // A shape that more than one launch of the step has leaves the start
    // unknown: no step end is claimed then.
    let offset = begins.and_then(|b| {
        let mut at =
            (0..per).filter(|&k| (stamps[first + k].blocks, stamps[first + k].threads) == b);
        match (at.next(), at.next()) {
            (Some(k), None) => Some(k),
            _ => None,
        }
    });
    let first = first + offset.unwrap_or(0);
    let steps: Vec<usize> = (1..reps.saturating_sub(1))
        .map(|i| first + i * per)
        .collect();
    if steps.len() < 3 {
        return None;
    }
    let gap = |a: usize, b: usize| (stamps[b].ns.saturating_sub(stamps[a].ns)) as f64 / 1e3;
    // Three steps or more: the medians exist.
    let step = median(steps.iter().map(|&s| gap(s, s + per)).collect()).unwrap_or(0.0);
    let mut shares: Vec<KernelShare> = Vec::new();
    for k in 0..per {
        let us = median(steps.iter().map(|&s| gap(s + k, s + k + 1)).collect()).unwrap_or(0.0);
        let s = &stamps[steps[0] + k];
        let ends_step = offset.is_some() && k + 1 == per;
        match shares
            .iter_mut()
            .find(|x| (x.blocks, x.threads, x.ends_step) == (s.blocks, s.threads, ends_step))
        {
            Some(x) => {
                x.launches += 1;
                x.us += us;
            }
            None => {
                let named = name(s);
                let named = if named.is_empty() {
                    format!("{}x{}", s.blocks, s.threads)
                } else {
                    named
                };
                shares.push(KernelShare {
                    kernel: if ends_step {
                        format!("{named} + the wait for the next step")
                    } else {
                        named
                    },
                    blocks: s.blocks,
                    threads: s.threads,
                    launches: 1,
                    ends_step,
                    us,
                    share: 0.0,
                });
            }
        }
    }
    let total: f64 = shares.iter().map(|s| s.us).sum();
    for s in &mut shares {
        s.share = if total > 0.0 { s.us / total } else { 0.0 };
    }
    shares.sort_by(|a, b| b.us.total_cmp(&a.us));
    Some((step, shares))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A prefill of 2 launches, then `steps` decode steps of three launches
    /// (a norm 3 us, a linear 20 us, a norm 2 us), the linear's gap `jitter`
    /// us longer in odd steps.
    fn run(steps: usize, jitter: u64) -> Vec<Stamp> {
        let mut out = vec![
            Stamp {
                ns: 0,
                blocks: 128,
                threads: 256,
            },
            Stamp {
                ns: 50_000,
                blocks: 700,
                threads: 64,
            },
        ];
        let mut t = 300_000;
        for i in 0..steps {
            for (blocks, threads, gap) in [
                (1, 512, 3_000),
                (132, 256, 20_000 + jitter * (i as u64 % 2)),
                (1, 512, 2_000),
            ] {
                out.push(Stamp {
                    ns: t,
                    blocks,
                    threads,
                });
                t += gap;
            }
        }
        out
    }

    #[test]
    fn each_kernel_gets_the_median_gap_to_the_next_stamp_summed_over_its_launches() {
        let stamps = run(8, 1_000);
        let (step, shares) = kernel_shares(&stamps, 3, None, |_| String::new()).unwrap();
        assert!((step - 25.0).abs() < 1.01, "{step}");
        assert_eq!(shares[0].kernel, "132x256");
        assert!((shares[0].us - 20.5).abs() < 0.51, "{:?}", shares[0]);
        assert_eq!((shares[1].blocks, shares[1].launches), (1, 2));
        assert!((shares[1].us - 5.0).abs() < 1e-9, "{:?}", shares[1]);
        assert!((shares[1].us_each() - 2.5).abs() < 1e-9);
        assert!(shares.iter().all(|s| !s.ends_step));
        let total = shares[0].us + shares[1].us;
        assert!((shares[0].share - shares[0].us / total).abs() < 1e-12);
        assert!((shares.iter().map(|s| s.share).sum::<f64>() - 1.0).abs() < 1e-12);
    }

    #[test]
    fn steps_begin_at_the_graphs_first_launch_and_the_last_holds_the_wait_between_steps() {
        // A prefill launch, then steps of a scatter (10 x 128, 1 us), a
        // linear (132 x 256, 20 us), a norm (1 x 512, 2 us) and the host's
        // 40 us before the next step's scatter; the repeats found start at
        // the prefill's end, wherever that falls in a step.
        let mut stamps = vec![Stamp {
            ns: 0,
            blocks: 700,
            threads: 64,
        }];
        let mut t = 10_000;
        for _ in 0..8 {
            for (blocks, threads, gap) in [(10, 128, 1_000), (132, 256, 20_000), (1, 512, 42_000)] {
                stamps.push(Stamp {
                    ns: t,
                    blocks,
                    threads,
                });
                t += gap;
            }
        }
        let named = |s: &Stamp| match s.blocks {
            10 => "scatter_words".to_string(),
            1 => "rms_norm".to_string(),
            _ => String::new(),
        };
        let (step, shares) = kernel_shares(&stamps, 3, Some((10, 128)), named).unwrap();
        assert!((step - 63.0).abs() < 1e-9, "{step}");
        let last = shares.iter().find(|s| s.ends_step).unwrap();
        assert_eq!(last.kernel, "rms_norm + the wait for the next step");
        assert!((last.us - 42.0).abs() < 1e-9, "{last:?}");
        assert_eq!(shares.iter().filter(|s| s.ends_step).count(), 1);
        let scatter = shares.iter().find(|s| s.blocks == 10).unwrap();
        assert!((scatter.us - 1.0).abs() < 1e-9 && !scatter.ends_step);
        // A first shape the steps do not hold, or hold twice: no step end
        // is claimed.
        let (_, shares) = kernel_shares(&stamps, 3, Some((3, 3)), |_| String::new()).unwrap();
        assert!(shares.iter().all(|s| !s.ends_step));
        let twice: Vec<Stamp> = stamps
            .iter()
            .map(|s| Stamp {
                blocks: if s.blocks == 132 { 10 } else { s.blocks },
                threads: if s.blocks == 132 { 128 } else { s.threads },
                ..*s
            })
            .collect();
        let (_, shares) = kernel_shares(&twice, 3, Some((10, 128)), |_| String::new()).unwrap();
        assert!(shares.iter().all(|s| !s.ends_step));
    }

    #[test]
    fn the_prefill_before_the_steps_is_left_out_and_names_come_from_the_caller() {
        let stamps = run(6, 0);
        let (_, shares) = kernel_shares(&stamps, 3, None, |s| {
            if s.blocks == 1 {
                "rms_norm".into()
            } else {
                String::new()
            }
        })
        .unwrap();
        assert_eq!(shares.len(), 2, "{shares:?}");
        assert!(shares.iter().all(|s| s.blocks != 700 && s.blocks != 128));
        assert_eq!(shares[1].kernel, "rms_norm");
    }

    #[test]
    fn too_few_repeats_or_a_wrong_step_length_give_none() {
        assert!(kernel_shares(&run(3, 0), 3, None, |_| String::new()).is_none());
        assert!(kernel_shares(&run(8, 0), 0, None, |_| String::new()).is_none());
        // A step length that does not repeat: 4 launches of a 3-launch cycle.
        assert!(kernel_shares(&run(8, 0), 4, None, |_| String::new()).is_none());
    }
}
