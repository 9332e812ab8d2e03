//! Where the file is (a path or a `sqlite:` URL), and whether its filesystem can keep WAL's
//! promises (a network filesystem cannot).

use std::path::{Path, PathBuf};

use alkstore_kit::unavailable;
use alkstore_mem::LockError;

/// Where the file is: a plain path, or a `sqlite:` URL (`sqlite:path`, `sqlite://path`,
/// `sqlite:///abs/path`).
pub(crate) fn parse_location(url: &str) -> Result<PathBuf, LockError> {
    let path = match url.strip_prefix("sqlite:") {
        Some(rest) => rest.strip_prefix("//").unwrap_or(rest),
        None => url,
    };
    if path.is_empty() || path == ":memory:" || path.starts_with("file::memory:") {
        return Err(unavailable(format!(
            "sqlite: {url:?} is not a file path: locks shared by processes need a database \
             file (an in-memory database is private to one connection)"
        )));
    }
    Ok(PathBuf::from(path))
}

/// The path the engine opens and checks for `path`, or why it cannot be used: SQLite keeps
/// the `-wal` and `-shm` beside the file a symlink resolves to, so the engine's checks of
/// those side files follow the symlink too; a `file:` URI is refused (SQLite reads it as a
/// URI, and its side files are not where the path says); so is a file with more than one
/// hard link: each name would get a `-wal` and `-shm` of its own, two separate lock tables
/// in one file (two holders of one name, a corrupted file).
pub(crate) fn resolve(path: &Path) -> Result<PathBuf, String> {
    if path.to_str().is_some_and(|p| p.starts_with("file:")) {
        return Err(
            "a SQLite URI (file:...): give the file's path (or a sqlite: URL) instead".into(),
        );
    }
    // Symlinks followed by hand, as SQLite does, also to a file not made yet.
    let mut path = path.to_path_buf();
    for _ in 0..40 {
        match std::fs::symlink_metadata(&path) {
            Ok(meta) if meta.file_type().is_symlink() => {
                let target = std::fs::read_link(&path).map_err(|err| err.to_string())?;
                path = match path.parent() {
                    Some(dir) => dir.join(target),
                    None => target,
                };
            }
            _ => break,
        }
    }
    let Ok(meta) = std::fs::metadata(&path) else {
        // Not there yet (SQLite creates it), or an error that opening reports with its reason.
        return Ok(path);
    };
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        if meta.is_file() && meta.nlink() > 1 {
            return Err(format!(
                "the file has {} hard links: SQLite keeps its -wal and -shm beside each name, \
                 so two names of one file would be two separate lock tables (two holders of \
                 one name, a corrupted file); open it through one name (a symlink is fine)",
                meta.nlink()
            ));
        }
    }
    #[cfg(not(unix))]
    let _ = meta;
    Ok(std::fs::canonicalize(&path).unwrap_or(path))
}

/// The file systems on which SQLite's WAL (shared memory beside the file) cannot work.
const NETWORK_FS: [&str; 12] = [
    "nfs",
    "nfs4",
    "cifs",
    "smb3",
    "smbfs",
    "9p",
    "ceph",
    "glusterfs",
    "fuse.sshfs",
    "afs",
    "lustre",
    "gpfs",
];

/// The file system type of the mount holding `dir`, read from `/proc/self/mounts` (Linux;
/// `None` elsewhere or when it cannot be told).
pub(crate) fn fs_type(dir: &Path) -> Option<String> {
    let dir = std::fs::canonicalize(dir).ok()?;
    let mounts = std::fs::read_to_string("/proc/self/mounts").ok()?;
    mount_type(&mounts, &dir)
}

/// The type of the longest mount point in `mounts` (the format of `/proc/self/mounts`) that
/// holds `dir` (canonical).
fn mount_type(mounts: &str, dir: &Path) -> Option<String> {
    let mut best: Option<(usize, String)> = None;
    for line in mounts.lines() {
        let mut fields = line.split(' ');
        let (_, Some(point), Some(kind)) = (fields.next(), fields.next(), fields.next()) else {
            continue;
        };
        let point = point.replace("\\040", " ");
        if dir.starts_with(&point) && best.as_ref().is_none_or(|(len, _)| point.len() >= *len) {
            best = Some((point.len(), kind.to_owned()));
        }
    }
    best.map(|(_, kind)| kind)
}

/// Whether a file system of type `kind` cannot hold a WAL database shared by processes.
pub(crate) fn is_network_fs(kind: &str) -> bool {
    NETWORK_FS.contains(&kind)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOUNTS: &str = "\
/dev/sda1 / ext4 rw,relatime 0 0
server:/export /mnt/shared nfs4 rw,vers=4.2 0 0
//nas/share /mnt/nas cifs rw 0 0
tmpfs /mnt/shared/local tmpfs rw 0 0
/dev/sdb1 /mnt/with\\040space ext4 rw 0 0
";

    #[test]
    fn the_longest_mount_point_holding_the_directory_gives_its_type() {
        let kind = |dir: &str| mount_type(MOUNTS, Path::new(dir));
        assert_eq!(kind("/home/me").as_deref(), Some("ext4"));
        assert_eq!(kind("/mnt/shared/app").as_deref(), Some("nfs4"));
        assert_eq!(kind("/mnt/shared/local/x").as_deref(), Some("tmpfs"));
        assert_eq!(kind("/mnt/nas").as_deref(), Some("cifs"));
        assert_eq!(kind("/mnt/with space/db").as_deref(), Some("ext4"));
        assert!(is_network_fs("nfs4") && is_network_fs("cifs") && is_network_fs("fuse.sshfs"));
        assert!(!is_network_fs("ext4") && !is_network_fs("tmpfs") && !is_network_fs("overlay"));
    }

    #[test]
    fn locations_accept_paths_and_sqlite_urls_and_refuse_memory() {
        assert_eq!(parse_location("a/b.db").unwrap(), PathBuf::from("a/b.db"));
        assert_eq!(
            parse_location("sqlite:a/b.db").unwrap(),
            PathBuf::from("a/b.db")
        );
        assert_eq!(
            parse_location("sqlite:///abs/b.db").unwrap(),
            PathBuf::from("/abs/b.db")
        );
        assert_eq!(
            parse_location("sqlite://rel/b.db").unwrap(),
            PathBuf::from("rel/b.db")
        );
        for memory in [
            ":memory:",
            "sqlite::memory:",
            "",
            "sqlite:",
            "file::memory:?cache=shared",
        ] {
            assert!(parse_location(memory).is_err(), "{memory}");
        }
    }
}
