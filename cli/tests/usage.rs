//! The built `alkstore` without a server: help, usage errors (exit 2) and an engine that
//! cannot be reached (exit 3), each said in one line on stderr, never with a password.

mod common;

use std::net::TcpListener;

use common::{Run, alkstore_env};

/// Asserts `run` failed with `code` and one line on stderr containing `said`, nothing on
/// stdout, and no `secret` anywhere.
fn assert_failed(run: &Run, code: i32, said: &str, secret: &str) {
    assert_eq!(run.code, code, "{run:?}");
    assert!(run.stdout.is_empty(), "{run:?}");
    assert_eq!(run.stderr.lines().count(), 1, "{run:?}");
    assert!(run.stderr.starts_with("alkstore: "), "{run:?}");
    assert!(run.stderr.contains(said), "wanted {said:?}: {run:?}");
    assert!(
        !run.stderr.contains(secret) && !run.stdout.contains(secret),
        "{run:?}"
    );
}

#[test]
fn help_and_version_exit_0() {
    let run = alkstore_env(&["--help"], &[]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stdout.starts_with("alkstore: the operator's view"),
        "{run:?}"
    );
    assert!(
        run.stdout.contains("Usage: alkstore [OPTIONS] <COMMAND>"),
        "{run:?}"
    );
    assert!(run.stdout.contains("redis:// redis+unix://"), "{run:?}");
    assert!(run.stdout.contains("(default \"alk\")"), "{run:?}");
    let run = alkstore_env(&["holder", "--help"], &[]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stdout.contains("Usage: alkstore holder"), "{run:?}");
    let run = alkstore_env(&["-V"], &[]);
    assert_eq!(
        (run.code, run.stdout.trim()),
        (0, concat!("alkstore ", env!("CARGO_PKG_VERSION")))
    );
}

#[test]
fn usage_errors_exit_2_with_one_line_on_stderr() {
    let url = "redis://127.0.0.1:1/";
    let cases: &[(&[&str], &str)] = &[
        (&["--url", url], "requires a subcommand"),
        (&["--url", url, "lsit"], "unrecognized subcommand 'lsit'"),
        (&["--url", url, "holder"], "<NAME>"),
        (
            &["--url", url, "release", "a", "b"],
            "unexpected argument 'b'",
        ),
        (
            &["--url", url, "--verbose", "list"],
            "unexpected argument '--verbose'",
        ),
        (&["completions", "tcsh"], "invalid value 'tcsh'"),
        (
            &["--url", url, "list", "x\u{202e}\u{1b}[2Jy"],
            "unexpected argument 'x  [2Jy'",
        ),
        (
            &["--url", url, "holder", "bad\nname"],
            "control character U+000A",
        ),
        (
            &["list"],
            "no engine URL: give --url URL or set ALKSTORE_URL",
        ),
        (
            &["--url", url, "--namespace", "{x}", "list"],
            "namespace \"{x}\" holds '{' or '}'",
        ),
    ];
    for (args, said) in cases {
        assert_failed(&alkstore_env(args, &[]), 2, said, "\u{0}");
    }
}

#[test]
fn an_unsupported_scheme_is_a_usage_error_naming_the_schemes_served() {
    let url = "mysql://admin:hunter2@db.internal:3306/app";
    let run = alkstore_env(&["--url", url, "list"], &[]);
    assert_failed(
        &run,
        2,
        "unsupported URL scheme \"mysql://\": alkstore serves redis:// redis+unix:// rediss:// postgres:// postgresql:// sqlite://",
        "hunter2",
    );
    // From the environment too, and a URL with no scheme at all.
    let run = alkstore_env(
        &["holder", "x"],
        &[("ALKSTORE_URL", "admin:hunter2@db:5432")],
    );
    assert_failed(&run, 2, "the URL has no scheme", "hunter2");
}

/// A local port nothing listens on: bound, then let go.
fn closed_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

#[test]
fn an_unreachable_engine_exits_3_with_a_clear_message_and_no_password() {
    let port = closed_port();
    let url = format!("redis://ops:hunter2-secret@127.0.0.1:{port}/0");
    for command in [
        &["list"][..],
        &["holder", "job"],
        &["--json", "release", "job"],
    ] {
        let mut args = vec!["--url", url.as_str()];
        args.extend_from_slice(command);
        let run = alkstore_env(&args, &[]);
        let said =
            format!("lock engine unavailable: could not connect to redis://127.0.0.1:{port}/0");
        assert_failed(&run, 3, &said, "hunter2");
    }
    // A socket that is not there, its password in the query.
    let url = "redis+unix:///nonexistent/alkstore-test.sock?db=1&pass=hunter2-secret";
    let run = alkstore_env(&["--url", url, "list"], &[]);
    assert_failed(
        &run,
        3,
        "redis+unix:///nonexistent/alkstore-test.sock",
        "hunter2",
    );
    // TLS to a port where nothing listens: unavailable, its password never quoted.
    let url = format!("rediss://:hunter2-secret@127.0.0.1:{port}/");
    let run = alkstore_env(&["--url", &url, "list"], &[]);
    let said = format!("lock engine unavailable: could not connect to rediss://127.0.0.1:{port}/");
    assert_failed(&run, 3, &said, "hunter2");
}

#[test]
fn completions_need_no_url_and_exit_0() {
    for shell in ["bash", "zsh", "fish"] {
        let run = alkstore_env(&["completions", shell], &[]);
        assert_eq!((run.code, run.stderr.as_str()), (0, ""), "{shell}");
        assert!(run.stdout.contains("release"), "{shell}: {}", run.stdout);
    }
}

#[cfg(unix)]
#[test]
fn an_empty_env_url_is_no_url_and_bytes_that_are_not_utf8_are_a_usage_error() {
    let run = alkstore_env(&["list"], &[("ALKSTORE_URL", "")]);
    assert_failed(&run, 2, "no engine URL", "\u{0}");
    use std::os::unix::ffi::OsStrExt;
    let bad = std::ffi::OsStr::from_bytes(b"j\xffb");
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_alkstore"))
        .args(["--url", "redis://127.0.0.1:1/", "holder"])
        .arg(bad)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(stderr.contains("invalid UTF-8"), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
}
