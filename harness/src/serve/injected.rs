//! Deliberate misbehaviours of `specula serve`, for the sweep's failure
//! tests (`--fault`, hidden from `--help`).

/// A deliberate misbehaviour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InjectedFault {
    /// `/health` answers 503 forever.
    NeverHealthy,
    /// Generation endpoints answer 200 with a body that is not JSON.
    Garbage,
    /// The process exits when generation request N + 1 arrives.
    ExitAfter(u64),
    /// Generation endpoints never answer.
    Stall,
    /// SGLang answers claim a billion times the tokens generated
    /// (impossible counters, which a sweep must refuse).
    Impossible,
    /// Parsing a generation request panics (a bug in a request handler,
    /// which must cost that request a 500 and nothing else).
    PanicInParse,
    /// The engine panics on every batch (which must cost that batch a 500
    /// and leave the engine thread serving).
    PanicInEngine,
}

impl std::str::FromStr for InjectedFault {
    type Err = String;
    fn from_str(s: &str) -> Result<InjectedFault, String> {
        match s {
            "never-healthy" => Ok(InjectedFault::NeverHealthy),
            "garbage" => Ok(InjectedFault::Garbage),
            "stall" => Ok(InjectedFault::Stall),
            "impossible" => Ok(InjectedFault::Impossible),
            "panic-in-parse" => Ok(InjectedFault::PanicInParse),
            "panic-in-engine" => Ok(InjectedFault::PanicInEngine),
            _ => match s.strip_prefix("exit-after=").map(str::parse) {
                Some(Ok(n)) => Ok(InjectedFault::ExitAfter(n)),
                _ => Err(format!(
                    "unknown fault {s:?}: never-healthy, garbage, stall, impossible, panic-in-parse, panic-in-engine or exit-after=N"
                )),
            },
        }
    }
}
