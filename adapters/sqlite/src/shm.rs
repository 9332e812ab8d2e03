//! The `-shm` file as the watcher reads it: opened once per file per process and not closed
//! while this process might still hold SQLite's locks on it.
//!
//! SQLite's locks on the `-shm` (the WAL write lock, the readers' marks, the lock that says
//! some connection has the file open) are POSIX record locks, which belong to the process,
//! not to a descriptor: closing ANY descriptor of the file drops ALL of this process's locks
//! on it, those of every connection of the process included (another store's, or the user's
//! own connection in a fenced transaction). Another process could then take the write lock
//! while ours is mid-write: two writers, a corrupted file. SQLite itself never closes such a
//! descriptor while it has locks on the file; the watcher (see [`crate::listen`]) must not
//! either, whenever its thread ends (the store dropped, its runtime shut down, a restart).
//!
//! So the watcher takes its descriptor from a process-wide table, keyed by the file's
//! (device, inode) from `stat` (which opens nothing): watchers of one file share one
//! descriptor, kept after they end. An entry is closed only once its file has been
//! unlinked (`fstat` says no link left), looked at whenever a watcher starts, so that a
//! process opening and closing stores keeps one descriptor per `-shm` file that still
//! exists. SQLite deletes the `-shm` when the last connection anywhere closes the file (and
//! has then dropped its own locks on it); if somebody else deleted it under us, the store
//! refuses everything (see [`crate::sides`]), and no process opening the file anew would
//! see those locks anyway.

use std::fs::File;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};

/// The (device, inode) of a file.
type Identity = (u64, u64);

/// The `-shm` files open for watchers in this process, with their identities.
static OPEN: Mutex<Vec<(Identity, Arc<File>)>> = Mutex::new(Vec::new());

/// The `-shm` file at `path`, opened read-only (`None` when it cannot be): the descriptor
/// this process already has open on that file if any, else a new one, kept in the table
/// (see the module docs). Closes the descriptors of files unlinked since.
pub(crate) fn open_shared(path: &Path) -> Option<Arc<File>> {
    let mut open = OPEN.lock().unwrap_or_else(PoisonError::into_inner);
    // Only a file known to have no link left: an `fstat` that fails keeps its entry.
    open.retain(|(_, file)| !file.metadata().is_ok_and(|m| m.nlink() == 0));
    let found = std::fs::metadata(path).ok()?;
    let id = (found.dev(), found.ino());
    if let Some((_, file)) = open.iter().find(|(known, _)| *known == id) {
        return Some(Arc::clone(file));
    }
    let file = Arc::new(File::open(path).ok()?);
    // The file opened may have replaced the one `stat` saw: keyed by what was opened.
    let id = file.metadata().map_or(id, |m| (m.dev(), m.ino()));
    open.push((id, Arc::clone(&file)));
    Some(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_descriptor_per_file_closed_once_the_file_is_unlinked() {
        let dir = std::env::temp_dir().join(format!("alkstore-sqlite-shm-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let (a, b) = (dir.join("a-shm"), dir.join("b-shm"));
        std::fs::write(&a, [1u8; 48]).unwrap();
        std::fs::write(&b, [2u8; 48]).unwrap();
        let first = open_shared(&a).unwrap();
        let again = open_shared(&a).unwrap();
        assert!(Arc::ptr_eq(&first, &again), "one descriptor per file");
        drop(again);
        let other = open_shared(&b).unwrap();
        assert!(!Arc::ptr_eq(&first, &other));
        std::fs::remove_file(&a).unwrap();
        // A new file at the same path: a new descriptor; the unlinked one leaves the table.
        std::fs::write(&a, [3u8; 48]).unwrap();
        let renewed = open_shared(&a).unwrap();
        assert!(!Arc::ptr_eq(&first, &renewed));
        assert_eq!(
            Arc::strong_count(&first),
            1,
            "the unlinked file left the table"
        );
        assert_eq!(Arc::strong_count(&other), 2, "the other file stays in it");
        assert!(open_shared(&dir.join("missing-shm")).is_none());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
