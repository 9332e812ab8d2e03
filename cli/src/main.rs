//! `alkstore`: the operator's view of alkstore locks from a shell, on every engine the URL
//! names.
//!
//! ```text
//! alkstore [--url URL] [--namespace NS] [--json] <list | holder NAME | release NAME>
//! alkstore completions <bash | zsh | fish | elvish | powershell>
//! ```
//!
//! `list` shows the held leases (name, owner, fencing token, deadline in UTC and the time
//! left, both on the engine's clock) and the queued waiters; `holder NAME` one lease;
//! `release NAME` ends a stuck lease whoever holds it (its holder's renewals then fail, and
//! the next grant carries a larger token). The URL comes from `--url` or `$ALKSTORE_URL`;
//! its scheme picks the engine (`redis://`, `rediss://` (TLS: the server's certificate checked against the system's roots, or the CA file in `SSL_CERT_FILE`), `redis+unix://`, `postgres://`, `postgresql://`, `sqlite://` + a file path).
//!
//! Exit codes: 0 done, 1 not held / nothing to release, 2 usage error, 3 the engine could
//! not be reached or did not answer. Errors are one line on stderr and never quote the URL's
//! password.
//!
//! The command line is clap's (`args.rs`), the JSON serde_json's (`json.rs`), the times
//! jiff's (`time.rs`). The commands are written once against the contract
//! (`alkstore_mem::LockStore`); the engines are picked in `engines.rs`, one match arm each.
#![forbid(unsafe_code)]
#![deny(missing_docs, missing_debug_implementations)]

mod args;
mod command;
mod engines;
mod json;
mod redact;
mod render;
mod served;
mod time;

use std::io::Write;
use std::process::ExitCode;

use crate::args::Parsed;
use crate::command::Failure;
use crate::redact::Secrets;

/// Exit code: a usage error.
const USAGE: u8 = 2;
/// Exit code: the engine could not be reached or did not answer.
const UNAVAILABLE: u8 = 3;

fn main() -> ExitCode {
    let invocation = match args::parse(std::env::args_os()) {
        Ok(Parsed::Run(invocation)) => invocation,
        Ok(Parsed::Completions(shell)) => return print(&args::completions(shell), 0),
        // Help and version (exit 0), on stdout.
        Err(e) if !e.use_stderr() => return print(&e.render().to_string(), 0),
        Err(e) => return fail(&Secrets::default(), &args::one_line(&e), USAGE),
    };
    let secrets = Secrets::of(&invocation.url);
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            return fail(
                &secrets,
                &format!("could not start a runtime: {e}"),
                UNAVAILABLE,
            );
        }
    };
    match runtime.block_on(engines::run(&invocation)) {
        Ok(answer) => print(&answer.text, u8::from(answer.not_held)),
        Err(Failure::Usage(message)) => fail(&secrets, &message, USAGE),
        Err(Failure::Unavailable(message)) => fail(&secrets, &message, UNAVAILABLE),
    }
}

/// Prints `text` on stdout and exits with `code`. A closed stdout (`alkstore list | head`)
/// is not an error.
fn print(text: &str, code: u8) -> ExitCode {
    let mut stdout = std::io::stdout().lock();
    let _ = stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush());
    ExitCode::from(code)
}

/// Prints `message` as one line on stderr, without `secrets` and with what could rewrite a
/// terminal (control and bidirectional-override characters, which clap's errors may quote
/// from the arguments) as spaces, and exits with `code`.
fn fail(secrets: &Secrets, message: &str, code: u8) -> ExitCode {
    let line: String = secrets
        .scrub(message)
        .chars()
        .map(|c| if render::hostile(c) { ' ' } else { c })
        .collect();
    let _ = writeln!(std::io::stderr().lock(), "alkstore: {}", line.trim_end());
    ExitCode::from(code)
}
