//! The files beside the database in WAL mode (`-wal`, `-shm`): their identities, kept by
//! every connection the engine opens, and whether another process has the file open while
//! its `-shm` is missing.
//!
//! SQLite keeps both files for as long as any connection has the file open, and creates the
//! `-shm` (the WAL index, and the write lock between connections) only when it believes it
//! is the first connection. If the `-shm` is deleted while a store is open, a process
//! opening the file next creates a new one: the two then see different WAL indexes and
//! different write locks, so both could grant the same name, and their writes can corrupt
//! the file. Hence: a connection whose `-wal` or `-shm` is no longer the file it opened
//! refuses every operation, and an opener that finds the `-shm` missing while another
//! process holds SQLite's lock on the database file (every WAL connection holds a shared
//! one while open) refuses to open.

use std::path::{Path, PathBuf};

/// The (device, inode) of a file, `None` when it is missing.
pub(crate) type Identity = Option<(u64, u64)>;

/// The (device, inode) of the file at `path`.
pub(crate) fn identity(path: &Path) -> Identity {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

/// `path` with `suffix` appended to its file name (`app.db` -> `app.db-shm`).
pub(crate) fn side(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// The paths of the database file and its two side files (made once: every operation
/// looks at them).
#[derive(Debug, Clone)]
pub(crate) struct Paths {
    main: PathBuf,
    wal: PathBuf,
    shm: PathBuf,
}

impl Paths {
    /// The paths of `path` and its side files.
    pub(crate) fn new(path: &Path) -> Paths {
        Paths {
            main: path.to_path_buf(),
            wal: side(path, "-wal"),
            shm: side(path, "-shm"),
        }
    }
}

/// The identities of the database file and its two side files, as one connection opened
/// them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Files {
    main: Identity,
    wal: Identity,
    shm: Identity,
}

impl Files {
    /// The identities now.
    pub(crate) fn of(paths: &Paths) -> Files {
        Files {
            main: identity(&paths.main),
            wal: identity(&paths.wal),
            shm: identity(&paths.shm),
        }
    }

    /// Why a connection that opened `self` must not write now that the files are `now`
    /// (`None`: they are the same files).
    pub(crate) fn changed(&self, now: &Files) -> Option<&'static str> {
        if now.main != self.main {
            Some(
                "the database file was deleted or replaced since it was opened (processes that \
                 open its path now reach another file): open the store again",
            )
        } else if now.shm != self.shm {
            Some(
                "the file's -shm (its WAL index and write lock) was deleted or replaced while \
                 this store had it open: another process opening the file now would not see \
                 this store's writes or locks, so this store refuses every operation (its \
                 leases lapse at their deadlines); close it and open the store again once no \
                 process has the file open",
            )
        } else if now.wal != self.wal {
            Some(
                "the file's -wal was deleted or replaced while this store had it open (commits \
                 made into it would be lost), so this store refuses every operation; close it \
                 and open the store again once no process has the file open",
            )
        } else {
            None
        }
    }

    /// Whether a side file is missing (right after opening: deleted under a connection of
    /// this process, which keeps using the deleted one).
    pub(crate) fn missing_side(&self) -> bool {
        self.wal.is_none() || self.shm.is_none()
    }
}

/// Whether the `-shm` of `path` is missing while another process holds a lock on SQLite's
/// lock bytes of the database file (so that process has the file open, on a `-shm` that was
/// deleted). Read from `/proc/locks` (Linux): `false` elsewhere, or when it cannot be read.
///
/// The kernel writes `/proc/locks` at most a page per `read(2)`, walking its list of locks
/// afresh each time: a lock released by anybody between two reads shifts the list, and the
/// line after the cut is never shown. So the table is read with one large buffer (one
/// `read` for up to a page: one consistent snapshot; `std::fs::read_to_string` reads in
/// chunks from 32 bytes, and under load a process's lock went unseen in one read out of a
/// few), and a table longer than that is read up to [`PROC_LOCKS_READS`] times: a lock
/// shown in any of them is held.
pub(crate) fn shm_deleted_under_another_process(path: &Path) -> bool {
    if identity(&side(path, "-shm")).is_some() {
        return false;
    }
    let Some((dev, ino)) = identity(path) else {
        return false;
    };
    for _ in 0..PROC_LOCKS_READS {
        let Some((locks, whole)) = proc_locks() else {
            return false;
        };
        if held_by_another(&locks, dev, ino, std::process::id()) {
            return true;
        }
        if whole {
            return false;
        }
    }
    false
}

/// How many times a `/proc/locks` too long for one `read(2)` is read (see
/// [`shm_deleted_under_another_process`]).
const PROC_LOCKS_READS: usize = 4;

/// The text of `/proc/locks`, and whether it came in one `read(2)` (then it is one
/// consistent snapshot). `None` when it cannot be read.
fn proc_locks() -> Option<(String, bool)> {
    use std::io::Read;
    let mut file = std::fs::File::open("/proc/locks").ok()?;
    let mut text = vec![0u8; 64 * 1024];
    let (mut len, mut reads) = (0, 0);
    loop {
        if len == text.len() {
            text.resize(len * 2, 0);
        }
        match file.read(&mut text[len..]) {
            Ok(0) => break,
            Ok(n) => {
                len += n;
                reads += 1;
            }
            Err(err) if err.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return None,
        }
    }
    text.truncate(len);
    Some((String::from_utf8(text).ok()?, reads <= 1))
}

/// SQLite's lock bytes on Unix: from `PENDING_BYTE` (1 GiB) for 512 bytes.
const LOCK_BYTES: (u64, u64) = (0x4000_0000, 0x4000_0000 + 511);

/// Whether `locks` (the format of `/proc/locks`) has a POSIX lock of a process other than
/// `me` on SQLite's lock bytes of the file (`dev`, `ino`).
fn held_by_another(locks: &str, dev: u64, ino: u64, me: u32) -> bool {
    // major:minor as Linux encodes them in st_dev.
    let major = ((dev >> 32) & 0xffff_f000) | ((dev >> 8) & 0xfff);
    let minor = ((dev >> 12) & 0xffff_ff00) | (dev & 0xff);
    let file = format!("{major:02x}:{minor:02x}:{ino}");
    locks.lines().any(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        // "14: POSIX  ADVISORY  READ 13560 fe:00:10166601 1073741826 1073742335"
        let [_, "POSIX", _, _, pid, at, start, end, ..] = fields[..] else {
            return false;
        };
        let (Ok(start), Ok(end)) = (start.parse::<u64>(), end.parse::<u64>()) else {
            return false;
        };
        at == file
            && pid.parse::<u32>().is_ok_and(|pid| pid != me)
            && start <= LOCK_BYTES.1
            && end >= LOCK_BYTES.0
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lock_of_another_process_on_the_lock_bytes_of_the_file_is_found() {
        let dev = (0xfe << 8) | 0x01; // fe:01
        let locks = "\
1: POSIX  ADVISORY  READ 13560 fe:01:77 1073741826 1073742335
2: POSIX  ADVISORY  WRITE 99 fe:01:78 1073741826 1073742335
3: FLOCK  ADVISORY  WRITE 98 fe:01:77 0 EOF
4: POSIX  ADVISORY  READ 97 fe:01:77 0 100
";
        assert!(held_by_another(locks, dev, 77, 1));
        assert!(!held_by_another(locks, dev, 77, 13560), "our own locks");
        assert!(!held_by_another(locks, dev, 79, 1), "another file");
        assert!(!held_by_another(locks, dev + 1, 77, 1), "another device");
        assert_eq!(
            side(Path::new("a/b.db"), "-shm"),
            PathBuf::from("a/b.db-shm")
        );
    }
}
