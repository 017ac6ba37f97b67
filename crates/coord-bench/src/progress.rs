//! A progress line on stderr while a run lasts (terminals only, never in `--json`).

use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

/// What the line shows of a run, counted by its driver.
pub trait Counts: Send + Sync + 'static {
    fn elapsed(&self) -> Duration;
    fn ops(&self) -> u64;
    fn errors(&self) -> u64;
    fn violations(&self) -> u64;
}

pub struct Progress {
    task: Option<tokio::task::JoinHandle<()>>,
}

impl Progress {
    pub fn start<C: Counts>(enabled: bool, label: String, shared: Arc<C>, seconds: f64) -> Progress {
        if !enabled {
            return Progress { task: None };
        }
        let task = tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_millis(500));
            loop {
                tick.tick().await;
                let elapsed = shared.elapsed().as_secs_f64();
                let ops = shared.ops();
                let rate = if elapsed > 0.0 { ops as f64 / elapsed } else { 0.0 };
                let mut err = std::io::stderr().lock();
                let _ = write!(
                    err,
                    "\r\x1b[2K{label}: {elapsed:>5.1}s / {seconds:.0}s  {ops} ops  {rate:.0}/s  errors {}  violations {}",
                    shared.errors(),
                    shared.violations()
                );
                let _ = err.flush();
            }
        });
        Progress { task: Some(task) }
    }

    pub fn finish(self) {
        if let Some(task) = self.task {
            task.abort();
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r\x1b[2K");
            let _ = err.flush();
        }
    }
}
