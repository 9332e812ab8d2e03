//! Keeps a URL's secrets out of what the tool prints: the engines already leave them out of
//! their messages; this is the second lock on the door, for every line on stderr.

/// The secrets a URL carries: the password of its user info (`scheme://user:PASSWORD@host`;
/// for a Redis URL also the whole user info when it has no `:`, which some providers use as
/// the password, while a PostgreSQL URL's is its user name), and the values of query
/// parameters whose
/// name mentions a password (`?pass=…`, `?password=…`), each as written and percent-decoded.
#[derive(Default)]
pub(crate) struct Secrets(Vec<String>);

impl Secrets {
    /// The secrets of `url`.
    pub(crate) fn of(url: &str) -> Self {
        let mut secrets = Vec::new();
        let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
        let postgres = scheme.to_ascii_lowercase().starts_with("postgres");
        if let Some((user_info, _host)) = rest.rsplit_once('@') {
            match user_info.split_once(':') {
                Some((_, password)) => secrets.push(password.to_owned()),
                None if !postgres => secrets.push(user_info.to_owned()),
                None => {}
            }
        }
        if let Some((_, query)) = rest.split_once('?') {
            let query = query.split('#').next().unwrap_or_default();
            for pair in query.split('&') {
                if let Some((key, value)) = pair.split_once('=') {
                    if key.to_ascii_lowercase().contains("pass") {
                        secrets.push(value.to_owned());
                    }
                }
            }
        }
        let decoded: Vec<String> = secrets.iter().map(|s| percent_decoded(s)).collect();
        secrets.extend(decoded);
        secrets.retain(|s| !s.is_empty());
        // Longest first, so that a secret holding another is replaced whole.
        secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
        secrets.dedup();
        Secrets(secrets)
    }

    /// `text` with every secret replaced by `***`.
    pub(crate) fn scrub(&self, text: &str) -> String {
        self.0
            .iter()
            .fold(text.to_owned(), |text, secret| text.replace(secret, "***"))
    }
}

/// Hand-written, so that nothing the tool derives could print a secret.
impl std::fmt::Debug for Secrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Secrets({} kept out of the output)", self.0.len())
    }
}

/// `text` with `%XX` escapes decoded (a malformed escape, or bytes that are not UTF-8, are
/// kept as they are: the raw form is scrubbed too).
fn percent_decoded(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8(out).unwrap_or_else(|_| text.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_in_user_info_and_query_are_scrubbed_raw_and_decoded() {
        let cases = [
            ("redis://user:hunter2@127.0.0.1:6379/0", "hunter2"),
            ("rediss://:hunter2@h:1/", "hunter2"),
            ("redis://us@er:hun/ter@2@h:1/0", "hun/ter@2"),
            ("redis://token-only@h/", "token-only"),
            ("redis+unix:///run/r.sock?db=1&pass=hunter2", "hunter2"),
            (
                "postgres://h/app?sslmode=disable&Password=hunter2#x",
                "hunter2",
            ),
        ];
        for (url, secret) in cases {
            let message = format!("could not connect to {url}: refused ({secret})");
            let scrubbed = Secrets::of(url).scrub(&message);
            assert!(!scrubbed.contains(secret), "{url}: {scrubbed}");
            assert!(scrubbed.contains("***"), "{url}: {scrubbed}");
        }
        let encoded = Secrets::of("redis://:p%40ss%3Aw0rd@h/");
        assert_eq!(
            encoded.scrub("auth p@ss:w0rd / p%40ss%3Aw0rd"),
            "auth *** / ***"
        );
    }

    #[test]
    fn a_postgres_user_name_is_not_a_secret_but_its_password_is() {
        let message = "could not connect to postgres host h database \"appdb\" as app";
        let secrets = Secrets::of("postgres://app@h/appdb");
        assert_eq!(secrets.scrub(message), message);
        let secrets = Secrets::of("postgresql://app:hunter2@h/appdb");
        assert_eq!(secrets.scrub("app hunter2"), "app ***");
    }

    #[test]
    fn a_url_without_secrets_changes_nothing() {
        for url in [
            "redis://127.0.0.1:6379/",
            "redis+unix:///run/r.sock?db=1",
            "nonsense",
        ] {
            let message = "could not connect to redis://127.0.0.1:6379/ db=1";
            assert_eq!(Secrets::of(url).scrub(message), message);
        }
        assert_eq!(percent_decoded("%zz%4"), "%zz%4");
        assert_eq!(percent_decoded("%ff"), "%ff", "not UTF-8: kept raw");
        assert!(!format!("{:?}", Secrets::of("redis://:hunter2@h/")).contains("hunter2"));
    }
}
