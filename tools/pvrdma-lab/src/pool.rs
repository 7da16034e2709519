// SPDX-License-Identifier: GPL-2.0-only
//! Guests side by side: `workers` threads take the plan's entries from one
//! queue and hand what each started and finished to the reporting thread as it
//! happens. Each guest is a QEMU with single-threaded TCG, so a 2-core machine
//! runs two at once at nearly full speed each; every guest still gets a fresh
//! QEMU, mux, socket directory and results directory of its own.

use std::collections::VecDeque;
use std::ops::ControlFlow;
use std::sync::mpsc;
use std::thread;

use crate::signals;

/// What the reporting thread hears from the workers.
pub enum Event<T> {
    /// A worker started the job of this index.
    Started(usize),
    /// The job of this index ended: its outcome, or the signal that interrupted it.
    Finished(usize, Result<T, i32>),
}

/// Memory a guest takes on the host, 1.5 GiB: its RAM (`-m 1G`, see qemu.rs) and QEMU itself.
const HOST_BYTES_PER_GUEST: u64 = 3 << 29;

/// How many guests to run at once by default: one per CPU the runner may use,
/// no more than the available memory holds.
pub fn default_workers() -> usize {
    let cpus = thread::available_parallelism().map_or(1, |n| n.get());
    let by_memory = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|text| mem_available(&text))
        .map_or(usize::MAX, |bytes| {
            usize::try_from(bytes / HOST_BYTES_PER_GUEST).unwrap_or(usize::MAX)
        });
    cpus.min(by_memory).max(1)
}

/// `MemAvailable` of /proc/meminfo, in bytes.
fn mem_available(meminfo: &str) -> Option<u64> {
    meminfo.lines().find_map(|line| {
        let kib = line
            .strip_prefix("MemAvailable:")?
            .trim()
            .strip_suffix("kB")?;
        kib.trim().parse::<u64>().ok()?.checked_mul(1024)
    })
}

/// What a worker tells the dispatching thread.
enum Message<T> {
    /// This worker (its index among the workers) wants a job.
    Idle(usize),
    /// The job of this index ended.
    Finished(usize, Result<T, i32>),
}

/// Runs `work` on `jobs`, in their order, `workers` at a time, and calls
/// `on_event` on the calling thread for every start and end (events name jobs
/// by their index). The calling thread hands out the jobs: once `on_event`
/// breaks on a job's end, no further job starts (those running finish and are
/// reported), nor does one once a terminating signal came. Returns the indexes
/// of the jobs that never started, in order.
pub fn run<J, T, W, E>(jobs: &[J], workers: usize, work: W, mut on_event: E) -> Vec<usize>
where
    J: Sync,
    T: Send,
    W: Fn(&J) -> Result<T, i32> + Sync,
    E: FnMut(Event<T>) -> ControlFlow<()>,
{
    let mut queue: VecDeque<usize> = (0..jobs.len()).collect();
    thread::scope(|scope| {
        let (to_dispatcher, messages) = mpsc::channel();
        let mut to_workers = Vec::new();
        for worker in 0..workers.max(1) {
            let (to_worker, assignments) = mpsc::channel::<Option<usize>>();
            to_workers.push(to_worker);
            let to_dispatcher = to_dispatcher.clone();
            let work = &work;
            scope.spawn(move || loop {
                if to_dispatcher.send(Message::Idle(worker)).is_err() {
                    return;
                }
                let Ok(Some(index)) = assignments.recv() else {
                    return;
                };
                let outcome = work(&jobs[index]);
                if to_dispatcher
                    .send(Message::Finished(index, outcome))
                    .is_err()
                {
                    return;
                }
            });
        }
        // The workers hold the only senders left: the loop ends when all are done.
        drop(to_dispatcher);
        let mut stopped = false;
        for message in messages {
            match message {
                Message::Idle(worker) => {
                    let next = if stopped || signals::received().is_some() {
                        None
                    } else {
                        queue.pop_front()
                    };
                    if let Some(index) = next {
                        // Printed before the worker can end it.
                        let _ = on_event(Event::Started(index));
                    }
                    // A worker that is gone needs no answer.
                    let _ = to_workers[worker].send(next);
                }
                Message::Finished(index, outcome) => {
                    stopped |= on_event(Event::Finished(index, outcome)).is_break();
                }
            }
        }
    });
    queue.into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn every_job_runs_once_and_is_reported() {
        let jobs: Vec<usize> = (0..20).collect();
        let runs = AtomicUsize::new(0);
        let mut started = [0; 20];
        let mut finished = vec![None; 20];
        let left = run(
            &jobs,
            3,
            |&j| {
                runs.fetch_add(1, Ordering::SeqCst);
                Ok(j * 2)
            },
            |event| {
                match event {
                    Event::Started(i) => started[i] += 1,
                    Event::Finished(i, outcome) => finished[i] = Some(outcome),
                }
                ControlFlow::Continue(())
            },
        );
        assert!(left.is_empty());
        assert_eq!(runs.load(Ordering::SeqCst), 20);
        assert!(started.iter().all(|&n| n == 1));
        for (i, outcome) in finished.into_iter().enumerate() {
            assert_eq!(outcome, Some(Ok(i * 2)));
        }
    }

    #[test]
    fn one_worker_keeps_the_order() {
        let jobs = ["c", "a", "d", "b"];
        let mut seen = Vec::new();
        run(
            &jobs,
            1,
            |&j| Ok::<_, i32>(j),
            |event| {
                if let Event::Finished(_, Ok(name)) = event {
                    seen.push(name);
                }
                ControlFlow::Continue(())
            },
        );
        assert_eq!(seen, ["c", "a", "d", "b"]);
    }

    #[test]
    fn a_break_starts_nothing_more() {
        let jobs: Vec<usize> = (0..10).collect();
        let mut finished = Vec::new();
        let left = run(
            &jobs,
            1,
            |&j| Ok::<_, i32>(j),
            |event| {
                if let Event::Finished(i, _) = event {
                    finished.push(i);
                    if i == 3 {
                        return ControlFlow::Break(());
                    }
                }
                ControlFlow::Continue(())
            },
        );
        assert_eq!(finished, [0, 1, 2, 3]);
        assert_eq!(left, [4, 5, 6, 7, 8, 9]);
    }

    #[test]
    fn mem_available_is_read_in_bytes() {
        let meminfo = "MemTotal:       24000000 kB\nMemFree:  1 kB\nMemAvailable:   20971520 kB\n";
        assert_eq!(mem_available(meminfo), Some(20 << 30));
        assert_eq!(mem_available("MemTotal: 5 kB\n"), None);
    }
}
