//! The one place that knows the engines: a URL's scheme picks one, which is opened and handed
//! to the commands, written once against the contract ([`crate::command`]).
//!
//! Adding an engine is one arm in [`run`] (open its store, pair it with a clock) and its
//! schemes in [`SCHEMES`].

mod pg;
mod redis;
mod sqlite;

use crate::args::Invocation;
use crate::command::{self, Answer, Failure};
use crate::served::SCHEMES;

/// Opens the engine `invocation.url` names and runs the command against it.
///
/// # Errors
/// [`Failure::Usage`] for a scheme no engine serves (or a namespace the engine cannot
/// take), [`Failure::Unavailable`] when the engine cannot be reached or does not answer.
pub(crate) async fn run(invocation: &Invocation) -> Result<Answer, Failure> {
    let Invocation {
        url,
        namespace,
        json,
        command,
    } = invocation;
    let namespace = namespace.as_deref();
    match scheme(url).as_deref() {
        Some("redis" | "rediss" | "redis+unix") => {
            let (store, clock) = redis::open(url, namespace).await?;
            command::run(&store, &clock, command, *json).await
        }
        Some("postgres" | "postgresql") => {
            let (store, clock) = pg::open(url, namespace).await?;
            command::run(&store, &clock, command, *json).await
        }
        Some("sqlite") => {
            let (store, clock) = sqlite::open(url, namespace).await?;
            command::run(&store, &clock, command, *json).await
        }
        other => Err(Failure::Usage(unsupported(other))),
    }
}

/// The scheme of `url`, lowercased (schemes are case-insensitive); `None` without `://`.
fn scheme(url: &str) -> Option<String> {
    let (scheme, _) = url.split_once("://")?;
    Some(scheme.to_ascii_lowercase())
}

/// The error for a URL no engine serves. It names the scheme only: the rest of a URL may
/// hold a password.
fn unsupported(scheme: Option<&str>) -> String {
    let served = SCHEMES.join(" ");
    match scheme {
        Some(scheme) => format!(
            "unsupported URL scheme {:?}: alkstore serves {served}",
            format!("{scheme}://")
        ),
        None => format!("the URL has no scheme (\"scheme://...\"): alkstore serves {served}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schemes_are_read_case_insensitively_and_others_are_named_in_the_error() {
        assert_eq!(scheme("redis://h/").as_deref(), Some("redis"));
        assert_eq!(scheme("REDISS://h/").as_deref(), Some("rediss"));
        assert_eq!(
            scheme("redis+unix:///run/r.sock").as_deref(),
            Some("redis+unix")
        );
        assert_eq!(scheme("127.0.0.1:6379"), None);
        assert_eq!(
            unsupported(Some("mysql")),
            "unsupported URL scheme \"mysql://\": alkstore serves redis:// redis+unix:// rediss:// postgres:// postgresql:// sqlite://"
        );
        assert!(unsupported(None).starts_with("the URL has no scheme"));
    }

    #[test]
    fn an_unsupported_url_is_a_usage_error_that_never_quotes_its_password() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        for url in ["mysql://admin:hunter2@db:5432/app", "admin:hunter2@db:5432"] {
            let invocation = Invocation {
                url: url.into(),
                namespace: None,
                json: false,
                command: crate::args::Command::List,
            };
            match runtime.block_on(run(&invocation)) {
                Err(Failure::Usage(message)) => {
                    assert!(message.contains("alkstore serves redis://"), "{message}");
                    assert!(!message.contains("hunter2"), "{message}");
                }
                other => panic!("{url}: {other:?}"),
            }
        }
    }
}
