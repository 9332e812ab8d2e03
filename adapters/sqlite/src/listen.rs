//! [`Doorbell`]: wake-ups across processes through the file itself.
//!
//! Whatever needs to wake a waiter (a hand-off, a new first waiter, a force-release, a moved
//! test clock) writes its id (or `*`) into `<namespace>_bells` in its own transaction. Each
//! process that has sleepers runs one watcher thread that notices commits to the file and
//! delivers the new bells to its sleepers:
//! - on Linux it sleeps in `poll(2)` on an inotify watch of the `-wal` file, which every
//!   commit writes to: woken within microseconds of a commit, and not at all while nothing
//!   commits (it also wakes every 100 ms to check that it is still wanted). The event comes
//!   with the write of the commit's frames, a moment before the commit is visible (SQLite
//!   then updates the WAL-index header in the `-shm` file, which inotify does not see): so
//!   after each event it also reads that header every millisecond, until it changes (then
//!   it reads the bells again) or for 50 ms at most. (Without that, a watcher that looked too early found
//!   nothing new and waited for the next commit or the 100 ms check: the 100 ms outliers
//!   of the wake-up latency on a loaded machine.);
//! - elsewhere (or when the watch cannot be set) it reads the 48-byte WAL-index header at the
//!   start of the `-shm` file every millisecond (one `pread`, no lock, no SQLite call: every
//!   commit changes it), and a commit made by this process nudges it at once;
//! - every 100 ms it also asks `PRAGMA data_version` on a read connection, in case the
//!   watched file cannot be read or was replaced.
//!
//! The header is read through the process's one shared descriptor of the `-shm`, never
//! closed while this process may hold SQLite's locks on that file (see [`crate::shm`]).
//!
//! Only when something changed does it read the new bells (one indexed query on a read
//! connection; WAL readers never wait for the writer).
//!
//! Bells can be missed (the thread restarts after an error; the table keeps the last 1000):
//! every sleeper also wakes at its own bounded deadline, and after each (re)start every
//! sleeper re-checks once, so a lost bell costs time, never a lease.

use std::fmt;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::Thread;
use std::time::{Duration, Instant};

use alkstore_kit::{Listener, WakeSink};
use rusqlite::{Connection, OpenFlags};
use tokio::sync::mpsc;

use crate::config::SqliteConfig;

/// The local listener's thread, nudged after this process rang a bell, so that a waiter in
/// the same process wakes at once.
#[derive(Default, Debug)]
pub(crate) struct Nudge(Mutex<Option<Thread>>);

impl Nudge {
    pub(crate) fn set(&self, thread: Option<Thread>) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = thread;
    }

    pub(crate) fn nudge(&self) {
        if let Some(thread) = &*self.0.lock().unwrap_or_else(PoisonError::into_inner) {
            thread.unpark();
        }
    }
}
use crate::schema::Sql;

/// How often the watcher reads the WAL-index header.
const POLL: Duration = Duration::from_millis(1);
/// How often it also asks `PRAGMA data_version`.
const SLOW_POLL: Duration = Duration::from_millis(100);
/// How long after an inotify event it also reads the WAL-index header every [`POLL`].
const HOT: Duration = Duration::from_millis(50);

/// The wake-up source of the SQLite engine (see the module docs).
pub struct Doorbell {
    path: PathBuf,
    config: SqliteConfig,
    nudge: Arc<Nudge>,
}

impl fmt::Debug for Doorbell {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Doorbell")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl Doorbell {
    pub(crate) fn new(path: PathBuf, config: SqliteConfig, nudge: Arc<Nudge>) -> Self {
        Doorbell {
            path,
            config,
            nudge,
        }
    }
}

enum Message {
    Subscribed,
    Bell(String),
}

impl Listener for Doorbell {
    async fn listen<'a>(&'a mut self, sink: &'a dyn WakeSink) {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let (path, config) = (self.path.clone(), self.config.clone());
        let Ok(thread) = std::thread::Builder::new()
            .name("alkstore-sqlite-bells".into())
            .spawn(move || watch(&path, &config, &tx))
        else {
            return;
        };
        self.nudge.set(Some(thread.thread().clone()));
        while let Some(message) = rx.recv().await {
            match message {
                Message::Subscribed => sink.subscribed(),
                Message::Bell(id) => sink.deliver(&id),
            }
        }
        self.nudge.set(None);
    }
}

/// The watcher thread: runs until the listener is gone (or an error; the kit restarts it).
fn watch(path: &std::path::Path, config: &SqliteConfig, tx: &mpsc::UnboundedSender<Message>) {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let Ok(conn) = Connection::open_with_flags(path, flags) else {
        return;
    };
    let _ = conn.busy_timeout(config.io_timeout());
    let sql = Sql::new(config.namespace());
    let data_version = |conn: &Connection| -> Option<i64> {
        conn.query_row("PRAGMA data_version", [], |r| r.get(0)).ok()
    };
    let Ok(mut last) = conn.query_row(&sql.bells_max, [], |r| r.get::<_, i64>(0)) else {
        return;
    };
    let mut shm_path = path.as_os_str().to_owned();
    shm_path.push("-shm");
    // Never a descriptor of its own: closing it would drop this process's SQLite locks.
    let shm = crate::shm::open_shared(std::path::Path::new(&shm_path));
    let header = |buf: &mut [u8; 48]| {
        shm.as_ref()
            .is_some_and(|f| f.read_exact_at(buf, 0).is_ok())
    };
    let mut seen = [0u8; 48];
    header(&mut seen);
    let mut version = data_version(&conn);
    if tx.send(Message::Subscribed).is_err() {
        return;
    }
    let mut slow = Instant::now();
    let mut now = [0u8; 48];
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    let mut events = Events::new(std::path::Path::new(&wal));
    // Until when the header is also polled after an inotify event (see the module docs).
    let mut hot_until = Instant::now();
    loop {
        let mut changed = match &mut events {
            Some(events) => {
                let wait = if Instant::now() < hot_until {
                    POLL
                } else {
                    SLOW_POLL
                };
                let woke = events.wait(wait);
                if woke {
                    hot_until = Instant::now() + HOT;
                }
                woke
            }
            None => {
                std::thread::park_timeout(POLL);
                false
            }
        };
        if events.is_none() || Instant::now() < hot_until {
            let moved = !header(&mut now) || now != seen;
            seen = now;
            if moved {
                // The commit is visible: no need to look again until the next event.
                hot_until = Instant::now();
            }
            changed |= moved;
        }
        if tx.is_closed() {
            return;
        }
        if slow.elapsed() >= SLOW_POLL {
            slow = Instant::now();
            let v = data_version(&conn);
            changed |= v != version;
            version = v;
        }
        if !changed {
            continue;
        }
        let bells: Result<Vec<(i64, String)>, _> =
            conn.prepare_cached(&sql.bells_since).and_then(|mut st| {
                st.query_map([last], |r| Ok((r.get(0)?, r.get(1)?)))?
                    .collect()
            });
        let Ok(bells) = bells else {
            return;
        };
        if let Some((first, _)) = bells.first() {
            // Bells pruned before this thread read them: everybody re-checks.
            if *first > last + 1 && last != 0 && tx.send(Message::Bell("*".into())).is_err() {
                return;
            }
        }
        for (seq, id) in bells {
            last = seq;
            if tx.send(Message::Bell(id)).is_err() {
                return;
            }
        }
    }
}

/// Commits to the file as inotify events on its `-wal` file (Linux).
#[cfg(target_os = "linux")]
struct Events {
    inotify: inotify::Inotify,
    buffer: Vec<u8>,
}

#[cfg(target_os = "linux")]
impl Events {
    /// A watch of `wal` (`None` when it cannot be set: then the caller polls).
    fn new(wal: &std::path::Path) -> Option<Events> {
        let inotify = inotify::Inotify::init().ok()?;
        inotify
            .watches()
            .add(wal, inotify::WatchMask::MODIFY)
            .ok()?;
        Some(Events {
            inotify,
            buffer: vec![0; 4096],
        })
    }

    /// Waits up to `timeout` for a commit: whether one (or more) happened.
    fn wait(&mut self, timeout: Duration) -> bool {
        use std::os::fd::AsRawFd;
        let mut fd = libc::pollfd {
            fd: self.inotify.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        let ms = libc::c_int::try_from(timeout.as_millis()).unwrap_or(libc::c_int::MAX);
        // SAFETY: one valid pollfd, for the duration of the call.
        #[allow(unsafe_code)]
        let ready = unsafe { libc::poll(&mut fd, 1, ms) };
        if ready <= 0 {
            return false;
        }
        let mut any = false;
        // The descriptor is non-blocking: drain what is there.
        while let Ok(mut events) = self.inotify.read_events(&mut self.buffer) {
            if events.next().is_none() {
                break;
            }
            any = true;
        }
        any
    }
}

/// No inotify here: the caller polls the WAL-index header.
#[cfg(not(target_os = "linux"))]
struct Events;

#[cfg(not(target_os = "linux"))]
impl Events {
    fn new(_: &std::path::Path) -> Option<Events> {
        None
    }

    fn wait(&mut self, _: Duration) -> bool {
        false
    }
}
