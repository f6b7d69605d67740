//! Whose fault a failure is, the one classification every domain error of
//! the library gives and the binary turns into an exit code (README, Exit
//! codes): 2 unusable input, 1 a failed run or write, 130 interrupted.

/// The kind of a failure, as far as the caller must act on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// The input cannot be used: a bad file, field, flag or folder.
    Input,
    /// The work ran and failed: a result could not be written, points
    /// failed, a server died.
    Failed,
    /// Ctrl-C or SIGTERM stopped the work; finished results are kept.
    Interrupted,
    /// The work ran but could not decide: a gate whose timings could not be
    /// judged, under a policy that does not let that pass.
    Inconclusive,
}
