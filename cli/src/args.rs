//! The command line, by clap's derive: `alkstore [--url URL] [--namespace NS] [--json]
//! <list | holder NAME | release NAME | completions SHELL>`, parsed into an [`Invocation`].
//!
//! The options are global (before or after the command, `--opt value` or `--opt=value`);
//! `--` ends them, so that a name beginning with `-` can be given. Every usage error is a
//! [`clap::Error`] (exit 2), help and version are too (exit 0): [`one_line`] says an error
//! as the tool prints it.

use std::ffi::OsString;

use alkstore_mem::validate::check_name;
use clap::builder::NonEmptyStringValueParser;
use clap::error::ErrorKind;
use clap::{CommandFactory, Parser, Subcommand};
use clap_complete::Shell;

use crate::served::SCHEMES;

/// alkstore: the operator's view of alkstore locks
#[derive(Debug, Parser)]
#[command(
    name = "alkstore",
    version,
    disable_help_subcommand = true,
    after_help = "Exit codes: 0 done, 1 not held / nothing to release, 2 usage error,\n\
                  3 the engine could not be reached or did not answer."
)]
struct Cli {
    #[arg(
        long,
        global = true,
        value_name = "URL",
        env = "ALKSTORE_URL",
        hide_env_values = true,
        help = format!("The engine, by its URL's scheme:\n{}", SCHEMES.join(" "))
    )]
    url: Option<String>,
    /// The namespace the application uses: Redis's namespace (default "alk"),
    /// PostgreSQL's schema (default "alkstore", must exist),
    /// SQLite's table prefix (default "alkstore", must exist)
    #[arg(verbatim_doc_comment)]
    #[arg(long, global = true, value_name = "NS", value_parser = NonEmptyStringValueParser::new())]
    namespace: Option<String>,
    /// Print JSON instead of a table (one object, one line)
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    command: Verb,
}

/// The subcommands, as clap reads them.
#[derive(Debug, Subcommand)]
enum Verb {
    /// Held leases (name, owner, fencing token, deadline, time left), then waiters
    /// in the order they will be served
    #[command(verbatim_doc_comment)]
    List,
    /// The lease on NAME; exit 1 when it is not held
    Holder {
        /// The lock's name
        name: String,
    },
    /// End the lease on NAME whoever holds it; exit 1 when it is not held
    /// (its holder's renewals then fail, the next grant has a larger token)
    #[command(verbatim_doc_comment)]
    Release {
        /// The lock's name
        name: String,
    },
    /// Print a completion script for SHELL (bash, zsh, fish, elvish, powershell)
    Completions {
        /// The shell
        shell: Shell,
    },
}

/// What the tool is asked to do.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Parsed {
    /// Run a command against an engine.
    Run(Invocation),
    /// Print the completion script for a shell.
    Completions(Shell),
}

/// A command, and the engine it runs against.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Invocation {
    /// The engine's URL (`--url`, else a non-empty `$ALKSTORE_URL`).
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

/// Parses `args` (with the program name first); the URL falls back to `$ALKSTORE_URL`.
///
/// # Errors
/// A [`clap::Error`]: a usage error (exit code 2), or the help or version to print (0).
pub(crate) fn parse<I, T>(args: I) -> Result<Parsed, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let cli = Cli::try_parse_from(args)?;
    let command = match cli.command {
        Verb::List => Command::List,
        Verb::Holder { name } => Command::Holder(checked(name)?),
        Verb::Release { name } => Command::Release(checked(name)?),
        Verb::Completions { shell } => return Ok(Parsed::Completions(shell)),
    };
    let url = cli.url.filter(|url| !url.is_empty()).ok_or_else(|| {
        Cli::command().error(
            ErrorKind::MissingRequiredArgument,
            "no engine URL: give --url URL or set ALKSTORE_URL",
        )
    })?;
    Ok(Parsed::Run(Invocation {
        url,
        namespace: cli.namespace,
        json: cli.json,
        command,
    }))
}

/// `name`, if an application may have locked it (it may have raised the core's default
/// 256-byte limit): only what no engine ever accepts is refused here. The message quotes the
/// name escaped, never raw.
fn checked(name: String) -> Result<String, clap::Error> {
    match check_name(&name, &crate::served::limits()) {
        Ok(()) => Ok(name),
        Err(e) => Err(Cli::command().error(ErrorKind::ValueValidation, e)),
    }
}

/// The completion script for `shell`.
pub(crate) fn completions(shell: Shell) -> String {
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "alkstore", &mut script);
    String::from_utf8_lossy(&script).into_owned()
}

/// `error` in one line, as the tool prints errors: clap's message and tips, without the
/// usage that follows them.
pub(crate) fn one_line(error: &clap::Error) -> String {
    let text = error.render().to_string();
    let mut out = String::new();
    let lines = text.lines().map(str::trim);
    for line in lines.take_while(|line| !line.starts_with("Usage:")) {
        if line.is_empty() {
            continue;
        }
        if !out.is_empty() {
            out.push_str(if out.ends_with(':') { " " } else { "; " });
        }
        out.push_str(line.strip_prefix("error: ").unwrap_or(line));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Parses `alkstore args...`, with `--url redis://flag/` first unless `args` give one.
    fn run(args: &[&str]) -> Result<Parsed, String> {
        let has_url = args.iter().any(|a| a.starts_with("--url"));
        let url: &[&str] = if has_url {
            &[]
        } else {
            &["--url", "redis://flag/"]
        };
        let all = ["alkstore"].iter().chain(url).chain(args);
        parse(all).map_err(|e| one_line(&e))
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
    fn the_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn commands_with_options_before_or_after() {
        assert_eq!(
            run(&["list"]),
            Ok(invocation("redis://flag/", None, false, Command::List))
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
                "redis://flag/",
                None,
                false,
                Command::Holder("-odd".into())
            ))
        );
        assert_eq!(
            run(&["holder", "zürich/ü\"\\"]),
            Ok(invocation(
                "redis://flag/",
                None,
                false,
                Command::Holder("zürich/ü\"\\".into())
            ))
        );
        assert_eq!(
            run(&["completions", "bash"]),
            Ok(Parsed::Completions(Shell::Bash))
        );
    }

    #[test]
    fn help_and_version_are_not_usage_errors() {
        for args in [&["--help"][..], &["holder", "-h"], &["-V"], &["--version"]] {
            let error = parse(["alkstore"].iter().chain(args)).unwrap_err();
            assert_eq!(error.exit_code(), 0, "{args:?}");
            assert!(!error.use_stderr(), "{args:?}");
        }
        let help = Cli::command().render_help().to_string();
        assert!(help.starts_with("alkstore: the operator's view"), "{help}");
        assert!(help.contains(&SCHEMES.join(" ")), "{help}");
        for default in [
            "Redis's namespace (default \"alk\")",
            "PostgreSQL's schema (default \"alkstore\"",
            "SQLite's table prefix (default \"alkstore\"",
            "Exit codes: 0",
        ] {
            assert!(help.contains(default), "{default}: {help}");
        }
    }

    #[test]
    fn usage_errors_exit_2_and_say_what_is_wrong_in_one_line() {
        let cases: &[(&[&str], &str)] = &[
            (&[], "requires a subcommand"),
            (&["lsit"], "unrecognized subcommand 'lsit'"),
            (&["lsit"], "a similar subcommand exists: 'list'"),
            (&["holder"], "required arguments were not provided: <NAME>"),
            (&["release"], "<NAME>"),
            (&["list", "extra"], "unexpected argument 'extra'"),
            (&["holder", "a", "b"], "unexpected argument 'b'"),
            (
                &["--frobnicate", "list"],
                "unexpected argument '--frobnicate'",
            ),
            (&["-x", "list"], "unexpected argument '-x'"),
            (
                &["--json=yes", "list"],
                "unexpected value 'yes' for '--json'",
            ),
            (&["list", "--url"], "a value is required for '--url <URL>'"),
            (
                &["list", "--namespace"],
                "a value is required for '--namespace <NS>'",
            ),
            (
                &["list", "--namespace="],
                "a value is required for '--namespace <NS>'",
            ),
            (&["completions", "tcsh"], "invalid value 'tcsh'"),
            (&["holder", ""], "invalid lock name \"\": it is empty"),
            (&["holder", "a\nb"], "control character U+000A"),
            (&["release", "a\u{1b}[2J"], "control character U+001B"),
        ];
        for (args, expected) in cases {
            let error = parse(["alkstore", "--url", "redis://flag/"].iter().chain(*args));
            let error = error.unwrap_err();
            assert_eq!(error.exit_code(), 2, "{args:?}");
            let line = one_line(&error);
            assert!(line.contains(expected), "{args:?}: {line}");
            assert!(
                !line.contains('\n') && !line.starts_with("error"),
                "{args:?}: {line}"
            );
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

    #[cfg(unix)]
    #[test]
    fn arguments_that_are_not_utf8_are_a_usage_error() {
        use std::os::unix::ffi::OsStringExt;
        let bad = OsString::from_vec(vec![b'j', 0xff, b'b']);
        let args = [
            "alkstore".into(),
            "--url=redis://h/".into(),
            "holder".into(),
            bad,
        ];
        let error = parse(args).unwrap_err();
        assert_eq!(error.exit_code(), 2);
        assert!(one_line(&error).contains("invalid UTF-8"), "{error}");
    }

    #[test]
    fn completions_name_the_commands() {
        let script = completions(Shell::Bash);
        for word in ["alkstore", "holder", "release", "--namespace"] {
            assert!(script.contains(word), "{word}");
        }
    }
}
