//! A server started from a launch command: its own process group (so its
//! workers go with it), waited for until its health check answers, and
//! stopped on drop: SIGTERM to the group, then SIGKILL after a grace
//! period, then reaped. The group is also registered with
//! [`crate::sweep::interrupt`], so a second Ctrl-C (which exits at once)
//! still kills it, and the child gets SIGKILL if this process dies.

use super::RemoteError;
use crate::sweep::interrupt;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long a server gets to exit after SIGTERM before SIGKILL.
const GRACE: Duration = Duration::from_secs(5);

/// A running server process (and its group).
#[derive(Debug)]
pub struct ServerProcess {
    child: Child,
    /// The launch words, for messages.
    pub command: String,
}

impl ServerProcess {
    /// Starts `words` in `cwd`, in a new process group; its output goes to `log` when given.
    pub fn start(
        words: &[String],
        cwd: &std::path::Path,
        log: Option<std::fs::File>,
    ) -> Result<ServerProcess, RemoteError> {
        let command = words.join(" ");
        let (program, args) = words
            .split_first()
            .ok_or_else(|| RemoteError("[server] `command` is empty".into()))?;
        let mut c = Command::new(program);
        c.args(args).current_dir(cwd).stdin(Stdio::null());
        match log {
            Some(mut f) => {
                use std::io::Write;
                let _ = writeln!(
                    f,
                    "=== {} {command}",
                    crate::run_folder::meta::rfc3339(std::time::SystemTime::now())
                );
                let f2 = f
                    .try_clone()
                    .map_err(|e| RemoteError::new("server log", e))?;
                c.stdout(f).stderr(f2);
            }
            None => {
                c.stdout(Stdio::null()).stderr(Stdio::null());
            }
        }
        c.process_group(0);
        // SAFETY: prctl is async-signal-safe; it only asks the kernel to send
        // SIGKILL to the child when this process's spawning thread dies.
        unsafe {
            c.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
        let child = c
            .spawn()
            .map_err(|e| RemoteError(format!("cannot start `{command}`: {e}")))?;
        interrupt::register_group(child.id() as i32);
        Ok(ServerProcess { child, command })
    }

    /// The process id (also the group id).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// `Some(message)` when the process has exited.
    pub fn exited(&mut self) -> Option<String> {
        match self.child.try_wait() {
            Ok(Some(status)) => Some(format!("the server exited ({status})")),
            Ok(None) => None,
            Err(e) => Some(format!("the server cannot be waited for: {e}")),
        }
    }

    /// Polls `healthy` until it answers, the process exits, `timeout` passes or Ctrl-C.
    pub fn wait_healthy(
        &mut self,
        timeout: Duration,
        healthy: impl Fn() -> bool,
    ) -> Result<(), RemoteError> {
        let t0 = Instant::now();
        loop {
            if let Some(m) = self.exited() {
                return Err(RemoteError(format!("{m} before becoming healthy")));
            }
            if healthy() {
                return Ok(());
            }
            if interrupt::requested() {
                return Err(RemoteError(
                    "interrupted while waiting for the server".into(),
                ));
            }
            if t0.elapsed() >= timeout {
                return Err(RemoteError(format!(
                    "the server did not become healthy within {:.1} s",
                    timeout.as_secs_f64()
                )));
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// SIGTERM to the group, SIGKILL after the grace period, then reap.
    pub fn stop(&mut self) {
        let pgid = self.child.id() as i32;
        let signal_group = |sig| {
            // SAFETY: kill(2) with a negative pid signals our own child's group.
            unsafe { libc::kill(-pgid, sig) };
        };
        if self.exited().is_none() {
            signal_group(libc::SIGTERM);
            let t0 = Instant::now();
            while self.exited().is_none() && t0.elapsed() < GRACE {
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        // Whatever is left of the group (workers of a launcher that exited).
        signal_group(libc::SIGKILL);
        let _ = self.child.wait();
        interrupt::unregister_group(pgid);
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        self.stop();
    }
}
