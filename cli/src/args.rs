//! The command line: `alkstore [--url URL] [--namespace NS] [--json] <list | holder NAME | release NAME>`,
//! parsed by hand into an [`Invocation`] (or help, or the version).

use std::ffi::OsString;

use alkstore_mem::validate::check_name;

use crate::engines::SCHEMES;

/// The usage text of `--help`.
pub(crate) fn usage() -> String {
    format!(
        "\
alkstore: the operator's view of alkstore locks

Usage: alkstore [--url URL] [--namespace NS] [--json] <COMMAND>

Commands:
  list            the held leases (name, owner, fencing token, deadline, time left)
                  and the queued waiters, in the order they will be served
  holder NAME     the lease on NAME; exit 1 when it is not held
  release NAME    end the lease on NAME whoever holds it (its holder's renewals then
                  fail, the next grant has a larger token); exit 1 when it is not held

Options:
  --url URL       the engine, by its URL's scheme: {schemes}
                  (default: $ALKSTORE_URL)
  --namespace NS  the namespace the application uses (Redis: default \"alk\"; PostgreSQL: the
                  schema, default \"alkstore\", which must exist)
  --json          print JSON instead of a table (one object, one line)
  -h, --help      print this text
  -V, --version   print the version

Exit codes: 0 done, 1 not held / nothing to release, 2 usage error,
3 the engine could not be reached or did not answer.
",
        schemes = SCHEMES.join(" ")
    )
}

/// What the tool is asked to do.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Parsed {
    /// Print the usage text.
    Help,
    /// Print the version.
    Version,
    /// Run a command against an engine.
    Run(Invocation),
}

/// A command, and the engine it runs against.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Invocation {
    /// The engine's URL (`--url`, else `$ALKSTORE_URL`).
    pub(crate) url: String,
    /// `--namespace`, when given.
    pub(crate) namespace: Option<String>,
    /// `--json`: JSON instead of a table.
    pub(crate) json: bool,
    /// The command.
    pub(crate) command: Command,
}

/// One of the tool's commands.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Command {
    /// `list`: held leases and waiters.
    List,
    /// `holder NAME`: one lease.
    Holder(String),
    /// `release NAME`: force-release one lease.
    Release(String),
}

/// `args` (without the program name) as strings: a usage error names the first that is not
/// valid UTF-8.
pub(crate) fn utf8_args(args: impl IntoIterator<Item = OsString>) -> Result<Vec<String>, String> {
    args.into_iter()
        .map(|arg| {
            arg.into_string().map_err(|arg| {
                format!("argument {arg:?} is not valid UTF-8 (lock names and URLs are text)")
            })
        })
        .collect()
}

/// Parses `args` (without the program name); `env_url` is `$ALKSTORE_URL`. Options may come
/// before or after the command, as `--opt value` or `--opt=value`; `--` ends the options, so
/// that a name beginning with `-` can be given.
///
/// # Errors
/// A one-line usage message.
pub(crate) fn parse(args: Vec<String>, env_url: Option<String>) -> Result<Parsed, String> {
    let (mut url, mut namespace, mut json) = (None, None, false);
    let mut words = Vec::new();
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((flag, value)) if flag.starts_with("--") => (flag.to_owned(), Some(value.into())),
            _ => (arg.clone(), None),
        };
        let mut value = |what: &str| {
            inline
                .clone()
                .or_else(|| args.next())
                .ok_or_else(|| format!("{flag} needs {what}"))
        };
        match flag.as_str() {
            "-h" | "--help" => return Ok(Parsed::Help),
            "-V" | "--version" => return Ok(Parsed::Version),
            "--url" => url = Some(value("a URL")?),
            "--namespace" => namespace = Some(value("a namespace")?),
            "--json" if inline.is_none() => json = true,
            "--json" => return Err("--json takes no value".into()),
            "--" => {
                words.extend(args.by_ref());
            }
            _ if flag.starts_with('-') && flag.len() > 1 => {
                return Err(format!("unknown option {flag:?}"));
            }
            _ => words.push(arg),
        }
    }
    let command = command(words)?;
    let url = url
        .or(env_url.filter(|u| !u.is_empty()))
        .ok_or("no engine URL: give --url URL or set ALKSTORE_URL")?;
    if namespace.as_deref() == Some("") {
        return Err("--namespace needs a non-empty namespace".into());
    }
    Ok(Parsed::Run(Invocation {
        url,
        namespace,
        json,
        command,
    }))
}

/// The command in the words left after the options.
fn command(words: Vec<String>) -> Result<Command, String> {
    let mut words = words.into_iter();
    let Some(verb) = words.next() else {
        return Err("no command: give list, holder NAME or release NAME".into());
    };
    let command = match verb.as_str() {
        "list" => Command::List,
        "holder" | "release" => {
            let name = words
                .next()
                .ok_or_else(|| format!("{verb} needs a lock NAME"))?;
            // Any name an application may have locked (it may have raised the core's default
            // 256-byte limit): only what no engine ever accepts is refused here.
            check_name(&name, &crate::engines::limits()).map_err(|e| e.to_string())?;
            if verb == "holder" {
                Command::Holder(name)
            } else {
                Command::Release(name)
            }
        }
        other => {
            return Err(format!(
                "unknown command {other:?}: give list, holder NAME or release NAME"
            ));
        }
    };
    match words.next() {
        Some(extra) => Err(format!("unexpected argument {extra:?} after the command")),
        None => Ok(command),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(args: &[&str]) -> Result<Parsed, String> {
        let args = args.iter().map(|a| a.to_string()).collect();
        parse(args, Some("redis://env/".into()))
    }

    fn invocation(url: &str, ns: Option<&str>, json: bool, command: Command) -> Parsed {
        Parsed::Run(Invocation {
            url: url.into(),
            namespace: ns.map(String::from),
            json,
            command,
        })
    }

    #[test]
    fn commands_with_options_before_or_after_and_url_from_env_or_flag() {
        assert_eq!(
            run(&["list"]),
            Ok(invocation("redis://env/", None, false, Command::List))
        );
        assert_eq!(
            run(&["--url", "redis://h:1/", "holder", "job", "--json"]),
            Ok(invocation(
                "redis://h:1/",
                None,
                true,
                Command::Holder("job".into())
            ))
        );
        assert_eq!(
            run(&[
                "release",
                "invoice/1001",
                "--namespace=billing",
                "--url=redis://x/"
            ]),
            Ok(invocation(
                "redis://x/",
                Some("billing"),
                false,
                Command::Release("invoice/1001".into())
            ))
        );
        // A URL holding '=' keeps it: only the first '=' splits `--url=...`.
        assert_eq!(
            run(&["--url=redis+unix:///s.sock?db=2", "list"]),
            Ok(invocation(
                "redis+unix:///s.sock?db=2",
                None,
                false,
                Command::List
            ))
        );
        // `--` ends the options: a name may begin with '-'; non-ASCII names pass.
        assert_eq!(
            run(&["holder", "--", "-odd"]),
            Ok(invocation(
                "redis://env/",
                None,
                false,
                Command::Holder("-odd".into())
            ))
        );
        assert_eq!(
            run(&["holder", "zürich/ü\"\\"]),
            Ok(invocation(
                "redis://env/",
                None,
                false,
                Command::Holder("zürich/ü\"\\".into())
            ))
        );
    }

    #[test]
    fn help_and_version_win_wherever_they_are() {
        assert_eq!(run(&["--help"]), Ok(Parsed::Help));
        assert_eq!(run(&["holder", "x", "-h"]), Ok(Parsed::Help));
        assert_eq!(run(&["bogus", "--help"]), Ok(Parsed::Help));
        assert_eq!(run(&["-V"]), Ok(Parsed::Version));
        assert!(usage().contains("redis:// redis+unix://"));
    }

    #[test]
    fn usage_errors_say_what_is_wrong_in_one_line() {
        let cases: &[(&[&str], &str)] = &[
            (&[], "no command"),
            (&["lsit"], "unknown command \"lsit\""),
            (&["holder"], "holder needs a lock NAME"),
            (&["release"], "release needs a lock NAME"),
            (&["list", "extra"], "unexpected argument \"extra\""),
            (&["holder", "a", "b"], "unexpected argument \"b\""),
            (&["--frobnicate", "list"], "unknown option \"--frobnicate\""),
            (&["-x", "list"], "unknown option \"-x\""),
            (&["--json=yes", "list"], "--json takes no value"),
            (&["list", "--url"], "--url needs a URL"),
            (&["list", "--namespace"], "--namespace needs a namespace"),
            (&["list", "--namespace="], "non-empty namespace"),
            (&["holder", ""], "invalid lock name \"\": it is empty"),
            (&["holder", "a\nb"], "control character U+000A"),
            (&["release", "a\u{1b}[2J"], "control character U+001B"),
        ];
        for (args, expected) in cases {
            let err = run(args).unwrap_err();
            assert!(err.contains(expected), "{args:?}: {err}");
            assert!(!err.contains('\n'), "{args:?}: {err}");
        }
        // A name over the core's default limit is still one an application may hold.
        let long = "n".repeat(300);
        assert!(matches!(
            run(&["holder", &long]),
            Ok(Parsed::Run(Invocation { command: Command::Holder(name), .. })) if name == long
        ));
        assert!(run(&["holder", "alk:x"]).unwrap_err().contains("reserved"));
        let huge = "n".repeat(64 * 1024 + 1);
        assert!(
            run(&["holder", &huge])
                .unwrap_err()
                .contains("over the limit of 65536")
        );
    }

    #[test]
    fn the_url_comes_from_the_flag_else_a_non_empty_env() {
        let args = || vec!["list".to_string()];
        assert_eq!(
            parse(args(), None).unwrap_err(),
            "no engine URL: give --url URL or set ALKSTORE_URL"
        );
        assert!(parse(args(), Some(String::new())).is_err());
        let flag = vec!["--url".into(), "redis://flag/".into(), "list".into()];
        assert_eq!(
            parse(flag, Some("redis://env/".into())),
            Ok(invocation("redis://flag/", None, false, Command::List))
        );
    }

    #[cfg(unix)]
    #[test]
    fn arguments_that_are_not_utf8_are_a_usage_error() {
        use std::os::unix::ffi::OsStringExt;
        let bad = OsString::from_vec(vec![b'j', 0xff, b'b']);
        let err = utf8_args([OsString::from("holder"), bad]).unwrap_err();
        assert!(err.contains("not valid UTF-8"), "{err}");
        assert_eq!(
            utf8_args([OsString::from("list")]),
            Ok(vec!["list".to_string()])
        );
    }
}
