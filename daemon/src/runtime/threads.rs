//! Where connections and turns run (RFC 0049): a few single-threaded
//! runtimes, one per core, each on its own thread, beside the daemon's
//! main runtime.
//!
//! On tokio's multi-thread runtime, the pieces of one turn (the
//! connection's read loop, the request's task, the turn, the model's HTTP
//! connection) wake each other across its workers: a task woken by the
//! I/O driver goes to the shared queue, and the other worker is woken to
//! run it. With one conversation on this 2-core machine that made 12–19
//! context switches a turn, and the daemon's threads waited 250–330 µs a
//! turn for a CPU (`load tail`); on one worker, 3–4 switches and 14–22 µs.
//!
//! So each accepted connection is served on one of these threads, in turn,
//! and a turn runs on the thread that started it (its connection's): one
//! client's turn wakes nothing but its own thread, and the HTTP connection
//! its first call to the model opened lives there too. Many clients spread
//! over the threads by their connections. Many conversations on one
//! connection (a chat gateway) spread too: a thread that runs two turns
//! more than the least busy one gives its next turn away. Turns started
//! off these threads (the bus, a component) go to the least busy one.
//!
//! Everything else (the listeners' accept loops, MCP, discovery, the
//! sweeper) stays on the main runtime.

use std::cell::Cell;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use crabtalk_proto::Placement;
use tokio::runtime::Handle;
use tokio::sync::oneshot;

/// Stack of a serving thread: twice what tokio gives its own workers.
const STACK: usize = 4 * 1024 * 1024;

/// The environment variable that sets how many serving threads there are
/// (`0`: everything on the main runtime), for benchmarks.
pub(crate) const COUNT_VAR: &str = "CRABTALKD_SERVING_THREADS";

thread_local! {
    /// Which serving thread this is, on one.
    static CURRENT: Cell<Option<usize>> = const { Cell::new(None) };
}

/// The serving threads; with none, connections and turns run on the main
/// runtime.
pub(crate) struct Threads {
    threads: Vec<Thread>,
    /// The thread the next connection goes to.
    next: AtomicUsize,
}

struct Thread {
    handle: Handle,
    /// Turns running on it.
    running: Arc<AtomicUsize>,
    /// Dropped to end the thread.
    _stop: oneshot::Sender<()>,
}

/// Counts a turn on its thread while it lives.
pub(crate) struct Running(Arc<AtomicUsize>);

impl Drop for Running {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Threads {
    /// One per core, or as many as [`COUNT_VAR`] says.
    pub(crate) fn for_this_machine() -> std::io::Result<Arc<Self>> {
        let count = match std::env::var(COUNT_VAR) {
            Ok(value) => value.trim().parse().map_err(|_| {
                std::io::Error::other(format!(
                    "{COUNT_VAR}={value:?} is not a number of threads (0 serves on the main runtime)"
                ))
            })?,
            Err(_) => std::thread::available_parallelism().map_or(1, |n| n.get()),
        };
        Self::start(count)
    }

    /// `count` threads, each running a single-threaded runtime until this
    /// is dropped.
    pub(crate) fn start(count: usize) -> std::io::Result<Arc<Self>> {
        let mut threads = Vec::with_capacity(count);
        for index in 0..count {
            let name = format!("crabtalk-serve-{index}");
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                // Its blocking pool's threads.
                .thread_name("crabtalk-blocking")
                .build()?;
            let handle = runtime.handle().clone();
            let (stop, stopped) = oneshot::channel::<()>();
            std::thread::Builder::new()
                .name(name)
                .stack_size(STACK)
                .spawn(move || {
                    CURRENT.set(Some(index));
                    crate::provider::own_client_on_this_thread();
                    // Until the threads are dropped; then what is still on
                    // it (nothing, after a clean shutdown) is dropped too.
                    runtime.block_on(async {
                        let _ = stopped.await;
                    });
                })?;
            threads.push(Thread {
                handle,
                running: Arc::new(AtomicUsize::new(0)),
                _stop: stop,
            });
        }
        Ok(Arc::new(Self {
            threads,
            next: AtomicUsize::new(0),
        }))
    }

    /// How many threads there are.
    pub(crate) fn len(&self) -> usize {
        self.threads.len()
    }

    /// Where a turn started here runs, and the guard that counts it there;
    /// `None` with no threads. On a serving thread, that thread, unless it
    /// runs two turns more than the least busy one; elsewhere, the least
    /// busy one.
    pub(crate) fn for_turn(&self) -> Option<(Handle, Running)> {
        let load = |index: usize| self.threads[index].running.load(Ordering::Acquire);
        let least = (0..self.threads.len()).min_by_key(|&index| load(index))?;
        let chosen = match CURRENT.get().filter(|&index| index < self.threads.len()) {
            Some(here) if load(here) <= load(least) + 1 => here,
            _ => least,
        };
        let thread = &self.threads[chosen];
        thread.running.fetch_add(1, Ordering::AcqRel);
        Some((thread.handle.clone(), Running(thread.running.clone())))
    }
}

impl Placement for Threads {
    fn next_connection(&self) -> Option<Handle> {
        if self.threads.is_empty() {
            return None;
        }
        let index = self.next.fetch_add(1, Ordering::Relaxed) % self.threads.len();
        Some(self.threads[index].handle.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `f` on `handle`'s thread and returns what it gives.
    fn on<T: Send + 'static>(handle: &Handle, f: impl FnOnce() -> T + Send + 'static) -> T {
        let (tx, rx) = std::sync::mpsc::channel();
        handle.spawn(async move {
            let _ = tx.send(f());
        });
        rx.recv().expect("the serving thread runs the task")
    }

    fn index(handle: &Handle) -> Option<usize> {
        on(handle, || CURRENT.get())
    }

    #[test]
    fn connections_go_to_each_thread_in_turn() {
        let threads = Threads::start(2).unwrap();
        let placed: Vec<Option<usize>> = (0..4)
            .map(|_| index(&threads.next_connection().unwrap()))
            .collect();
        assert_eq!(placed, [Some(0), Some(1), Some(0), Some(1)]);
    }

    #[test]
    fn a_turn_stays_on_its_connection_s_thread_while_the_threads_are_evenly_busy() {
        let threads = Threads::start(2).unwrap();
        let second = threads.threads[1].handle.clone();
        let placed = on(&second, {
            let threads = threads.clone();
            move || {
                let (a, one) = threads.for_turn().unwrap();
                // One here, none there: still here.
                let (b, two) = threads.for_turn().unwrap();
                drop((one, two));
                (a, b)
            }
        });
        assert_eq!(index(&placed.0), Some(1));
        assert_eq!(index(&placed.1), Some(1));
    }

    #[test]
    fn a_thread_two_turns_busier_gives_the_next_turn_away() {
        let threads = Threads::start(2).unwrap();
        let first = threads.threads[0].handle.clone();
        let placed = on(&first, {
            let threads = threads.clone();
            move || {
                let (a, one) = threads.for_turn().unwrap();
                let (b, two) = threads.for_turn().unwrap();
                // Two here, none there: the third goes there.
                let (c, three) = threads.for_turn().unwrap();
                let counts = [
                    threads.threads[0].running.load(Ordering::Acquire),
                    threads.threads[1].running.load(Ordering::Acquire),
                ];
                drop((one, two, three));
                (a, b, c, counts)
            }
        });
        assert_eq!(index(&placed.0), Some(0));
        assert_eq!(index(&placed.1), Some(0));
        assert_eq!(index(&placed.2), Some(1));
        assert_eq!(placed.3, [2, 1]);
        for thread in &threads.threads {
            assert_eq!(thread.running.load(Ordering::Acquire), 0);
        }
    }

    #[test]
    fn a_turn_started_elsewhere_goes_to_the_least_busy_thread() {
        let threads = Threads::start(2).unwrap();
        threads.threads[0].running.fetch_add(1, Ordering::AcqRel);
        let (handle, _running) = threads.for_turn().unwrap();
        assert_eq!(index(&handle), Some(1));
    }

    #[test]
    fn without_threads_everything_runs_where_it_is_started() {
        let threads = Threads::start(0).unwrap();
        assert_eq!(threads.len(), 0);
        assert!(threads.for_turn().is_none());
        assert!(threads.next_connection().is_none());
    }
}
