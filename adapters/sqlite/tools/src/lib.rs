//! The SQLite engine's bench (`sqlite-bench`) and demo (`sqlite-demo`) binaries: see
//! `src/bin`. Run them with `make bench-sqlite` and `make demo-sqlite`.

/// A scratch directory under the system temp dir, removed when dropped.
#[derive(Debug)]
pub struct Scratch(pub std::path::PathBuf);

impl Scratch {
    /// A new, empty one, named after `what` and this process.
    pub fn new(what: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!(
            "alkstore-sqlite-{what}-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos())
        ));
        std::fs::create_dir_all(&dir).expect("a scratch directory");
        Scratch(dir)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
